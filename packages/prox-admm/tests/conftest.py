import numpy as np
import pytest


@pytest.fixture
def data():
    """A small standardized regression problem (diabetes, 120 rows)."""
    from icml26_core.datasets import load_tabular

    X, y, _ = load_tabular("diabetes")
    X, y = X[:120], y[:120]
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std()
    return np.asarray(X), np.asarray(y)
