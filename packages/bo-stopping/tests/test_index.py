import math

import pytest
import torch
from bo_stopping import gittins_index, log_expected_improvement_at, solve_scaled_index
from botorch.acquisition.analytic import _ei_helper, _log_ei_helper

D = torch.float64


def ei(mean, sigma, g):
    return sigma * _ei_helper((mean - g) / sigma)


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
    err = (_log_ei_helper(u) - y).abs() / (1 + y.abs())
    assert float(err.max()) < 1e-12
    y32 = torch.linspace(-80.0, 80.0, 1001)
    u32 = solve_scaled_index(y32)
    assert float(((_log_ei_helper(u32) - y32).abs() / (1 + y32.abs())).max()) < 1e-5


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
    assert torch.equal(g > best, log_eipc > math.log(lmbda))


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
