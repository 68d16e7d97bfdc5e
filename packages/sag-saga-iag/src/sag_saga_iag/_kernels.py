"""Compiled inner loops (numba) of the linear-model fast path.

One call runs the steps of one epoch in place. The memory holds K scalars per sample,
s_i phi'(a_i^T W_{s} + b_s, y_i), refreshed at the step s when i was last drawn; ``last``
holds s and ``maxgap`` the largest refresh gap seen, from which the realized delays
follow. The L2 (and non-convex) regularizer is applied at the current iterate, the l1
term by a proximal step (soft-thresholding) after each step, as scikit-learn's SAGA does.

The iterate ``x`` (rows of [W; b], shape (P, K)), the memory and its average are
float64; the data are read in their own dtype (float32 or float64), never copied.

CSR data use just-in-time updates: between two visits of samples that touch feature c,
its coordinates follow x <- prox(r x - gamma g_c) with r = 1 - gamma alpha and the
stored average g_c unchanged, so :func:`lazy_steps` applies m such steps in O(1) (in
closed form; with the l1 prox, by the monotone piecewise-affine structure of the map).
"""

from __future__ import annotations

import math

import numba
import numpy as np

LOGISTIC, SQUARED, MULTINOMIAL = 0, 1, 2
SAG, SAGA = 0, 1
LOSS_IDS = {"logistic": LOGISTIC, "squared": SQUARED, "multinomial": MULTINOMIAL}


@numba.njit(cache=True)
def _dloss(z: np.ndarray, yj: float, sj: float, loss: int, out: np.ndarray) -> None:
    """Out <- s_j d phi(z, y_j)/dz for the K margins z (K = 1 unless multinomial)."""
    if loss == LOGISTIC:
        m = -yj * z[0]
        if m >= 0.0:
            s = 1.0 / (1.0 + math.exp(-m))
        else:
            e = math.exp(m)
            s = e / (1.0 + e)
        out[0] = -yj * s * sj
    elif loss == SQUARED:
        out[0] = (z[0] - yj) * sj
    else:
        K = z.shape[0]
        top = z[0]
        for k in range(1, K):
            if z[k] > top:
                top = z[k]
        tot = 0.0
        for k in range(K):
            out[k] = math.exp(z[k] - top)
            tot += out[k]
        lab = int(yj)
        for k in range(K):
            out[k] = (out[k] / tot - (1.0 if k == lab else 0.0)) * sj


@numba.njit(cache=True, inline="always")
def _soft(v: float, t: float) -> float:
    if v > t:
        return v - t
    if v < -t:
        return v + t
    return 0.0


@numba.njit(cache=True)
def _affine(x: float, m: int, a: float, u: float) -> float:
    """M steps of x <- (1 - a) x - u, in closed form (a = gamma alpha in [0, 1))."""
    if a == 0.0:
        return x - m * u
    lg = math.log1p(-a)
    rm = math.exp(m * lg)
    geo = -math.expm1(m * lg) / a  # sum_{t<m} (1 - a)^t
    return rm * x - u * geo


@numba.njit(cache=True)
def _steps_in_branch(x0: float, M: int, a: float, u: float, s: float) -> int:
    """Largest T in [1, M] with s * x_t > 0 for t = 1..T, x_t = T steps of x <- (1-a)x - u.

    The sequence is monotone, so the steps with the sign s form a prefix; the caller
    has checked s * x_1 > 0.
    """
    if a == 0.0:
        if s * u <= 0.0:
            return M
        T = math.ceil((s * x0) / (s * u)) - 1
    else:
        xs = -u / a  # fixed point of the affine map
        if s * xs > 0.0:
            return M
        span = s * (x0 - xs)
        ratio = -s * xs / span
        if ratio <= 0.0:
            return M
        T = math.ceil(math.log(ratio) / math.log1p(-a)) - 1
    T = max(1, min(M, int(T)))
    # the logarithms above can be off by one step in floating point: check both ends
    for _ in range(4):
        if T < M and s * _affine(x0, T + 1, a, u) > 0.0:
            T += 1
        else:
            break
    for _ in range(4):
        if T > 1 and s * _affine(x0, T, a, u) <= 0.0:
            T -= 1
        else:
            break
    return T


