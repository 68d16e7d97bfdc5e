import math

import pytest
import torch
from bo_stopping import PBGI, FixedCost, KnownCost, LogEIPC, ModelledCost, fit_gp, gittins_index
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.optim import optimize_acqf, optimize_acqf_discrete

D = torch.float64


@pytest.fixture(scope="module")
def model_data():
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(8, 2, dtype=D, generator=gen)
    Y = torch.sin(6 * X[:, 0]) + X[:, 1] ** 2
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=D)
    return fit_gp(X, Y, bounds), X, Y, bounds


def cost_fn(X):
    return 0.05 * torch.exp(X[..., 0])


def test_pbgi_equals_index_of_the_posterior(model_data):
    model, _, _Y, _ = model_data
    Xt = torch.rand(16, 1, 2, dtype=D, generator=torch.Generator().manual_seed(1))
    acqf = PBGI(model, cost=cost_fn, lmbda=0.5)
    post = model.posterior(Xt)
    expected = gittins_index(
        post.mean.reshape(-1), post.variance.sqrt().reshape(-1), cost_fn(Xt.squeeze(1)), lmbda=0.5
    )
    torch.testing.assert_close(acqf(Xt), expected)


def test_pbgi_gradient_in_x_matches_finite_differences(model_data):
    model, *_ = model_data
    acqf = PBGI(model, cost=cost_fn)
    X = torch.tensor([[[0.3, 0.7]], [[0.9, 0.1]]], dtype=D, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: acqf(x), (X,), eps=1e-6, atol=1e-6)


def test_logeipc_is_logei_minus_log_cost(model_data):
    model, _, Y, _ = model_data
    Xt = torch.rand(10, 1, 2, dtype=D, generator=torch.Generator().manual_seed(2))
    got = LogEIPC(model, best_f=Y.max(), cost=cost_fn, lmbda=2.0)(Xt)
    want = LogExpectedImprovement(model, best_f=Y.max())(Xt) - torch.log(cost_fn(Xt.squeeze(1)))
    torch.testing.assert_close(got, want - math.log(2.0))


def test_pbgi_and_logeipc_share_the_stopping_threshold(model_data):
    model, _, Y, _ = model_data
    Xt = torch.rand(200, 1, 2, dtype=D, generator=torch.Generator().manual_seed(3))
    g = PBGI(model, cost=cost_fn)(Xt)
    log_eipc = LogEIPC(model, best_f=Y.max(), cost=cost_fn)(Xt)
    assert torch.equal(g > Y.max(), log_eipc > 0)


def test_work_with_optimize_acqf_continuous_and_discrete(model_data):
    model, _, Y, bounds = model_data
    for acqf in (PBGI(model, cost=cost_fn), LogEIPC(model, best_f=Y.max(), cost=cost_fn)):
        x, v = optimize_acqf(acqf, bounds, q=1, num_restarts=2, raw_samples=32)
        assert x.shape == (1, 2) and torch.all((x >= 0) & (x <= 1))
        grid = torch.rand(64, 2, dtype=D, generator=torch.Generator().manual_seed(4))
        assert float(v) >= float(acqf(grid.unsqueeze(1)).max()) - 1e-6
        _xd, vd = optimize_acqf_discrete(acqf, q=1, choices=grid)
        assert float(vd) == pytest.approx(float(acqf(grid.unsqueeze(1)).max()))


def test_pbgi_minimize_flips_the_mean(model_data):
    model, *_ = model_data
    Xt = torch.rand(5, 1, 2, dtype=D, generator=torch.Generator().manual_seed(5))
    post = model.posterior(Xt)
    got = PBGI(model, cost=0.1, maximize=False)(Xt)
    want = gittins_index(-post.mean.reshape(-1), post.variance.sqrt().reshape(-1), 0.1)
    torch.testing.assert_close(got, want)


def test_costs():
    X = torch.rand(7, 3, dtype=D)
    assert torch.allclose(FixedCost(0.3)(X), torch.full((7,), 0.3, dtype=D))
    assert torch.allclose(KnownCost(lambda x: x.sum(-1) + 1)(X), X.sum(-1) + 1)
    assert torch.allclose(KnownCost(lambda x: x.sum(-1), log=True).log_cost(X), X.sum(-1))
    bounds = torch.stack([torch.zeros(3), torch.ones(3)]).to(D)
    true = torch.exp(2 * X[:, 0])
    modelled = ModelledCost(X, true, bounds)
    assert modelled(X).shape == (7,)
    assert torch.allclose(modelled.log_cost(X), torch.log(true), atol=0.2)


def test_bad_input(model_data):
    model, X, _Y, bounds = model_data
    with pytest.raises(ValueError, match="cost"):
        PBGI(model, cost=0.0)
    with pytest.raises(ValueError, match="cost"):
        FixedCost(-1.0)
    with pytest.raises(TypeError, match="cost"):
        PBGI(model, cost="cheap")
    with pytest.raises(ValueError, match="lmbda"):
        LogEIPC(model, best_f=0.0, cost=1.0, lmbda=-1.0)
    with pytest.raises(ValueError, match="costs"):
        ModelledCost(X, torch.zeros(X.shape[0], dtype=D), bounds)
