"""icml26_core.stats against scipy on known cases, and the three-way decisions."""

import math

import numpy as np
import pytest
import scipy.stats as st
from icml26_core import stats
from icml26_core.stats import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# ---------------------------------------------------------------- paired comparisons


def test_shifted_sample_is_superior_and_p_matches_scipy(rng):
    b = rng.normal(size=30)
    a = b + 0.5 + rng.normal(scale=0.2, size=30)
    ev = stats.paired_comparison(a, b)
    assert ev.verdict == HOLDS
    assert ev.n == 30
    assert ev.effect == pytest.approx(np.mean(a - b), rel=1e-12)
    assert ev.ci_low < ev.effect < ev.ci_high
    assert ev.ci_low > 0
    ref = st.wilcoxon(a - b, alternative="greater").pvalue
    assert ev.p_value == pytest.approx(ref, rel=1e-12)


def test_tied_samples_are_inconclusive_not_a_failure(rng):
    b = rng.normal(size=40)
    a = b + rng.normal(scale=0.1, size=40)
    a -= np.mean(a - b)  # exact tie in the mean
    ev = stats.paired_comparison(a, b)
    assert ev.verdict == INCONCLUSIVE
    assert ev.ci_low < 0 < ev.ci_high


def test_worse_sample_does_not_hold(rng):
    b = rng.normal(size=30)
    a = b - 0.5 + rng.normal(scale=0.2, size=30)
    assert stats.paired_comparison(a, b).verdict == DOES_NOT_HOLD


def test_lower_is_better_orientation(rng):
    b = rng.uniform(1, 2, size=20)
    a = b * 0.7  # a is lower: better when lower is better
    assert stats.paired_comparison(a, b, higher_is_better=False).verdict == HOLDS
    assert stats.paired_comparison(a, b, higher_is_better=True).verdict == DOES_NOT_HOLD


def test_min_effect_turns_a_tiny_win_into_does_not_hold(rng):
    b = rng.normal(size=50)
    a = b + 0.01 + rng.normal(scale=0.001, size=50)
    assert stats.paired_comparison(a, b).verdict == HOLDS
    assert stats.paired_comparison(a, b, threshold=0.1).verdict == DOES_NOT_HOLD


def test_sign_test_p_matches_binomtest():
    a = np.array([1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0], dtype=float)
    b = np.array([0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0], dtype=float)
    ev = stats.paired_comparison(a, b, test="sign")
    d = a - b
    k, m = int(np.sum(d > 0)), int(np.sum(d != 0))
    assert ev.p_value == pytest.approx(st.binomtest(k, m, 0.5, alternative="greater").pvalue)


def test_paired_t_interval_matches_scipy(rng):
    b = rng.normal(size=15)
    a = b + rng.normal(0.3, 0.5, size=15)
    ev = stats.paired_comparison(a, b, test="t")
    ci = st.ttest_rel(a, b).confidence_interval(0.95)
    assert ev.ci_low == pytest.approx(ci.low, rel=1e-10)
    assert ev.ci_high == pytest.approx(ci.high, rel=1e-10)
    assert ev.p_value == pytest.approx(st.ttest_rel(a, b, alternative="greater").pvalue)


def test_log_ratio_reports_a_ratio(rng):
    b = rng.uniform(1, 10, size=20)
    a = b / 2.0 * np.exp(rng.normal(scale=0.01, size=20))
    ev = stats.paired_comparison(a, b, higher_is_better=False, log_ratio=True)
    assert ev.verdict == HOLDS
    assert ev.effect == pytest.approx(2.0, rel=0.02)
    assert ev.ci_low > 1.9 and ev.ci_high < 2.1


def test_non_finite_pairs_are_dropped_and_too_few_is_inconclusive():
    a = np.array([1.0, 2.0, np.nan, 4.0, np.inf, 6.0])
    b = np.zeros(6)
    ev = stats.paired_comparison(a, b)
    assert ev.n == 4
    assert ev.verdict == INCONCLUSIVE
    assert "fewer" in ev.reason


def test_all_nan_is_inconclusive():
    ev = stats.paired_comparison([math.nan] * 10, [0.0] * 10)
    assert ev.verdict == INCONCLUSIVE and ev.n == 0


