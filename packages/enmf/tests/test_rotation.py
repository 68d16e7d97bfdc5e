import numpy as np
import pytest
from enmf import rotate_to_orthant
from enmf.init import exterior_point, svd_factors
from enmf.rotation import negative_mass, orthant_distance


def random_orthogonal(rng, r):
    Q, R = np.linalg.qr(rng.standard_normal((r, r)))
    return Q * np.sign(np.diag(R))


def planted_rotation(rng, r=3):
    """U = W R, V = H^T R with W, H >= 0 and R orthogonal: Q = R^T has zero distance."""
    W = rng.random((80, r)) * (rng.random((80, r)) < 0.6)
    H = rng.random((60, r)) * (rng.random((60, r)) < 0.6)
    W[:r] += np.eye(r)
    H[:r] += np.eye(r)
    R = random_orthogonal(rng, r)
    return W @ R, H @ R


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_rotation_is_orthogonal_and_keeps_product(rng, norm):
    U, V = rng.standard_normal((50, 5)), rng.standard_normal((30, 5))
    rot = rotate_to_orthant(U, V, norm=norm, max_iter=300, tol=0.0)
    np.testing.assert_allclose(rot.Q.T @ rot.Q, np.eye(5), atol=1e-10)
    np.testing.assert_allclose((U @ rot.Q) @ (V @ rot.Q).T, U @ V.T, atol=1e-9)
    measure = negative_mass if norm == "l1" else orthant_distance
    expected = measure(U @ rot.Q) + measure(V @ rot.Q)
    assert rot.distance == pytest.approx(expected, rel=1e-9)
    assert rot.distance < 0.95 * rot.history[0]  # it moved towards the orthant


def test_l2_rotation_descends_monotonically(rng):
    U, V = rng.standard_normal((50, 5)), rng.standard_normal((30, 5))
    hist = np.array(rotate_to_orthant(U, V, norm="l2", max_iter=200, tol=0.0).history)
    assert np.all(np.diff(hist) <= 1e-12 * hist[0])


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_finds_planted_rotation_of_nonnegative_factors(rng, norm):
    U, V = planted_rotation(rng)
    start = rotate_to_orthant(U, V, norm=norm, max_iter=0)
    rot = rotate_to_orthant(U, V, norm=norm, max_iter=3000, tol=1e-8)
    assert start.distance > 1e-2
    assert rot.distance < 1e-3 * start.distance


def test_l1_rotation_matches_a_grid_search_in_two_dimensions(rng):
    """In O(2) the rotations and reflections form two circles: a fine grid finds the minimum."""
    U, V = rng.standard_normal((40, 2)) + 0.5, rng.standard_normal((25, 2)) + 0.5
    Z = np.vstack([U, V])
    best = np.inf
    for theta in np.linspace(0.0, 2 * np.pi, 4001):
        c, s = np.cos(theta), np.sin(theta)
        for Q in (np.array([[c, -s], [s, c]]), np.array([[c, s], [s, -c]])):
            best = min(best, negative_mass(Z @ Q))
    rot = rotate_to_orthant(U, V, norm="l1")
    assert rot.distance == pytest.approx(best, rel=5e-3)


def test_l1_rotation_minimizes_its_own_objective_on_digits():
    """ADMM on the negative mass beats the L2 rotation on that mass (it optimizes it)."""
    from sklearn.datasets import load_digits

    X = load_digits().data[:500]
    U, V = svd_factors(X, 8, np.random.default_rng(0))
    l1 = rotate_to_orthant(U, V, norm="l1")
    l2 = rotate_to_orthant(U, V, norm="l2")
    Z = np.vstack([U, V])
    assert l1.distance < negative_mass(Z @ l2.Q)
    assert l1.distance < 0.5 * negative_mass(Z)


@pytest.mark.parametrize("signs", ["paper", "balanced"])
def test_svd_factors_give_the_best_rank_r_approximation(rng, signs):
    X = rng.random((40, 25))
    U, V = svd_factors(X, 3, np.random.default_rng(0), signs=signs)
    A, s, Bt = np.linalg.svd(X, full_matrices=False)
    np.testing.assert_allclose(U @ V.T, (A[:, :3] * s[:3]) @ Bt[:3], atol=1e-9)


def test_sign_rule_makes_nonnegative_rank_one_feasible(rng):
    x, y = rng.random(20), rng.random(10)
    for signs in ("paper", "balanced"):
        U, V = svd_factors(np.outer(x, y), 1, np.random.default_rng(0), signs=signs)
        assert U.min() >= -1e-12 and V.min() >= -1e-12


def test_paper_signs_balance_the_positive_parts(rng):
    X = rng.random((30, 20))
    U, V = svd_factors(X, 4, np.random.default_rng(0), signs="paper")
    pos_u = np.linalg.norm(np.maximum(U, 0), axis=0)
    pos_v = np.linalg.norm(np.maximum(V, 0), axis=0)
    neg_u = np.linalg.norm(np.minimum(U, 0), axis=0)
    neg_v = np.linalg.norm(np.minimum(V, 0), axis=0)
    assert np.all(pos_u * pos_v >= neg_u * neg_v)
    np.testing.assert_allclose(pos_u, pos_v, rtol=1e-10)


@pytest.mark.parametrize("rotation", ["l1", "l2", "none"])
def test_exterior_point_keeps_the_svd_product(rng, rotation):
    X = rng.random((40, 25))
    W0, H0, rot = exterior_point(X, 3, np.random.default_rng(0), rotation=rotation)
    A, s, Bt = np.linalg.svd(X, full_matrices=False)
    np.testing.assert_allclose(W0 @ H0, (A[:, :3] * s[:3]) @ Bt[:3], atol=1e-9)
    np.testing.assert_allclose(rot.Q.T @ rot.Q, np.eye(3), atol=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"norm": "l3"}, ValueError, "norm must be one of"),
        ({"max_iter": -1}, ValueError, "max_iter"),
        ({"max_iter": 2.5}, TypeError, "max_iter"),
        ({"tol": -1.0}, ValueError, "tol"),
    ],
)
def test_bad_arguments(rng, kwargs, error, match):
    U, V = rng.standard_normal((10, 2)), rng.standard_normal((8, 2))
    with pytest.raises(error, match=match):
        rotate_to_orthant(U, V, **kwargs)
    with pytest.raises(ValueError, match="same number of columns"):
        rotate_to_orthant(U, V[:, :1])
