"""The one-step updates and a compiled many-step simulator (numba).

Every public estimator calls the single-step functions below, so the mathematics lives
in one place; :func:`simulate` loops the same steps over a sampled stream for the
experiment and the benchmark (a Python loop would cost about 20 us a step).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Method codes of :func:`simulate`.
FULL, ADAPTIVE, NONADAPTIVE, COORDINATE = 0, 1, 2, 3
METHOD_CODES = {
    "full": FULL,
    "adaptive": ADAPTIVE,
    "nonadaptive": NONADAPTIVE,
    "coordinate": COORDINATE,
}


@njit(cache=True)
def _dot(a, b):
    s = 0.0
    for i in range(a.size):
        s += a[i] * b[i]
    return s


@njit(cache=True)
def normalize_(w):
    """Scale ``w`` to unit norm in place; returns its norm before scaling."""
    n = np.sqrt(_dot(w, w))
    for i in range(w.size):
        w[i] /= n
    return n


@njit(cache=True)
def orthogonal_unit_(g, w):
    """Turn a standard normal ``g`` into a uniform unit vector orthogonal to unit ``w``."""
    c = _dot(g, w)
    for i in range(g.size):
        g[i] -= c * w[i]
    normalize_(g)


@njit(cache=True)
def adaptive_step_(w, u, y1, y2, eta):
    """W <- normalize(w + eta (d-1) y1 y2 u), with y1 = <w, x> and y2 = <u, x>."""
    c = eta * (w.size - 1) * y1 * y2
    for i in range(w.size):
        w[i] += c * u[i]
    normalize_(w)


@njit(cache=True)
def nonadaptive_step_(w, a, b, y1, y2, eta):
    """W <- normalize(w + eta C w), C = d^2 y1 y2 (ab^T + ba^T) / 2 (unbiased for xx^T)."""
    d = w.size
    c = eta * d * d * y1 * y2 / 2.0
    bw = _dot(b, w)
    aw = _dot(a, w)
    for i in range(d):
        w[i] += c * (a[i] * bw + b[i] * aw)
    normalize_(w)


@njit(cache=True)
def full_step_(w, x, eta):
    """Oja's rule on a fully observed sample: w <- normalize(w + eta <w, x> x)."""
    c = eta * _dot(w, x)
    for i in range(w.size):
        w[i] += c * x[i]
    normalize_(w)


@njit(cache=True)
def coordinate_step_(w, i, j, xi, xj, eta):
    """Gonen et al. (2016) with r = 2 observed coordinates i != j of a sample.

    The unbiased estimate of xx^T from (x_i, x_j) has diagonal entries (d/2) x_k^2 and
    off-diagonal entries d(d-1)/2 x_i x_j; w <- normalize(w + eta C w).
    """
    d = w.size
    diag = d / 2.0
    off = d * (d - 1) / 2.0 * xi * xj
    wi, wj = w[i], w[j]
    w[i] += eta * (diag * xi * xi * wi + off * wj)
    w[j] += eta * (diag * xj * xj * wj + off * wi)
    normalize_(w)


@njit(cache=True)
def _unit_normal_(g, rng):
    for i in range(g.size):
        g[i] = rng.standard_normal()
    normalize_(g)


@njit(cache=True)
def _draw_sample_(x, data, scale, rng):
    if data.shape[0] > 0:
        r = rng.integers(0, data.shape[0])
        for i in range(x.size):
            x[i] = data[r, i]
    else:
        for i in range(x.size):
            x[i] = scale[i] * rng.standard_normal()


@njit(cache=True)
def simulate(method, data, scale, w0, truth, n_steps, t0, eta_scale, checkpoints, rng):
    """Run one estimator for ``n_steps`` samples; sin^2 to ``truth`` at ``checkpoints``.

    Samples are rows of ``data`` drawn with replacement, or, when ``data`` has no rows,
    Gaussian with standard deviations ``scale`` (the covariance diag(scale^2)). The
    step size is ``eta_scale / (t + t0)`` at step t = 1..n_steps.

    Args:
        method: One of :data:`METHOD_CODES`' values.
        data: (n, d) float64 rows, or (0, d) for the Gaussian model.
        scale: (d,) float64 standard deviations of the Gaussian model.
        w0: (d,) float64 unit start (not modified).
        truth: (d,) float64 unit top eigenvector.
        n_steps: Number of samples.
        t0: Offset of the schedule.
        eta_scale: alpha / eigengap.
        checkpoints: Increasing int64 steps in 1..n_steps.
        rng: A numpy Generator (``numpy.random.default_rng(seed)``), advanced in place;
            numba draws from it with numpy's own algorithms.

    Returns:
        (len(checkpoints),) float64 sin^2 errors.
    """
    d = w0.size
    w = w0.copy()
    x = np.empty(d)
    g = np.empty(d)
    h = np.empty(d)
    out = np.empty(checkpoints.size)
    k = 0
    for t in range(1, n_steps + 1):
        eta = eta_scale / (t + t0)
        if method == COORDINATE:
            i = rng.integers(0, d)
            j = rng.integers(0, d - 1)
            if j >= i:
                j += 1
            if data.shape[0] > 0:
                r = rng.integers(0, data.shape[0])
                xi, xj = data[r, i], data[r, j]
            else:
                xi = scale[i] * rng.standard_normal()
                xj = scale[j] * rng.standard_normal()
            coordinate_step_(w, i, j, xi, xj, eta)
        else:
            _draw_sample_(x, data, scale, rng)
            if method == FULL:
                full_step_(w, x, eta)
            elif method == ADAPTIVE:
                for i in range(d):
                    g[i] = rng.standard_normal()
                orthogonal_unit_(g, w)
                adaptive_step_(w, g, _dot(w, x), _dot(g, x), eta)
            else:
                _unit_normal_(g, rng)
                _unit_normal_(h, rng)
                nonadaptive_step_(w, g, h, _dot(g, x), _dot(h, x), eta)
        while k < checkpoints.size and checkpoints[k] == t:
            c = _dot(w, truth)
            out[k] = max(0.0, 1.0 - c * c)
            k += 1
    return out
