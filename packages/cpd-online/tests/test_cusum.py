import numpy as np
import pytest
from cpd_online import CUSUMDetector, cusum_path, robust_baseline, siegmund_arl, standardize


def _run_lengths(rng, n_runs, length, mean, k, h):
    out = []
    for _ in range(n_runs):
        path = cusum_path(rng.normal(mean, 1.0, length), k, h)
        out.append(length if path.alarm is None else path.alarm + 1)
    return np.array(out, dtype=float)


def test_false_alarm_run_length_matches_siegmund():
    # k = 0.5, h = 4 on N(0, 1): ARL0 ~ 336 (tables), Siegmund 338; 1500 runs -> SE ~ 2.3%
    rl = _run_lengths(np.random.default_rng(0), 1500, 4000, 0.0, 0.5, 4.0)
    assert rl.max() < 4000
    assert rl.mean() == pytest.approx(siegmund_arl(-0.5, 4.0), rel=0.08)


def test_detection_delay_matches_siegmund():
    # post-change N(1, 1), k = 0.5, h = 4: ARL1 ~ 8.38 (tables), Siegmund 8.34
    rl = _run_lengths(np.random.default_rng(1), 3000, 200, 1.0, 0.5, 4.0)
    assert rl.mean() == pytest.approx(siegmund_arl(0.5, 4.0), rel=0.05)


def test_delay_after_a_change_point_is_about_the_zero_state_delay():
    rng = np.random.default_rng(2)
    tau, delays = 50, []
    for _ in range(800):
        z = np.concatenate([rng.normal(0, 1, tau), rng.normal(2.0, 1, 100)])
        path = cusum_path(z, 0.5, 4.0)
        if path.alarm is not None and path.alarm >= tau:
            delays.append(path.alarm - tau + 1)
    # steady-state delay is below the zero-state one (S starts >= 0), and above h/(d)
    assert 4.0 / 1.5 < np.mean(delays) <= siegmund_arl(1.5, 4.0) * 1.05


@pytest.mark.parametrize("k", [0.0, 0.5])
def test_streaming_equals_batch(k):
    z = np.random.default_rng(3).normal(0.2, 1, 300)
    h = 6.0
    path = cusum_path(z, k, h)
    det = CUSUMDetector(k=k, h=h)
    stat = []
    for v in z:
        det.update(v)
        stat.append(det.statistic_)
    np.testing.assert_allclose(stat, path.statistic, atol=1e-9)
    assert det.alarm_ == path.alarm and det.onset_ == path.onset
    assert det.max_ == pytest.approx(path.score, abs=1e-9)
    det.reset()
    assert det.statistic_ == 0.0 and det.alarm_ is None and det.t_ == 0  # exact: reset value


@pytest.mark.parametrize("tau", [0, 1, 17, 40])
def test_onset_is_exact_on_a_noise_free_step(tau):
    z = np.concatenate([-np.ones(tau), np.ones(60 - tau)])
    path = cusum_path(z, 0.0, 3.5)
    assert path.onset == tau
    assert path.alarm == tau + 3  # S = 1, 2, 3, 4 after the step
    assert path.score == pytest.approx(60 - tau)


def test_statistic_is_the_lindley_recursion_and_score_its_max():
    z = np.random.default_rng(4).normal(0, 1, 100)
    s, ref = 0.0, []
    for v in z:
        s = max(0.0, s + v - 0.3)
        ref.append(s)
    path = cusum_path(z, 0.3)
    np.testing.assert_allclose(path.statistic, ref, atol=1e-12)
    assert path.score == pytest.approx(max(ref)) and path.alarm is None


def test_robust_baseline_ignores_outliers():
    rng = np.random.default_rng(5)
    h = np.concatenate([rng.normal(2.0, 0.5, 40), [30.0, 40.0, 50.0]])
    mu, sigma = robust_baseline(h)
    assert mu == pytest.approx(2.0, abs=0.2) and sigma == pytest.approx(0.5, rel=0.3)
    mu_plain, sigma_plain = robust_baseline(h, robust=False)
    assert mu_plain > 4.0 and sigma_plain > 5.0


def test_robust_scale_is_consistent_for_a_gaussian():
    mu, sigma = robust_baseline(np.random.default_rng(6).normal(1.0, 2.0, 20000))
    assert mu == pytest.approx(1.0, abs=0.05) and sigma == pytest.approx(2.0, rel=0.03)


def test_constant_baseline_gets_the_scale_floor():
    assert robust_baseline([1.0, 1.0, 1.0]) == (1.0, 1e-3)


def test_standardize():
    np.testing.assert_allclose(standardize([1.0, 3.0], 1.0, 2.0), [0.0, 1.0])


def test_update_entropy_uses_the_fitted_baseline():
    det = CUSUMDetector(h=1.5).fit_baseline([1.0, 2.0, 3.0])
    assert det.mu0_ == pytest.approx(2.0)
    assert not det.update_entropy(2.0 + det.sigma0_)
    assert det.update_entropy(2.0 + det.sigma0_)
    with pytest.raises(RuntimeError, match="fit_baseline"):
        CUSUMDetector().update_entropy(1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"h": 0.0}, "h must be"), ({"h": -1.0}, "h must be"), ({"k": -0.1}, "k must be")],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CUSUMDetector(**kwargs)
    with pytest.raises(ValueError, match=match):
        cusum_path([0.0, 1.0], kwargs.get("k", 0.0), kwargs.get("h", 1.0))


def test_nan_entropies_are_refused():
    with pytest.raises(ValueError, match="entropies must be finite; entry 1"):
        robust_baseline([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="entropies must be finite"):
        standardize([np.inf], 0.0, 1.0)
    with pytest.raises(ValueError, match="z must be finite"):
        cusum_path([0.0, np.nan])
    with pytest.raises(ValueError, match="z must be a finite"):
        CUSUMDetector().update(float("nan"))
    with pytest.raises(ValueError, match="at least 2"):
        robust_baseline([1.0])
    with pytest.raises(ValueError, match="one-dimensional"):
        cusum_path(np.zeros((2, 2)))


def test_bad_types_and_siegmund_arguments_are_named():
    with pytest.raises(TypeError, match="z must be a 1-D array of real numbers"):
        cusum_path("abc")
    with pytest.raises(TypeError, match="entropies must be a 1-D array"):
        robust_baseline(["a", "b"])
    with pytest.raises(ValueError, match="h must be"):
        siegmund_arl(-0.5, -1.0)
    with pytest.raises(TypeError, match="drift must be a real number"):
        siegmund_arl("a", 4.0)
    with pytest.raises(ValueError, match="drift must be"):
        siegmund_arl(float("nan"), 4.0)
    assert siegmund_arl(-10.0, 50.0) == float("inf")  # exp overflow, not OverflowError
