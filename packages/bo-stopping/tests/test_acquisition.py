import inspect
import math

import pytest
import torch
from bo_stopping import (
    PBGI,
    FixedCost,
    GPFittingWarning,
    KnownCost,
    LogEIPC,
    ModelCost,
    ModelledCost,
    as_cost,
    fit_gp,
    gittins_index,
)
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.acquisition.cost_aware import GenericCostAwareUtility, InverseCostWeightedUtility
from botorch.acquisition.input_constructors import get_acqf_input_constructor
from botorch.acquisition.objective import ScalarizedPosteriorTransform
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.cost import AffineFidelityCostModel, FixedCostModel
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from botorch.utils.datasets import SupervisedDataset

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
    # the two tests agree wherever neither sits on its threshold (rounding aside)
    clear = (log_eipc.abs() > 1e-9) & ((g - Y.max()).abs() > 1e-9)
    assert int(clear.sum()) > 150
    assert bool(((g > Y.max()) == (log_eipc > 0))[clear].all())
    assert bool((g > Y.max()).any()) and bool((g <= Y.max()).any())


def test_work_with_optimize_acqf_continuous_and_discrete(model_data):
    model, _, Y, bounds = model_data
    for acqf in (PBGI(model, cost=cost_fn), LogEIPC(model, best_f=Y.max(), cost=cost_fn)):
        x, v = optimize_acqf(acqf, bounds, q=1, num_restarts=2, raw_samples=32)
        assert x.shape == (1, 2) and torch.all((x >= 0) & (x <= 1))
        grid = torch.rand(64, 2, dtype=D, generator=torch.Generator().manual_seed(4))
        assert float(v.detach()) >= float(acqf(grid.unsqueeze(1)).max()) - 1e-6
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


def test_botorch_cost_models_are_costs(model_data):
    model, _, Y, _ = model_data
    Xt = torch.rand(6, 1, 2, dtype=D, generator=torch.Generator().manual_seed(6))
    affine = AffineFidelityCostModel({1: 2.0}, fixed_cost=0.5)
    want = 0.5 + 2.0 * Xt[:, 0, 1]
    cases = [
        (FixedCostModel(torch.tensor([0.3], dtype=D)), torch.full((6,), 0.3, dtype=D)),
        (affine, want),
        (InverseCostWeightedUtility(affine), want),
    ]
    for cost, c in cases:
        got = LogEIPC(model, best_f=Y.max(), cost=cost)(Xt)
        ref = LogExpectedImprovement(model, best_f=Y.max())(Xt) - torch.log(c)
        torch.testing.assert_close(got, ref)
        post = model.posterior(Xt)
        g = gittins_index(post.mean.reshape(-1), post.variance.sqrt().reshape(-1), c)
        torch.testing.assert_close(PBGI(model, cost=cost)(Xt), g)
    # a GP fitted on log cost, as BoTorch's log-scale utility uses it
    Xc = torch.rand(10, 2, dtype=D, generator=torch.Generator().manual_seed(7))
    log_c = SingleTaskGP(Xc, (Xc[:, :1] - 2.0))
    if "log" in inspect.signature(InverseCostWeightedUtility).parameters:  # newer BoTorch
        cost = as_cost(InverseCostWeightedUtility(log_c, log=True))
    else:
        cost = ModelCost(log_c, log=True)
    assert isinstance(cost, ModelCost) and cost.log
    mean = log_c.posterior(Xt).mean.reshape(-1)
    torch.testing.assert_close(cost.log_cost(Xt.squeeze(1)), mean)
    with pytest.raises(TypeError, match="does not expose"):
        as_cost(GenericCostAwareUtility(lambda X, deltas: deltas))
    with pytest.raises(ValueError, match="one output"):
        ModelCost(FixedCostModel(torch.tensor([0.3, 0.4], dtype=D)))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_nonpositive_or_nan_costs_raise_inside_the_acquisitions(model_data, bad):
    model, _, Y, _ = model_data
    Xt = torch.rand(4, 1, 2, dtype=D, generator=torch.Generator().manual_seed(8))

    def cost(X):
        c = 0.1 + X[..., 0]
        return torch.where(X[..., 0] == Xt[2, 0, 0], torch.full_like(c, bad), c)

    for acqf in (PBGI(model, cost=cost), LogEIPC(model, best_f=Y.max(), cost=cost)):
        with pytest.raises(ValueError, match="cost must be finite and > 0"):
            acqf(Xt)
    with pytest.raises(ValueError, match="shape"):
        PBGI(model, cost=lambda X: torch.ones((*X.shape[:-1], 1), dtype=X.dtype))(Xt)


