"""Linear operators behind the blocks A_kj: dense arrays, scipy sparse matrices, LinearOperators.

One small wrapper so the solver never branches on the kind of matrix: ``mv`` (A x),
``rmv`` (A^T y), the Gram matrix A^T A where it can be formed, and a spectral-norm estimate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

DENSE_LIMIT = 4000
"""Largest dimension for which dense Gram matrices, ranks and eigenvalues are formed."""
SMALL = 300
"""Sparse matrices with both sides up to this size are kept dense (faster to apply)."""


class Op:
    """A linear map R^n -> R^m from an ndarray, a scipy sparse matrix or a LinearOperator.

    Args:
        a: The matrix, shape ``(m, n)``, float64 after conversion.
        name: How error messages name it (e.g. ``"A[(0, 2)]"``).

    Raises:
        TypeError: If ``a`` is none of the three kinds.
        ValueError: If it is not two-dimensional or holds NaN or inf.
    """

    def __init__(self, a: Any, name: str = "A") -> None:
        self.name = name
        if isinstance(a, LinearOperator):
            self.kind = "linop"
            self.mat: Any = a
        elif sp.issparse(a) and max(a.shape) > SMALL:
            self.kind = "sparse"
            self.mat = sp.csr_array(a, dtype=np.float64)
            if not np.all(np.isfinite(self.mat.data)):
                raise ValueError(f"{name} holds NaN or inf")
            self._matT = sp.csr_array(self.mat.T)  # A^T once, not per product
        elif sp.issparse(a):
            return self.__init__(np.asarray(a.toarray(), dtype=np.float64), name)  # type: ignore[misc]
        elif isinstance(a, np.ndarray | list | tuple) or (
            np.isscalar(a) and not isinstance(a, str)
        ):
            try:
                arr = np.asarray(a, dtype=np.float64)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{name} must hold real numbers: {e}") from e
            if arr.ndim != 2:
                raise ValueError(f"{name} must be two-dimensional, got shape {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{name} holds NaN or inf")
            self.kind = "dense"
            self.mat = arr
        else:
            raise TypeError(
                f"{name} must be an ndarray, a scipy sparse matrix or a LinearOperator, "
                f"got {type(a).__name__}"
            )
        self.shape: tuple[int, int] = (int(self.mat.shape[0]), int(self.mat.shape[1]))
        self._norm: float | None = None

    def mv(self, x: np.ndarray) -> np.ndarray:
        """Return ``A @ x``, shape ``(m,)``."""
        if self.kind == "linop":
            return np.asarray(self.mat.matvec(x), dtype=np.float64).ravel()
        return np.asarray(self.mat @ x, dtype=np.float64)

    def rmv(self, y: np.ndarray) -> np.ndarray:
        """Return ``A.T @ y``, shape ``(n,)``."""
        if self.kind == "linop":
            return np.asarray(self.mat.rmatvec(y), dtype=np.float64).ravel()
        if self.kind == "sparse":
            return np.asarray(self._matT @ y, dtype=np.float64)
        return np.asarray(self.mat.T @ y, dtype=np.float64)

    @property
    def formable(self) -> bool:
        """Whether the matrix itself is at hand (dense or sparse)."""
        return self.kind != "linop"

    def gram(self) -> Any:
        """``A.T @ A`` as a dense array (dense A) or a sparse array (sparse A).

        Raises:
            ValueError: For a LinearOperator, whose Gram matrix is not formed.
        """
        if self.kind == "dense":
            return self.mat.T @ self.mat
        if self.kind == "sparse":
            return sp.csr_array(self.mat.T @ self.mat)
        raise ValueError(f"{self.name} is a LinearOperator; its Gram matrix is not formed")

    def dense(self) -> np.ndarray:
        """The matrix as a dense array (a LinearOperator is applied to the identity)."""
        if self.kind == "dense":
            return self.mat
        if self.kind == "sparse":
            return self.mat.toarray()
        n = self.shape[1]
        return np.column_stack([self.mv(e) for e in np.eye(n)]) if n else np.zeros(self.shape)

    def norm(self) -> float:
        """Spectral norm ``||A||_2`` (exact for small matrices, else a power iteration)."""
        if self._norm is None:
            self._norm = spectral_norm(self)
        return self._norm


def spectral_norm(op: Op, *, iters: int = 200, seed: int = 0) -> float:
    """``||A||_2`` of an :class:`Op`: SVD when small, else power iteration on ``A^T A``.

    The power iteration's estimate is raised by 1% (it approaches the norm from below).
    """
    m, n = op.shape
    if m == 0 or n == 0:
        return 0.0
    if op.kind == "dense" and min(m, n) <= DENSE_LIMIT:
        return float(np.linalg.norm(op.mat, 2))
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n)
    v /= np.linalg.norm(v)
    s = 0.0
    for _ in range(iters):
        w = op.rmv(op.mv(v))
        nw = float(np.linalg.norm(w))
        if nw == 0.0:
            return 0.0
        v = w / nw
        if abs(nw - s) <= 1e-10 * nw:
            s = nw
            break
        s = nw
    return float(np.sqrt(s) * 1.01)


def sym_extreme_eigs(m: Any, n: int) -> tuple[float, float]:
    """A lower bound on the smallest and the largest eigenvalue of a symmetric matrix of size n.

    Dense matrices up to ``DENSE_LIMIT`` and sparse ones up to ``SMALL``: both exact
    (``eigvalsh``). Larger sparse ones: the largest by ARPACK (``eigsh``, Lanczos, to
    machine precision), the smallest replaced by its Gershgorin lower bound ``min_i (m_ii
    - sum_{j != i} |m_ij|)`` (exact for diagonal matrices, cheap, and safe where it is
    used: curvature bounds and the descent certificate only need a lower bound).
    """
    if n == 0:
        return 0.0, 0.0
    if sp.issparse(m):
        m = sp.csr_array(m)
        if m.nnz == 0:
            return 0.0, 0.0
        if n <= SMALL:
            m = m.toarray()
        else:
            from scipy.sparse.linalg import eigsh

            d = m.diagonal()
            radius = np.asarray(abs(m).sum(axis=1)).ravel() - np.abs(d)
            lo = float(np.min(d - radius))
            try:
                hi = float(eigsh(m, k=1, which="LA", return_eigenvectors=False, tol=0.0)[0])
            except Exception:  # ARPACK failed to converge: fall back to the Gershgorin bound
                hi = float(np.max(d + radius))
            return min(lo, hi), hi
    if n > DENSE_LIMIT:
        from scipy.sparse.linalg import eigsh

        arr = np.asarray(m, dtype=np.float64)
        hi = float(eigsh(arr, k=1, which="LA", return_eigenvectors=False)[0])
        lo = float(eigsh(arr, k=1, which="SA", return_eigenvectors=False)[0])
        return lo, hi
    ev = np.linalg.eigvalsh(np.asarray(m, dtype=np.float64))
    return float(ev[0]), float(ev[-1])


def is_scaled_identity(m: Any, n: int, rtol: float = 1e-12) -> float | None:
    """Return c if the symmetric matrix ``m`` (n x n) equals ``c I``, else None."""
    if n == 0:
        return 0.0
    if sp.issparse(m):
        m = sp.csr_array(m)
        d = m.diagonal()
        off = m - sp.diags_array(d)
        offmax = float(np.max(np.abs(off.data))) if off.nnz else 0.0
    else:
        m = np.asarray(m)
        d = np.diag(m)
        offmax = float(np.max(np.abs(m - np.diag(d)))) if n > 1 else 0.0
    c = float(d[0])
    scale = max(abs(c), 1e-300)
    if offmax <= rtol * scale and np.all(np.abs(d - c) <= rtol * scale):
        return c
    return None
