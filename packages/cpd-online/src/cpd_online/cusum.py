"""One-sided CUSUM on a standardized entropy stream: baseline, statistic, alarm, onset.

The detector of CPD Online (the paper in ``shared/papers/cpd-online.md``):

- baseline: robust location and scale of the system-prompt entropies,
  ``mu0 = median(H_sys)``, ``sigma0 = 1.4826 * MAD(H_sys)`` (the MAD scaled to be
  consistent for a Gaussian), or mean and standard deviation with ``robust=False``;
- standardized user entropies ``z_t = (H_t - mu0) / sigma0``;
- one-sided CUSUM ``S_0 = 0``, ``S_t = max(0, S_{t-1} + z_t - k)``, alarm at the first
  ``t`` with ``S_t > h``; onset estimate: one plus the last ``t' < t`` with
  ``S_{t'} = 0`` (Page 1954; the onset rule is the CUSUM's maximum-likelihood
  change point for a mean shift);
- prompt score: ``max_t S_t`` (the smallest ``h`` that would not alarm).

Token positions are 0-based indices into the user stream; the onset estimate is the
0-based index of the first token after the last zero of ``S``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from icml26_core.validation import check_float

__all__ = [
    "CUSUMDetector",
    "CUSUMPath",
    "cusum_path",
    "robust_baseline",
    "siegmund_arl",
    "standardize",
]

MAD_TO_SIGMA = 1.482602218505602
"""1 / Phi^{-1}(3/4): makes the median absolute deviation consistent for a Gaussian's sigma."""


def _as_stream(name: str, x: object) -> np.ndarray:
    if isinstance(x, str | bytes):
        raise TypeError(f"{name} must be a 1-D array of real numbers, got a {type(x).__name__}")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D array of real numbers: {exc}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} must be finite; entry {bad} is {arr[bad]}")
    return arr


def robust_baseline(
    entropies: object, *, robust: bool = True, min_scale: float = 1e-3
) -> tuple[float, float]:
    """Location and scale of baseline entropies.

    Args:
        entropies: Baseline entropies (nats), shape ``(n,)``, ``n >= 2``, finite.
        robust: Median and ``1.4826 * MAD`` (default) or mean and standard deviation
            (``ddof=1``).
        min_scale: Floor of the scale, so a constant baseline cannot divide by zero.

    Returns:
        ``(mu0, sigma0)`` in nats, ``sigma0 >= min_scale``.

    Raises:
        TypeError: If ``entropies`` is not numeric (e.g. a string).
        ValueError: If ``entropies`` is not 1-D, has fewer than 2 entries, or holds
            NaN or inf; if ``min_scale <= 0``.
    """
    h = _as_stream("entropies", entropies)
    if h.size < 2:
        raise ValueError(f"entropies must hold at least 2 baseline values, got {h.size}")
    min_scale = check_float("min_scale", min_scale, low=0.0, low_inclusive=False)
    if robust:
        mu = float(np.median(h))
        sigma = MAD_TO_SIGMA * float(np.median(np.abs(h - mu)))
    else:
        mu = float(np.mean(h))
        sigma = float(np.std(h, ddof=1))
    return mu, max(sigma, min_scale)


def standardize(entropies: object, mu0: float, sigma0: float) -> np.ndarray:
    """``z_t = (H_t - mu0) / sigma0``.

    Args:
        entropies: User-token entropies (nats), shape ``(T,)``, finite.
        mu0: Baseline location (nats).
        sigma0: Baseline scale (nats), > 0.

    Returns:
        ``z``, float64, shape ``(T,)``.

    Raises:
        ValueError: On NaN/inf entropies or ``sigma0 <= 0``.
    """
    h = _as_stream("entropies", entropies)
    mu0 = check_float("mu0", mu0)
    sigma0 = check_float("sigma0", sigma0, low=0.0, low_inclusive=False)
    return (h - mu0) / sigma0


@dataclass(frozen=True)
class CUSUMPath:
    """The CUSUM statistic over one stream and what it implies for a threshold ``h``.

    Attributes:
        statistic: ``S_t``, shape ``(T,)``.
        score: ``max_t S_t`` (0 for an empty stream).
        alarm: 0-based index of the first ``S_t > h``, or None (no ``h`` or no alarm).
        onset: Onset estimate for that alarm (0-based), or None.
    """

    statistic: np.ndarray
    score: float
    alarm: int | None
    onset: int | None


def _onset(stat: np.ndarray, alarm: int) -> int:
    zeros = np.flatnonzero(stat[:alarm] <= 0.0)
    return int(zeros[-1]) + 1 if zeros.size else 0


def cusum_path(z: object, k: float = 0.0, h: float | None = None) -> CUSUMPath:
    """Batch one-sided CUSUM of a standardized stream.

    ``S_t = max(0, S_{t-1} + z_t - k)`` with ``S_{-1} = 0``.

    Args:
        z: Standardized stream, shape ``(T,)``, finite.
        k: Reference value (allowance), ``>= 0``, in standard deviations.
        h: Decision threshold, ``> 0``, or None for the statistic and score only.

    Returns:
        A :class:`CUSUMPath`.

    Raises:
        TypeError: If ``z`` is not numeric (e.g. a string).
        ValueError: If ``z`` is not a finite 1-D array, ``k < 0`` or ``h <= 0``.
    """
    z = _as_stream("z", z)
    k = check_float("k", k, low=0.0)
    if h is not None:
        h = check_float("h", h, low=0.0, low_inclusive=False)
    # Lindley's recursion in closed form: S_t = C_t - min(0, min_{s<=t} C_s), C = cumsum(z - k).
    c = np.cumsum(z - k)
    stat = np.maximum(c - np.minimum(np.minimum.accumulate(c), 0.0), 0.0) if z.size else c
    score = float(stat.max()) if stat.size else 0.0
    alarm = onset = None
    if h is not None:
        above = np.flatnonzero(stat > h)
        if above.size:
            alarm = int(above[0])
            onset = _onset(stat, alarm)
    return CUSUMPath(stat, score, alarm, onset)


