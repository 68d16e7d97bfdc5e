"""Band decisions on statistics bootstrapped over seeds (the experiment's verdicts).

The core's ``loglog_slope`` reads the scatter of points around a line; a rate fitted to
the mean error of a few seeds needs the spread across seeds instead, so the interval
here is a BCa bootstrap over seeds (``icml26_core.stats.bootstrap_ci``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from icml26_core.stats import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, Evidence, bootstrap_ci


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def in_band(
    samples: Sequence[np.ndarray],
    statistic: Callable[..., np.ndarray],
    *,
    low: float = -np.inf,
    high: float = np.inf,
    effect_name: str,
    test: str,
) -> Evidence:
    """Is ``statistic(*samples)`` inside ``[low, high]``? Three-way, on its 95% CI.

    Holds if the whole interval lies inside the band, does not hold if it lies wholly
    outside, inconclusive otherwise. Each sample is resampled on its own (independent
    runs per sample) unless there is one sample.

    Args:
        samples: One 1-D array per group of independent seeds (or one (S,) array of
            seed indices when the statistic reads a matrix).
        statistic: Vectorized in its samples along ``axis``.
        low: Lower end of the band (-inf for a one-sided "at most").
        high: Upper end (inf for "at least").
        effect_name: What the statistic is.
        test: The test in words.

    Returns:
        The :class:`~icml26_core.stats.Evidence`.
    """
    samples = [np.asarray(s, dtype=float) for s in samples]
    effect = float(statistic(*samples, axis=-1))
    n = min(s.size for s in samples)
    if not np.isfinite(effect) or n < 3:
        lo, hi = np.nan, np.nan
    else:
        lo, hi = bootstrap_ci(samples, statistic, paired=len(samples) == 1)
    band = f"[{_fmt(low)}, {_fmt(high)}]"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        verdict, reason = INCONCLUSIVE, "the confidence interval could not be computed"
    elif low <= lo and hi <= high:
        verdict, reason = HOLDS, f"the whole interval lies inside {band}"
    elif hi < low or lo > high:
        verdict, reason = DOES_NOT_HOLD, f"the whole interval lies outside {band}"
    else:
        verdict, reason = INCONCLUSIVE, f"the interval straddles an end of {band}"
    threshold = low if np.isfinite(low) else high
    return Evidence(
        test=test,
        effect_name=effect_name,
        effect=effect,
        ci_low=float(lo),
        ci_high=float(hi),
        confidence=0.95,
        p_value=None,
        n=int(n),
        threshold=float(threshold),
        verdict=verdict,
        reason=reason,
    )


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
