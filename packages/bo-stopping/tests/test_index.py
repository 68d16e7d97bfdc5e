import math

import pytest
import torch
from bo_stopping import (
    PBGI,
    fit_gp,
    gittins_index,
    log_expected_improvement_at,
    log_h,
    solve_scaled_index,
)

D = torch.float64
_N = torch.distributions.Normal(torch.tensor(0.0, dtype=D), torch.tensor(1.0, dtype=D))


def h(u):
    """phi(u) + u Phi(u), written out (accurate for moderate u)."""
    return _N.log_prob(u).exp() + u * _N.cdf(u)


def ei(mean, sigma, g):
    return sigma * h((mean - g) / sigma)


def test_log_h_matches_high_precision_reference():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    us = [-1e8, -1e6 - 1, -1e6 + 1, -1e4, -300.0, -38.5, -10.0, -1.0000001, -1.0, -0.9999999]
    us += [-0.3, 0.0, 0.7, 5.0, 40.0, 1e3]
    for u in us:
        ref = float(mpmath.log(mpmath.npdf(u) + mpmath.mpf(u) * mpmath.ncdf(u)))
        got = float(log_h(torch.tensor(u, dtype=D)))
        assert got == pytest.approx(ref, rel=1e-12, abs=1e-12), u
    # float32: close to the float64 values, finite far into the tail, finite gradients
    u32 = torch.linspace(-2000.0, 50.0, 4001, requires_grad=True)
    v32 = log_h(u32)
    v32d = v32.detach()
    v64 = log_h(u32.detach().double())
    assert torch.isfinite(v32d).all()
    assert float(((v32d.double() - v64).abs() / (1 + v64.abs())).max()) < 1e-5
    v32.sum().backward()
    assert torch.isfinite(u32.grad).all()
    # d log h / du = Phi(u) / h(u)
    u = torch.tensor([-30.0, -3.0, -1.0, 0.5, 4.0], dtype=D, requires_grad=True)
    log_h(u).sum().backward()
    want = torch.exp(torch.special.log_ndtr(u.detach()) - log_h(u.detach()))
    torch.testing.assert_close(u.grad, want, rtol=1e-9, atol=0)
    with pytest.raises(TypeError, match="float32 or float64"):
        log_h(torch.tensor([1, 2]))


def _bisection_index(mean, sigma, c, lmbda=1.0):
    """The reference construction (as in the PBGI authors' code): bracket, then bisect
    log EI(g) - log(lmbda c) = 0 in g, with scipy's brentq."""
    from scipy.optimize import brentq

    target = math.log(lmbda * c)

    def f(g):
        return (
            float(
                log_expected_improvement_at(
                    torch.tensor(mean, dtype=D), torch.tensor(sigma, dtype=D), g
                )
            )
            - target
        )

    lo, hi = mean - 1.0, mean + 1.0
    while f(lo) < 0:
        lo = mean - 2 * (mean - lo)
    while f(hi) > 0:
        hi = mean + 2 * (hi - mean)
    return brentq(f, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)


@pytest.mark.parametrize("u0", [-25.0, -6.0, -1.0, 0.0, 0.4, 3.0, 30.0])
def test_index_against_closed_form_and_bisection_reference(u0):
    """Closed form: with lmbda c = sigma h(u0) the index is exactly mu - sigma u0."""
    mean, sigma = 0.7, 1.3
    c = sigma * float(torch.exp(log_h(torch.tensor(u0, dtype=D))))
    g = float(gittins_index(torch.tensor(mean, dtype=D), torch.tensor(sigma, dtype=D), c))
    assert g == pytest.approx(mean - sigma * u0, rel=1e-11, abs=1e-11)
    assert g == pytest.approx(_bisection_index(mean, sigma, c), rel=1e-9, abs=1e-9)
    # lmbda rescales the cost: index(c, lmbda) = index(lmbda c, 1)
    g2 = float(gittins_index(torch.tensor(mean, dtype=D), torch.tensor(sigma, dtype=D),
                             c / 4.0, lmbda=4.0))  # fmt: skip
    assert g2 == pytest.approx(g, rel=1e-11, abs=1e-11)


