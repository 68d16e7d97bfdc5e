import numpy as np
import pytest
from enmf import rotate_to_orthant
from enmf.rotation import orthant_distance


def random_orthogonal(rng, r):
    Q, R = np.linalg.qr(rng.standard_normal((r, r)))
    return Q * np.sign(np.diag(R))


def test_rotation_is_orthogonal_keeps_product_and_descends(rng):
    U, V = rng.standard_normal((50, 5)), rng.standard_normal((30, 5))
    rot = rotate_to_orthant(U, V, max_iter=200, tol=0.0)
    np.testing.assert_allclose(rot.Q.T @ rot.Q, np.eye(5), atol=1e-12)
    np.testing.assert_allclose((U @ rot.Q) @ (V @ rot.Q).T, U @ V.T, atol=1e-10)
    hist = np.array(rot.history)
    assert np.all(np.diff(hist) <= 1e-12 * hist[0])
    expected = orthant_distance(U @ rot.Q) + orthant_distance(V @ rot.Q)
    assert rot.distance == pytest.approx(expected, rel=1e-12)


def test_finds_planted_rotation_of_nonnegative_factors(rng):
    """If U = W R and V = H^T R with W, H >= 0 and R orthogonal, a zero-distance Q exists."""
    W = rng.random((80, 3)) * (rng.random((80, 3)) < 0.6)
    H = rng.random((60, 3)) * (rng.random((60, 3)) < 0.6)
    W[:3] += np.eye(3)
    H[:3] += np.eye(3)
    R = random_orthogonal(rng, 3)
    U, V = W @ R, H @ R
    start = rotate_to_orthant(U, V, max_iter=0)
    rot = rotate_to_orthant(U, V, max_iter=500, tol=0.0)
    assert start.distance > 1e-2
    assert rot.distance < 1e-8 * start.distance + 1e-12


def test_sign_fix_makes_nonnegative_rank_one_feasible(rng):
    x = rng.random(20)
    y = rng.random(10)
    rot = rotate_to_orthant(-x[:, None], -y[:, None], max_iter=0)
    assert rot.distance == 0.0
