import io
import math

import numpy as np
import pytest
import torch
from geometry_misalignment import CalibratedOptimizer, WassersteinNaturalGradient


def _psd_sqrt(S):
    ev, V = torch.linalg.eigh(S)
    return (V * ev.clamp_min(0).sqrt()) @ V.T


def bures2(S1, S2):
    """Squared W2 between N(0, S1) and N(0, S2) (closed form)."""
    r = _psd_sqrt(S2)
    return torch.trace(S1) + torch.trace(S2) - 2 * torch.trace(_psd_sqrt(r @ S1 @ r))


def _gaussian_problem(kappa, d=3, n=400):
    """Samples X0 M with cond(M^T Sigma M) ~ kappa; target covariance fixed."""
    g = torch.Generator().manual_seed(0)
    X0 = torch.randn(n, d, generator=g, dtype=torch.float64)
    X0 = X0 @ torch.linalg.inv(torch.linalg.cholesky(X0.T @ X0 / n)).T  # whitened
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    M = Q @ torch.diag(torch.tensor(kappa ** (-0.5 * np.linspace(0, 1, d)), dtype=torch.float64))
    A = torch.randn(d, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    target = A.T @ A + 0.5 * torch.eye(d, dtype=torch.float64)
    W0 = torch.linalg.solve(M, torch.eye(d, dtype=torch.float64))  # T_W0 = identity on X0
    return X0 @ M, target, W0


def _iterations(method, kappa, tol=1e-8, max_steps=3000):
    X, target, W0 = _gaussian_problem(kappa)
    W = W0.clone().requires_grad_(True)
    n = len(X)
    if method == "wng":
        opt = WassersteinNaturalGradient([W], lr=1.0)
    else:
        lmax = float(torch.linalg.eigvalsh(X.T @ X / n).max())
        opt = torch.optim.SGD([W], lr=0.5 / lmax)

    def loss_of(out):
        return 0.5 * bures2(out.T @ out / n, target)

    f0 = float(loss_of(X @ W0))
    for t in range(max_steps):
        if method == "wng":

            def closure():
                out = X @ W
                return loss_of(out), out

            f = float(opt.step(closure))
        else:
            opt.zero_grad()
            loss = loss_of(X @ W)
            f = float(loss.detach())
            loss.backward()
            opt.step()
        if f <= tol * f0:
            return t
    return max_steps


def test_preconditioned_iterations_do_not_depend_on_kappa_on_gaussian_w2():
    its = [_iterations("wng", k) for k in (1.0, 1e2, 1e4, 1e6)]
    assert max(its) - min(its) <= 1, its
    assert max(its) < 30


def test_euclidean_iterations_grow_with_kappa_on_gaussian_w2():
    its = [_iterations("gd", k, max_steps=400) for k in (1.0, 10.0)]
    assert its[1] > 3 * its[0], its


@pytest.mark.slow  # kappa = 100 takes hundreds of GD steps
def test_euclidean_iterations_keep_growing_up_to_kappa_100_on_gaussian_w2():
    its = [_iterations("gd", k, max_steps=4000) for k in (1.0, 10.0, 100.0)]
    assert its[1] > 3 * its[0] and its[2] > 3 * its[1], its


def _linear_closure(model, x, y):
    def closure():
        out = model(x)
        return ((out - y) ** 2).sum(1).mean() / 2, out

    return closure


def test_wng_on_least_squares_is_one_gauss_newton_step():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(50, 4, generator=g, dtype=torch.float64) * torch.tensor([1.0, 3, 10, 30])
    y = x @ torch.randn(4, 2, generator=g, dtype=torch.float64) + 1.0
    model = torch.nn.Linear(4, 2).double()
    opt = WassersteinNaturalGradient(model.parameters(), lr=1.0, damping=0.0, solver="cg")
    opt.step(_linear_closure(model, x, y))
    loss, _ = _linear_closure(model, x, y)()
    assert float(loss.detach()) < 1e-16
    assert opt.last_solver == "cg"
    assert opt.last_cg_iters <= 10  # <= 5 distinct eigenvalues, + rounding
    assert model.weight.grad is not None


def _one_step(solver, model_fn, x, y, damping, **kw):
    torch.manual_seed(0)
    model = model_fn()
    opt = WassersteinNaturalGradient(
        model.parameters(), lr=1.0, damping=damping, solver=solver, **kw
    )
    opt.step(_linear_closure(model, x, y))
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return flat, opt


def _mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)
    ).double()


