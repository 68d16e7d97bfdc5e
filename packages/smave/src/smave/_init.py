"""Starting points of the iterative estimators (on whitened covariates)."""

from __future__ import annotations

import numpy as np


def moment_directions(Z: np.ndarray, y: np.ndarray, d: int) -> np.ndarray:
    """Directions from first and second moments: linear trend plus residual pHd.

    The candidate matrix ``M = beta beta^T + H^2`` joins the least-squares direction
    ``beta = E[z y]`` (it lies in the central mean subspace when z is Gaussian) and the
    residual principal-Hessian matrix ``H = E[(y - beta^T z) z z^T]`` (Li, 1992), which
    finds the directions of a symmetric link where ``beta`` vanishes. Costs O(n p^2).

    Args:
        Z: float array (n, r), whitened covariates.
        y: float array (n,), standardized response.
        d: number of directions.

    Returns:
        float array (r, d) with orthonormal columns, the top eigenvectors of ``M``.
    """
    n = Z.shape[0]
    beta = Z.T @ y / n
    resid = y - Z @ beta
    H = (Z * resid[:, None]).T @ Z / n
    M = np.outer(beta, beta) + H @ H
    _, V = np.linalg.eigh(M)
    return np.ascontiguousarray(V[:, ::-1][:, :d])


def random_stiefel(r: int, d: int, rng: np.random.RandomState) -> np.ndarray:
    """A point of St(r, d) drawn from the uniform (Haar) distribution."""
    Q, R = np.linalg.qr(rng.standard_normal((r, d)))
    return Q * np.sign(np.diag(R))


def basis_from_rows(init: np.ndarray, W: np.ndarray, d: int, name: str = "init") -> np.ndarray:
    """Map a user basis given as rows in X coordinates (d, p) to the whitened space (r, d).

    A direction ``beta`` of X gives the index ``beta^T (x - mean) = (W^+ beta)^T z``.

    Raises:
        ValueError: If the shape is not (d, p) or the basis is rank deficient there.
    """
    init = np.asarray(init, dtype=np.float64)
    p = W.shape[0]
    if init.shape != (d, p) or not np.all(np.isfinite(init)):
        raise ValueError(
            f"{name} must be a finite array of shape (n_components, n_features) = {(d, p)}, "
            f"got shape {init.shape}"
        )
    Bz = np.linalg.pinv(W) @ init.T
    Q, R = np.linalg.qr(Bz)
    if np.min(np.abs(np.diag(R))) < 1e-10 * max(1.0, np.abs(R).max()):
        raise ValueError(f"{name} is rank deficient on the span of X; give independent rows")
    return Q
