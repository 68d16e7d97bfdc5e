"""Hierarchical alternating least squares (HALS), the update engine of eNMF and a baseline.

The factors are held as ``W^T`` (r, n) and ``H`` (r, m), both C-contiguous, so that
the update of one component touches one contiguous row.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from enmf._linalg import (
    matmul_left,
    refine_small_error,
    squared_error_from_products,
    squared_norm,
)

Array = NDArray[np.float64]
MatrixLike = Array | sp.sparray | sp.spmatrix

#: Components whose Gram diagonal falls below this are treated as vanished.
_TINY = 1e-300


def hals_sweep(F: Array, A: Array, B: Array) -> float:
    """One HALS pass over the rows of ``F``, in place; return the squared change.

    Minimizes ``0.5 ||X - G F||^2`` over each row ``f_k`` of ``F`` in turn, the others
    fixed, given ``A = G^T X`` (r, p) and ``B = G^T G`` (r, r). The exact minimizer
    over ``f_k >= 0`` is ``max(0, f_k + (a_k - b_k F) / B_kk)``; it depends on ``f_k``
    only through the other rows, so ``F`` may start outside the orthant.

    Args:
        F: Factor to update, shape (r, p), float64, C-contiguous; modified in place.
        A: ``G^T X``, shape (r, p).
        B: ``G^T G``, shape (r, r), symmetric positive semidefinite.

    Returns:
        ``||F_new - F_old||_F^2``.
    """
    change = 0.0
    for k in range(F.shape[0]):
        bkk = B[k, k]
        if bkk <= _TINY:
            # The partner component vanished: f_k does not affect the fit.
            np.maximum(F[k], 0.0, out=F[k])
            continue
        step = A[k] - B[k] @ F
        step /= bkk
        new = F[k] + step
        np.maximum(new, 0.0, out=new)
        diff = new - F[k]
        change += float(np.dot(diff, diff))
        F[k] = new
    return change


def projected_gradient_norm2(F: Array, grad: Array) -> float:
    """Squared norm of the projected gradient of a factor constrained to ``F >= 0``.

    The projected gradient is ``grad`` where ``F > 0`` and ``min(grad, 0)`` where
    ``F == 0``; it vanishes exactly at KKT points (``F >= 0``, ``grad >= 0``,
    ``F * grad = 0``). Negative entries of ``F`` (exterior iterates) count fully.
    """
    pg = np.where(F > 0.0, grad, np.minimum(grad, 0.0))
    pg = np.where(F < 0.0, grad, pg)
    return float(np.vdot(pg, pg))


def inner_sweeps(cost_products: float, cost_sweep: float, alpha: float = 0.5) -> int:
    """Number of inner sweeps worth doing per expensive product (Gillis & Glineur, 2012).

    Recomputing ``G^T X`` costs ``cost_products``; one sweep costs ``cost_sweep``.
    Repeating the cheap sweep ``1 + alpha * ratio`` times (capped at 10) spends about
    as much on sweeps as on the product, which is where the accelerated HALS of
    Gillis & Glineur gains its speed.
    """
    ratio = cost_products / max(cost_sweep, 1.0)
    return int(min(10, 1 + np.floor(alpha * ratio)))


@dataclass(frozen=True)
class Penalty:
    """Elementwise L1 and squared-L2 penalties on the factors (scikit-learn's ``alpha_W``...).

    The objective is ``0.5 ||X - W H||_F^2 + l1_W ||W||_1 + 0.5 l2_W ||W||_F^2 +
    l1_H ||H||_1 + 0.5 l2_H ||H||_F^2``; scikit-learn's ``NMF`` sets
    ``l1_W = n_features * alpha_W * l1_ratio``, ``l2_W = n_features * alpha_W *
    (1 - l1_ratio)`` and the same for ``H`` with ``n_samples`` and ``alpha_H``. In a HALS
    sweep they enter as ``A - l1`` and ``B + l2 I`` (as in scikit-learn's cd solver).

    Attributes:
        l1_W, l1_H: L1 weights, >= 0.
        l2_W, l2_H: Squared-L2 weights, >= 0.
    """

    l1_W: float = 0.0
    l1_H: float = 0.0
    l2_W: float = 0.0
    l2_H: float = 0.0

    def apply(self, A: Array, B: Array, which: str) -> tuple[Array, Array]:
        """``(A - l1, B + l2 I)`` for factor ``which`` (``"W"`` or ``"H"``)."""
        l1 = self.l1_W if which == "W" else self.l1_H
        l2 = self.l2_W if which == "W" else self.l2_H
        if l1:
            A = A - l1
        if l2:
            B = B + l2 * np.eye(B.shape[0])
        return A, B

    def value(self, Wt: Array, H: Array) -> float:
        """The penalty terms of the objective at ``(W, H)`` (``Wt`` is ``W^T``)."""
        out = 0.0
        if self.l1_W:
            out += self.l1_W * float(np.abs(Wt).sum())
        if self.l1_H:
            out += self.l1_H * float(np.abs(H).sum())
        if self.l2_W:
            out += 0.5 * self.l2_W * float(np.vdot(Wt, Wt))
        if self.l2_H:
            out += 0.5 * self.l2_H * float(np.vdot(H, H))
        return out

    @property
    def active(self) -> bool:
        """Whether any weight is nonzero."""
        return bool(self.l1_W or self.l1_H or self.l2_W or self.l2_H)


NO_PENALTY = Penalty()


@dataclass
class Trace:
    """Per-iteration record of a solver run.

    Attributes:
        times: Wall time in seconds since the solver started (includes any
            initialization the caller passes as ``t_offset``).
        errors: ``||X - W H||_F`` after each iteration (exterior iterates included).
        feasible: Whether the iterate was nonnegative at that point.
    """

    times: list[float] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    feasible: list[bool] = field(default_factory=list)

    def record(self, now: float, sq_err: float, *, feasible: bool = True) -> None:
        """Append one iteration: its time (s) and squared error ``||X - W H||_F^2``."""
        self.times.append(now)
        self.errors.append(float(np.sqrt(sq_err)))
        self.feasible.append(feasible)


def kkt_tolerance_met(pg: float, pg0: float, tol: float, sq_err: float, x_norm2: float) -> bool:
    """Stopping test shared by the solvers: projected gradient below ``tol**2 * pg0``.

    An exact fit (relative error 1e-10) is a KKT point up to round-off, so it stops too.
    """
    return pg <= (tol**2) * pg0 or sq_err <= 1e-20 * x_norm2


@dataclass
class SolverResult:
    """Factors and diagnostics returned by :func:`hals_solve`.

    Attributes:
        W: Shape (n, r), nonnegative.
        H: Shape (r, m), nonnegative.
        n_iter: Number of outer iterations (one W and one H update each).
        converged: Whether the projected-gradient tolerance was met.
        squared_error: ``||X - W H||_F^2`` at the end.
        trace: Per-iteration times and errors.
    """

    W: Array
    H: Array
    n_iter: int
    converged: bool
    squared_error: float
    trace: Trace


def hals_solve(
    X: MatrixLike,
    W: Array,
    H: Array,
    *,
    max_iter: int = 200,
    tol: float = 1e-4,
    time_limit: float | None = None,
    t_offset: float = 0.0,
    callback: Callable[[int, Array, Array], None] | None = None,
    inner: bool = True,
    penalty: Penalty = NO_PENALTY,
    stop: Callable[[float, float], bool] | None = None,
) -> SolverResult:
    """Alternate HALS updates of ``W`` and ``H`` from the given start.

    Each outer iteration computes ``X H^T`` and ``H H^T``, sweeps ``W``, then
    computes ``W^T X`` and ``W^T W`` and sweeps ``H``. With ``inner=True`` each
    sweep is repeated while it still moves the factor by more than 10% of its
    first move, up to :func:`inner_sweeps` times (accelerated HALS). Stops when the
    projected gradient norm falls below ``tol`` times its value at the start, or
    after ``max_iter`` iterations, or past ``time_limit`` seconds.

    Args:
        X: Data, shape (n, m), nonnegative, dense float64 or scipy sparse.
        W: Start for the left factor, shape (n, r), nonnegative. Not modified.
        H: Start for the right factor, shape (r, m), nonnegative. Not modified.
        max_iter: Maximum number of outer iterations.
        tol: Relative projected-gradient tolerance.
        time_limit: Optional wall-time budget in seconds (measured from the call,
            plus ``t_offset``).
        t_offset: Seconds already spent before the call (e.g. on initialization),
            added to every trace time.
        callback: Called as ``callback(iteration, W^T, H)`` after each iteration
            (views of the working arrays: copy what you keep).
        inner: Whether to repeat the cheap sweeps (accelerated HALS).
        penalty: L1/L2 penalties on the factors (:class:`Penalty`).
        stop: Called as ``stop(seconds, squared_error)`` after each iteration; the run
            ends when it returns True.

    Returns:
        A :class:`SolverResult`.
    """
    t_start = time.perf_counter() - t_offset
    Wt = np.array(W.T, dtype=np.float64, order="C")
    H = np.array(H, dtype=np.float64, order="C")
    n, m = X.shape
    r = H.shape[0]
    x_norm2 = squared_norm(X)
    XT = X.T.tocsr() if sp.issparse(X) else X.T
    nnz = X.nnz if sp.issparse(X) else n * m
    inner_W = inner_sweeps(nnz * r, n * r * r) if inner else 1
    inner_H = inner_sweeps(nnz * r, m * r * r) if inner else 1

    trace = Trace()
    pg0: float | None = None
    converged = False
    sq_err = float("nan")
    it = 0
    for it in range(1, max_iter + 1):
        HXt = matmul_left(H, XT)  # (r, n) = (X H^T)^T
        A, B = penalty.apply(HXt, H @ H.T, "W")
        pg = projected_gradient_norm2(Wt, B @ Wt - A)
        _sweeps(Wt, A, B, inner_W)

        WtX = matmul_left(Wt, X)  # (r, m)
        WtW = Wt @ Wt.T
        A, B = penalty.apply(WtX, WtW, "H")
        pg += projected_gradient_norm2(H, B @ H - A)
        _sweeps(H, A, B, inner_H)

        sq_err = squared_error_from_products(x_norm2, WtX, WtW, H)
        sq_err = refine_small_error(X, sq_err, x_norm2, Wt, H)
        now = time.perf_counter() - t_start
        trace.record(now, sq_err)
        if callback is not None:
            callback(it, Wt, H)

        if pg0 is None:
            pg0 = pg
        if kkt_tolerance_met(pg, pg0, tol, sq_err, x_norm2):
            converged = True
            break
        if time_limit is not None and now >= time_limit:
            break
        if stop is not None and stop(now, sq_err):
            break

    return SolverResult(
        W=np.ascontiguousarray(Wt.T),
        H=H,
        n_iter=it,
        converged=converged,
        squared_error=sq_err,
        trace=trace,
    )


def _sweeps(F: Array, A: Array, B: Array, max_sweeps: int) -> None:
    first = hals_sweep(F, A, B)
    for _ in range(max_sweeps - 1):
        if hals_sweep(F, A, B) <= 0.01 * first:  # 10% of the first move, squared
            break


def nnls_rows(X: MatrixLike, H: Array, *, max_iter: int = 1000, tol: float = 1e-10) -> Array:
    """Solve ``min_{W >= 0} ||X - W H||_F`` for fixed ``H`` (the ``transform`` step).

    Row ``i`` of ``W`` depends only on row ``i`` of ``X``, so the result does not
    depend on which other rows are passed (needed for batch invariance). Starts from
    the clipped least-squares solution and runs HALS sweeps on ``W`` until the
    largest per-row projected gradient is below ``tol`` times ``||H||^2``.

    Args:
        X: Shape (n, m), nonnegative.
        H: Shape (r, m), nonnegative.
        max_iter: Maximum number of sweeps.
        tol: Relative tolerance on the projected gradient.

    Returns:
        ``W`` of shape (n, r), nonnegative.
    """
    XT = X.T.tocsr() if sp.issparse(X) else X.T
    HXt = matmul_left(H, XT)  # (r, n)
    HHt = H @ H.T
    Wt = np.linalg.lstsq(HHt, HXt, rcond=None)[0]
    Wt = np.ascontiguousarray(np.maximum(Wt, 0.0))
    scale = max(float(np.trace(HHt)), _TINY)
    for _ in range(max_iter):
        hals_sweep(Wt, HXt, HHt)
        grad = HHt @ Wt - HXt
        pg = np.where(Wt > 0.0, grad, np.minimum(grad, 0.0))
        if np.abs(pg).max(initial=0.0) <= tol * scale:
            break
    return np.ascontiguousarray(Wt.T)
