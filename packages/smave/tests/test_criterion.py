"""The mathematics of the MAVE criterion on the Stiefel manifold."""

import numpy as np
import pytest
from scipy.spatial import cKDTree
from smave.criterion import (
    Localization,
    gaussian_weights,
    local_linear_fit,
    mave_objective,
    mave_objective_and_gradient,
    project_tangent,
    retract_qr,
    riemannian_gradient,
)


def _problem(rng, n=120, p=6, d=2, k=15, ridge=1e-2):
    Z = rng.standard_normal((n, p))
    y = np.sin(Z[:, 0]) + Z[:, 1] ** 2 / 2 + 0.1 * rng.standard_normal(n)
    B, _ = np.linalg.qr(rng.standard_normal((p, d)))
    P = Z @ B
    dist, nb = cKDTree(P).query(P, k=k)
    w, h = gaussian_weights(dist)
    loc = Localization(np.arange(n), nb, w, ridge * h**2)
    return Z, y, B, loc


def _fd_gradient(Z, y, B, loc, eps=1e-6):
    G = np.zeros_like(B)
    for idx in np.ndindex(*B.shape):
        E = np.zeros_like(B)
        E[idx] = eps
        G[idx] = (mave_objective(Z, y, B + E, loc) - mave_objective(Z, y, B - E, loc)) / (2 * eps)
    return G


@pytest.mark.parametrize("ridge", [1e-2, 0.3])
def test_closed_form_gradient_matches_finite_differences(rng, ridge):
    Z, y, B, loc = _problem(rng, ridge=ridge)
    value, G = mave_objective_and_gradient(Z, y, B, loc)
    assert value == pytest.approx(mave_objective(Z, y, B, loc))
    G_fd = _fd_gradient(Z, y, B, loc)
    np.testing.assert_allclose(G, G_fd, rtol=1e-5, atol=1e-7)
    # the Riemannian gradient is the tangent projection of the Euclidean one
    np.testing.assert_allclose(
        riemannian_gradient(B, G), project_tangent(B, G_fd), rtol=1e-5, atol=1e-7
    )


