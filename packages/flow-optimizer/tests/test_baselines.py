import numpy as np
import pytest
import torch
from flow_optimizer.baselines import cma_es, multistart_adam, random_search
from flow_optimizer.problems import family


@pytest.fixture
def sphere_like():
    return family("rosenbrock").sample_instance(np.random.default_rng(0), 3)


def test_budgets_are_respected(sphere_like):
    p = sphere_like
    assert random_search(p, 100, batch=32).evaluations == 100
    assert multistart_adam(p, 100, n_starts=32).evaluations == 96
    assert cma_es(p, 100).evaluations <= 100


def test_reported_value_is_the_value_at_the_point(sphere_like):
    p = sphere_like
    for res in (random_search(p, 64), multistart_adam(p, 64, n_starts=8), cma_es(p, 64)):
        f = float(p.f(torch.as_tensor(res.x, dtype=torch.float64)[None])[0])
        assert abs(f - res.f) < 1e-9 * max(1.0, abs(f))
        assert np.all(res.x >= -5 - 1e-12) and np.all(res.x <= 5 + 1e-12)
        assert all(a >= b for a, b in zip(res.history, res.history[1:], strict=False))


def test_adam_descends_on_a_smooth_problem(sphere_like):
    p = sphere_like
    res = multistart_adam(p, 2000, n_starts=4, lr=0.01)
    assert res.f < 0.05 * res.history[0]


def test_random_search_rejects_a_non_positive_batch(sphere_like):
    with pytest.raises(ValueError, match="batch"):
        random_search(sphere_like, 10, batch=0)


@pytest.mark.parametrize("name", ["OnePlusOne", "CMA", "SPSA"])
def test_nevergrad_budget_point_and_bounds(sphere_like, name):
    pytest.importorskip("nevergrad")
    from flow_optimizer.baselines import nevergrad_minimize

    p = sphere_like
    res = nevergrad_minimize(p, 60, optimizer=name, seed=3)
    assert res.evaluations == 60 and len(res.history) == 60
    f = float(p.f(torch.as_tensor(res.x, dtype=torch.float64)[None])[0])
    assert abs(f - res.f) < 1e-9 * max(1.0, abs(f))
    assert np.all(res.x >= -5 - 1e-12) and np.all(res.x <= 5 + 1e-12)
    assert all(a >= b for a, b in zip(res.history, res.history[1:], strict=False))
    assert res.f < res.history[0]  # it moved
    again = nevergrad_minimize(p, 60, optimizer=name, seed=3)
    np.testing.assert_allclose(again.x, res.x, rtol=0, atol=1e-12)  # seeded


def test_nevergrad_rejects_an_unknown_optimizer(sphere_like):
    pytest.importorskip("nevergrad")
    from flow_optimizer.baselines import nevergrad_minimize

    with pytest.raises(ValueError, match="optimizer"):
        nevergrad_minimize(sphere_like, 10, optimizer="NoSuchOptimizer")


def test_start_points_do_not_copy_the_instance_draws():
    """The arm's target comes from default_rng(seed); a start from the same stream would
    be that target's joint angles (gap 0 before any step)."""
    p = family("arm-ik").sample_instance(np.random.default_rng(7), 4)
    res = cma_es(p, 1, seed=7)  # budget below one generation: only the start point
    assert res.evaluations == 0
    theta = np.random.default_rng(7).uniform(-2.0, 2.0, 4)
    assert np.abs(res.x - theta).max() > 1e-3
