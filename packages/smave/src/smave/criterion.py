"""The MAVE criterion as a smooth function on the Stiefel manifold, and its geometry.

Notation (all arrays float64):

* ``Z`` (n, p): whitened covariates, ``y`` (n,): standardized response.
* ``B`` (p, d): a point of the Stiefel manifold ``St(p, d) = {B : B^T B = I_d}``.
* A *localization* is a set of ``m`` centres ``j`` with ``k`` neighbours ``N_j`` each,
  normalized weights ``w_ij`` (``sum_i w_ij = 1``) and a ridge ``lam_j > 0``; it is held
  fixed while the criterion is differentiated (it is refreshed between steps by the
  estimators, see :class:`smave.SMAVE`).

The local linear fit at centre ``j`` in the projected space is

    RSS_j(B) = min_{a, b} sum_{i in N_j} w_ij (y_i - a - b^T B^T (z_i - z_j))^2 + lam_j |b|^2,

and the criterion that SMAVE *maximizes* is the local variance it explains,

    F(B) = (1/m) sum_j [ sum_i w_ij (y_i - ybar_j)^2 - RSS_j(B) ],   ybar_j = sum_i w_ij y_i.

Because ``(a_j, b_j)`` minimizes the inner problem, the envelope theorem gives the
Euclidean gradient in closed form (no differentiation through the solve),

    dF/dB = (2/m) sum_j sum_i w_ij r_ij (z_i - z_j) b_j^T,
    r_ij = y_i - a_j - b_j^T B^T (z_i - z_j),

and the Riemannian gradient for the embedded metric is its tangent projection
``G - B sym(B^T G)``. The ridge keeps every local Gram matrix positive definite, so F is
smooth (C^infinity) on the compact manifold and its gradient is Lipschitz there: the
setting of the convergence result for the simplified SMAVE.

References:
    SMAVE (ICML 2026; abstract only): the MAVE criterion recast as a smooth
    maximization on the Stiefel manifold with closed-form Riemannian gradient.
    Xia, Tong, Li and Zhu (2002), "An adaptive estimation of dimension reduction
    space", JRSS-B 64(3): the MAVE criterion and its local linear fits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Localization",
    "gaussian_weights",
    "local_linear_fit",
    "local_value_and_gradient",
    "mave_objective",
    "mave_objective_and_gradient",
    "project_tangent",
    "retract_qr",
    "riemannian_gradient",
]


@dataclass(frozen=True)
class Localization:
    """A fixed localization of the MAVE criterion: centres, neighbours, weights, ridge.

    Attributes:
        centers: int array (m,), indices of the centres ``j``.
        neighbors: int array (m, k), indices of the neighbours of each centre.
        weights: float array (m, k), nonnegative, each row sums to 1.
        ridge: float array (m,), the ridge ``lam_j > 0`` on the local slope.
    """

    centers: np.ndarray
    neighbors: np.ndarray
    weights: np.ndarray
    ridge: np.ndarray


def gaussian_weights(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian kernel weights with a nearest-neighbour bandwidth, normalized per row.

    The bandwidth of row ``j`` is its largest distance (the distance to its k-th
    neighbour), so every neighbourhood holds the same number of effective points
    whatever the local density.

    Args:
        dist: float array (m, k) of distances from each centre to its neighbours.

    Returns:
        ``(weights, bandwidth)``: weights (m, k) with rows summing to 1, and the
        bandwidths (m,) (floored at a tiny positive value for duplicated points).
    """
    h = np.maximum(dist.max(axis=1), 1e-12)
    w = np.exp(-0.5 * (dist / h[:, None]) ** 2)
    w /= w.sum(axis=1, keepdims=True)
    return w, h


