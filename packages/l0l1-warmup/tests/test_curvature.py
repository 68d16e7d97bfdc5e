import numpy as np
import pytest
import torch
from l0l1_warmup import estimate_constants, fit_envelope, snapshot, top_eigenvalue
from torch.func import functional_call


def _mlp():
    torch.manual_seed(0)
    # 4*6 + 6 + 6*3 + 3 = 51 parameters, double precision for a tight comparison
    return torch.nn.Sequential(
        torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)
    ).double()


def _batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(32, 4, generator=g, dtype=torch.float64), torch.randint(
        0, 3, (32,), generator=g
    )


def _loss(model, batch):
    x, y = batch
    return torch.nn.functional.cross_entropy(model(x), y)


def _full_hessian(model, batch):
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for p in model.parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def f(theta):
        parts, i = {}, 0
        for n, s in zip(names, shapes, strict=True):
            k = int(np.prod(s))
            parts[n] = theta[i : i + k].reshape(s)
            i += k
        return _loss(lambda x: functional_call(model, parts, (x,)), batch)

    return torch.autograd.functional.hessian(f, flat)


def test_power_iteration_matches_eigvalsh_of_the_full_hessian():
    model, batch = _mlp(), _batch()
    H = _full_hessian(model, batch)
    top = float(torch.linalg.eigvalsh(H)[-1])
    lam, hvps = top_eigenvalue(model, _loss, [batch], iters=500, tol=1e-10)
    assert lam == pytest.approx(top, rel=1e-4)
    assert hvps >= 1


def test_preconditioned_power_iteration_matches_p_h_p():
    model, batch = _mlp(), _batch()
    H = _full_hessian(model, batch)
    g = torch.Generator().manual_seed(2)
    v_hat = {
        n: torch.rand(p.shape, generator=g, dtype=torch.float64) * 1e-2 + 1e-4
        for n, p in model.named_parameters()
    }
    eps = 1e-8
    d = torch.cat([(v_hat[n].sqrt() + eps).reshape(-1) for n, _ in model.named_parameters()])
    P = torch.diag(d.rsqrt())
    top = float(torch.linalg.eigvalsh(P @ H @ P)[-1])
    lam, _ = top_eigenvalue(model, _loss, [batch], v_hat=v_hat, eps=eps, iters=2000, tol=1e-12)
    assert lam == pytest.approx(top, rel=1e-4)


def test_top_algebraic_eigenvalue_when_the_dominant_one_is_negative():
    # f(w) = -2 w0^2 + 0.5 w1^2 : eigenvalues -4 and 1; the top one is 1.
    class Quad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor([0.3, -0.2], dtype=torch.float64))

    def loss(m, _):
        return -2 * m.w[0] ** 2 + 0.5 * m.w[1] ** 2

    lam, _ = top_eigenvalue(Quad(), loss, [None], iters=200, tol=1e-12)
    assert lam == pytest.approx(1.0, rel=1e-6)


def test_envelope_fit_recovers_k0_k1():
    rng = np.random.default_rng(0)
    gap = rng.uniform(0, 3, 40)
    gap[[0, 1]] = [0.0, 3.0]  # two points on the line, one at each end
    below = rng.uniform(0, 1, 40)
    below[[0, 1]] = 0
    sharp = 2.0 + 5.0 * gap - below
    fit = fit_envelope(gap, sharp)
    assert fit.env_k0 == pytest.approx(2.0, abs=1e-9)
    assert fit.env_k1 == pytest.approx(5.0, abs=1e-9)
    assert np.all(fit.env_k0 + fit.env_k1 * gap >= sharp - 1e-9)
    assert fit.alpha == pytest.approx(2.5)
    exact = fit_envelope(gap, 2.0 + 5.0 * gap)
    assert (exact.k0, exact.k1, exact.r2) == pytest.approx((2.0, 5.0, 1.0))


def test_envelope_with_negative_slope_suggests_no_warm_up():
    fit = fit_envelope([2.3, 1.5, 0.5, 0.2], [2.0, 4.0, 6.5, 7.0])
    assert fit.k1 < 0 and fit.env_k1 < 0
    assert fit.alpha == 0.0  # exact: the rule returns the literal 0.0 when K1 <= 0


def test_envelope_with_nonpositive_intercept_identifies_no_alpha():
    fit = fit_envelope([2.3, 2.4, 2.5], [1.0, 2.0, 3.0])  # K1 = 10, K0 = -22
    assert fit.env_k1 == pytest.approx(10.0) and fit.env_k0 == pytest.approx(-22.0)
    assert np.isnan(fit.alpha)


@pytest.mark.parametrize(
    ("gap", "sharp", "match"),
    [
        ([1.0], [1.0], "at least 2"),
        ([1.0, 1.0], [1.0, 2.0], "distinct"),
        ([1.0, 2.0], [1.0], "same length"),
        ([1.0, np.nan], [1.0, 2.0], "finite"),
    ],
)
def test_envelope_bad_input(gap, sharp, match):
    with pytest.raises(ValueError, match=match):
        fit_envelope(gap, sharp)


def test_snapshot_v_hat_is_bias_corrected_and_estimate_restores_the_model():
    model, batch = _mlp(), _batch()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.95))
    snaps = []
    for t in range(4):
        opt.zero_grad()
        _loss(model, batch).backward()
        opt.step()
        snaps.append(snapshot(model, opt, step=t + 1))
    st = opt.state[model[0].weight]
    expected = st["exp_avg_sq"] / (1 - 0.95 ** float(st["step"]))
    torch.testing.assert_close(snaps[-1].v_hat["0.weight"], expected)
    before = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    moved = [p.detach().clone() for p in model.parameters()]
    fit = estimate_constants(model, _loss, [batch], snaps, iters=10)
    for p, q in zip(model.parameters(), moved, strict=True):
        torch.testing.assert_close(p, q)
    assert fit.sharpness.shape == (4,) and fit.precond_sharpness.shape == (4,)
    assert fit.steps == [1, 2, 3, 4]
    model.load_state_dict(snaps[-1].state)
    with torch.no_grad():
        assert fit.loss[-1] == pytest.approx(float(_loss(model, batch)))
    del before


def test_estimate_constants_needs_two_checkpoints():
    model, batch = _mlp(), _batch()
    with pytest.raises(ValueError, match="at least 2"):
        estimate_constants(model, _loss, [batch], [model.state_dict()])
    with pytest.raises(ValueError, match="batches"):
        top_eigenvalue(model, _loss, [])