def test_pbgi_acquisition_against_the_bisection_reference():
    gen = torch.Generator().manual_seed(3)
    X = torch.rand(7, 2, dtype=D, generator=gen)
    Y = torch.cos(5 * X[:, 0]) * X[:, 1]
    model = fit_gp(X, Y, torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=D))
    Xt = torch.rand(6, 1, 2, dtype=D, generator=gen)
    cost = 0.02 + Xt[:, 0, 0]
    g = PBGI(model, cost=lambda Z: 0.02 + Z[..., 0], lmbda=0.3)(Xt)
    post = model.posterior(Xt)
    for i in range(6):
        mu, sd = float(post.mean[i].squeeze()), float(post.variance[i].sqrt().squeeze())
        ref = _bisection_index(mu, sd, float(cost[i]), lmbda=0.3)
        assert float(g[i]) == pytest.approx(ref, rel=1e-8, abs=1e-9)


@pytest.mark.parametrize(
    ("mean", "sigma", "cost"),
    [(0.0, 1.0, 0.1), (2.0, 0.3, 1e-3), (-1.0, 2.0, 5.0), (0.5, 1e-3, 0.2), (0.0, 1.0, 1e-8)],
)
def test_root_matches_brute_force_search(mean, sigma, cost):
    g = float(gittins_index(torch.tensor(mean, dtype=D), torch.tensor(sigma, dtype=D), cost))
    # brute force: EI(t) - cost changes sign once; scan a fine grid around the index
    lo, hi = mean - cost - 10 * sigma - 1, mean + 10 * sigma + 1
    grid = torch.linspace(lo, hi, 200_001, dtype=D)
    resid = ei(torch.tensor(mean, dtype=D), torch.tensor(sigma, dtype=D), grid) - cost
    sign_change = torch.nonzero(resid[:-1] * resid[1:] <= 0).flatten()
    assert sign_change.numel() >= 1
    g_brute = float(grid[sign_change[0]])
    assert abs(g - g_brute) <= 2 * float(grid[1] - grid[0])
    # and it solves the equation to high relative accuracy
    val = float(
        ei(torch.tensor(mean, dtype=D), torch.tensor(sigma, dtype=D), torch.tensor(g, dtype=D))
    )
    assert val == pytest.approx(cost, rel=1e-8)


def test_log_space_solve_is_accurate_over_a_wide_range():
    y = torch.linspace(-2000.0, 600.0, 20_001, dtype=D)
    u = solve_scaled_index(y)
    assert torch.isfinite(u).all()
    assert torch.all(u[1:] >= u[:-1])  # h is increasing, so is its inverse
    err = (log_h(u) - y).abs() / (1 + y.abs())
    assert float(err.max()) < 1e-12
    y32 = torch.linspace(-80.0, 80.0, 1001)
    u32 = solve_scaled_index(y32)
    assert float(((log_h(u32) - y32).abs() / (1 + y32.abs())).max()) < 1e-5


def test_infinite_targets():
    u = solve_scaled_index(torch.tensor([-math.inf, math.inf], dtype=D))
    assert u[0] == -math.inf and u[1] == math.inf


def test_gradient_matches_finite_differences():
    g = torch.Generator().manual_seed(0)
    mean = torch.randn(6, dtype=D, generator=g).requires_grad_()
    sigma = (torch.rand(6, dtype=D, generator=g) * 2 + 0.05).requires_grad_()
    cost = (torch.rand(6, dtype=D, generator=g) + 1e-3).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda m, s, c: gittins_index(m, s, c, lmbda=0.7), (mean, sigma, cost), eps=1e-6, atol=1e-7
    )
    log_cost = torch.linspace(-30, 3, 6, dtype=D).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda m, s, lc: gittins_index(m, s, lc, log_cost=True),
        (mean, sigma, log_cost),
        eps=1e-6,
        atol=1e-7,
    )


