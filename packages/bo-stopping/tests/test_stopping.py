import math

import pytest
import torch
from bo_stopping import (
    CostAwareStopping,
    ExpectedImprovementThreshold,
    FixedBudget,
    ProbabilityOfImprovementThreshold,
    RegretGapStopping,
    gittins_index,
    log_expected_improvement_at,
    run_bo,
)
from bo_stopping.problems import KnownPriorGP

D = torch.float64


def pandora(mu, sigma, cost, y0, n_samples, order_by, stop_rule, seed):
    """Simulate independent Gaussian boxes; return mean of best - total cost (utility)."""
    gen = torch.Generator().manual_seed(seed)
    values = mu + sigma * torch.randn(n_samples, mu.numel(), dtype=D, generator=gen)
    best = torch.full((n_samples,), y0, dtype=D)
    paid = torch.zeros(n_samples, dtype=D)
    opened = torch.zeros(n_samples, mu.numel(), dtype=torch.bool)
    active = torch.ones(n_samples, dtype=torch.bool)
    for step in range(mu.numel()):
        score = order_by(best).expand(n_samples, -1).masked_fill(opened, -math.inf)
        pick = score.argmax(-1)
        go = active & ~stop_rule(best, opened, step)
        rows = torch.nonzero(go).flatten()
        opened[rows, pick[rows]] = True
        paid[rows] += cost[pick[rows]]
        best[rows] = torch.maximum(best[rows], values[rows, pick[rows]])
        active = go
    return best - paid


@pytest.fixture(scope="module")
def boxes():
    gen = torch.Generator().manual_seed(0)
    n = 6
    mu = torch.randn(n, dtype=D, generator=gen) * 0.5
    sigma = torch.rand(n, dtype=D, generator=gen) + 0.3
    cost = torch.rand(n, dtype=D, generator=gen) * 0.3 + 0.02
    return mu, sigma, cost


def test_gittins_policy_with_the_stopping_rule_is_optimal_on_pandoras_box(boxes):
    """Weitzman: the index policy + 'stop when best >= max index' maximizes E[best - cost]."""
    mu, sigma, cost = boxes
    y0, n = 0.0, 40_000
    g = gittins_index(mu, sigma, cost)

    def index_stop(best, opened, step):
        return best.unsqueeze(-1).expand_as(opened).ge(g).logical_or(opened).all(-1)

    u_gittins = pandora(mu, sigma, cost, y0, n, lambda b: g, index_stop, seed=1)
    # closed form of the optimal value (Kleinberg, Waggoner & Weyl 2016): E[max(y0, min(X_i, g_i))]
    gen = torch.Generator().manual_seed(2)
    values = mu + sigma * torch.randn(n, mu.numel(), dtype=D, generator=gen)
    capped = torch.minimum(values, g).max(-1).values.clamp_min(y0)
    se = math.sqrt(u_gittins.var() / n + capped.var() / n)
    assert abs(float(u_gittins.mean() - capped.mean())) < 4 * se
    # no fixed number of openings (in index order) does better, nor stopping at once
    for k in (0, 1, 2, 3, mu.numel()):
        u_k = pandora(
            mu,
            sigma,
            cost,
            y0,
            n,
            lambda b: g,
            lambda b, o, s, k=k: torch.full_like(b, s >= k, dtype=torch.bool),
            seed=1,
        )
        se_k = math.sqrt(u_gittins.var() / n + u_k.var() / n)
        assert float(u_gittins.mean()) >= float(u_k.mean()) - 3 * se_k


def test_logeipc_with_the_rule_never_loses_to_stopping_at_once(boxes):
    """Each opening has EI > cost, so E[best - cost] rises with every step taken."""
    mu, sigma, cost = boxes
    y0, n = 0.3, 40_000

    def log_eipc(best):
        return log_expected_improvement_at(mu, sigma, best.unsqueeze(-1)) - torch.log(cost)

    def rule(best, opened, step):
        return log_eipc(best).masked_fill(opened, -math.inf).max(-1).values <= 0

    u = pandora(mu, sigma, cost, y0, n, log_eipc, rule, seed=3)
    assert float(u.mean()) > y0 + 4 * math.sqrt(u.var() / n)


