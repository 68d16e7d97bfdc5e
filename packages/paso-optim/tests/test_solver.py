"""The window solver: the paper's two statements, a closed form, and bad input."""

import math

import pytest
import torch
from paso_optim import functional as fo
from paso_optim import sequential, solve_triangular

N = 20


def _grad_fn(X: torch.Tensor, ts: list[int]) -> torch.Tensor:
    # nonconvex, step-dependent "batches": f_t(x) = sum(1 - cos(x - c_t)) + 0.05 |x|^2
    c = torch.stack([torch.sin(torch.arange(N, dtype=X.dtype) * 0.3 + t) for t in ts])
    return torch.sin(X - c) + 0.1 * X


OPTS = {
    "sgd": fo.sgd(lr=0.3),
    "momentum": fo.sgd(lr=0.1, momentum=0.9),
    "adam": fo.adam(lr=0.05),
    "adamw": fo.adamw(lr=0.05, weight_decay=0.1, schedule=lambda t: 1.0 / (1 + 0.01 * t)),
}


@pytest.mark.parametrize("name", list(OPTS))
def test_tol_zero_is_the_sequential_trajectory_bit_for_bit(name):
    f = OPTS[name]
    x0 = torch.linspace(-1, 1, N, dtype=torch.float64)
    T = 60
    x_seq, s_seq = sequential(f.step, _grad_fn, x0, f.init(x0), T)
    res = solve_triangular(f.step, _grad_fn, x0, f.init(x0), T, window=8, tol=0.0)
    assert torch.equal(res.x, x_seq)
    assert all(torch.equal(res.state[k], s_seq[k]) for k in s_seq)
    assert res.rounds <= T and sum(res.steps) == T and res.grad_evals >= T


@pytest.mark.parametrize("name", list(OPTS))
def test_window_one_is_sequential_in_exactly_T_rounds(name):
    f = OPTS[name]
    x0 = torch.linspace(-1, 1, N, dtype=torch.float64)
    x_seq, _ = sequential(f.step, _grad_fn, x0, f.init(x0), 25)
    res = solve_triangular(f.step, _grad_fn, x0, f.init(x0), 25, window=1, tol=1.0)
    assert res.rounds == 25 and res.grad_evals == 25
    assert torch.equal(res.x, x_seq)


def test_tol_positive_saves_rounds_and_stays_close():
    f = OPTS["adam"]
    x0 = torch.linspace(-1, 1, N, dtype=torch.float64)
    T = 200
    x_seq, _ = sequential(f.step, _grad_fn, x0, f.init(x0), T)
    exact = solve_triangular(f.step, _grad_fn, x0, f.init(x0), T, window=8, tol=0.0)
    loose = solve_triangular(f.step, _grad_fn, x0, f.init(x0), T, window=8, tol=1e-10)
    assert loose.rounds < exact.rounds <= T
    assert (loose.x - x_seq).norm() / x_seq.norm() < 1e-3


def test_linear_quadratic_closed_form():
    # f_t(x) = a/2 |x - c_t|^2 with c_t = c * (t + 1): x_{t+1} = r x_t + lr a c_t, r = 1 - lr a
    a, lr, T = 2.0, 0.1, 40
    r = 1 - lr * a
    c = torch.linspace(-1, 1, 7, dtype=torch.float64)
    x0 = torch.ones(7, dtype=torch.float64)

    def grad_fn(X, ts):
        return torch.stack([a * (X[i] - c * (t + 1)) for i, t in enumerate(ts)])

    closed = r**T * x0 + lr * a * c * sum(r ** (T - 1 - t) * (t + 1) for t in range(T))
    f = fo.sgd(lr=lr)
    exact = solve_triangular(f.step, grad_fn, x0, {}, T, window=6, tol=0.0)
    assert torch.allclose(exact.x, closed, rtol=1e-12, atol=1e-12)
    assert exact.rounds <= T
    loose = solve_triangular(f.step, grad_fn, x0, {}, T, window=6, tol=1e-12)
    assert torch.allclose(loose.x, closed, rtol=1e-5, atol=1e-5)
    assert loose.rounds < exact.rounds


def test_ema_threshold_follows_errors():
    f = OPTS["adam"]
    x0 = torch.zeros(N, dtype=torch.float64)
    res = solve_triangular(f.step, _grad_fn, x0, f.init(x0), 100, 8, 1e-6, ema_decay=0.5)
    th = res.thresholds
    for k in range(1, len(th)):
        assert math.isclose(th[k], 0.5 * th[k - 1] + 0.5 * res.errors[k - 1], rel_tol=1e-12)


def test_zero_steps_returns_x0():
    f = OPTS["sgd"]
    x0 = torch.ones(3)
    res = solve_triangular(f.step, _grad_fn, x0, {}, 0)
    assert res.rounds == 0 and torch.equal(res.x, x0)


@pytest.mark.parametrize(
    "kw,exc,match",
    [
        ({"window": 0}, ValueError, "window"),
        ({"window": 2.5}, TypeError, "window"),
        ({"tol": -1e-9}, ValueError, "tol"),
        ({"T": -1}, ValueError, "T"),
        ({"ema_decay": 1.0}, ValueError, "ema_decay"),
        ({"x0": torch.ones(2, 2)}, ValueError, "x0"),
    ],
)
def test_bad_input(kw, exc, match):
    f = OPTS["sgd"]
    args = {"x0": torch.ones(N), "T": 5, "window": 4, "tol": 0.0}
    args.update(kw)
    with pytest.raises(exc, match=match):
        solve_triangular(f.step, _grad_fn, args.pop("x0"), {}, **args)


def test_non_finite_gradient_names_the_step():
    f = OPTS["sgd"]

    def grad_fn(X, ts):
        G = torch.ones_like(X)
        if 3 in ts:
            G[ts.index(3), 0] = float("nan")
        return G

    with pytest.raises(FloatingPointError, match="step 3"):
        solve_triangular(f.step, grad_fn, torch.zeros(4), {}, 10, window=4, tol=0.0)


def test_bad_callables_and_grad_fn_output():
    f = OPTS["sgd"]
    with pytest.raises(TypeError, match="step_fn must be callable"):
        solve_triangular(None, _grad_fn, torch.zeros(N), {}, 5)
    with pytest.raises(TypeError, match="grad_fn must be callable"):
        solve_triangular(f.step, "grad", torch.zeros(N), {}, 5)
    with pytest.raises(TypeError, match=r"grad_fn must return a torch\.Tensor"):
        solve_triangular(f.step, lambda X, ts: X.tolist(), torch.zeros(N), {}, 5)