def test_implicit_gradient_formulas():
    mean = torch.tensor(0.3, dtype=D, requires_grad=True)
    sigma = torch.tensor(1.5, dtype=D, requires_grad=True)
    cost = torch.tensor(0.2, dtype=D, requires_grad=True)
    g = gittins_index(mean, sigma, cost)
    g.backward()
    u = ((mean - g) / sigma).detach()
    normal = torch.distributions.Normal(torch.tensor(0.0, dtype=D), torch.tensor(1.0, dtype=D))
    Phi, phi = normal.cdf(u), normal.log_prob(u).exp()
    assert float(mean.grad) == pytest.approx(1.0)
    assert float(sigma.grad) == pytest.approx(float(phi / Phi), rel=1e-9)
    assert float(cost.grad) == pytest.approx(float(-1 / Phi), rel=1e-9)


def test_limits():
    mean, sigma = torch.tensor(1.0, dtype=D), torch.tensor(0.5, dtype=D)
    # lambda -> 0: (g - mu)/sigma ~ sqrt(2 log(sigma / (lambda c))), a UCB with growing beta
    ratios = []
    for lmbda in (1e-10, 1e-50, 1e-200):
        z = float((gittins_index(mean, sigma, 1.0, lmbda=lmbda) - mean) / sigma)
        ratios.append(z / math.sqrt(2 * math.log(float(sigma) / lmbda)))
    assert all(r < 1 for r in ratios)
    assert ratios[0] < ratios[1] < ratios[2]
    assert ratios[-1] > 0.99
    # index grows without bound as lambda -> 0 and decreases in the cost
    costs = torch.logspace(-6, 2, 30, dtype=D)
    g = gittins_index(mean, sigma, costs)
    assert torch.all(g[1:] < g[:-1])
    # large cost (or vanishing sigma): EI(g) ~ mu - g, so g -> mu - lambda c
    assert float(gittins_index(mean, sigma, 50.0)) == pytest.approx(1.0 - 50.0, rel=1e-12)
    assert float(gittins_index(mean, torch.tensor(1e-9, dtype=D), 0.3)) == pytest.approx(
        0.7, rel=1e-9
    )


def test_index_exceeds_incumbent_iff_ei_per_cost_exceeds_lambda():
    gen = torch.Generator().manual_seed(1)
    mean = torch.randn(500, dtype=D, generator=gen)
    sigma = torch.rand(500, dtype=D, generator=gen) + 0.01
    cost = torch.rand(500, dtype=D, generator=gen) * 0.5 + 1e-3
    best, lmbda = 0.4, 0.8
    g = gittins_index(mean, sigma, cost, lmbda=lmbda)
    log_eipc = log_expected_improvement_at(mean, sigma, best) - torch.log(cost)
    # the two tests agree wherever neither sits on its threshold (rounding aside)
    clear = ((log_eipc - math.log(lmbda)).abs() > 1e-9) & ((g - best).abs() > 1e-9)
    assert int(clear.sum()) > 480
    assert bool(((g > best) == (log_eipc > math.log(lmbda)))[clear].all())


def test_bad_input():
    one = torch.tensor(1.0, dtype=D)
    with pytest.raises(ValueError, match="cost"):
        gittins_index(one, one, 0.0)
    with pytest.raises(ValueError, match="cost"):
        gittins_index(one, one, torch.tensor([0.1, -1.0], dtype=D))
    with pytest.raises(ValueError, match="sigma"):
        gittins_index(one, torch.tensor(0.0, dtype=D), 0.1)
    with pytest.raises(ValueError, match="lmbda"):
        gittins_index(one, one, 0.1, lmbda=0.0)
    with pytest.raises(ValueError, match="lmbda"):
        gittins_index(one, one, 0.1, lmbda=float("nan"))
