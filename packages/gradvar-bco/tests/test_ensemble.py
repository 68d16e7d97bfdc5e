"""The ensemble: one base reduces to optimistic OGD; weights are a distribution."""

import numpy as np
import pytest
from gradvar_bco import Ball, GradVarEnsemble, Simplex, TwoPointOptimisticBCO


def _quad(x, c):
    return 0.5 * np.sum((x - c) ** 2, axis=-1)


@pytest.mark.parametrize("optimistic", [True, False])
def test_one_base_is_the_fixed_step_learner(optimistic):
    dom, c = Ball(3), np.array([0.2, -0.3, 0.1])
    ens = GradVarEnsemble(dom, 0.05, 1, 0.02, optimistic=optimistic, n_runs=4, seed=3)
    one = TwoPointOptimisticBCO(dom, 0.05, 0.02, optimistic=optimistic, n_runs=4, seed=3)
    for _ in range(100):
        a1, a2 = ens.ask()
        b1, b2 = one.ask()
        np.testing.assert_allclose(a1, b1, atol=1e-12)
        ens.tell(_quad(a1, c), _quad(a2, c))
        one.tell(_quad(b1, c), _quad(b2, c))
    np.testing.assert_allclose(ens.weights, 1.0)


def test_weights_and_queries_stay_valid():
    dom = Simplex(4)
    ens = GradVarEnsemble(dom, 0.5 * dom.inner_radius, 5, 1e-3, n_runs=3, seed=1)
    r = np.array([1.0, 1.2, 0.9, 1.05])
    for _ in range(200):
        x1, x2 = ens.ask()
        assert np.all(dom.contains(x1)) and np.all(dom.contains(x2))
        ens.tell(-np.log(x1 @ r), -np.log(x2 @ r))
        w = ens.weights
        assert np.all(w >= 0)
        np.testing.assert_allclose(w.sum(axis=1), 1.0)


def test_ensemble_bad_input():
    with pytest.raises(ValueError, match="n_bases"):
        GradVarEnsemble(Ball(2), 0.1, 0, 0.1)
    with pytest.raises(ValueError, match="eta_min"):
        GradVarEnsemble(Ball(2), 0.1, 3, 0.0)
    with pytest.raises(ValueError, match="delta"):
        GradVarEnsemble(Ball(2), 2.0, 3, 0.1)
    ens = GradVarEnsemble(Ball(2), 0.1, 3, 0.1)
    with pytest.raises(RuntimeError, match="before ask"):
        ens.tell(0.0, 0.0)
    ens.ask()
    with pytest.raises(RuntimeError, match="twice"):
        ens.ask()
    with pytest.raises(ValueError, match="f1"):
        ens.tell(np.nan, 0.0)