def test_riemannian_gradient_equals_projected_autograd(rng):
    torch = pytest.importorskip("torch")
    Z, y, B, loc = _problem(rng, n=80, p=5, d=2, k=12)
    Zt, yt = torch.from_numpy(Z), torch.from_numpy(y)
    Bt = torch.from_numpy(B.copy()).requires_grad_(True)
    nb = torch.from_numpy(loc.neighbors)
    w = torch.from_numpy(loc.weights)
    lam = torch.from_numpy(loc.ridge)
    # the profiled criterion, differentiated *through* the local solves by autograd
    U = (Zt[nb] - Zt[:, None, :]) @ Bt
    X1 = torch.cat([torch.ones(*U.shape[:2], 1, dtype=U.dtype), U], dim=2)
    A = (X1 * w[..., None]).transpose(1, 2) @ X1
    A = A + torch.diag_embed(
        torch.cat([torch.zeros(len(lam), 1, dtype=U.dtype), lam[:, None].expand(-1, U.shape[2])], 1)
    )
    yn = yt[nb]
    theta = torch.linalg.solve(A, ((X1 * w[..., None]).transpose(1, 2) @ yn[..., None]))[..., 0]
    r = yn - (X1 @ theta[..., None])[..., 0]
    ybar = (w * yn).sum(1)
    F = (
        (w * (yn - ybar[:, None]) ** 2).sum(1)
        - (w * r**2).sum(1)
        - lam * (theta[:, 1:] ** 2).sum(1)
    ).mean()
    F.backward()
    value, G = mave_objective_and_gradient(Z, y, B, loc)
    assert value == pytest.approx(float(F.detach()), rel=1e-10)
    egrad = Bt.grad.numpy()
    np.testing.assert_allclose(G, egrad, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(
        riemannian_gradient(B, G), project_tangent(B, egrad), rtol=1e-8, atol=1e-10
    )


def test_gradient_is_horizontal_without_ridge(rng):
    # With lam = 0 the local normal equations give B^T G = 0: F only depends on span(B).
    Z, y, B, loc = _problem(rng, ridge=0.0)
    loc = Localization(loc.centers, loc.neighbors, loc.weights, np.zeros_like(loc.ridge))
    _, G = mave_objective_and_gradient(Z, y, B, loc)
    assert np.abs(B.T @ G).max() < 1e-10 * max(1.0, np.abs(G).max())
    # and F is invariant to any change of basis of the span
    M = np.array([[2.0, 0.3], [-0.4, 0.7]])
    assert mave_objective(Z, y, B @ M, loc) == pytest.approx(mave_objective(Z, y, B, loc))


def test_objective_invariant_to_rotations_and_bounded(rng):
    Z, y, B, loc = _problem(rng)
    Q, _ = np.linalg.qr(rng.standard_normal((2, 2)))
    F = mave_objective(Z, y, B, loc)
    assert mave_objective(Z, y, B @ Q, loc) == pytest.approx(F, rel=1e-10)
    ybar = np.sum(loc.weights * y[loc.neighbors], axis=1)
    local_var = np.mean(np.sum(loc.weights * (y[loc.neighbors] - ybar[:, None]) ** 2, axis=1))
    assert 0.0 <= F <= local_var


def test_local_linear_fit_is_weighted_least_squares(rng):
    U = rng.standard_normal((3, 10, 2))
    w = rng.random((3, 10))
    w /= w.sum(1, keepdims=True)
    yn = rng.standard_normal((3, 10))
    a, b, r = local_linear_fit(U, w, yn, np.zeros(3))
    for j in range(3):
        X1 = np.column_stack([np.ones(10), U[j]])
        sw = np.sqrt(w[j])
        theta = np.linalg.lstsq(X1 * sw[:, None], yn[j] * sw, rcond=None)[0]
        np.testing.assert_allclose([a[j], *b[j]], theta, atol=1e-10)
        np.testing.assert_allclose(np.sum(w[j] * r[j]), 0.0, atol=1e-12)


def test_tangent_projection_and_qr_retraction(rng):
    B, _ = np.linalg.qr(rng.standard_normal((7, 3)))
    V = rng.standard_normal((7, 3))
    xi = project_tangent(B, V)
    S = B.T @ xi
    np.testing.assert_allclose(S + S.T, 0.0, atol=1e-12)  # tangent: B^T xi skew
    np.testing.assert_allclose(project_tangent(B, xi), xi, atol=1e-12)  # a projection
    for t in (1e-3, 0.5, 10.0):
        R = retract_qr(B, t * xi)
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    # first-order agreement with the curve B + t xi
    t = 1e-5
    np.testing.assert_allclose((retract_qr(B, t * xi) - B) / t, xi, atol=1e-4)
    np.testing.assert_allclose(retract_qr(B, 0 * xi), B, atol=1e-12)


def test_small_riemannian_steps_ascend_monotonically(rng):
    # Deterministic (full-batch) Riemannian gradient ascent with a small step on the
    # fixed localization: F increases at every step and the gradient norm shrinks.
    Z, y, B, loc = _problem(rng)
    values, norms = [], []
    for _ in range(150):
        v, G = mave_objective_and_gradient(Z, y, B, loc)
        xi = riemannian_gradient(B, G)
        values.append(v)
        norms.append(np.linalg.norm(xi))
        B = retract_qr(B, 0.2 * xi)
    assert np.all(np.diff(values) > -1e-12)
    assert values[-1] > values[0]
    assert norms[-1] < 0.5 * norms[0]


def test_localize_widens_tied_neighbourhoods():
    # three projected locations with 100 copies each: the k = 20 nearest of a centre are
    # all tied; the neighbourhood must reach the next location and draw from the ball
    from smave._localize import bandwidth_floor, localize

    P_pool = np.repeat(np.array([[0.0], [1.0], [3.0]]), 100, axis=0)
    pool = np.arange(300) + 1000  # indices into a larger sample
    Pc = np.array([[0.0], [1.0], [3.0], [0.5]])
    nbh = localize(cKDTree(P_pool), pool, P_pool, Pc, 20, 0.0, np.random.RandomState(0))
    assert nbh.n_tied == 3 and nbh.n_widened >= 3 and nbh.n_degenerate == 0
    np.testing.assert_allclose(nbh.bandwidth[:3], [1.0, 1.0, 2.0])
    for j in range(3):
        vals = np.unique(P_pool[nbh.neighbors[j] - 1000, 0])
        assert vals.size >= 2  # spans d = 1 direction
        assert np.all(np.abs(vals - Pc[j, 0]) <= nbh.bandwidth[j] + 1e-12)
    # the centre halfway between two locations ends with both (tied at distance 0.5)
    assert np.unique(P_pool[nbh.neighbors[3] - 1000, 0]).size == 2
    assert nbh.bandwidth[3] == pytest.approx(0.5)
    # the floor binds on a near-tie: all neighbours within 1e-6, floor 0.05
    P2 = np.concatenate([1e-6 * np.arange(50), 0.01 * np.arange(1, 51) + 0.04])[:, None]
    nb2 = localize(cKDTree(P2), np.arange(100), P2, P2[:1], 20, 0.05, np.random.RandomState(0))
    assert nb2.bandwidth[0] >= 0.05 and nb2.n_widened == 1
    # d = 1: V_1 r (2 pi)^(-1/2) = 50 / 1000 with V_1 = 2
    assert bandwidth_floor(1000, 50, 1, 0.5) == pytest.approx(0.5 * 0.05 * np.sqrt(2 * np.pi) / 2)


def test_localize_reports_a_degenerate_pool():
    from smave._localize import localize

    P = np.zeros((30, 1))
    nbh = localize(cKDTree(P), np.arange(30), P, P[:2], 10, 0.0, np.random.RandomState(0))
    assert nbh.n_degenerate == 2 and nbh.n_tied == 2
    assert np.all(nbh.bandwidth > 0)
