import numpy as np
import pytest
from hj_prox.experiment import _PairTV, _prox_logsum_exact
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("hj-prox", tmp_path)
    assert result.claims


def test_pair_tv_prox_is_exact():
    # prox of lam |x0 - x1| + ||x - b||^2 / 2 on one pair against a fine grid search
    b, lam, t = np.array([0.3, -0.4]), 0.2, 0.7
    v = np.array([1.0, 0.2])
    p = _PairTV(2, 0, lam, b, None)(v, t)
    g = np.linspace(-2, 2, 801)
    X, Y = np.meshgrid(g, g, indexing="ij")
    H = lam * np.abs(X - Y) + 0.5 * ((X - b[0]) ** 2 + (Y - b[1]) ** 2)
    H += ((X - v[0]) ** 2 + (Y - v[1]) ** 2) / (2 * t)
    i, j = np.unravel_index(np.argmin(H), H.shape)
    np.testing.assert_allclose(p, [g[i], g[j]], atol=6e-3)


def test_logsum_prox_is_exact():
    lam, t = 0.3, 0.5
    v = np.array([-2.0, -0.2, 0.05, 0.4, 1.5])
    p = _prox_logsum_exact(lam)(v, t)
    g = np.linspace(-3, 3, 60001)
    for vi, pi in zip(v, p, strict=True):
        h = lam * np.log1p(np.abs(g) / 0.1) + (g - vi) ** 2 / (2 * t)
        assert abs(g[np.argmin(h)] - pi) < 1e-3