def geometric_tables(n: int, step: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(r^t, sum_{i<t} r^i) for t = 0..n with r = 1 - step alpha: m lazy L2 steps in O(1).

    x after m steps of x <- r x - u is r^m x - u sum_{i<m} r^i; within an epoch m <= n.
    """
    t = np.arange(n + 1, dtype=np.float64)
    a = step * alpha
    if a == 0.0:
        return np.ones(n + 1), t
    lg = np.log1p(-a)
    return np.exp(t * lg), -np.expm1(t * lg) / a


@numba.njit(cache=True)
def lazy_steps(x: float, m: int, a: float, q: float, b: float) -> float:
    """M steps of x <- soft_threshold((1 - a) x - q, b), in O(1) for any m >= 0.

    Without the threshold (b = 0) it is an affine recursion with a closed form. With it,
    the map is nondecreasing and piecewise affine with three pieces (output > 0, = 0,
    < 0), so the iterates are monotone and visit each piece in one run: each run is
    jumped over in closed form (at most four runs).
    """
    if m <= 0:
        return x
    if b == 0.0:
        return _affine(x, m, a, q)
    remaining = m
    for _ in range(6):
        if remaining == 0:
            return x
        y = (1.0 - a) * x - q
        if y > b:
            u, s = q + b, 1.0
        elif y < -b:
            u, s = q - b, -1.0
        else:
            x = 0.0
            remaining -= 1
            if abs(q) <= b:  # from 0 the map returns 0 again: stays there
                return 0.0
            continue
        T = _steps_in_branch(x, remaining, a, u, s)
        x = _affine(x, T, a, u)
        remaining -= T
    for _ in range(remaining):  # not reached for a monotone map; kept as a safe fallback
        x = _soft((1.0 - a) * x - q, b)
    return x


@numba.njit(cache=True)
def dense_epoch(
    X: np.ndarray,
    y: np.ndarray,
    sw: np.ndarray,
    x: np.ndarray,
    table: np.ndarray,
    agg: np.ndarray,
    order: np.ndarray,
    step: float,
    alpha: float,
    l1: float,
    nu: float,
    icpt: bool,
    loss: int,
    method: int,
    k0: int,
    last: np.ndarray,
    maxgap: np.ndarray,
) -> None:
    """SAG/IAG (method 0) or SAGA (method 1) over ``order`` on dense X, one output, in place.

    Shapes: X (n, d), y (n,), sw (n,), x (P,) with P = d + icpt (the intercept last),
    table (n,), agg (P,) = [X, 1]^T table / n, order (m,), last (n,) int64, maxgap (1,)
    int64. ``k0`` is the global index of the first step.
    """
    n, d = X.shape
    inv_n = 1.0 / n
    thr = step * l1
    zb = np.empty(1)
    gb = np.empty(1)
    for t in range(order.shape[0]):
        j = order[t]
        k = k0 + t
        z = x[d] if icpt else 0.0
        for c in range(d):
            z += X[j, c] * x[c]
        zb[0] = z
        _dloss(zb, y[j], sw[j], loss, gb)
        g = gb[0]
        diff = g - table[j]
        table[j] = g
        gap = k - last[j]
        if gap > maxgap[0]:
            maxgap[0] = gap
        last[j] = k
        dn = diff * inv_n
        if nu == 0.0 and thr == 0.0:  # the common case: nothing but multiply-adds
            if method == SAGA:
                for c in range(d):
                    xc = x[c]
                    a = X[j, c]
                    dd = diff * a + agg[c] + alpha * xc
                    agg[c] += dn * a
                    x[c] = xc - step * dd
            else:
                for c in range(d):
                    agg[c] += dn * X[j, c]
                    xc = x[c]
                    x[c] = xc - step * (agg[c] + alpha * xc)
        else:
            for c in range(d):
                xc = x[c]
                a = X[j, c]
                reg = alpha * xc + nu * 2.0 * xc / ((1.0 + xc * xc) * (1.0 + xc * xc))
                if method == SAGA:
                    dd = diff * a + agg[c] + reg
                    agg[c] += dn * a
                else:
                    agg[c] += dn * a
                    dd = agg[c] + reg
                v = xc - step * dd
                x[c] = _soft(v, thr) if thr > 0.0 else v
        if icpt:
            if method == SAGA:
                dd = diff + agg[d]
                agg[d] += dn
            else:
                agg[d] += dn
                dd = agg[d]
            x[d] -= step * dd


@numba.njit(cache=True)
def csr_epoch(
    data: np.ndarray,
    indices: np.ndarray,
    indptr: np.ndarray,
    y: np.ndarray,
    sw: np.ndarray,
    x: np.ndarray,
    table: np.ndarray,
    agg: np.ndarray,
    order: np.ndarray,
    step: float,
    alpha: float,
    l1: float,
    icpt: bool,
    loss: int,
    method: int,
    k0: int,
    last: np.ndarray,
    maxgap: np.ndarray,
    flast: np.ndarray,
    pw: np.ndarray,
    geo: np.ndarray,
) -> None:
    """The steps of :func:`dense_epoch` on a CSR matrix, with just-in-time updates.

    ``flast[c]`` is the number of steps feature c's coordinate has received; before
    sample j is read, the features of row j are brought up to step k with
    :func:`lazy_steps`, then stepped explicitly. Call :func:`csr_catch_up` at the end of
    an epoch to bring every feature up to date. Shapes as in :func:`dense_epoch`, with
    d = x.shape[0] - icpt and flast (d,) int64; ``data``, ``indices``, ``indptr`` are
    the CSR arrays of X (n, d); ``pw``, ``geo`` from :func:`geometric_tables` (every
    feature is caught up at least once per epoch, so lags stay <= n).
    """
    n = indptr.shape[0] - 1
    d = x.shape[0] - (1 if icpt else 0)
    inv_n = 1.0 / n
    a = step * alpha
    thr = step * l1
    zb = np.empty(1)
    gb = np.empty(1)
    for t in range(order.shape[0]):
        j = order[t]
        k = k0 + t
        lo, hi = indptr[j], indptr[j + 1]
        z = x[d] if icpt else 0.0
        for q in range(lo, hi):
            c = indices[q]
            m = k - flast[c]
            if m > 0:
                if thr > 0.0:
                    x[c] = lazy_steps(x[c], m, a, step * agg[c], thr)
                else:
                    x[c] = pw[m] * x[c] - step * agg[c] * geo[m]
                flast[c] = k
            z += data[q] * x[c]
        zb[0] = z
        _dloss(zb, y[j], sw[j], loss, gb)
        g = gb[0]
        diff = g - table[j]
        table[j] = g
        gap = k - last[j]
        if gap > maxgap[0]:
            maxgap[0] = gap
        last[j] = k
        dn = diff * inv_n
        for q in range(lo, hi):
            c = indices[q]
            ajc = data[q]
            xc = x[c]
            if method == SAGA:
                dd = diff * ajc + agg[c] + alpha * xc
                agg[c] += dn * ajc
            else:
                agg[c] += dn * ajc
                dd = agg[c] + alpha * xc
            v = xc - step * dd
            x[c] = _soft(v, thr) if thr > 0.0 else v
            flast[c] = k + 1
        if icpt:
            if method == SAGA:
                dd = diff + agg[d]
                agg[d] += dn
            else:
                agg[d] += dn
                dd = agg[d]
            x[d] -= step * dd


@numba.njit(cache=True)
def dense_epoch_multi(
    X: np.ndarray,
    y: np.ndarray,
    sw: np.ndarray,
    x: np.ndarray,
    table: np.ndarray,
    agg: np.ndarray,
    order: np.ndarray,
    step: float,
    alpha: float,
    l1: float,
    nu: float,
    icpt: bool,
    loss: int,
    method: int,
    k0: int,
    last: np.ndarray,
    maxgap: np.ndarray,
) -> None:
    """:func:`dense_epoch` for K outputs (the multinomial loss), in place.

    Shapes: x (P, K), table (n, K), agg (P, K); the rest as in :func:`dense_epoch`.
    """
    n, d = X.shape
    K = table.shape[1]
    inv_n = 1.0 / n
    thr = step * l1
    z = np.empty(K)
    g = np.empty(K)
    diff = np.empty(K)
    dn = np.empty(K)
    for t in range(order.shape[0]):
        j = order[t]
        k = k0 + t
        for kk in range(K):
            z[kk] = x[d, kk] if icpt else 0.0
        for c in range(d):
            ajc = X[j, c]
            for kk in range(K):
                z[kk] += ajc * x[c, kk]
        _dloss(z, y[j], sw[j], loss, g)
        for kk in range(K):
            diff[kk] = g[kk] - table[j, kk]
            dn[kk] = diff[kk] * inv_n
            table[j, kk] = g[kk]
        gap = k - last[j]
        if gap > maxgap[0]:
            maxgap[0] = gap
        last[j] = k
        if nu == 0.0 and thr == 0.0:  # the common case: multiply-adds only
            if method == SAGA:
                for c in range(d):
                    ajc = X[j, c]
                    for kk in range(K):
                        xc = x[c, kk]
                        dd = diff[kk] * ajc + agg[c, kk] + alpha * xc
                        agg[c, kk] += dn[kk] * ajc
                        x[c, kk] = xc - step * dd
            else:
                for c in range(d):
                    ajc = X[j, c]
                    for kk in range(K):
                        agg[c, kk] += dn[kk] * ajc
                        xc = x[c, kk]
                        x[c, kk] = xc - step * (agg[c, kk] + alpha * xc)
        else:
            for c in range(d):
                ajc = X[j, c]
                for kk in range(K):
                    xc = x[c, kk]
                    reg = alpha * xc + nu * 2.0 * xc / ((1.0 + xc * xc) * (1.0 + xc * xc))
                    if method == SAGA:
                        dd = diff[kk] * ajc + agg[c, kk] + reg
                        agg[c, kk] += dn[kk] * ajc
                    else:
                        agg[c, kk] += dn[kk] * ajc
                        dd = agg[c, kk] + reg
                    v = xc - step * dd
                    x[c, kk] = _soft(v, thr) if thr > 0.0 else v
        if icpt:
            for kk in range(K):
                if method == SAGA:
                    dd = diff[kk] + agg[d, kk]
                    agg[d, kk] += dn[kk]
                else:
                    agg[d, kk] += dn[kk]
                    dd = agg[d, kk]
                x[d, kk] -= step * dd


@numba.njit(cache=True)
def csr_epoch_multi(
    data: np.ndarray,
    indices: np.ndarray,
    indptr: np.ndarray,
    y: np.ndarray,
    sw: np.ndarray,
    x: np.ndarray,
    table: np.ndarray,
    agg: np.ndarray,
    order: np.ndarray,
    step: float,
    alpha: float,
    l1: float,
    icpt: bool,
    loss: int,
    method: int,
    k0: int,
    last: np.ndarray,
    maxgap: np.ndarray,
    flast: np.ndarray,
    pw: np.ndarray,
    geo: np.ndarray,
) -> None:
    """:func:`csr_epoch` for K outputs (the multinomial loss), in place.

    The same steps as :func:`dense_epoch_multi` on a CSR matrix, with just-in-time updates.

    ``flast[c]`` is the number of steps feature c's coordinates have received; before
    sample j is read, the features of row j are brought up to step k with
    :func:`lazy_steps`, then stepped explicitly. Call :func:`csr_catch_up` at the end of
    an epoch to bring every feature up to date. Shapes as in :func:`dense_epoch`, with
    d = x.shape[0] - icpt and flast (d,) int64.
    """
    n = indptr.shape[0] - 1
    K = table.shape[1]
    d = x.shape[0] - (1 if icpt else 0)
    inv_n = 1.0 / n
    a = step * alpha
    thr = step * l1
    z = np.empty(K)
    g = np.empty(K)
    diff = np.empty(K)
    dn = np.empty(K)
    for t in range(order.shape[0]):
        j = order[t]
        k = k0 + t
        lo, hi = indptr[j], indptr[j + 1]
        for q in range(lo, hi):
            c = indices[q]
            m = k - flast[c]
            if m > 0:
                for kk in range(K):
                    if thr > 0.0:
                        x[c, kk] = lazy_steps(x[c, kk], m, a, step * agg[c, kk], thr)
                    else:
                        x[c, kk] = pw[m] * x[c, kk] - step * agg[c, kk] * geo[m]
                flast[c] = k
        for kk in range(K):
            z[kk] = x[d, kk] if icpt else 0.0
        for q in range(lo, hi):
            c = indices[q]
            v = data[q]
            for kk in range(K):
                z[kk] += v * x[c, kk]
        _dloss(z, y[j], sw[j], loss, g)
        for kk in range(K):
            diff[kk] = g[kk] - table[j, kk]
            dn[kk] = diff[kk] * inv_n
            table[j, kk] = g[kk]
        gap = k - last[j]
        if gap > maxgap[0]:
            maxgap[0] = gap
        last[j] = k
        for q in range(lo, hi):
            c = indices[q]
            ajc = data[q]
            for kk in range(K):
                xc = x[c, kk]
                if method == SAGA:
                    dd = diff[kk] * ajc + agg[c, kk] + alpha * xc
                    agg[c, kk] += dn[kk] * ajc
                else:
                    agg[c, kk] += dn[kk] * ajc
                    dd = agg[c, kk] + alpha * xc
                v = xc - step * dd
                x[c, kk] = _soft(v, thr) if thr > 0.0 else v
            flast[c] = k + 1
        if icpt:
            for kk in range(K):
                if method == SAGA:
                    dd = diff[kk] + agg[d, kk]
                    agg[d, kk] += dn[kk]
                else:
                    agg[d, kk] += dn[kk]
                    dd = agg[d, kk]
                x[d, kk] -= step * dd


@numba.njit(cache=True)
def csr_catch_up(
    x: np.ndarray,
    agg: np.ndarray,
    flast: np.ndarray,
    k: int,
    step: float,
    alpha: float,
    l1: float,
    pw: np.ndarray,
    geo: np.ndarray,
) -> None:
    """Bring every feature's coordinates up to step k (just-in-time updates), in place.

    x and agg have shape (P, K) (pass ``x[:, None]`` views for one output).
    """
    d = flast.shape[0]
    K = x.shape[1]
    a = step * alpha
    thr = step * l1
    for c in range(d):
        m = k - flast[c]
        if m > 0:
            for kk in range(K):
                if thr > 0.0:
                    x[c, kk] = lazy_steps(x[c, kk], m, a, step * agg[c, kk], thr)
                else:
                    x[c, kk] = pw[m] * x[c, kk] - step * agg[c, kk] * geo[m]
            flast[c] = k


@numba.njit(cache=True)
def sgd_epoch(
    X: np.ndarray,
    y: np.ndarray,
    x: np.ndarray,
    indices: np.ndarray,
    steps: np.ndarray,
    alpha: float,
    nu: float,
    icpt: bool,
    loss: int,
) -> None:
    """Plain SGD x <- x - steps[t] grad f_{indices[t]}(x) over one epoch, in place.

    Dense X (n, d), binary logistic or squared loss, x (P,) with the intercept last.
    """
    d = X.shape[1]
    z = np.empty(1)
    g = np.empty(1)
    for t in range(indices.shape[0]):
        j = indices[t]
        z[0] = x[d] if icpt else 0.0
        for c in range(d):
            z[0] += X[j, c] * x[c]
        _dloss(z, y[j], 1.0, loss, g)
        st = steps[t]
        for c in range(d):
            xc = x[c]
            reg = alpha * xc + nu * 2.0 * xc / ((1.0 + xc * xc) * (1.0 + xc * xc))
            x[c] = xc - st * (g[0] * X[j, c] + reg)
        if icpt:
            x[d] -= st * g[0]