def test_posterior_transform_scalarizes_a_two_output_model():
    gen = torch.Generator().manual_seed(9)
    X = torch.rand(10, 2, dtype=D, generator=gen)
    Y = torch.stack([torch.sin(4 * X[:, 0]), X[:, 1] ** 2], -1)
    two = ModelListGP(SingleTaskGP(X, Y[:, :1]), SingleTaskGP(X, Y[:, 1:]))
    w = torch.tensor([0.7, 0.3], dtype=D)
    tf = ScalarizedPosteriorTransform(weights=w)
    Xt = torch.rand(5, 1, 2, dtype=D, generator=gen)
    post = tf(two.posterior(Xt))
    mean, sd = post.mean.reshape(-1), post.variance.sqrt().reshape(-1)
    g = PBGI(two, cost=0.05, posterior_transform=tf)(Xt)
    torch.testing.assert_close(g, gittins_index(mean, sd, 0.05))
    best = float((Y @ w).max())
    got = LogEIPC(two, best_f=best, cost=0.05, posterior_transform=tf)(Xt)
    want = LogExpectedImprovement(two, best_f=best, posterior_transform=tf)(Xt) - math.log(0.05)
    torch.testing.assert_close(got, want)


def test_input_constructors_for_ax(model_data):
    model, X, Y, _ = model_data
    data = SupervisedDataset(X, Y.unsqueeze(-1), feature_names=["a", "b"], outcome_names=["y"])
    for cls in (PBGI, LogEIPC):
        kw = get_acqf_input_constructor(cls)(model=model, training_data=data, cost=0.2, lmbda=0.5)
        acqf = cls(**kw)
        assert float(acqf.best_f) == pytest.approx(float(Y.max()))
        assert acqf.lmbda == pytest.approx(0.5)
        assert acqf(X[:3].unsqueeze(1)).shape == (3,)


def test_fit_gp_validates_and_warns(model_data, monkeypatch):
    _, X, Y, bounds = model_data
    bad = X.clone()
    bad[0, 0] = float("inf")
    with pytest.raises(ValueError, match="X must be finite"):
        fit_gp(bad, Y, bounds)
    with pytest.raises(ValueError, match="Y must be finite"):
        fit_gp(X, torch.full_like(Y, float("nan")), bounds)
    with pytest.raises(ValueError, match="rows"):
        fit_gp(X, Y[:-1], bounds)
    with pytest.raises(ValueError, match="columns"):
        fit_gp(X, Y, torch.tensor([[0.0], [1.0]], dtype=D))
    import bo_stopping.gp as gp_module
    from botorch.exceptions.errors import ModelFittingError

    def fail(mll, **kw):
        raise ModelFittingError("all attempts failed")

    monkeypatch.setattr(gp_module, "fit_gpytorch_mll", fail)
    with pytest.warns(GPFittingWarning, match="keeping the prior"):
        model = fit_gp(X, Y, bounds)
    assert model.posterior(X[:2].unsqueeze(1)).mean.shape == (2, 1, 1)


def test_fit_gp_warm_start_and_conditioning_only(model_data):
    model, X, Y, bounds = model_data
    extra = torch.rand(3, 2, dtype=D, generator=torch.Generator().manual_seed(10))
    X2, Y2 = torch.cat([X, extra]), torch.cat([Y, torch.sin(6 * extra[:, 0]) + extra[:, 1] ** 2])
    kept = fit_gp(X2, Y2, bounds, hyperparameters_from=model, optimize=False)
    torch.testing.assert_close(kept.covar_module.lengthscale, model.covar_module.lengthscale)
    assert kept.train_inputs[0].shape[0] == X2.shape[0]
    # the conditioned GP interpolates its data (noise is small)
    pred = kept.posterior(X2.unsqueeze(1)).mean.reshape(-1)
    assert float((pred - Y2).abs().max()) < 0.1
