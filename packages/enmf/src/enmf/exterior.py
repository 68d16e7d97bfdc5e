"""Exterior iterations of eNMF: HALS updates taken from extrapolated, infeasible points.

Every iteration keeps a feasible *anchor* ``(W, H)`` and an *exterior* point
``(W_hat, H_hat) = anchor + beta * (anchor - previous anchor)``, which may leave the
nonnegative orthant. The HALS update of ``W`` is computed against ``H_hat`` and the
update of ``H`` against ``W_hat``; each update lands back on the orthant (on its
boundary wherever the constraint is active). The first exterior point is the
rotated SVD factorization itself. ``beta`` grows while the anchor's error falls
and is cut (and the extrapolation dropped) when it rises, so the method falls back
to plain HALS where extrapolation does not pay.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from enmf._linalg import matmul_left, refine_small_error, squared_norm
from enmf.hals import (
    NO_PENALTY,
    Array,
    MatrixLike,
    Penalty,
    SolverResult,
    Trace,
    _sweeps,
    inner_sweeps,
    kkt_tolerance_met,
    projected_gradient_norm2,
)


def exterior_solve(
    X: MatrixLike,
    W_ext: Array,
    H_ext: Array,
    *,
    max_iter: int = 200,
    tol: float = 1e-4,
    beta0: float = 0.5,
    beta_growth: float = 1.05,
    beta_cut: float = 2.0,
    time_limit: float | None = None,
    t_offset: float = 0.0,
    callback: Callable[[int, Array, Array], None] | None = None,
    inner: bool = True,
    penalty: Penalty = NO_PENALTY,
    stop: Callable[[float, float], bool] | None = None,
) -> SolverResult:
    """Run the exterior iterations from the exterior point ``(W_ext, H_ext)``.

    One iteration (``hat`` quantities are exterior, the others feasible):

    1. ``W+ = HALS(W_hat; X H_hat^T, H_hat H_hat^T)``, from the exterior ``H_hat``;
    2. ``W_hat+ = W+ + beta (W+ - W)``;
    3. ``H+ = HALS(H_hat; W_hat+^T X, W_hat+^T W_hat+)``;
    4. ``H_hat+ = H+ + beta (H+ - H)``;
    5. if ``||X - W+ H+|| > ||X - W H||``: ``beta <- beta / beta_cut``, the cap on
       ``beta`` drops to its old value, and the exterior point is reset to the anchor;
       else ``beta <- min(cap, beta * beta_growth)`` and the cap creeps towards 1.

    The products are linear in the factors, so ``X H_hat^T`` and ``W_hat^T X`` are
    formed from those of the two last anchors at O((n + m) r) cost: each iteration
    multiplies by ``X`` twice, like HALS. The error and the projected gradient of
    the anchor (the KKT residual) also come from these products. Stops when the
    anchor's projected gradient falls below ``tol`` times its first value.

    Args:
        X: Data, shape (n, m), nonnegative, dense float64 or scipy sparse.
        W_ext: Exterior start, shape (n, r), any sign. Not modified.
        H_ext: Exterior start, shape (r, m), any sign. Not modified.
        max_iter: Maximum number of iterations.
        tol: Relative projected-gradient tolerance (KKT residual).
        beta0: First extrapolation weight, in [0, 1]; 0 gives plain HALS.
        beta_growth: Factor on ``beta`` after a successful iteration (> 1).
        beta_cut: Divisor of ``beta`` after a failed one (> 1).
        time_limit: Optional wall-time budget in seconds, counted from the call
            minus ``t_offset``.
        t_offset: Seconds spent before the call, added to every trace time.
        callback: Called as ``callback(iteration, W^T, H)`` on the anchor.
        inner: Repeat the cheap sweeps per product (accelerated HALS).
        penalty: L1/L2 penalties on the factors (:class:`~enmf.hals.Penalty`); the
            restart test then compares the penalized objective.
        stop: Called as ``stop(seconds, squared_error)`` after each iteration; the run
            ends when it returns True.

    Returns:
        A :class:`~enmf.hals.SolverResult`; ``W`` and ``H`` are the last anchor
        (nonnegative), and the trace records the anchor's error.

    References:
        eNMF paper (ICML 2026), abstract: "simple iterative updates converge to
        KKT-satisfying stationary points on the boundary of the positive orthant".
        Ang & Gillis (2019), Accelerating nonnegative matrix factorization algorithms
        using extrapolation, Neural Computation 31(2), for the restart rule.
    """
    t_start = time.perf_counter() - t_offset
    n, m = X.shape
    r = H_ext.shape[0]
    XT = X.T.tocsr() if sp.issparse(X) else X.T
    x_norm2 = squared_norm(X)
    nnz = X.nnz if sp.issparse(X) else n * m
    inner_W = inner_sweeps(nnz * r, n * r * r) if inner else 1
    inner_H = inner_sweeps(nnz * r, m * r * r) if inner else 1

    Wt_hat = np.array(W_ext.T, dtype=np.float64, order="C")
    H_hat = np.array(H_ext, dtype=np.float64, order="C")
    HXt_hat = matmul_left(H_hat, XT)  # (r, n) = (X H_hat^T)^T
    Wt = H = HXt = WtX = None  # the anchor and its products, set after iteration 1
    beta, beta_cap = beta0, 1.0
    obj_prev = np.inf

    trace = Trace()
    pg0: float | None = None
    converged = False
    err2 = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        # 1. W from the exterior H_hat, started at the exterior W_hat.
        Wt_new = Wt_hat.copy()
        _sweeps(Wt_new, *penalty.apply(HXt_hat, H_hat @ H_hat.T, "W"), inner_W)
        WtX_new = matmul_left(Wt_new, X)
        # 2. Extrapolate W (exterior), products by linearity.
        if Wt is None or beta == 0.0:
            Wt_hat, WtX_hat = Wt_new, WtX_new
        else:
            Wt_hat = Wt_new + beta * (Wt_new - Wt)
            WtX_hat = (1.0 + beta) * WtX_new - beta * WtX
        # 3. H from the exterior W_hat, started at the exterior H_hat.
        H_new = H_hat.copy()
        _sweeps(H_new, *penalty.apply(WtX_hat, Wt_hat @ Wt_hat.T, "H"), inner_H)
        HXt_new = matmul_left(H_new, XT)

        # Anchor error and KKT residual from the products in hand.
        WtW = Wt_new @ Wt_new.T
        HHt = H_new @ H_new.T
        err2 = max(x_norm2 - 2.0 * float(np.vdot(HXt_new, Wt_new)) + float(np.vdot(WtW, HHt)), 0.0)
        err2 = refine_small_error(X, err2, x_norm2, Wt_new, H_new)
        A, B = penalty.apply(HXt_new, HHt, "W")
        pg = projected_gradient_norm2(Wt_new, B @ Wt_new - A)
        A, B = penalty.apply(WtX_new, WtW, "H")
        pg += projected_gradient_norm2(H_new, B @ H_new - A)
        objective = 0.5 * err2 + penalty.value(Wt_new, H_new) if penalty.active else err2

        # 4-5. Extrapolate H, or restart when the anchor got worse.
        if Wt is not None and objective > obj_prev:
            beta_cap = beta
            beta /= beta_cut
            Wt_hat, H_hat, HXt_hat = Wt_new, H_new, HXt_new
        else:
            if H is not None and beta > 0.0:
                H_hat = H_new + beta * (H_new - H)
                HXt_hat = (1.0 + beta) * HXt_new - beta * HXt
            else:
                H_hat, HXt_hat = H_new, HXt_new
            if Wt is not None:
                beta = min(beta_cap, beta * beta_growth)
                beta_cap = min(1.0, beta_cap * 1.01)
        Wt, H, HXt, WtX = Wt_new, H_new, HXt_new, WtX_new
        obj_prev = objective

        now = time.perf_counter() - t_start
        trace.record(now, err2)
        if callback is not None:
            callback(it, Wt, H)
        if pg0 is None:
            pg0 = pg
        if kkt_tolerance_met(pg, pg0, tol, err2, x_norm2):
            converged = True
            break
        if time_limit is not None and now >= time_limit:
            break
        if stop is not None and stop(now, err2):
            break

    assert Wt is not None and H is not None
    return SolverResult(
        W=np.ascontiguousarray(Wt.T),
        H=H,
        n_iter=it,
        converged=converged,
        squared_error=err2,
        trace=trace,
    )
