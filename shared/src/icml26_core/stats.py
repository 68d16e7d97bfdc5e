"""Statistics behind claim verdicts: effect, confidence interval, p-value, n, decision.

Every function here measures one kind of comparison with scipy.stats and returns an
:class:`Evidence`: the effect size, its two-sided confidence interval, the p-value of
the one-sided test that the claim needs, the sample size, and a three-way verdict:

- ``"holds"``: the test rejects at ``alpha`` and the whole confidence interval lies on
  the claim's side of its threshold;
- ``"does not hold"``: the whole interval lies on the other side (the data rule the
  claim out);
- ``"inconclusive"``: neither, or too few finite samples (the data cannot tell).

The threshold is what the claim reads: ``0`` for "A beats B", ``-margin`` for "A
matches B within a margin", ``0.5`` for "A is at least as strong as B" in games,
``at_least`` for "A is at least k times faster". A superiority claim with a true tie
stays inconclusive however many seeds are run, unless a smallest effect worth
claiming (``min_effect``) is given; that is on purpose: a tie is not a win.

Bootstrap intervals use a fixed seed, so a verdict is a function of the data alone.
scipy is an extra of the core (``pip install 'icml26-core[stats]'``), imported here
only when a function is called.

References:
    Wilcoxon signed-rank, sign (binomial), Welch and Mann-Whitney tests:
    :mod:`scipy.stats`. Wilson score interval: ``scipy.stats.binomtest(...)
    .proportion_ci(method="wilson")``. BCa bootstrap: Efron & Tibshirani (1993),
    ``scipy.stats.bootstrap``. Non-inferiority margins: Wellek, *Testing Statistical
    Hypotheses of Equivalence and Noninferiority* (2010).
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from icml26_core._lazy import require

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
INCONCLUSIVE = "inconclusive"
VERDICTS = (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE)
"""The three verdicts, in the order reports list them."""

DEFAULT_ALPHA = 0.05
DEFAULT_CONFIDENCE = 0.95
MIN_PAIRED_N = 5
"""Fewest finite pairs a paired comparison decides on (a one-sided Wilcoxon or sign test
with 5 pairs can reach p = 1/32 < 0.05; with 4 it cannot)."""
_BOOTSTRAP_RESAMPLES = 9999
_BOOTSTRAP_SEED = 20260601

PairedTest = Literal["wilcoxon", "sign", "t"]


@dataclass(frozen=True)
class Evidence:
    """The measured support of one claim.

    Attributes:
        test: The test and its setup, in words ("Wilcoxon signed-rank, paired, one-sided").
        effect_name: What ``effect`` measures ("mean difference A - B", "score", ...).
        effect: The effect size, oriented so that larger supports the claim where the
            claim is "larger is better" (see each function).
        ci_low: Lower end of the two-sided confidence interval of ``effect``.
        ci_high: Upper end of that interval.
        confidence: Level of the interval (0.95 by default).
        p_value: One-sided p-value of the test against ``threshold`` (None where the
            decision reads the interval only).
        n: Number of finite samples (pairs, seeds, items, games, points) used.
        threshold: The value the claim compares the effect with.
        verdict: One of :data:`VERDICTS`.
        reason: One line saying why the verdict is what it is.
        alpha: Significance level of the test.
    """

    test: str
    effect_name: str
    effect: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float | None
    n: int
    threshold: float
    verdict: str
    reason: str
    alpha: float = DEFAULT_ALPHA

    @property
    def holds(self) -> bool:
        """Whether the verdict is ``"holds"``."""
        return self.verdict == HOLDS

    def summary(self) -> str:
        """One line: effect, interval, p-value and n.

        Example:
            ``mean difference A - B = +0.120 [95% CI +0.050, +0.190], p = 0.003, n = 10``
        """
        pct = f"{100 * self.confidence:.0f}%"
        p = "" if self.p_value is None else f", p = {_fmt_p(self.p_value)}"
        sg = self.effect_name.startswith(("mean difference", "slope"))
        return (
            f"{self.effect_name} = {_fmt(self.effect, sg)} "
            f"[{pct} CI {_fmt(self.ci_low, sg)}, {_fmt(self.ci_high, sg)}]{p}, n = {self.n}"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (non-finite floats are kept; the writer maps them)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evidence:
        """Rebuild from :meth:`to_dict` output (None where JSON had null)."""
        known = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in d.items() if k in known}
        for k in ("effect", "ci_low", "ci_high", "threshold"):
            if kw.get(k) is None:
                kw[k] = math.nan
        return cls(**kw)


def _fmt(x: float, signed: bool = True) -> str:
    if x is None or not math.isfinite(x):
        return "nan" if x is None or math.isnan(x) else ("inf" if x > 0 else "-inf")
    sign = "+" if signed else ""
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
        return f"{x:{sign}.3e}"
    return f"{x:{sign}.4g}"


def _fmt_p(p: float) -> str:
    if not math.isfinite(p):
        return "nan"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


def _scipy_stats() -> Any:
    return require("scipy.stats", "stats")


def _as_1d(x: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _check_alpha(alpha: float, confidence: float) -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must be in (0.5, 1), got {confidence}")


def decide(
    ci_low: float,
    ci_high: float,
    threshold: float,
    *,
    p_value: float | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> tuple[str, str]:
    """Three-way decision of "effect > threshold" from an interval and a p-value.

    Args:
        ci_low: Lower end of the effect's confidence interval.
        ci_high: Upper end of it.
        threshold: The value the claim needs the effect to exceed.
        p_value: One-sided p-value of "effect > threshold"; when given, "holds" also
            needs ``p_value < alpha``.
        alpha: Significance level.

    Returns:
        ``(verdict, reason)``.
    """
    if not (math.isfinite(ci_low) or math.isfinite(ci_high)) or math.isnan(ci_low + ci_high):
        return INCONCLUSIVE, "the confidence interval could not be computed"
    thr = _fmt(threshold)
    if ci_low > threshold and (p_value is None or p_value < alpha):
        return HOLDS, f"the whole interval lies above {thr}"
    if ci_high < threshold:
        return DOES_NOT_HOLD, f"the whole interval lies below {thr}"
    if ci_low > threshold and p_value is not None:
        # the bootstrap interval and the rank test disagree (small n): the test decides
        return INCONCLUSIVE, (
            f"the interval lies above {thr} but the test is not significant "
            f"(p = {_fmt_p(p_value)} >= {alpha:g})"
        )
    return INCONCLUSIVE, f"the interval contains {thr}"


def _too_few(
    test: str,
    effect_name: str,
    n: int,
    need: int,
    threshold: float,
    confidence: float,
    alpha: float,
    sides: tuple[int, int] | None = None,
) -> Evidence:
    # two-sample tests need min_n on each side, so say how many each side has
    reason = (
        f"{n} finite samples, fewer than the {need} needed"
        if sides is None
        else f"{sides[0]} and {sides[1]} finite samples, fewer than the {need} needed on each side"
    )
    return Evidence(
        test=test,
        effect_name=effect_name,
        effect=math.nan,
        ci_low=math.nan,
        ci_high=math.nan,
        confidence=confidence,
        p_value=None,
        n=n,
        threshold=threshold,
        verdict=INCONCLUSIVE,
        reason=reason,
        alpha=alpha,
    )


def bootstrap_ci(
    samples: Sequence[np.ndarray],
    statistic: Callable[..., Any],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    paired: bool = True,
) -> tuple[float, float]:
    """Two-sided BCa bootstrap interval of ``statistic`` (scipy.stats.bootstrap).

    Falls back to the percentile method where BCa is undefined (e.g. all resamples
    equal), and returns a zero-width interval for a constant sample. The resampling
    seed is fixed, so the interval is a function of the data.

    Args:
        samples: One or more 1-D arrays (the statistic's arguments).
        statistic: Vectorized function of the samples with an ``axis`` keyword.
        confidence: Level of the interval.
        paired: Resample the samples together (same indices) rather than apart.

    Returns:
        ``(low, high)``.
    """
    st = _scipy_stats()
    samples = tuple(np.asarray(s, dtype=float) for s in samples)
    if all(np.ptp(s) == 0 for s in samples):
        v = float(statistic(*samples, axis=-1))
        return v, v
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = st.bootstrap(
                samples,
                statistic,
                paired=paired,
                vectorized=True,
                confidence_level=confidence,
                n_resamples=_BOOTSTRAP_RESAMPLES,
                method=method,
                **_seed_kw(st.bootstrap),
            )
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return lo, hi
    return math.nan, math.nan


def _seed_kw(fn: Callable[..., Any]) -> dict[str, Any]:
    # scipy >= 1.15 takes ``rng``; older releases only ``random_state``
    gen = np.random.default_rng(_BOOTSTRAP_SEED)
    params = inspect.signature(fn).parameters
    return {"rng": gen} if "rng" in params else {"random_state": gen}


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _median(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis)


def _orient(
    a: np.ndarray, b: np.ndarray, higher_is_better: bool, log: bool
) -> tuple[np.ndarray, np.ndarray]:
    if log:
        if np.any(a[np.isfinite(a)] <= 0) or np.any(b[np.isfinite(b)] <= 0):
            raise ValueError("log-ratio comparisons need positive values in a and b")
        with np.errstate(divide="ignore", invalid="ignore"):
            a, b = np.log(a), np.log(b)
    return (a, b) if higher_is_better else (-a, -b)


def paired_comparison(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    threshold: float | None = None,
    higher_is_better: bool = True,
    test: PairedTest = "wilcoxon",
    log_ratio: bool = False,
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    min_n: int = MIN_PAIRED_N,
    names: tuple[str, str] = ("A", "B"),
) -> Evidence:
    """Is A better than B by more than ``threshold``, paired over seeds or items?

    The effect is the mean of the per-pair differences ``d_i = a_i - b_i`` (``b_i - a_i``
    when lower is better; with ``log_ratio`` the differences of logs, reported as a
    ratio ``exp(mean d)``), so positive always favours A. Its interval is a BCa bootstrap
    (a t interval for ``test="t"``); the one-sided p-value is that of ``test`` applied to
    ``d_i - threshold``. Pairs with a NaN or inf on either side are dropped and n counts
    the rest.

    Args:
        a: Measurements of A, one per seed or item; shape ``(n,)``.
        b: Measurements of B on the same seeds or items; shape ``(n,)``.
        threshold: The difference the claim needs to exceed: 0 for superiority,
            ``-margin`` for non-inferiority, ``min_effect`` for a meaningful win. With
            ``log_ratio`` it is a ratio (1 for superiority, ``1 / (1 + margin)`` for
            non-inferiority). None: 0, or 1 with ``log_ratio``.
        higher_is_better: Orientation of the metric.
        test: ``"wilcoxon"`` (signed-rank, default), ``"sign"`` (binomial on the signs,
            ties dropped; the exact McNemar test for 0/1 outcomes) or ``"t"`` (paired t).
        log_ratio: Compare ``log a - log b`` (positive metrics spanning scales).
        alpha: Significance level of the one-sided test.
        confidence: Level of the two-sided interval.
        min_n: Fewest finite pairs to decide on; fewer gives "inconclusive".
        names: Labels of A and B in the effect's name.

    Returns:
        The :class:`Evidence`.

    Raises:
        ValueError: If ``a`` and ``b`` differ in length, are not 1-D, ``test`` is
            unknown, or ``log_ratio`` meets a non-positive value.
    """
    _check_alpha(alpha, confidence)
    if test not in ("wilcoxon", "sign", "t"):
        raise ValueError(f"test must be 'wilcoxon', 'sign' or 't', got {test!r}")
    a_arr, b_arr = _as_1d(a, "a"), _as_1d(b, "b")
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must pair up, got lengths {a_arr.size} and {b_arr.size}")
    if threshold is None:
        threshold = 1.0 if log_ratio else 0.0
    if log_ratio and threshold <= 0:
        raise ValueError(f"with log_ratio the threshold is a ratio > 0, got {threshold}")
    x, y = _orient(a_arr, b_arr, higher_is_better, log_ratio)
    keep = np.isfinite(x) & np.isfinite(y)
    d = x[keep] - y[keep]
    n = int(d.size)
    thr = math.log(threshold) if log_ratio else threshold
    a_name, b_name = names
    if log_ratio:
        effect_name = f"ratio {a_name}/{b_name}" if higher_is_better else f"ratio {b_name}/{a_name}"
    else:
        effect_name = (
            f"mean difference {a_name} - {b_name}"
            if higher_is_better
            else f"mean difference {b_name} - {a_name}"
        )
    label = {"wilcoxon": "Wilcoxon signed-rank", "sign": "sign test", "t": "paired t"}[test]
    test_desc = (
        f"{label}, paired over {n}, one-sided, BCa bootstrap CI"
        if test != "t"
        else (f"{label}, paired over {n}, one-sided, t CI")
    )
    if n < min_n:
        return _too_few(test_desc, effect_name, n, min_n, threshold, confidence, alpha)
    st = _scipy_stats()
    shifted = d - thr
    if test == "t":
        if np.ptp(d) == 0:
            lo = hi = float(d[0])
            p = 0.0 if shifted[0] > 0 else 1.0
        else:
            res = st.ttest_1samp(shifted, 0.0, alternative="greater")
            p = float(res.pvalue)
            ci = st.ttest_1samp(d, 0.0).confidence_interval(confidence)
            lo, hi = float(ci.low), float(ci.high)
    else:
        lo, hi = bootstrap_ci((d,), _mean, confidence=confidence)
        nonzero = shifted[shifted != 0]
        if nonzero.size == 0:
            p = 1.0
        elif test == "wilcoxon":
            p = float(st.wilcoxon(shifted, alternative="greater", zero_method="wilcox").pvalue)
        else:
            k = int(np.sum(nonzero > 0))
            p = float(st.binomtest(k, nonzero.size, 0.5, alternative="greater").pvalue)
    effect = float(np.mean(d))
    if log_ratio:
        effect, lo, hi = math.exp(effect), math.exp(lo), math.exp(hi)
    verdict, reason = decide(lo, hi, threshold, p_value=p, alpha=alpha)
    return Evidence(
        test_desc, effect_name, effect, lo, hi, confidence, p, n, threshold, verdict, reason, alpha
    )


def welch(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    threshold: float = 0.0,
    higher_is_better: bool = True,
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    min_n: int = 3,
    names: tuple[str, str] = ("A", "B"),
) -> Evidence:
    """Is A's mean better than B's by more than ``threshold``, unpaired (Welch's t)?

    For independent samples (different seeds, runs that cannot be paired). The effect
    is ``mean(a) - mean(b)`` (``mean(b) - mean(a)`` when lower is better) with Welch's
    t interval; the p-value is Welch's one-sided test against ``threshold``.

    Args:
        a: Samples of A, shape ``(n_a,)``.
        b: Samples of B, shape ``(n_b,)``.
        threshold: The difference to exceed (0 superiority, ``-margin`` non-inferiority).
        higher_is_better: Orientation of the metric.
        alpha: Significance level.
        confidence: Level of the interval.
        min_n: Fewest finite samples on each side.
        names: Labels of A and B.

    Returns:
        The :class:`Evidence` (n is ``n_a + n_b``).

    Raises:
        ValueError: If an input is not 1-D.
    """
    _check_alpha(alpha, confidence)
    x, y = _orient(_as_1d(a, "a"), _as_1d(b, "b"), higher_is_better, False)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    a_name, b_name = names
    effect_name = (
        f"mean difference {a_name} - {b_name}"
        if higher_is_better
        else f"mean difference {b_name} - {a_name}"
    )
    test = f"Welch's t, {x.size} vs {y.size}, one-sided, t CI"
    if min(x.size, y.size) < min_n:
        return _too_few(
            test,
            effect_name,
            int(x.size + y.size),
            min_n,
            threshold,
            confidence,
            alpha,
            sides=(int(x.size), int(y.size)),
        )
    st = _scipy_stats()
    effect = float(np.mean(x) - np.mean(y))
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        lo = hi = effect
        p = 0.0 if effect > threshold else 1.0
    else:
        p = float(st.ttest_ind(x - threshold, y, equal_var=False, alternative="greater").pvalue)
        ci = st.ttest_ind(x, y, equal_var=False).confidence_interval(confidence)
        lo, hi = float(ci.low), float(ci.high)
    verdict, reason = decide(lo, hi, threshold, p_value=p, alpha=alpha)
    return Evidence(
        test,
        effect_name,
        effect,
        lo,
        hi,
        confidence,
        p,
        int(x.size + y.size),
        threshold,
        verdict,
        reason,
        alpha,
    )


def win_rate(
    wins: int,
    draws: int,
    losses: int,
    *,
    threshold: float = 0.5,
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    min_n: int = 10,
) -> Evidence:
    """Does A score more than ``threshold`` per game against B (draws count half)?

    The score is ``(wins + draws / 2) / n``. Its interval is the Wilson score interval
    of scipy's ``binomtest``; with an odd number of draws the half point is covered by
    joining the intervals of the two neighbouring integer counts (slightly wider, never
    narrower). The p-value is the exact binomial test of "score > threshold" at the
    lower count.

    Args:
        wins: Games A won.
        draws: Games drawn.
        losses: Games A lost.
        threshold: Score to exceed: 0.5 for "stronger", ``0.5 - margin`` for "at least
            as strong, within a margin".
        alpha: Significance level.
        confidence: Level of the interval.
        min_n: Fewest games to decide on.

    Returns:
        The :class:`Evidence` (effect is the score, n the number of games).

    Raises:
        ValueError: If a count is negative or not an integer, or ``threshold`` is not
            in (0, 1).
    """
    _check_alpha(alpha, confidence)
    counts = {"wins": wins, "draws": draws, "losses": losses}
    for k, v in counts.items():
        if isinstance(v, bool) or int(v) != v or v < 0:
            raise ValueError(f"{k} must be a nonnegative integer, got {v!r}")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    w, d, lo_ = int(wins), int(draws), int(losses)
    n = w + d + lo_
    test = f"binomial, {n} games (W {w} / D {d} / L {lo_}), one-sided, Wilson CI"
    if n < min_n:
        return _too_few(test, "score", n, min_n, threshold, confidence, alpha)
    st = _scipy_stats()
    k2 = 2 * w + d
    k_lo, k_hi = k2 // 2, (k2 + 1) // 2
    ci_lo = st.binomtest(k_lo, n).proportion_ci(confidence, method="wilson")
    ci_hi = st.binomtest(k_hi, n).proportion_ci(confidence, method="wilson")
    p = float(st.binomtest(k_lo, n, threshold, alternative="greater").pvalue)
    score = k2 / (2 * n)
    lo, hi = float(ci_lo.low), float(ci_hi.high)
    verdict, reason = decide(lo, hi, threshold, p_value=p, alpha=alpha)
    return Evidence(
        test, "score", score, lo, hi, confidence, p, n, threshold, verdict, reason, alpha
    )


def rank_correlation(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    threshold: float = 0.0,
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    min_n: int = 5,
) -> Evidence:
    """Is Spearman's rank correlation of ``x`` and ``y`` above ``threshold``?

    The effect is Spearman's rho (``scipy.stats.spearmanr``). Its interval and the
    one-sided p-value of "rho > threshold" come from Fisher's z transform with the
    variance ``1.06 / (n - 3)`` of Fieller, Hartley & Pearson (1957), "Tests for rank
    correlation coefficients I", *Biometrika* 44 (Bonett & Wright, 2000, find it accurate
    for rho below 0.9 from n = 10 on; below that it is an approximation). Pairs where
    either value is NaN are dropped; infinite values are allowed (they rank first or
    last, e.g. a diverged run ranked worst).

    Args:
        x: 1-D values, one per item.
        y: 1-D values of the same items, in the same order.
        threshold: The correlation to exceed, in (-1, 1): 0 for "x and y rise
            together", 0.5 for "a strong positive rank correlation".
        alpha: Significance level.
        confidence: Level of the interval.
        min_n: Fewest pairs (both values non-NaN) to decide on; at least 4, since the
            variance needs ``n > 3``.

    Returns:
        The :class:`Evidence` (effect is rho, n the number of pairs used).

    Raises:
        ValueError: If ``x`` and ``y`` are not 1-D of the same length, ``threshold`` is
            not in (-1, 1), or ``min_n < 4``.
    """
    _check_alpha(alpha, confidence)
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.ndim != 1 or ya.ndim != 1 or xa.shape != ya.shape:
        raise ValueError(
            f"x and y must be 1-D of the same length, got shapes {xa.shape} and {ya.shape}"
        )
    if not -1 < threshold < 1:
        raise ValueError(f"threshold must be in (-1, 1), got {threshold}")
    if min_n < 4:
        raise ValueError(f"min_n must be >= 4 (the variance needs n > 3), got {min_n}")
    keep = ~(np.isnan(xa) | np.isnan(ya))
    xa, ya = xa[keep], ya[keep]
    n = int(xa.size)
    test = "Spearman rank correlation, one-sided, Fisher z CI (variance 1.06/(n-3))"
    if n < min_n:
        return _too_few(test, "Spearman rho", n, min_n, threshold, confidence, alpha)
    st = _scipy_stats()
    if np.unique(xa).size < 2 or np.unique(ya).size < 2:
        ev = _too_few(test, "Spearman rho", n, min_n, threshold, confidence, alpha)
        return Evidence(**{**asdict(ev), "reason": "one of x, y is constant: rho is undefined"})
    rho = float(st.spearmanr(xa, ya).statistic)
    se = math.sqrt(1.06 / (n - 3))
    z = math.atanh(min(max(rho, -1 + 1e-12), 1 - 1e-12))
    q = float(st.norm.ppf(0.5 + confidence / 2))
    lo, hi = math.tanh(z - q * se), math.tanh(z + q * se)
    p = float(st.norm.sf((z - math.atanh(threshold)) / se))
    verdict, reason = decide(lo, hi, threshold, p_value=p, alpha=alpha)
    return Evidence(
        test, "Spearman rho", rho, lo, hi, confidence, p, n, threshold, verdict, reason, alpha
    )


def loglog_slope(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    expected: float,
    tol: float,
    alternative: Literal["two-sided", "less", "greater"] = "two-sided",
    scale: Literal["loglog", "semilogy", "linear"] = "loglog",
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    min_n: int = 4,
) -> Evidence:
    """Is the fitted rate ``y ~ x^slope`` what the claim says (scipy.stats.linregress)?

    Fits ``log y = c + slope log x`` by least squares (``scale="semilogy"`` fits
    ``log y`` on ``x``, for linear convergence; ``"linear"`` fits ``y`` on ``x``), with
    the t interval of the slope (n - 2 degrees of freedom).

    - ``alternative="two-sided"``: the claim is "slope = expected within tol"; it holds
      when the interval lies inside ``[expected - tol, expected + tol]`` (two one-sided
      tests), does not hold when it misses that band entirely.
    - ``"less"``: "slope <= expected + tol" (decays at least as fast).
    - ``"greater"``: "slope >= expected - tol".

    Args:
        x: Abscissae (iterations, time, sample size), positive for log scales.
        y: Ordinates (error, loss), positive for log scales.
        expected: The claimed slope (e.g. -1 for ``error ~ t^-1``).
        tol: Allowed deviation from ``expected``, >= 0.
        alternative: See above.
        scale: ``"loglog"``, ``"semilogy"`` or ``"linear"``.
        alpha: Significance level.
        confidence: Level of the interval.
        min_n: Fewest finite points.

    Returns:
        The :class:`Evidence` (effect is the slope; threshold the band's binding end).

    Raises:
        ValueError: On mismatched lengths, negative ``tol``, unknown options or
            non-positive values on a log axis.
    """
    _check_alpha(alpha, confidence)
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(
            f"alternative must be 'two-sided', 'less' or 'greater', got {alternative!r}"
        )
    if scale not in ("loglog", "semilogy", "linear"):
        raise ValueError(f"scale must be 'loglog', 'semilogy' or 'linear', got {scale!r}")
    xa, ya = _as_1d(x, "x"), _as_1d(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    keep = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[keep], ya[keep]
    if scale == "loglog" and np.any(xa <= 0):
        raise ValueError("x must be positive for a log-log fit")
    if scale in ("loglog", "semilogy") and np.any(ya <= 0):
        raise ValueError("y must be positive for a log-scale fit")
    n = int(xa.size)
    lx = np.log(xa) if scale == "loglog" else xa
    ly = np.log(ya) if scale != "linear" else ya
    lo_b, hi_b = expected - tol, expected + tol
    binding = {"two-sided": hi_b, "less": hi_b, "greater": lo_b}[alternative]
    test = f"least-squares slope ({scale}), {n} points, t CI"
    if n < min_n or np.ptp(lx) == 0:
        return _too_few(test, "slope", n, min_n, binding, confidence, alpha)
    st = _scipy_stats()
    fit = st.linregress(lx, ly)
    slope, se, df = float(fit.slope), float(fit.stderr), n - 2
    half = float(st.t.ppf(0.5 + confidence / 2, df)) * se
    lo, hi = slope - half, slope + half
    if se == 0:
        p_up = 0.0 if slope < hi_b else 1.0
        p_dn = 0.0 if slope > lo_b else 1.0
    else:
        p_up = float(st.t.cdf((slope - hi_b) / se, df))  # H0: slope >= hi_b
        p_dn = float(st.t.sf((slope - lo_b) / se, df))  # H0: slope <= lo_b
    band = f"[{_fmt(lo_b)}, {_fmt(hi_b)}]"
    if alternative == "less":
        p = p_up
        verdict, reason = _slope_side(lo, hi, hi_b, p, alpha, below=True)
    elif alternative == "greater":
        p = p_dn
        verdict, reason = _slope_side(lo, hi, lo_b, p, alpha, below=False)
    else:
        p = max(p_up, p_dn)
        if lo > lo_b and hi < hi_b and p < alpha:
            verdict, reason = HOLDS, f"the whole interval lies inside {band}"
        elif hi < lo_b or lo > hi_b:
            verdict, reason = DOES_NOT_HOLD, f"the whole interval lies outside {band}"
        else:
            verdict, reason = INCONCLUSIVE, f"the interval overlaps the edge of {band}"
    return Evidence(test, "slope", slope, lo, hi, confidence, p, n, binding, verdict, reason, alpha)


def _slope_side(
    lo: float, hi: float, bound: float, p: float, alpha: float, *, below: bool
) -> tuple[str, str]:
    b = _fmt(bound)
    if below:
        if hi < bound and p < alpha:
            return HOLDS, f"the whole interval lies below {b}"
        if lo > bound:
            return DOES_NOT_HOLD, f"the whole interval lies above {b}"
    else:
        if lo > bound and p < alpha:
            return HOLDS, f"the whole interval lies above {b}"
        if hi < bound:
            return DOES_NOT_HOLD, f"the whole interval lies below {b}"
    return INCONCLUSIVE, f"the interval contains {b}"


def ratio_of_medians(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    at_least: float = 1.0,
    paired: bool = False,
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    min_n: int = 5,
    names: tuple[str, str] = ("A", "B"),
) -> Evidence:
    """Is A at least ``at_least`` times faster than B (times, lower is better)?

    The effect is the speed-up ``median(b) / median(a)`` with a BCa bootstrap interval
    (rounds resampled together when ``paired``, e.g. interleaved timings). The p-value
    is the one-sided Mann-Whitney U test that ``b / at_least`` is stochastically larger
    than ``a`` (the Wilcoxon signed-rank test on ``log b - log a - log at_least`` when
    ``paired``).

    Args:
        a: Times of A (seconds or any positive cost), shape ``(n_a,)``.
        b: Times of B, shape ``(n_b,)`` (``n_a`` when paired).
        at_least: Speed-up the claim needs, > 0 (1 for "faster").
        paired: Whether ``a[i]`` and ``b[i]`` were measured in the same round.
        alpha: Significance level.
        confidence: Level of the interval.
        min_n: Fewest finite times on each side.
        names: Labels of A and B.

    Returns:
        The :class:`Evidence` (effect is the speed-up of A over B).

    Raises:
        ValueError: On non-positive times, ``at_least <= 0``, or unequal lengths when
            paired.
    """
    _check_alpha(alpha, confidence)
    if at_least <= 0:
        raise ValueError(f"at_least must be > 0, got {at_least}")
    xa, xb = _as_1d(a, "a"), _as_1d(b, "b")
    if paired and xa.shape != xb.shape:
        raise ValueError(f"paired times must have equal lengths, got {xa.size} and {xb.size}")
    if np.any(xa[np.isfinite(xa)] <= 0) or np.any(xb[np.isfinite(xb)] <= 0):
        raise ValueError("times must be positive")
    if paired:
        keep = np.isfinite(xa) & np.isfinite(xb)
        xa, xb = xa[keep], xb[keep]
    else:
        xa, xb = xa[np.isfinite(xa)], xb[np.isfinite(xb)]
    a_name, b_name = names
    effect_name = f"speed-up median({b_name}) / median({a_name})"
    how = "paired rounds" if paired else "unpaired"
    test = (
        f"{'Wilcoxon signed-rank on log ratios' if paired else 'Mann-Whitney U'}, "
        f"{xa.size} vs {xb.size} ({how}), one-sided, BCa bootstrap CI"
    )
    if min(xa.size, xb.size) < min_n:
        return _too_few(
            test,
            effect_name,
            int(xa.size + xb.size),
            min_n,
            at_least,
            confidence,
            alpha,
            sides=(int(xa.size), int(xb.size)),
        )
    st = _scipy_stats()

    def stat(ta: np.ndarray, tb: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(tb, axis=axis) / np.median(ta, axis=axis)

    effect = float(stat(xa, xb))
    lo, hi = bootstrap_ci((xa, xb), stat, confidence=confidence, paired=paired)
    if paired:
        shifted = np.log(xb) - np.log(xa) - math.log(at_least)
        p = (
            1.0
            if np.all(shifted == 0)
            else float(st.wilcoxon(shifted, alternative="greater").pvalue)
        )
    else:
        p = float(st.mannwhitneyu(xb / at_least, xa, alternative="greater").pvalue)
    verdict, reason = decide(lo, hi, at_least, p_value=p, alpha=alpha)
    n = int(xa.size + xb.size) if not paired else int(xa.size)
    return Evidence(
        test, effect_name, effect, lo, hi, confidence, p, n, at_least, verdict, reason, alpha
    )


def bootstrap_band(
    samples: Sequence[np.ndarray],
    statistic: Callable[..., Any],
    *,
    low: float = -math.inf,
    high: float = math.inf,
    effect_name: str,
    test: str,
    paired: bool | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    min_n: int = 3,
) -> Evidence:
    """Is ``statistic(*samples)`` inside ``[low, high]``? Three-way, on its bootstrap CI.

    For statistics no test of this module covers: a rate fitted to seed-mean curves, a
    ratio of means, the spread of medians over a grid. Holds if the whole BCa interval
    (:func:`bootstrap_ci`) lies inside the band, does not hold if it lies wholly outside,
    inconclusive otherwise. To resample rows of a matrix, pass one sample of row indices
    (as floats) and a statistic that indexes the matrix with them.

    Args:
        samples: 1-D arrays, the statistic's arguments.
        statistic: Vectorized in its samples along ``axis``.
        low: Lower end of the band (-inf for "at most ``high``").
        high: Upper end (inf for "at least ``low``").
        effect_name: What the statistic is, for the summary.
        test: The test and its setup, in words.
        paired: Resample the samples together; by default only when there is one.
        confidence: Level of the interval.
        min_n: Fewest observations in the smallest sample.

    Returns:
        The :class:`Evidence` (no p-value; ``threshold`` is ``low`` when it is finite,
        else ``high``).
    """
    arrays = [np.asarray(x, dtype=float) for x in samples]
    effect = float(statistic(*arrays, axis=-1))
    n = min(a.size for a in arrays)
    together = len(arrays) == 1 if paired is None else paired
    lo = hi = math.nan
    if math.isfinite(effect) and n >= min_n:
        lo, hi = bootstrap_ci(arrays, statistic, confidence=confidence, paired=together)
    band = f"[{_fmt(low, False)}, {_fmt(high, False)}]"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        verdict, reason = INCONCLUSIVE, "the confidence interval could not be computed"
    elif low <= lo and hi <= high:
        verdict, reason = HOLDS, f"the whole interval lies inside {band}"
    elif hi < low or lo > high:
        verdict, reason = DOES_NOT_HOLD, f"the whole interval lies outside {band}"
    else:
        verdict, reason = INCONCLUSIVE, f"the interval straddles an end of {band}"
    threshold = low if math.isfinite(low) else high
    return Evidence(
        test, effect_name, effect, lo, hi, confidence, None, n, threshold, verdict, reason
    )


def combine(verdicts: Sequence[str]) -> str:
    """Verdict of "every part holds": holds if all hold, does not hold if any does not.

    An intersection of claims needs no multiplicity correction: each part is tested at
    the full ``alpha`` and the whole holds only if every part does.

    Args:
        verdicts: Verdicts of the parts, each one of :data:`VERDICTS`.

    Returns:
        The combined verdict (inconclusive for an empty sequence).

    Raises:
        ValueError: If a verdict is not one of :data:`VERDICTS`.
    """
    for v in verdicts:
        if v not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {v!r}")
    if not verdicts:
        return INCONCLUSIVE
    if DOES_NOT_HOLD in verdicts:
        return DOES_NOT_HOLD
    if all(v == HOLDS for v in verdicts):
        return HOLDS
    return INCONCLUSIVE


def count_verdicts(verdicts: Sequence[str]) -> dict[str, int]:
    """Count each of the three verdicts (all three keys always present)."""
    return {v: sum(1 for x in verdicts if x == v) for v in VERDICTS}
