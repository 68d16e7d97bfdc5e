"""Starting points for NMF: the eNMF exterior point and the classic feasible starts."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from enmf._linalg import truncated_svd
from enmf.hals import Array, MatrixLike
from enmf.rotation import Rotation, negative_mass, rotate_to_orthant


def svd_factors(
    X: MatrixLike, n_components: int, rng: np.random.Generator, *, signs: str = "paper"
) -> tuple[Array, Array]:
    """Stage 1: the optimal rank-r factorization ``X_r = U V^T``, signs resolved.

    With the truncated SVD ``X_r = A S B^T``, each singular pair ``(a_k, b_k)`` may be
    negated (``(-a_k)(-b_k)^T = a_k b_k^T``) and its two sides rescaled by ``c`` and
    ``1/c`` without changing ``X_r``. Two rules fix these freedoms:

    - ``"paper"`` (the authors' code): keep the sign whose positive parts are larger,
      ``||a_k^+|| ||b_k^+||`` against ``||a_k^-|| ||b_k^-||``, and scale the pair so
      that those positive parts have equal norms: ``u_k = a_k sqrt(s_k ||b_k^+|| /
      ||a_k^+||)``, ``v_k = b_k sqrt(s_k ||a_k^+|| / ||b_k^+||)`` (with the negated
      pair's parts where the sign flips);
    - ``"balanced"`` (our earlier start, used by ``algorithm="extrapolated"``):
      ``U = A S^{1/2}``, ``V = B S^{1/2}``, each column pair negated when that lowers
      its squared negative mass.

    Args:
        X: Shape (n, m), nonnegative, dense or sparse.
        n_components: Rank r.
        rng: Generator for the randomized SVD of large matrices.
        signs: ``"paper"`` or ``"balanced"``.

    Returns:
        ``(U, V)``, shapes (n, r) and (m, r), of any sign, with ``U V^T = X_r``.
    """
    A, s, B = truncated_svd(X, n_components, rng)
    if signs == "balanced":
        root = np.sqrt(s)
        U, V = A * root, B * root
        Z = np.vstack([U, V])
        neg2 = np.square(np.minimum(Z, 0.0)).sum(axis=0)
        pos2 = np.square(np.maximum(Z, 0.0)).sum(axis=0)
        flip = np.where(pos2 < neg2, -1.0, 1.0)
        return U * flip, V * flip
    if signs != "paper":
        raise ValueError(f"signs must be 'paper' or 'balanced', got {signs!r}")
    a_pos = np.linalg.norm(np.maximum(A, 0.0), axis=0)
    a_neg = np.linalg.norm(np.minimum(A, 0.0), axis=0)
    b_pos = np.linalg.norm(np.maximum(B, 0.0), axis=0)
    b_neg = np.linalg.norm(np.minimum(B, 0.0), axis=0)
    keep = a_pos * b_pos >= a_neg * b_neg
    sign = np.where(keep, 1.0, -1.0)
    na, nb = np.where(keep, a_pos, a_neg), np.where(keep, b_pos, b_neg)
    ok = (na > 0.0) & (nb > 0.0)
    ratio = np.where(ok, nb / np.where(ok, na, 1.0), 1.0)  # c_k^2 = ||b^+|| / ||a^+||
    cu = np.sqrt(s * ratio)
    cv = np.sqrt(s / ratio)
    return A * (sign * cu), B * (sign * cv)


def exterior_point(
    X: MatrixLike,
    n_components: int,
    rng: np.random.Generator,
    *,
    rotation: str = "l1",
    signs: str = "paper",
    rotation_max_iter: int | None = None,
    rotation_tol: float | None = None,
) -> tuple[Array, Array, Rotation]:
    """Stages 1 and 2: the best rank-r factorization, rotated towards the orthant.

    The factors of :func:`svd_factors` are rotated by the ``Q`` of
    :func:`~enmf.rotation.rotate_to_orthant`, which keeps the product ``X_r`` and
    brings ``(U Q, V Q)`` closest to the nonnegative orthant in the chosen norm.

    Args:
        X: Shape (n, m), nonnegative, dense or sparse.
        n_components: Rank r.
        rng: Generator for the randomized SVD of large matrices.
        rotation: ``"l1"`` (ADMM on the negative mass, the paper's), ``"l2"``
            (alternating projection on the squared distance) or ``"none"`` (keep the
            sign-fixed SVD factors).
        signs: Stage-1 rule, ``"paper"`` or ``"balanced"`` (:func:`svd_factors`).
        rotation_max_iter: Iteration cap of the rotation (None: its default).
        rotation_tol: Tolerance of the rotation (None: its default).

    Returns:
        ``(W, H, rotation)`` with ``W = U Q`` (n, r), ``H = (V Q)^T`` (r, m), both of
        any sign, and ``W H = X_r``.
    """
    U, V = svd_factors(X, n_components, rng, signs=signs)
    if rotation == "none":
        Z = np.vstack([U, V])
        rot = Rotation(np.eye(n_components), negative_mass(Z), [negative_mass(Z)], 0, "l1", True)
    else:
        rot = rotate_to_orthant(U, V, norm=rotation, max_iter=rotation_max_iter, tol=rotation_tol)
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