def toy_problem():
    def objective(x):
        return -((x - 0.3) ** 2).sum() * 4.0

    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=D)
    return objective, bounds


@pytest.mark.parametrize("acq", ["pbgi", "logeipc"])
def test_rule_stops_at_once_when_costs_dwarf_the_objective(acq):
    objective, bounds = toy_problem()
    res = run_bo(
        objective,
        bounds,
        100.0,
        acquisition=acq,
        stopping=CostAwareStopping(),
        max_evaluations=5,
        n_init=4,
        optimum=0.0,
        num_restarts=1,
        raw_samples=16,
        fit_model=KnownPriorGP(0.3, 1.0),
    )
    assert res.stopped_at == 0 and res.stop_reason == "cost-aware (ours)"
    assert res.regret.shape == (1,)
    # and keeps going while evaluations are nearly free
    res = run_bo(
        objective,
        bounds,
        1e-9,
        acquisition=acq,
        stopping=CostAwareStopping(),
        max_evaluations=3,
        n_init=4,
        optimum=0.0,
        num_restarts=1,
        raw_samples=16,
        fit_model=KnownPriorGP(0.3, 1.0),
    )
    assert res.stopped_at == 3 and res.stop_reason == "max_evaluations"


def test_monitored_stop_equals_acting_stop_and_regret_is_recorded():
    objective, bounds = toy_problem()

    def cost(X):
        return 0.02 * (1 + X[..., 0])

    grid = torch.rand(64, 2, dtype=D, generator=torch.Generator().manual_seed(11))
    kw = dict(
        acquisition="logeipc",
        max_evaluations=6,
        n_init=4,
        optimum=0.0,
        candidates=grid,
        seed=3,
    )
    rules = [
        CostAwareStopping(),
        ExpectedImprovementThreshold(0.05),
        ProbabilityOfImprovementThreshold(0.2),
        RegretGapStopping(0.5),
        FixedBudget(3),
    ]
    monitored = run_bo(objective, bounds, cost, monitor=rules, **kw)
    ours = monitored.stop_step("cost-aware (ours)")
    assert monitored.stop_times["cost-aware (ours)"] is not None  # the rule fires here
    acting = run_bo(objective, bounds, cost, stopping=CostAwareStopping(), **kw)
    assert acting.stopped_at == ours
    assert monitored.stop_step("fixed budget (3)") == 3
    torch.testing.assert_close(acting.X, monitored.X[: acting.X.shape[0]])
    # regret bookkeeping: R = f* - best + cumulative cost, best nondecreasing, cost increasing
    assert (monitored.best[1:] >= monitored.best[:-1]).all()
    assert (monitored.cumulative_cost[1:] > monitored.cumulative_cost[:-1]).all()
    expected = 0.0 - monitored.best + monitored.cumulative_cost
    assert monitored.regret == pytest.approx(expected)
    assert monitored.cumulative_cost[0] == pytest.approx(float(cost(monitored.X[:4]).sum()))


def test_observed_costs_and_discrete_candidates():
    cands = torch.rand(8, 2, dtype=D, generator=torch.Generator().manual_seed(0))
    calls = []

    def objective(x):
        calls.append(x)
        return float(-(x**2).sum()), float(0.01 + x[0])

    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=D)
    res = run_bo(
        objective,
        bounds,
        "observed",
        acquisition="pbgi",
        candidates=cands,
        max_evaluations=10,
        n_init=4,
        monitor=[CostAwareStopping()],
    )
    assert res.stop_reason == "candidates exhausted" and res.X.shape == (8, 2)
    assert len({tuple(x.tolist()) for x in calls}) == 8  # each candidate once


