import numpy as np
import pytest
from enmf import factors_equivalent


def test_permuted_and_scaled_copy_is_equivalent(rng):
    W, H = rng.random((30, 4)), rng.random((4, 12))
    perm = np.array([2, 0, 3, 1])
    d = np.array([0.1, 3.0, 7.0, 0.5])
    W2 = (W * d)[:, perm]
    H2 = (H / d[:, None])[perm]
    eq = factors_equivalent(W, H, W2, H2)
    assert eq.equivalent and eq.distance < 1e-12
    np.testing.assert_array_equal(perm[eq.permutation], np.arange(4))
    np.testing.assert_allclose(eq.scales, d, rtol=1e-12)
    np.testing.assert_allclose(W2[:, eq.permutation], W * eq.scales, rtol=1e-12)


def test_small_noise_gives_small_distance(rng):
    W, H = rng.random((30, 4)), rng.random((4, 12))
    W2 = W * (1 + 0.01 * rng.standard_normal(W.shape))
    eq = factors_equivalent(W, H, W2, H)
    assert eq.equivalent and 1e-4 < eq.distance < 0.05


def test_different_factorizations_are_not_equivalent(rng):
    W, H = rng.random((30, 4)), rng.random((4, 12))
    # Same product, different factors: mix two components (an invertible, non-monomial map).
    M = np.eye(4)
    M[0, 1] = 0.7
    W2, H2 = W @ M, np.linalg.solve(M, H)
    np.testing.assert_allclose(W @ H, W2 @ H2, atol=1e-12)
    eq = factors_equivalent(W, H, W2, H2)
    assert not eq.equivalent and eq.distance > 0.05
    other = factors_equivalent(W, H, rng.random((30, 4)), rng.random((4, 12)))
    assert not other.equivalent


def test_bad_shapes_raise(rng):
    W, H = rng.random((30, 4)), rng.random((4, 12))
    with pytest.raises(ValueError, match="equal shapes"):
        factors_equivalent(W, H, W[:, :3], H[:3])
    with pytest.raises(ValueError, match=r"W1\.shape\[1\] == H1\.shape\[0\]"):
        factors_equivalent(W, H[:3], W, H)
    with pytest.raises(ValueError, match="tol"):
        factors_equivalent(W, H, W, H, tol=-1)
