"""Starting points for NMF: the eNMF exterior point and the classic feasible starts."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from enmf._linalg import truncated_svd
from enmf.hals import Array, MatrixLike
from enmf.rotation import Rotation, rotate_to_orthant


def exterior_point(
    X: MatrixLike,
    n_components: int,
    rng: np.random.Generator,
    *,
    rotation_max_iter: int = 100,
    rotation_tol: float = 1e-4,
) -> tuple[Array, Array, Rotation]:
    """The eNMF start: the best rank-r factorization, rotated towards the orthant.

    With the truncated SVD ``X_r = A S B^T``, the balanced factors
    ``U = A S^{1/2}``, ``V = B S^{1/2}`` give ``X_r = U V^T``; the rotation ``Q`` of
    :func:`~enmf.rotation.rotate_to_orthant` keeps the product and brings
    ``(U Q, V Q)`` closest to the nonnegative orthant.

    Args:
        X: Shape (n, m), nonnegative, dense or sparse.
        n_components: Rank r.
        rng: Generator for the randomized SVD of large matrices.
        rotation_max_iter: Iteration cap of the rotation.
        rotation_tol: Relative tolerance of the rotation.

    Returns:
        ``(W, H, rotation)`` with ``W = U Q`` (n, r), ``H = (V Q)^T`` (r, m), both of
        any sign, and ``W H = X_r``.
    """
    A, s, B = truncated_svd(X, n_components, rng)
    root = np.sqrt(s)
    U, V = A * root, B * root
    rot = rotate_to_orthant(U, V, max_iter=rotation_max_iter, tol=rotation_tol)
    return U @ rot.Q, np.ascontiguousarray((V @ rot.Q).T), rot


def nndsvd(
    X: MatrixLike,
    n_components: int,
    rng: np.random.Generator,
    *,
    fill: str = "zero",
    eps: float = 1e-6,
) -> tuple[Array, Array]:
    """Nonnegative double SVD start (Boutsidis & Gallopoulos, 2008).

    Each singular pair ``(a_j, b_j)`` is replaced by the larger in norm of its
    positive and negative parts, scaled to keep ``s_j ||a|| ||b||``.

    Args:
        X: Shape (n, m), nonnegative.
        n_components: Rank r.
        rng: Generator for the randomized SVD of large matrices.
        fill: ``"zero"`` (NNDSVD) or ``"mean"`` (NNDSVDa: zeros replaced by the mean
            of ``X``, which lets multiplicative and coordinate updates leave them).
        eps: Entries below this are set to 0 (NNDSVD's truncation).

    Returns:
        ``(W, H)``, shapes (n, r) and (r, m), nonnegative.

    References:
        Boutsidis & Gallopoulos (2008), SVD based initialization: a head start for
        nonnegative matrix factorization, Pattern Recognition 41(4).
    """
    A, s, B = truncated_svd(X, n_components, rng)
    n, m = X.shape
    W = np.zeros((n, n_components))
    H = np.zeros((n_components, m))
    for j in range(n_components):
        a, b = A[:, j], B[:, j]
        if j == 0:
            # Perron-Frobenius: the leading pair has one sign.
            sign = 1.0 if a.sum() + b.sum() >= 0 else -1.0
            W[:, 0] = np.sqrt(s[0]) * np.abs(sign * a)
            H[0] = np.sqrt(s[0]) * np.abs(sign * b)
            continue
        ap, an = np.maximum(a, 0.0), np.maximum(-a, 0.0)
        bp, bn = np.maximum(b, 0.0), np.maximum(-b, 0.0)
        pos = np.linalg.norm(ap) * np.linalg.norm(bp)
        neg = np.linalg.norm(an) * np.linalg.norm(bn)
        u, v, mass = (ap, bp, pos) if pos >= neg else (an, bn, neg)
        if mass <= 0.0:
            continue
        scale = np.sqrt(s[j] * mass)
        W[:, j] = scale * u / np.linalg.norm(u)
        H[j] = scale * v / np.linalg.norm(v)
    W[W < eps] = 0.0
    H[H < eps] = 0.0
    if fill == "mean":
        avg = float(X.mean())
        W[W == 0] = avg
        H[H == 0] = avg
    elif fill != "zero":
        raise ValueError(f"fill must be 'zero' or 'mean', got {fill!r}")
    return W, H


def random_start(X: MatrixLike, n_components: int, rng: np.random.Generator) -> tuple[Array, Array]:
    """Random nonnegative start scaled like scikit-learn's ``init="random"``.

    Entries are ``|N(0, 1)| * sqrt(mean(X) / r)``, so that ``W H`` has the mean of ``X``
    on average.
    """
    n, m = X.shape
    mean = float(X.mean()) if not sp.issparse(X) else float(X.sum()) / (n * m)
    avg = np.sqrt(max(mean, 0.0) / n_components)
    W = avg * np.abs(rng.standard_normal((n, n_components)))
    H = avg * np.abs(rng.standard_normal((n_components, m)))
    return W, H
