import numpy as np
import pytest
from sag_saga_iag import LinearModelProblem, reference_optimum


def _data(rng, n=60, d=5):
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    return X, X @ w + 0.3 * rng.normal(size=n)


@pytest.fixture
def ridge_problem():
    X, y = _data(np.random.default_rng(0))
    prob = LinearModelProblem(X, y, loss="squared", alpha=0.5)
    return prob, *reference_optimum(prob)


@pytest.fixture
def logistic_problem():
    X, y = _data(np.random.default_rng(1))
    prob = LinearModelProblem(X, np.sign(y), loss="logistic", alpha=0.2)
    return prob, *reference_optimum(prob)
