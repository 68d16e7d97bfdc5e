"""Compiled inner loops (numba) of the linear-model fast path.

One call runs the steps of one epoch in place. The memory is one scalar per sample,
phi'(a_i^T x_{s}, y_i), refreshed at the step s when i was last drawn; ``last`` holds s
and ``maxgap`` the largest refresh gap seen, from which the realized delays follow.
Both regularizers are applied at the current iterate (their gradient is cheap and exact).
"""

from __future__ import annotations

import math

import numba
import numpy as np

LOGISTIC, SQUARED = 0, 1
SAG, SAGA = 0, 1


@numba.njit(cache=True, inline="always")
def _dloss(z: float, yj: float, loss: int) -> float:
    if loss == LOGISTIC:
        m = -yj * z
        if m >= 0.0:
            s = 1.0 / (1.0 + math.exp(-m))
        else:
            e = math.exp(m)
            s = e / (1.0 + e)
        return -yj * s
    return z - yj


@numba.njit(cache=True)
def aggregated_epoch(
    A: np.ndarray,
    y: np.ndarray,
    x: np.ndarray,
    table: np.ndarray,
    agg: np.ndarray,
    indices: np.ndarray,
    step: float,
    alpha: float,
    nu: float,
    pen: np.ndarray,
    loss: int,
    method: int,
    k0: int,
    last: np.ndarray,
    maxgap: np.ndarray,
) -> None:
    """Run SAG/IAG (method 0) or SAGA (method 1) over ``indices``, updating in place.

    Shapes: A (n, p), y (n,), x (p,), table (n,), agg (p,) = A^T table / n,
    indices (m,), pen (p,) 0/1 mask of penalized coordinates, last (n,) int64,
    maxgap (1,) int64. ``k0`` is the global index of the first step.
    """
    n, p = A.shape
    inv_n = 1.0 / n
    for t in range(indices.shape[0]):
        j = indices[t]
        k = k0 + t
        z = 0.0
        for c in range(p):
            z += A[j, c] * x[c]
        g = _dloss(z, y[j], loss)
        diff = g - table[j]
        table[j] = g
        gap = k - last[j]
        if gap > maxgap[0]:
            maxgap[0] = gap
        last[j] = k
        dn = diff * inv_n
        if nu == 0.0:  # the common case: no division in the inner loop
            if method == SAGA:
                for c in range(p):
                    xc = x[c]
                    a = A[j, c]
                    d = diff * a + agg[c] + alpha * pen[c] * xc
                    agg[c] += dn * a
                    x[c] = xc - step * d
            else:
                for c in range(p):
                    agg[c] += dn * A[j, c]
                    xc = x[c]
                    x[c] = xc - step * (agg[c] + alpha * pen[c] * xc)
        elif method == SAGA:
            for c in range(p):
                xc = x[c]
                wc = pen[c] * xc
                reg = alpha * wc + nu * 2.0 * wc / ((1.0 + wc * wc) * (1.0 + wc * wc))
                d = diff * A[j, c] + agg[c] + reg
                agg[c] += dn * A[j, c]
                x[c] = xc - step * d
        else:
            for c in range(p):
                agg[c] += dn * A[j, c]
                xc = x[c]
                wc = pen[c] * xc
                reg = alpha * wc + nu * 2.0 * wc / ((1.0 + wc * wc) * (1.0 + wc * wc))
                x[c] = xc - step * (agg[c] + reg)


@numba.njit(cache=True)
def sgd_epoch(
    A: np.ndarray,
    y: np.ndarray,
    x: np.ndarray,
    indices: np.ndarray,
    steps: np.ndarray,
    alpha: float,
    nu: float,
    pen: np.ndarray,
    loss: int,
) -> None:
    """Plain SGD x <- x - steps[t] grad f_{indices[t]}(x) over one epoch, in place."""
    p = A.shape[1]
    for t in range(indices.shape[0]):
        j = indices[t]
        z = 0.0
        for c in range(p):
            z += A[j, c] * x[c]
        g = _dloss(z, y[j], loss)
        st = steps[t]
        for c in range(p):
            xc = x[c]
            wc = pen[c] * xc
            reg = alpha * wc + nu * 2.0 * wc / ((1.0 + wc * wc) * (1.0 + wc * wc))
            x[c] = xc - st * (g * A[j, c] + reg)