def test_bad_input():
    objective, bounds = toy_problem()
    with pytest.raises(ValueError, match="lower < upper"):
        run_bo(objective, torch.tensor([[0.0, 1.0], [1.0, 1.0]]), 0.1)
    with pytest.raises(ValueError, match="bounds"):
        run_bo(objective, torch.zeros(3, 2), 0.1)
    with pytest.raises(ValueError, match="cost"):
        run_bo(objective, bounds, 0.0)
    with pytest.raises(ValueError, match="cost must be > 0"):
        run_bo(objective, bounds, lambda X: -X.sum(-1), max_evaluations=0)
    with pytest.raises(ValueError, match="objective value must be finite"):
        run_bo(lambda x: float("nan"), bounds, 0.1)
    with pytest.raises(ValueError, match="acquisition"):
        run_bo(objective, bounds, 0.1, acquisition="ucb")
    with pytest.raises(ValueError, match="n_init"):
        run_bo(objective, bounds, 0.1, n_init=1)
    with pytest.raises(TypeError, match="objective"):
        run_bo("f", bounds, 0.1)
    with pytest.raises(ValueError, match="distinct"):
        run_bo(objective, bounds, 0.1, monitor=[CostAwareStopping(), CostAwareStopping()])
    with pytest.raises(ValueError, match="threshold"):
        ProbabilityOfImprovementThreshold(1.5)
    with pytest.raises(ValueError, match="n_evaluations"):
        FixedBudget(-1)
    with pytest.raises(ValueError, match="lmbda"):
        CostAwareStopping(0.0)
    with pytest.raises(ValueError, match="refit_every"):
        run_bo(objective, bounds, 0.1, refit_every=0)
    with pytest.raises(TypeError, match="max_evaluations"):
        run_bo(objective, bounds, 0.1, max_evaluations=2.5)
    assert FixedBudget(0).name == "stop at once"


def test_rule_at_lmbda_equals_rule_on_scaled_cost():
    """CostAwareStopping(lmbda) on cost c stops exactly when CostAwareStopping() on lmbda c does."""
    objective, bounds = toy_problem()
    grid = torch.rand(48, 2, dtype=D, generator=torch.Generator().manual_seed(12))

    def shape(X):
        return 1 + X[..., 0]

    kw = dict(
        acquisition="logei",
        max_evaluations=8,
        n_init=4,
        candidates=grid,
        seed=1,
        fit_model=KnownPriorGP(0.3, 1.0),
    )
    rules = [CostAwareStopping(lmbda) for lmbda in (1e-3, 3e-3, 1e-2, 3e-2)]
    for i, r in enumerate(rules):
        r.name = f"ours {i}"
    on_shape = run_bo(objective, bounds, shape, monitor=rules, **kw)
    for i, lmbda in enumerate((1e-3, 3e-3, 1e-2, 3e-2)):
        scaled = run_bo(objective, bounds, lambda X, a=lmbda: a * shape(X),
                        monitor=[CostAwareStopping()], **kw)  # fmt: skip
        assert on_shape.stop_times[f"ours {i}"] == scaled.stop_times["cost-aware (ours)"]


def test_refit_every_keeps_hyperparameters_between_refits(monkeypatch):
    import bo_stopping.gp as gp_module
    import bo_stopping.loop as loop_module

    calls = []
    real = gp_module.fit_gp

    def spy(X, Y, bounds, **kw):
        calls.append(kw.get("optimize", True))
        return real(X, Y, bounds, **kw)

    objective, bounds = toy_problem()
    grid = torch.rand(32, 2, dtype=D, generator=torch.Generator().manual_seed(13))
    kw = dict(acquisition="pbgi", max_evaluations=6, n_init=4, candidates=grid, refit_every=3)
    # a custom fit_model is called as fit_model(X, Y, bounds) at every step
    run_bo(objective, bounds, 0.01, fit_model=lambda X, Y, b: spy(X, Y, b), **kw)
    assert calls == [True] * 7
    calls.clear()
    monkeypatch.setattr(loop_module, "fit_gp", spy)
    monkeypatch.setattr(gp_module, "fit_gp", spy)  # the observed-cost GP's fit

    def observed(x):
        return float(objective(x)), 0.01 + float(x[0])

    res = run_bo(observed, bounds, "observed", fit_model=spy, **kw)
    assert res.stopped_at == 6
    # objective GP and cost GP: refits at steps 0, 3, 6; conditioning only in between
    block = [True, True, False, False, False, False]
    assert calls == block + block + [True, True]