def test_exact_and_cg_solves_agree_on_a_small_mlp():
    g = torch.Generator().manual_seed(8)
    x = torch.randn(60, 3, generator=g, dtype=torch.float64) * torch.tensor([1.0, 3.0, 10.0])
    y = torch.randn(60, 2, generator=g, dtype=torch.float64)
    cg, o_cg = _one_step("cg", _mlp, x, y, 1e-3, cg_iters=200, cg_tol=1e-13)
    ex, o_ex = _one_step("exact", _mlp, x, y, 1e-3)
    assert o_cg.last_solver == "cg" and o_ex.last_solver == "exact"
    assert o_cg.last_cg_residual < 1e-10 and o_ex.last_cg_residual < 1e-10
    torch.testing.assert_close(ex, cg, rtol=1e-7, atol=1e-9)
    # 'auto' takes the exact solve at this size (32 entries <= exact_max_dim = 512)
    auto, o_auto = _one_step("auto", _mlp, x, y, 1e-3)
    assert o_auto.last_solver == "exact"
    torch.testing.assert_close(auto, ex, rtol=0, atol=0)
    # and CG above exact_max_dim
    _, o_big = _one_step("auto", _mlp, x, y, 1e-3, exact_max_dim=31)
    assert o_big.last_solver == "cg" and o_big.last_cg_iters > 0


def test_exact_solve_of_a_singular_metric_is_the_minimum_norm_cg_solution():
    # a duplicated input column: G is singular, damping 0, so Cholesky fails and the
    # exact path takes pinv(G) grad, the point CG started at zero converges to
    g = torch.Generator().manual_seed(9)
    x = torch.randn(40, 2, generator=g, dtype=torch.float64)
    x = torch.cat([x, x[:, :1]], 1)
    y = torch.randn(40, 2, generator=g, dtype=torch.float64)

    def lin():
        return torch.nn.Linear(3, 2, bias=False).double()

    cg, _ = _one_step("cg", lin, x, y, 0.0)
    ex, o_ex = _one_step("exact", lin, x, y, 0.0)
    assert o_ex.last_cg_residual < 1e-8
    torch.testing.assert_close(ex, cg, rtol=1e-7, atol=1e-9)


def test_exact_solver_on_a_large_model_raises_naming_the_limit():
    big = torch.nn.Linear(30, 30)  # 930 entries > 512
    with pytest.raises(ValueError, match=r"solver='exact'.*exact_max_dim=512"):
        WassersteinNaturalGradient(big.parameters(), solver="exact")
    with pytest.raises(ValueError, match=r"exact_max_dim=100"):
        CalibratedOptimizer(big.parameters(), solver="exact", exact_max_dim=100)
    WassersteinNaturalGradient(big.parameters(), solver="exact", exact_max_dim=1000)  # ok
    with pytest.raises(ValueError, match="solver must be one of"):
        WassersteinNaturalGradient(big.parameters(), solver="lu")
    with pytest.raises(ValueError, match="exact_max_dim"):
        WassersteinNaturalGradient(big.parameters(), exact_max_dim=0)
    # unfrozen after construction: the step raises before touching the parameters
    small = torch.nn.Linear(30, 1).double()
    small.weight.requires_grad_(False)
    opt = WassersteinNaturalGradient(small.parameters(), solver="exact", exact_max_dim=10)
    small.weight.requires_grad_(True)
    before = small.weight.detach().clone()
    x = torch.randn(8, 30, dtype=torch.float64)
    with pytest.raises(ValueError, match="exact_max_dim=10"):
        opt.step(lambda: ((small(x) ** 2).mean(), small(x)))
    torch.testing.assert_close(small.weight.detach(), before)


def _calibrated_run(scale, threshold=10.0):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(40, 3, generator=g, dtype=torch.float64) * torch.tensor(scale)
    y = torch.randn(40, 2, generator=g, dtype=torch.float64)
    model = torch.nn.Linear(3, 2, bias=False).double()
    opt = CalibratedOptimizer(model.parameters(), threshold=threshold, every=5, lr=1e-2)
    for _ in range(6):
        opt.step(_linear_closure(model, x, y))
    cond = float(torch.linalg.cond(x.T @ x / len(x)))
    return opt, cond


def test_calibrated_switch_turns_on_exactly_above_threshold():
    opt, cond = _calibrated_run([1.0, 1.0, 1.5])
    assert cond < 10 and not opt.preconditioning and opt.n_preconditioned == 0
    opt, cond = _calibrated_run([1.0, 3.0, 10.0])
    assert cond > 10 and opt.preconditioning and opt.n_preconditioned == 6
    assert opt.kappa == pytest.approx(cond, rel=1e-6)
    assert opt.n_estimates == 2  # steps 0 and 5
    # threshold just above / just below the measured kappa
    opt, _ = _calibrated_run([1.0, 3.0, 10.0], threshold=cond * 1.001)
    assert not opt.preconditioning
    opt, _ = _calibrated_run([1.0, 3.0, 10.0], threshold=cond * 0.999)
    assert opt.preconditioning


def test_calibrated_below_threshold_is_exactly_the_base_optimizer():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(30, 3, generator=g, dtype=torch.float64)
    y = torch.randn(30, 2, generator=g, dtype=torch.float64)
    a = torch.nn.Linear(3, 2).double()
    b = torch.nn.Linear(3, 2).double()
    b.load_state_dict(a.state_dict())
    cal = CalibratedOptimizer(a.parameters(), threshold=1e6, lr=0.05)
    adam = torch.optim.Adam(b.parameters(), lr=0.05)
    for _ in range(12):
        cal.step(_linear_closure(a, x, y))
        adam.zero_grad()
        loss, _ = _linear_closure(b, x, y)()
        loss.backward()
        adam.step()
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-14)


