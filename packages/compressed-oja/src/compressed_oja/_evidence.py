"""The statistics the experiment's band verdicts bootstrap over seeds.

The core's ``loglog_slope`` reads the scatter of points around a line; a rate fitted to
the mean error of a few seeds needs the spread across seeds instead, so the interval
is a BCa bootstrap over seeds: ``icml26_core.stats.bootstrap_band`` of these.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def slope_of_means(x: np.ndarray) -> Callable[..., np.ndarray]:
    """Statistic: OLS slope of log(mean over seeds) on log x, for errors (S, len(x)).

    The returned function takes seed indices (..., S) (as floats, from the bootstrap)
    and needs the error matrix bound with :func:`functools.partial` as ``errors``.
    """
    lx = np.log(np.asarray(x, dtype=float))
    lx = lx - lx.mean()

    def stat(idx: np.ndarray, *, errors: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = np.moveaxis(np.asarray(idx), axis, -1).astype(int)
        m = errors[idx].mean(axis=-2)  # (..., len(x))
        ly = np.log(m)
        return (ly * lx).sum(axis=-1) / (lx * lx).sum()

    return stat


def exponent_of_means(d: np.ndarray) -> Callable[..., np.ndarray]:
    """Statistic: OLS slope of log(mean of each sample) on log d (one sample per d)."""
    ld = np.log(np.asarray(d, dtype=float))
    ld = ld - ld.mean()

    def stat(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        ly = np.stack([np.log(np.mean(s, axis=axis)) for s in samples], axis=-1)
        return (ly * ld).sum(axis=-1) / (ld * ld).sum()

    return stat


def ratio_of_means(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Statistic: mean(a) / mean(b)."""
    return np.mean(a, axis=axis) / np.mean(b, axis=axis)


def spread_of_means(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    """Statistic: max over samples of their means / min of them."""
    m = np.stack([np.mean(s, axis=axis) for s in samples], axis=-1)
    return m.max(axis=-1) / m.min(axis=-1)
