"""Distances between subspaces."""

from __future__ import annotations

import numpy as np

__all__ = ["projection_matrix", "subspace_distance"]


def _as_rows(name: str, B) -> np.ndarray:
    A = np.asarray(B, dtype=np.float64)
    if A.ndim == 1:
        A = A[None, :]
    if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] == 0:
        raise ValueError(
            f"{name} must be a non-empty array of shape (n_directions, n_features) or "
            f"(n_features,), got shape {np.shape(B)}"
        )
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or inf")
    return A


def projection_matrix(B) -> np.ndarray:
    """Orthogonal projector onto the span of the rows of ``B``.

    Args:
        B: array (k, p) whose rows span the subspace (any basis; need not be
            orthonormal), or a single direction (p,).

    Returns:
        float array (p, p), ``P = Q Q^T`` for an orthonormal basis ``Q`` of the row span.

    Raises:
        ValueError: If ``B`` is empty, not 1-D/2-D, non-finite or rank deficient.
    """
    A = _as_rows("B", B)
    U, s, _ = np.linalg.svd(A.T, full_matrices=False)
    if s[-1] <= 1e-12 * s[0]:
        raise ValueError(f"B has rank {int(np.sum(s > 1e-12 * s[0]))} < {A.shape[0]} rows")
    return U @ U.T


def subspace_distance(B, B0) -> float:
    """Frobenius distance ``||P_B - P_B0||_F`` between the projectors onto two subspaces.

    Both arguments are given like ``components_``: rows span the subspace, shape
    ``(k, p)`` (pass ``B.T`` for a basis stored in columns). The distance is 0 for equal
    spans, ``sqrt(k + k0)`` for orthogonal ones, invariant to the choice of basis, and
    for equal dimensions equals ``sqrt(2) * ||sin(Theta)||_F`` over the principal angles.

    Args:
        B: array (k, p) or (p,), estimated basis.
        B0: array (k0, p) or (p,), reference basis.

    Returns:
        The distance as a float in ``[0, sqrt(k + k0)]``.

    Raises:
        ValueError: If shapes disagree on ``p`` or a basis is rank deficient.

    Example:
        >>> round(subspace_distance([[1.0, 0.0, 0.0]], [[1.0, 1.0, 0.0]]), 6)  # 45 degrees
        1.0
    """
    A, A0 = _as_rows("B", B), _as_rows("B0", B0)
    if A.shape[1] != A0.shape[1]:
        raise ValueError(
            f"B and B0 must have the same number of features, got {A.shape[1]} and {A0.shape[1]}"
        )
    return float(np.linalg.norm(projection_matrix(A) - projection_matrix(A0)))