class CUSUMDetector:
    """Streaming one-sided CUSUM, fed one standardized value at a time.

    Args:
        k: Reference value (allowance), ``>= 0``; ``k = 0`` is the paper's canonical
            setting.
        h: Decision threshold, ``> 0``; None means "never alarm" (the statistic is
            still tracked, e.g. to score a prompt by ``max_t S_t``).
        baseline: Where ``mu0, sigma0`` come from when :meth:`fit_baseline` is used:
            ``"system"`` (the system-prompt entropies; the only choice now, kept as an
            argument for other sources).
        robust: Median/MAD (default) or mean/std baseline.

    Attributes:
        statistic_: Current ``S_t``.
        t_: Number of values seen since the last :meth:`reset`.
        alarm_: 0-based index of the first alarm, or None.
        onset_: Onset estimate of that alarm (0-based), or None.
        max_: Largest ``S_t`` so far.
        mu0_, sigma0_: Baseline from :meth:`fit_baseline` (None before).

    Raises:
        ValueError: If ``k < 0``, ``h <= 0`` or ``baseline`` is unknown.

    Example:
        >>> det = CUSUMDetector(k=0.0, h=2.5)
        >>> [det.update(z) for z in (-1.0, -1.0, 1.0, 1.0, 1.0)]
        [False, False, False, False, True]
        >>> det.onset_
        2
    """

    def __init__(
        self, k: float = 0.0, h: float | None = None, baseline: str = "system", robust: bool = True
    ) -> None:
        self.k = check_float("k", k, low=0.0)
        self.h = None if h is None else check_float("h", h, low=0.0, low_inclusive=False)
        if baseline != "system":
            raise ValueError(f"baseline must be 'system', got {baseline!r}")
        self.baseline = baseline
        self.robust = bool(robust)
        self.mu0_: float | None = None
        self.sigma0_: float | None = None
        self.reset()

    def fit_baseline(self, system_entropies: object) -> CUSUMDetector:
        """Set ``mu0_, sigma0_`` from baseline entropies (see :func:`robust_baseline`)."""
        self.mu0_, self.sigma0_ = robust_baseline(system_entropies, robust=self.robust)
        return self

    def reset(self) -> None:
        """Start a new stream: ``S = 0``, no alarm (the baseline is kept)."""
        self.statistic_ = 0.0
        self.t_ = 0
        self.alarm_: int | None = None
        self.onset_: int | None = None
        self.max_ = 0.0
        self._last_zero = -1

    def update(self, z: float) -> bool:
        """Feed one standardized value; return whether the detector is in alarm.

        After the first alarm the statistic keeps being updated (``max_`` grows) but
        ``alarm_`` and ``onset_`` stay those of the first alarm.

        Raises:
            ValueError: If ``z`` is NaN or infinite.
        """
        z = check_float("z", z)
        s = max(0.0, self.statistic_ + z - self.k)
        self.statistic_ = s
        if s <= 0.0 and self.alarm_ is None:
            self._last_zero = self.t_
        self.max_ = max(self.max_, s)
        if self.alarm_ is None and self.h is not None and s > self.h:
            self.alarm_ = self.t_
            self.onset_ = self._last_zero + 1
        self.t_ += 1
        return self.alarm_ is not None

    def update_entropy(self, entropy: float) -> bool:
        """Standardize one entropy with the fitted baseline and :meth:`update`.

        Raises:
            RuntimeError: If :meth:`fit_baseline` was not called.
        """
        if self.mu0_ is None or self.sigma0_ is None:
            raise RuntimeError("call fit_baseline(system_entropies) before update_entropy")
        return self.update((check_float("entropy", entropy) - self.mu0_) / self.sigma0_)

    def __repr__(self) -> str:
        h = "None" if self.h is None else f"{self.h:g}"
        return f"CUSUMDetector(k={self.k:g}, h={h}, robust={self.robust})"


def siegmund_arl(drift: float, h: float) -> float:
    """Siegmund's approximation of the CUSUM's average run length for N(drift, 1) increments.

    ``ARL ~ (exp(-2 d b) + 2 d b - 1) / (2 d^2)`` with ``b = h + 1.166`` and
    ``d = mu - k`` the increments' mean (``b^2`` at ``d = 0``). With ``d < 0`` it is the
    in-control run length to a false alarm; with ``d > 0`` the detection delay.

    Args:
        drift: ``d = mu - k``, the mean of the CUSUM's increments ``z_t - k``, finite.
        h: Decision threshold, ``>= 0``, finite.

    Returns:
        The approximate average run length (steps, float); ``math.inf`` where it
        overflows a float (a very negative ``drift`` with a large ``h``).

    Raises:
        TypeError: If ``drift`` or ``h`` is not a real number.
        ValueError: If ``drift`` or ``h`` is NaN or infinite, or ``h < 0``.

    References:
        Siegmund, D. (1985). Sequential Analysis, eq. (2.56); Basseville & Nikiforov
        (1993), Detection of Abrupt Changes, section 5.2.
    """
    drift = check_float("drift", drift)
    h = check_float("h", h, low=0.0)
    b = h + 1.166
    if abs(drift) < 1e-12:
        return b * b
    try:
        growth = math.exp(-2.0 * drift * b)
    except OverflowError:
        return math.inf
    return (growth + 2.0 * drift * b - 1.0) / (2.0 * drift * drift)