def test_calibrated_state_dict_round_trip():
    opt, _ = _calibrated_run([1.0, 3.0, 10.0])
    sd = opt.state_dict()
    model = torch.nn.Linear(3, 2, bias=False).double()
    other = CalibratedOptimizer(model.parameters(), lr=1e-2)
    other.load_state_dict(sd)
    assert other.n_steps == 6 and other.preconditioning
    assert other.kappa == pytest.approx(opt.kappa)
    assert other.base.state_dict()["state"].keys() == opt.base.state_dict()["state"].keys()


def _saved_and_reloaded(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


@pytest.mark.parametrize("kind", ["calibrated-adam", "calibrated-precond", "wng"])
def test_state_dict_survives_torch_save_and_the_run_continues_identically(kind):
    # kappa of this affine map is about 12: threshold 1e6 takes Adam steps (its moments
    # must survive the round trip), threshold 3 preconditioned ones
    g = torch.Generator().manual_seed(6)
    x = torch.randn(40, 3, generator=g, dtype=torch.float64) * torch.tensor([1.0, 2.0, 3.3])
    y = torch.randn(40, 2, generator=g, dtype=torch.float64)

    def make(model):
        if kind == "wng":
            return WassersteinNaturalGradient(model.parameters(), lr=0.5, damping=1e-6)
        threshold = 1e6 if kind == "calibrated-adam" else 3.0
        return CalibratedOptimizer(model.parameters(), threshold=threshold, every=4, lr=1e-2)

    a = torch.nn.Linear(3, 2).double()
    opt = make(a)
    for _ in range(5):
        opt.step(_linear_closure(a, x, y))
    b = torch.nn.Linear(3, 2).double()
    b.load_state_dict(a.state_dict())
    twin = make(b)
    twin.load_state_dict(_saved_and_reloaded(opt.state_dict()))
    if kind != "wng":
        # the Lanczos start vectors continue too (the generator is part of the state)
        assert torch.equal(twin._gen.get_state(), opt._gen.get_state())
    for _ in range(7):  # crosses the estimates at steps 8 and 12
        opt.step(_linear_closure(a, x, y))
        twin.step(_linear_closure(b, x, y))
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-12)
    if kind != "wng":
        assert twin.n_steps == opt.n_steps == 12 and twin.n_estimates == opt.n_estimates == 3
        assert twin.kappa == opt.kappa
        assert twin.n_preconditioned == opt.n_preconditioned == (0 if "adam" in kind else 12)


def test_wng_state_dict_round_trip_and_param_groups():
    a = torch.nn.Linear(2, 2).double()
    opt = WassersteinNaturalGradient(
        [{"params": [a.weight]}, {"params": [a.bias], "lr": 0.5}], lr=1.0
    )
    sd = opt.state_dict()
    opt2 = WassersteinNaturalGradient([{"params": [a.weight]}, {"params": [a.bias]}], lr=0.1)
    opt2.load_state_dict(sd)
    assert [g["lr"] for g in opt2.param_groups] == [1.0, 0.5]


def test_bad_arguments_raise_clearly():
    p = [torch.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="damping"):
        WassersteinNaturalGradient(p, damping=-1.0)
    with pytest.raises(ValueError, match="lr"):
        WassersteinNaturalGradient(p, lr=0.0)
    with pytest.raises(ValueError, match="threshold"):
        CalibratedOptimizer(p, threshold=0.5)
    with pytest.raises(ValueError, match="every"):
        CalibratedOptimizer(p, every=0)
    with pytest.raises(TypeError, match="base"):
        CalibratedOptimizer(p, base=object)
    opt = WassersteinNaturalGradient(p)
    with pytest.raises(ValueError, match="closure"):
        opt.step()
    with pytest.raises(TypeError, match="outputs"):
        opt.step(lambda: (p[0] ** 2).sum())
    with pytest.raises(ValueError, match="finite"):
        opt.step(lambda: ((p[0] * math.nan).sum(), p[0] * 1.0))
    # a per-sample loss (not reduced) or a float: the message says what was given
    with pytest.raises(TypeError, match=r"loss .*scalar tensor, got shape \(2,\)"):
        opt.step(lambda: (p[0] ** 2, p[0] * 1.0))
    with pytest.raises(TypeError, match=r"loss .*got float"):
        CalibratedOptimizer(p).step(lambda: (1.0, p[0] * 1.0))
    with pytest.raises(ValueError, match="sample dimension"):
        opt.step(lambda: ((p[0] ** 2).sum(), p[0][:0] * 1.0))
    # outputs that do not depend on the parameters: G = 0, so a damped solve would step
    # by grad / damping (1e8 x grad); it must raise and leave the parameters alone
    before = p[0].detach().clone()
    other = torch.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match="do not depend"):
        opt.step(lambda: ((p[0] ** 2).sum(), other * 2.0))
    torch.testing.assert_close(p[0].detach(), before)
