import numpy as np
import pytest
import scipy.sparse as sp
from enmf.init import exterior_point
from enmf.path import _pbcd_step, path_to_orthant


def exterior(rng, n=60, m=40, r=4):
    X = rng.random((n, m))
    W0, H0, _ = exterior_point(X, r, np.random.default_rng(0), rotation="l1")
    return X, W0, H0


def test_path_ends_on_the_orthant_within_steps_plus_one(rng):
    X, W0, H0 = exterior(rng)
    assert min(W0.min(), H0.min()) < 0  # the start is exterior
    for steps in (1, 10, 100):
        path = path_to_orthant(X, W0, H0, steps=steps)
        assert path.W.min() >= 0 and path.H.min() >= 0
        assert 1 <= path.n_steps <= steps + 1


def test_feasible_start_is_returned_unchanged(rng):
    X = rng.random((20, 10))
    W, H = rng.random((20, 3)), rng.random((3, 10))
    path = path_to_orthant(X, W, H)
    assert path.n_steps == 0
    np.testing.assert_array_equal(path.W, W)
    np.testing.assert_array_equal(path.H, H)


def test_zero_steps_clips_at_once(rng):
    X, W0, H0 = exterior(rng)
    path = path_to_orthant(X, W0, H0, steps=0)
    np.testing.assert_array_equal(path.W, np.maximum(W0, 0))
    np.testing.assert_array_equal(path.H, np.maximum(H0, 0))


def test_gradual_path_fits_better_than_clipping_on_digits():
    """The point of the path: re-fitting while lifting keeps the product near X."""
    from sklearn.datasets import load_digits

    X = load_digits().data[:500]
    W0, H0, _ = exterior_point(X, 10, np.random.default_rng(0), rotation="l1")
    walked = path_to_orthant(X, W0, H0, steps=100)
    clipped = path_to_orthant(X, W0, H0, steps=0)
    assert np.linalg.norm(X - walked.W @ walked.H) < np.linalg.norm(X - clipped.W @ clipped.H)


def test_sparse_and_dense_paths_agree(rng):
    X, W0, H0 = exterior(rng)
    a = path_to_orthant(X, W0, H0, steps=20)
    b = path_to_orthant(sp.csr_matrix(X), W0, H0, steps=20)
    np.testing.assert_allclose(a.W, b.W, atol=1e-10)
    np.testing.assert_allclose(a.H, b.H, atol=1e-10)


def test_pbcd_step_is_an_exact_line_search_per_row(rng):
    """For positive rows that do not overshoot, the step minimizes the row objective exactly."""
    C = rng.random((3, 12))
    x = rng.random((5, 12))
    F = 1.0 + rng.random((5, 3))
    B, A = C @ C.T, x @ C.T
    G = F @ B - A
    F0 = F.copy()
    _pbcd_step(F, G, B)
    rows = [i for i in range(5) if F[i].min() > 0]  # rows where no projection happened
    assert rows

    def f(row, alpha):
        w = F0[row] - alpha * G[row]
        return 0.5 * np.sum((x[row] - w @ C) ** 2)

    for i in rows:
        alpha = (F0[i] - F[i]) @ G[i] / (G[i] @ G[i])
        for a in (0.9 * alpha, 1.1 * alpha):
            assert f(i, alpha) <= f(i, a) + 1e-12
        assert f(i, alpha) == pytest.approx(0.5 * np.sum((x[i] - F[i] @ C) ** 2), rel=1e-10)