def test_constant_differences_give_a_zero_width_interval():
    ev = stats.paired_comparison(np.ones(8), np.zeros(8))
    assert ev.ci_low == pytest.approx(1.0) and ev.ci_high == pytest.approx(1.0)
    assert ev.verdict == HOLDS


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="pair up"):
        stats.paired_comparison([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="test must be"):
        stats.paired_comparison([1, 2, 3], [1, 2, 3], test="magic")
    with pytest.raises(ValueError, match="alpha"):
        stats.paired_comparison([1, 2, 3], [1, 2, 3], alpha=0.9)
    with pytest.raises(ValueError, match="positive"):
        stats.paired_comparison([1, -2, 3], [1, 2, 3], log_ratio=True)


def test_verdict_is_deterministic(rng):
    b = rng.normal(size=12)
    a = b + rng.normal(0.2, 0.5, size=12)
    assert stats.paired_comparison(a, b) == stats.paired_comparison(a, b)


# ---------------------------------------------------------------- Welch


def test_welch_matches_scipy(rng):
    a = rng.normal(1.0, 1.0, size=25)
    b = rng.normal(0.0, 2.0, size=30)
    ev = stats.welch(a, b)
    ref = st.ttest_ind(a, b, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert ev.ci_low == pytest.approx(ci.low) and ev.ci_high == pytest.approx(ci.high)
    assert ev.p_value == pytest.approx(
        st.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue
    )
    assert ev.n == 55


def test_welch_non_inferiority_margin(rng):
    a = rng.normal(0.0, 0.1, size=20)
    b = rng.normal(0.02, 0.1, size=20)
    assert stats.welch(a, b, threshold=-0.2).verdict == HOLDS
    assert stats.welch(a - 1.0, b, threshold=-0.2).verdict == DOES_NOT_HOLD


# ---------------------------------------------------------------- games


def test_win_rate_wilson_interval_matches_binomtest():
    ev = stats.win_rate(120, 0, 80)
    ci = st.binomtest(120, 200).proportion_ci(0.95, method="wilson")
    assert ev.effect == pytest.approx(0.6)
    assert ev.ci_low == pytest.approx(ci.low) and ev.ci_high == pytest.approx(ci.high)
    assert ev.verdict == HOLDS


def test_win_rate_draws_count_half_and_interval_covers_the_half_point():
    ev = stats.win_rate(10, 11, 9)
    assert ev.effect == pytest.approx((10 + 5.5) / 30)
    lo = st.binomtest(15, 30).proportion_ci(method="wilson").low
    hi = st.binomtest(16, 30).proportion_ci(method="wilson").high
    assert ev.ci_low == pytest.approx(lo) and ev.ci_high == pytest.approx(hi)


# ---------------------------------------------------------------- rank correlation


def test_rank_correlation_matches_scipy_and_fisher_z(rng):
    x = rng.normal(size=40)
    y = x + rng.normal(scale=0.8, size=40)
    ev = stats.rank_correlation(x, y, threshold=0.3)
    rho = st.spearmanr(x, y).statistic
    se = math.sqrt(1.06 / 37)
    assert ev.effect == pytest.approx(rho)
    assert ev.ci_low == pytest.approx(math.tanh(math.atanh(rho) - 1.959964 * se), rel=1e-5)
    assert ev.ci_high == pytest.approx(math.tanh(math.atanh(rho) + 1.959964 * se), rel=1e-5)
    assert ev.p_value == pytest.approx(st.norm.sf((math.atanh(rho) - math.atanh(0.3)) / se))
    assert ev.n == 40 and ev.verdict == HOLDS


def test_rank_correlation_decisions_and_coverage(rng):
    x = np.arange(12.0)
    # 12 pairs with rho near 0.2: the interval holds 0.5, so it cannot tell
    y = x + rng.normal(scale=25.0, size=12)
    assert stats.rank_correlation(x, y, threshold=0.5).verdict == INCONCLUSIVE
    assert stats.rank_correlation(x, -x, threshold=0.5).verdict == DOES_NOT_HOLD
    assert stats.rank_correlation(x[:4], x[:4]).verdict == INCONCLUSIVE  # too few pairs
    assert stats.rank_correlation(x, np.ones(12)).verdict == INCONCLUSIVE  # rho undefined
    # NaN pairs are dropped, an infinite value ranks last
    y2 = x.copy()
    y2[3], y2[11] = np.nan, np.inf
    ev = stats.rank_correlation(x, y2)
    assert ev.n == 11 and ev.effect == pytest.approx(1.0)
    # the 95% interval covers the true rho in about 95% of bivariate-normal draws
    cov = [[1.0, 0.6], [0.6, 1.0]]
    true_rho = 6 / math.pi * math.asin(0.6 / 2)
    hits = 0
    for _ in range(400):
        xy = rng.multivariate_normal([0, 0], cov, size=30)
        e = stats.rank_correlation(xy[:, 0], xy[:, 1])
        hits += e.ci_low <= true_rho <= e.ci_high
    assert 0.90 <= hits / 400 <= 0.99


def test_rank_correlation_rejects_bad_input():
    with pytest.raises(ValueError, match="same length"):
        stats.rank_correlation([1, 2, 3, 4, 5], [1, 2, 3])
    with pytest.raises(ValueError, match="threshold must be in"):
        stats.rank_correlation(range(6), range(6), threshold=1.0)
    with pytest.raises(ValueError, match="min_n must be >= 4"):
        stats.rank_correlation(range(6), range(6), min_n=3)


def test_win_rate_decisions():
    assert stats.win_rate(16, 0, 16).verdict == INCONCLUSIVE  # 32 games cannot tell
    assert stats.win_rate(100, 0, 100, threshold=0.4).verdict == HOLDS  # non-inferior
    assert stats.win_rate(60, 0, 140, threshold=0.45).verdict == DOES_NOT_HOLD
    assert stats.win_rate(3, 0, 2).verdict == INCONCLUSIVE  # too few games


def test_win_rate_rejects_bad_counts():
    with pytest.raises(ValueError, match="wins"):
        stats.win_rate(-1, 0, 3)
    with pytest.raises(ValueError, match="draws"):
        stats.win_rate(1, 0.5, 3)
    with pytest.raises(ValueError, match="threshold"):
        stats.win_rate(1, 0, 3, threshold=1.0)


# ---------------------------------------------------------------- rates


def test_slope_of_minus_one_is_recovered_within_its_interval(rng):
    t = np.logspace(0, 4, 30)
    err = 3.0 / t * np.exp(rng.normal(scale=0.05, size=30))
    ev = stats.loglog_slope(t, err, expected=-1.0, tol=0.1)
    assert ev.ci_low < -1.0 < ev.ci_high
    assert ev.verdict == HOLDS
    fit = st.linregress(np.log(t), np.log(err))
    assert ev.effect == pytest.approx(fit.slope)


def test_slope_outside_the_band_does_not_hold(rng):
    t = np.logspace(0, 4, 30)
    err = 1.0 / np.sqrt(t) * np.exp(rng.normal(scale=0.05, size=30))
    assert stats.loglog_slope(t, err, expected=-1.0, tol=0.1).verdict == DOES_NOT_HOLD
    # "at least as fast as t^-0.4": the -0.5 decay holds
    assert stats.loglog_slope(t, err, expected=-0.4, tol=0.0, alternative="less").verdict == HOLDS


def test_noisy_slope_is_inconclusive(rng):
    t = np.arange(1, 6, dtype=float)
    err = 1.0 / t * np.exp(rng.normal(scale=0.5, size=5))
    assert stats.loglog_slope(t, err, expected=-1.0, tol=0.1).verdict == INCONCLUSIVE


def test_semilog_slope_is_a_linear_rate():
    k = np.arange(20, dtype=float)
    err = 0.5**k
    ev = stats.loglog_slope(k, err, expected=math.log(0.5), tol=1e-6, scale="semilogy")
    assert ev.effect == pytest.approx(math.log(0.5))
    assert ev.verdict == HOLDS


def test_slope_bad_input():
    with pytest.raises(ValueError, match="positive"):
        stats.loglog_slope([0, 1, 2, 3], [1, 2, 3, 4], expected=1, tol=0.1)
    with pytest.raises(ValueError, match="tol"):
        stats.loglog_slope([1, 2, 3, 4], [1, 2, 3, 4], expected=1, tol=-1)


# ---------------------------------------------------------------- speed


def test_ratio_of_medians_and_its_decisions(rng):
    a = rng.uniform(1.0, 1.1, size=15)
    b = rng.uniform(3.0, 3.3, size=15)
    ev = stats.ratio_of_medians(a, b, at_least=2.0)
    assert ev.effect == pytest.approx(np.median(b) / np.median(a))
    assert ev.verdict == HOLDS
    assert stats.ratio_of_medians(a, b, at_least=5.0).verdict == DOES_NOT_HOLD
    assert stats.ratio_of_medians(a, a * 1.01, at_least=1.0).verdict in (INCONCLUSIVE, HOLDS)
    ref = st.mannwhitneyu(b / 2.0, a, alternative="greater").pvalue
    assert ev.p_value == pytest.approx(ref)


def test_paired_timings(rng):
    base = rng.uniform(1, 2, size=10)
    ev = stats.ratio_of_medians(
        base, base * 1.5 * rng.uniform(0.99, 1.01, 10), paired=True, at_least=1.2
    )
    assert ev.verdict == HOLDS and ev.n == 10


def test_ratio_rejects_nonpositive_times():
    with pytest.raises(ValueError, match="positive"):
        stats.ratio_of_medians([0.0, 1.0], [1.0, 1.0])


# ---------------------------------------------------------------- combination


def test_combine():
    assert stats.combine([HOLDS, HOLDS]) == HOLDS
    assert stats.combine([HOLDS, INCONCLUSIVE]) == INCONCLUSIVE
    assert stats.combine([HOLDS, INCONCLUSIVE, DOES_NOT_HOLD]) == DOES_NOT_HOLD
    assert stats.combine([]) == INCONCLUSIVE
    with pytest.raises(ValueError, match="verdict"):
        stats.combine(["maybe"])


def test_evidence_round_trips_through_a_dict(rng):
    ev = stats.paired_comparison(rng.normal(size=9), rng.normal(size=9))
    assert stats.Evidence.from_dict(ev.to_dict()) == ev
    assert "n = 9" in ev.summary() and "CI" in ev.summary()


def test_bootstrap_band_decides_three_ways():
    from icml26_core.stats import bootstrap_band

    rng = np.random.default_rng(0)
    a = rng.normal(10.0, 0.1, size=30)

    def mean(x, axis=-1):
        return np.mean(x, axis=axis)

    common = {"effect_name": "mean", "test": "bootstrap"}
    assert bootstrap_band([a], mean, low=9.0, high=11.0, **common).verdict == "holds"
    assert bootstrap_band([a], mean, low=11.0, **common).verdict == "does not hold"
    assert bootstrap_band([a], mean, high=10.0, **common).verdict == "inconclusive"
    e = bootstrap_band([a[:2]], mean, low=9.0, **common)  # too few to bootstrap
    assert e.verdict == "inconclusive" and e.n == 2
    # several samples are resampled apart: a ratio of two independent means
    b = rng.normal(5.0, 0.1, size=30)
    e = bootstrap_band(
        [a, b], lambda x, y, axis=-1: x.mean(axis) / y.mean(axis), low=1.5, high=2.5, **common
    )
    assert e.verdict == "holds" and e.ci_low < 2.0 < e.ci_high


def test_decide_names_the_test_when_the_interval_is_above_but_p_is_not_small():
    verdict, reason = stats.decide(1.6, 2.2, 1.43, p_value=0.094)
    assert verdict == stats.INCONCLUSIVE
    assert "lies above +1.43" in reason and "p = 0.094" in reason
    assert stats.decide(1.6, 2.2, 1.43, p_value=0.01)[0] == stats.HOLDS
    assert "contains" in stats.decide(1.0, 2.2, 1.43, p_value=0.2)[1]


def test_too_few_two_sample_names_each_side():
    ev = stats.welch([1.0, 2.0], [1.0, 2.0, 3.0, 4.0, 5.0])
    assert ev.verdict == stats.INCONCLUSIVE
    assert "2 and 5 finite samples" in ev.reason and "on each side" in ev.reason
