import doctest

import moocore
import numpy as np
import pmsa_moco
import pmsa_moco.problem
import pmsa_moco.pymoo_problem
import pytest
import torch
from pmsa_moco import (
    MOTSPEnv,
    hypervolume,
    is_tour,
    pareto_front,
    scalarize,
    tour_costs,
    uniform_instances,
    uniform_prefs,
)


def _numpy_cost(coords, tour):
    m = coords.shape[-1] // 2
    out = []
    for j in range(m):
        xy = coords[tour, 2 * j : 2 * j + 2]
        out.append(np.linalg.norm(xy - np.roll(xy, -1, axis=0), axis=1).sum())
    return np.array(out)


@pytest.mark.parametrize("module", [pmsa_moco.problem, pmsa_moco.pymoo_problem])
def test_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module)
    assert attempted > 0 and failed == 0


@pytest.mark.parametrize("n_obj", [2, 3])
def test_tour_costs_match_numpy(n_obj):
    rng = np.random.default_rng(0)
    x = uniform_instances(3, 9, n_obj, seed=1)
    tours = np.stack([np.stack([rng.permutation(9) for _ in range(4)]) for _ in range(3)])
    got = tour_costs(x, tours).numpy()
    for b in range(3):
        for p in range(4):
            np.testing.assert_allclose(got[b, p], _numpy_cost(x[b], tours[b, p]), rtol=1e-5)


def test_tour_cost_is_invariant_to_start_and_direction():
    x = uniform_instances(1, 7, seed=2)
    t = np.array([3, 1, 6, 0, 2, 5, 4])
    variants = np.stack([t, np.roll(t, 3), t[::-1]])[None]
    c = tour_costs(x, variants).numpy()[0]
    np.testing.assert_allclose(c, np.repeat(c[:1], 3, axis=0), rtol=1e-5)


def test_env_masks_and_finishes_tours():
    env = MOTSPEnv(torch.rand(2, 6, 4))
    env.reset()
    assert env.mask.sum().item() == 2 * 6 * 5
    with pytest.raises(ValueError, match="revisits"):
        env.step(env.first)
    while not env.done:
        env.step(env.mask.float().argmax(-1))
    assert is_tour(env.tours, 6)
    assert not env.mask.any()
    np.testing.assert_allclose(env.objectives(), tour_costs(env.coords, env.tours))


def test_scalarizations():
    f = torch.tensor([[2.0, 4.0]])
    lam = torch.tensor([[0.25, 0.75]])
    assert float(scalarize(f, lam, "weighted_sum")) == pytest.approx(3.5)
    assert float(scalarize(f, lam, "tchebycheff")) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="method"):
        scalarize(f, lam, "pbi")


def test_pareto_front_keeps_exactly_the_nondominated_points():
    f = np.array([[1, 5], [2, 2], [3, 3], [5, 1], [2, 2], [1, 6]], float)
    np.testing.assert_allclose(pareto_front(f), [[1, 5], [2, 2], [5, 1]])


@pytest.mark.parametrize("m", [2, 3])
def test_hypervolume_equals_moocore_on_random_fronts(m):
    rng = np.random.default_rng(m)
    for _ in range(10):
        f = rng.random((30, m))
        ref = np.full(m, 1.1)
        assert hypervolume(f, ref) == pytest.approx(moocore.hypervolume(f, ref=ref), rel=1e-10)
    # points beyond the reference add nothing; normalization divides by the box
    f = np.array([[0.5, 0.5], [2.0, 0.1]])
    assert hypervolume(f, [1.0, 1.0], [0.0, 0.0]) == pytest.approx(0.25)


def test_uniform_prefs_on_the_simplex():
    p = uniform_prefs(101)
    assert p.shape == (101, 2)
    np.testing.assert_allclose(p.sum(1), 1.0)
    p3 = uniform_prefs(15, 3)
    assert p3.shape == (15, 3) and np.allclose(p3.sum(1), 1.0) and (p3 >= 0).all()
    with pytest.raises(ValueError, match="n_prefs"):
        uniform_prefs(14, 3)


def test_pymoo_problem_evaluates_a_known_tour():
    from pmsa_moco import MOTSPProblem

    sq = np.array([[0, 0, 0, 0], [1, 0, 0, 2], [1, 1, 2, 2], [0, 1, 2, 0]], float)
    prob = MOTSPProblem(sq)
    assert prob.n_var == 4 and prob.n_obj == 2
    out = {}
    prob._evaluate(np.array([[0, 1, 2, 3], [0, 2, 1, 3]]), out)
    diag = 2 * np.sqrt(2)
    np.testing.assert_allclose(out["F"], [[4, 8], [2 + diag, 4 + 2 * diag]])
    with pytest.raises(ValueError, match="one instance"):
        MOTSPProblem(np.zeros((2, 4, 4)))


def test_bad_tours_and_actions_name_the_argument():
    # these used to give torch's "index out of bounds" or silently truncate 0.7 to 0
    x = torch.rand(2, 5, 4)
    good = torch.arange(5).expand(2, 3, 5)
    with pytest.raises(ValueError, match=r"tours must hold node indices in 0\.\.4"):
        tour_costs(x, good + 10)
    with pytest.raises(ValueError, match="tours must hold node indices"):
        tour_costs(x, good - 1)
    with pytest.raises(ValueError, match="tours must hold integer"):
        tour_costs(x, good + 0.7)
    with pytest.raises(ValueError, match="coords must be a real numeric array"):
        tour_costs([["a", "b"]], good)
    assert not is_tour([[0.5, 1.2, 2.9]], 3)
    env = MOTSPEnv(x)
    with pytest.raises(ValueError, match="action must hold node indices"):
        env.step(torch.full((2, 5), 99))
    with pytest.raises(ValueError, match=r"action must have shape \(2, 5\)"):
        env.step(torch.ones(3))
    with pytest.raises(ValueError, match="start must hold node indices"):
        env.reset(torch.full((2, 5), 50))
    with pytest.raises(ValueError, match="prefs"):
        scalarize(torch.rand(4, 2), torch.rand(4, 3))
    assert scalarize(np.ones((4, 2)), np.full(2, 0.5)).shape == (4,)


def test_single_instance_baselines_reject_a_batch():
    # ws_lkh and random_tours used to take instance 0 of a batch silently
    from pmsa_moco.baselines import random_tours, ws_lkh

    x = np.random.default_rng(0).random((2, 6, 4))
    with pytest.raises(ValueError, match="one instance"):
        random_tours(x, 3)
    with pytest.raises(ValueError, match="one instance"):
        ws_lkh(x, [[0.5, 0.5]])
    assert random_tours(x[0], 3).shape == (3, 2)
