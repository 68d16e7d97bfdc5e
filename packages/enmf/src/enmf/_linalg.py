"""Linear algebra that works the same on dense arrays and scipy sparse matrices."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

Array = NDArray[np.float64]


def squared_norm(X: Array | sp.sparray | sp.spmatrix) -> float:
    """Return ``||X||_F^2`` without densifying a sparse ``X``."""
    if sp.issparse(X):
        data = X.data
        return float(np.dot(data, data))
    flat = np.ravel(X)
    return float(np.dot(flat, flat))


def matmul_left(Ft: Array, X: Array | sp.sparray | sp.spmatrix) -> Array:
    """Return ``Ft @ X`` (shape (r, m)) as a dense C-contiguous array."""
    if sp.issparse(X):
        # (X^T Ft^T)^T keeps the sparse operand on the left, where scipy is fast.
        return np.ascontiguousarray((X.T @ Ft.T).T)
    return Ft @ X


def matmul_right(X: Array | sp.sparray | sp.spmatrix, Ht: Array) -> Array:
    """Return ``X @ Ht`` (shape (n, r)) as a dense array."""
    out = X @ Ht
    return np.asarray(out)


def squared_error_from_products(
    x_norm2: float, WtX: Array, WtW: Array, H: Array, HHt: Array | None = None
) -> float:
    """``||X - W H||_F^2`` from products the solvers already hold.

    ``||X||^2 - 2 <W^T X, H> + <W^T W, H H^T>``: O((r^2 + r) m) work instead of
    O(n m r), and no dense ``n x m`` residual for sparse ``X``. Clipped at 0
    against round-off when the fit is exact.

    Args:
        x_norm2: ``||X||_F^2``.
        WtX: ``W^T X``, shape (r, m).
        WtW: ``W^T W``, shape (r, r).
        H: Shape (r, m).
        HHt: ``H H^T`` if already computed, shape (r, r).
    """
    if HHt is None:
        HHt = H @ H.T
    value = x_norm2 - 2.0 * float(np.vdot(WtX, H)) + float(np.vdot(WtW, HHt))
    return max(value, 0.0)


def refine_small_error(
    X: Array | sp.sparray | sp.spmatrix, err2: float, x_norm2: float, Wt: Array, H: Array
) -> float:
    """Recompute a near-zero ``||X - W H||^2`` from the residual when ``X`` is dense.

    The expanded formula of :func:`squared_error_from_products` loses all digits
    once the relative error nears ``sqrt(machine eps) ~ 1e-8`` (it subtracts numbers of
    size ``||X||^2``). Below a relative error of 1e-6, and only for dense ``X``, the
    residual is formed explicitly (one extra product), so that decisions taken on
    the error (restarts, the exact-fit stop) stay meaningful on exact-rank data.
    """
    if err2 >= 1e-12 * x_norm2 or sp.issparse(X):
        return err2
    return squared_norm(X - Wt.T @ H)


def exact_squared_error(X: Array | sp.sparray | sp.spmatrix, W: Array, H: Array) -> float:
    """``||X - W H||_F^2`` computed from the residual when X is dense (no cancellation)."""
    if sp.issparse(X):
        Wt = np.ascontiguousarray(W.T)
        WtX = matmul_left(Wt, X)
        return squared_error_from_products(squared_norm(X), WtX, Wt @ W, H)
    R = X - W @ H
    return squared_norm(R)


def truncated_svd(
    X: Array | sp.sparray | sp.spmatrix, rank: int, rng: np.random.Generator
) -> tuple[Array, Array, Array]:
    """Leading ``rank`` singular triplets of ``X``.

    Matrices with a short side (<= 256) use the eigendecomposition of the smaller
    Gram matrix, which is exact for the leading triplets and much faster than a
    full SVD of a tall matrix; others use randomized SVD (Halko et al., 2011)
    with 4 power iterations, which costs a few products with ``X``.

    Args:
        X: Shape (n, m), dense or sparse.
        rank: Number of triplets, ``1 <= rank <= min(n, m)``.
        rng: Source of the random test matrix for the randomized path.

    Returns:
        ``(A, s, B)`` with ``A`` (n, rank) and ``B`` (m, rank) orthonormal columns and
        ``s`` (rank,) nonincreasing, so that ``X ~ A diag(s) B^T``.
    """
    n, m = X.shape
    if min(n, m) <= 256 or rank > min(n, m) // 2:
        if m <= n:
            G = X.T @ X
            G = G.toarray() if sp.issparse(G) else np.asarray(G)
            evals, B = np.linalg.eigh(G)
            order = np.argsort(evals)[::-1][:rank]
            s = np.sqrt(np.clip(evals[order], 0.0, None))
            B = B[:, order]
            XB = matmul_right(X, B)
            A = _orthonormal_from_projection(XB, s)
        else:
            G = X @ X.T
            G = G.toarray() if sp.issparse(G) else np.asarray(G)
            evals, A = np.linalg.eigh(G)
            order = np.argsort(evals)[::-1][:rank]
            s = np.sqrt(np.clip(evals[order], 0.0, None))
            A = A[:, order]
            XtA = matmul_right(X.T, A)
            B = _orthonormal_from_projection(XtA, s)
        return A, s, B
    return _randomized_svd(X, rank, rng)


def _orthonormal_from_projection(P: Array, s: Array) -> Array:
    """Columns ``P[:, k] / s_k``; columns with ``s_k ~ 0`` are orthonormalized instead."""
    tiny = s <= s.max(initial=0.0) * 1e-12 if s.size else s.astype(bool)
    out = np.empty_like(P)
    keep = ~tiny
    out[:, keep] = P[:, keep] / s[keep]
    if tiny.any():
        # Null directions: any orthonormal completion works, their singular value is 0.
        filler = np.random.default_rng(0).standard_normal((P.shape[0], int(tiny.sum())))
        q, _ = np.linalg.qr(np.column_stack([out[:, keep], filler]))
        out[:, tiny] = q[:, int(keep.sum()) :]
    return out


def _randomized_svd(
    X: Array | sp.sparray | sp.spmatrix, rank: int, rng: np.random.Generator, n_iter: int = 4
) -> tuple[Array, Array, Array]:
    n, m = X.shape
    k = min(rank + 10, min(n, m))
    Y = matmul_right(X, rng.standard_normal((m, k)))
    Q, _ = np.linalg.qr(Y)
    for _ in range(n_iter):
        Z, _ = np.linalg.qr(matmul_right(X.T, Q))
        Q, _ = np.linalg.qr(matmul_right(X, Z))
    Bsmall = matmul_left(np.ascontiguousarray(Q.T), X)
    Uh, s, Vt = np.linalg.svd(Bsmall, full_matrices=False)
    A = Q @ Uh[:, :rank]
    return A, s[:rank], Vt[:rank].T.copy()