def local_linear_fit(
    U: np.ndarray, w: np.ndarray, yn: np.ndarray, ridge: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted local linear fits ``y ~ a_j + b_j^T u`` at ``m`` centres at once.

    Args:
        U: float array (m, k, d), projected differences ``B^T (z_i - z_j)``.
        w: float array (m, k), normalized weights.
        yn: float array (m, k), responses of the neighbours.
        ridge: float array (m,), ridge on the slope ``b_j`` (not on the intercept).

    Returns:
        ``(a, b, r)``: intercepts (m,), slopes (m, d) and residuals (m, k).
    """
    m, k, d = U.shape
    X1 = np.concatenate([np.ones((m, k, 1)), U], axis=2)
    wX = X1 * w[:, :, None]
    A = np.matmul(wX.transpose(0, 2, 1), X1)
    idx = np.arange(1, d + 1)
    A[:, idx, idx] += ridge[:, None]
    rhs = np.matmul(yn[:, None, :], wX)[:, 0, :]
    theta = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
    a, b = theta[:, 0], theta[:, 1:]
    r = yn - a[:, None] - np.einsum("mkd,md->mk", U, b)
    return a, b, r


def _local_terms(Z: np.ndarray, y: np.ndarray, B: np.ndarray, loc: Localization):
    m, k = loc.neighbors.shape
    Zn = Z[loc.neighbors.ravel()]
    Zc = Z[loc.centers]
    # 2-D products (BLAS) rather than a stacked (m, k, p) difference array
    U = (Zn @ B).reshape(m, k, -1) - (Zc @ B)[:, None, :]
    yn = y[loc.neighbors]
    _, b, r = local_linear_fit(U, loc.weights, yn, loc.ridge)
    return Zn, Zc, yn, b, r


def _explained(w: np.ndarray, yn: np.ndarray, b: np.ndarray, r: np.ndarray, lam: np.ndarray):
    ybar = np.sum(w * yn, axis=1)
    total = np.sum(w * (yn - ybar[:, None]) ** 2, axis=1)
    rss = np.sum(w * r**2, axis=1) + lam * np.sum(b**2, axis=1)
    return float(np.mean(total - rss))


def mave_objective(Z: np.ndarray, y: np.ndarray, B: np.ndarray, loc: Localization) -> float:
    """The MAVE criterion ``F(B)`` (local variance explained; larger is better).

    Args:
        Z: float array (n, p), whitened covariates.
        y: float array (n,), response.
        B: float array (p, d), the basis (need not be orthonormal for evaluation).
        loc: the fixed localization.

    Returns:
        ``F(B)`` as a float; ``0 <= F(B) <= mean_j Var_w(y | N_j)``.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> Z = rng.normal(size=(50, 3)); y = Z[:, 0] ** 3
        >>> nb = np.argsort(((Z[:, None] - Z[None]) ** 2).sum(-1), axis=1)[:, :10]
        >>> loc = Localization(np.arange(50), nb, np.full((50, 10), 0.1), np.full(50, 1e-3))
        >>> e = np.eye(3)
        >>> mave_objective(Z, y, e[:, :1], loc) > mave_objective(Z, y, e[:, 1:2], loc)
        True
    """
    _, _, yn, b, r = _local_terms(Z, y, B, loc)
    return _explained(loc.weights, yn, b, r, loc.ridge)


def mave_objective_and_gradient(
    Z: np.ndarray, y: np.ndarray, B: np.ndarray, loc: Localization
) -> tuple[float, np.ndarray]:
    """``F(B)`` and its closed-form Euclidean gradient ``dF/dB`` (p, d).

    The gradient is ``(2/m) sum_j sum_i w_ij r_ij (z_i - z_j) b_j^T`` by the envelope
    theorem; its cost is O(m k p d), linear in the number of centres and neighbours.

    Args:
        Z: float array (n, p), whitened covariates.
        y: float array (n,), response.
        B: float array (p, d).
        loc: the fixed localization.

    Returns:
        ``(F(B), G)`` with ``G`` of shape (p, d).
    """
    m, k = loc.neighbors.shape
    Zn = Z[loc.neighbors.ravel()]
    Zc = Z[loc.centers]
    U = (Zn @ B).reshape(m, k, -1) - (Zc @ B)[:, None, :]
    return local_value_and_gradient(Zn, Zc, U, y[loc.neighbors], loc.weights, loc.ridge)


def local_value_and_gradient(
    Zn: np.ndarray, Zc: np.ndarray, U: np.ndarray, yn: np.ndarray, w: np.ndarray, lam: np.ndarray
) -> tuple[float, np.ndarray]:
    """:func:`mave_objective_and_gradient` on gathered arrays (no indexing into Z).

    Args:
        Zn: float array (m * k, p), the neighbours' covariates, centre by centre.
        Zc: float array (m, p), the centres' covariates.
        U: float array (m, k, d), projected differences ``B^T (z_i - z_j)``.
        yn: float array (m, k), the neighbours' responses.
        w: float array (m, k), normalized weights.
        lam: float array (m,), ridges.

    Returns:
        ``(F, G)`` as in :func:`mave_objective_and_gradient`.
    """
    _, b, r = local_linear_fit(U, w, yn, lam)
    value = _explained(w, yn, b, r, lam)
    m, k = r.shape
    # sum_ij w r (z_i - z_j) b_j^T = Zn^T V - Zc^T (sum_i V), with V_ij = w_ij r_ij b_j
    V = (w * r)[:, :, None] * b[:, None, :]
    G = Zn.T @ V.reshape(m * k, -1) - Zc.T @ V.sum(axis=1)
    G *= 2.0 / m
    return value, G


def project_tangent(B: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Orthogonal projection of ``V`` (p, d) onto the tangent space of St(p, d) at ``B``.

    ``P_B(V) = V - B sym(B^T V)`` with ``sym(A) = (A + A^T) / 2`` (embedded metric).
    """
    S = B.T @ V
    return V - B @ (0.5 * (S + S.T))


def riemannian_gradient(B: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Riemannian gradient on St(p, d) from the Euclidean gradient ``G`` (embedded metric)."""
    return project_tangent(B, G)


def retract_qr(B: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """QR retraction ``qf(B + xi)``: the Q factor with a positive diagonal of R.

    Args:
        B: float array (p, d) on the manifold.
        xi: float array (p, d), a tangent vector (the step).

    Returns:
        A float array (p, d) with orthonormal columns.
    """
    Q, R = np.linalg.qr(B + xi)
    s = np.sign(np.diag(R))
    s[s == 0] = 1.0
    return Q * s
