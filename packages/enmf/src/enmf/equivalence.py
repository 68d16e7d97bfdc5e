"""Are two factorizations the same up to permutation and positive scaling of components?"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linear_sum_assignment


@dataclass(frozen=True)
class Equivalence:
    """Result of :func:`factors_equivalent`.

    Attributes:
        equivalent: ``distance <= tol``.
        distance: Relative distance of the normalized factors after the best matching
            (0 for exact copies; see :func:`factors_equivalent`).
        permutation: ``permutation[k]`` is the component of the second factorization
            matched to component ``k`` of the first.
        scales: Positive factors ``c_k`` with ``W2[:, p_k] ~ c_k W1[:, k]`` and
            ``H2[p_k] ~ H1[k] / c_k``.
    """

    equivalent: bool
    distance: float
    permutation: NDArray[np.intp]
    scales: NDArray[np.float64]

    def __bool__(self) -> bool:
        return self.equivalent


def _as_factors(W: ArrayLike, H: ArrayLike, which: str) -> tuple[NDArray, NDArray]:
    W = np.asarray(W, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64)
    if W.ndim != 2 or H.ndim != 2 or W.shape[1] != H.shape[0]:
        raise ValueError(
            f"W{which} and H{which} must be 2-D with W{which}.shape[1] == H{which}.shape[0]; "
            f"got shapes {W.shape} and {H.shape}"
        )
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(H))):
        raise ValueError(f"W{which} and H{which} must be finite")
    return W, H


def _normalize(W: NDArray, H: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """Move each component's scale into ``W``: rows of ``H`` get unit norm."""
    norms = np.linalg.norm(H, axis=1)
    safe = np.where(norms > 0, norms, 1.0)
    return W * safe, H / safe[:, None], norms


def _unit_columns(M: NDArray) -> NDArray:
    norms = np.linalg.norm(M, axis=0)
    return M / np.where(norms > 0, norms, 1.0)


def factors_equivalent(
    W1: ArrayLike,
    H1: ArrayLike,
    W2: ArrayLike,
    H2: ArrayLike,
    *,
    tol: float = 0.05,
) -> Equivalence:
    """Decide whether ``(W1, H1)`` and ``(W2, H2)`` are equal up to permutation and scaling.

    Two NMFs are equivalent when ``W2 = W1 P D`` and ``H2 = D^{-1} P^T H1`` for a
    permutation ``P`` and a positive diagonal ``D``: they are the same parts, listed
    in another order and scaled differently. We normalize every component so that
    the rows of ``H`` have unit norm (the scale moves into ``W``), match components by
    the Hungarian method (``scipy.optimize.linear_sum_assignment``) on the cosine
    similarity of ``W`` columns plus that of ``H`` rows, and report

    ``distance = max(||W1n - W2n P|| / ||W1n||, ||H1n - P^T H2n|| / ||H1n||)``

    (Frobenius norms, ``n`` for normalized). It is 0 for exact copies, scale free,
    and symmetric up to the normalization of ``W``.

    Args:
        W1: Shape (n, r), nonnegative factor of the first factorization.
        H1: Shape (r, m).
        W2: Shape (n, r), the second factorization.
        H2: Shape (r, m).
        tol: Largest ``distance`` still called equivalent.

    Returns:
        An :class:`Equivalence` with the verdict, the distance, the matching and the
        scales.

    Raises:
        ValueError: If shapes disagree, entries are not finite or ``tol < 0``.

    References:
        eNMF paper (ICML 2026), abstract: "equivalence classes of factorizations under
        permutation and orthogonal transformations".

    Example:
        >>> rng = np.random.default_rng(0)
        >>> W, H = rng.random((20, 3)), rng.random((3, 8))
        >>> d = np.array([2.0, 0.5, 3.0]); p = [2, 0, 1]
        >>> factors_equivalent(W, H, (W * d)[:, p], (H / d[:, None])[p]).equivalent
        True
    """
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    W1, H1 = _as_factors(W1, H1, "1")
    W2, H2 = _as_factors(W2, H2, "2")
    if W1.shape != W2.shape or H1.shape != H2.shape:
        raise ValueError(
            f"the two factorizations must have equal shapes; got W1 {W1.shape}, H1 {H1.shape}, "
            f"W2 {W2.shape}, H2 {H2.shape}"
        )
    W1n, H1n, h1 = _normalize(W1, H1)
    W2n, H2n, h2 = _normalize(W2, H2)
    similarity = _unit_columns(W1n).T @ _unit_columns(W2n) + _unit_columns(H1n.T).T @ (
        _unit_columns(H2n.T)
    )
    _, perm = linear_sum_assignment(-similarity)
    dW = np.linalg.norm(W1n - W2n[:, perm]) / max(np.linalg.norm(W1n), np.finfo(float).tiny)
    dH = np.linalg.norm(H1n - H2n[perm]) / max(np.linalg.norm(H1n), np.finfo(float).tiny)
    distance = float(max(dW, dH))
    # W2[:, p_k] = c_k W1[:, k] and H2[p_k] = H1[k] / c_k give c_k = |H1[k]| / |H2[p_k]|.
    matched = h2[perm]
    scales = np.where(matched > 0, h1 / np.where(matched > 0, matched, 1.0), np.nan)
    return Equivalence(
        equivalent=distance <= tol,
        distance=distance,
        permutation=perm.astype(np.intp),
        scales=scales,
    )
