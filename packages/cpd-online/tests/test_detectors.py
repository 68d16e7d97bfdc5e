import numpy as np
import pytest
from cpd_online import (
    CPDClassifier,
    GuardGate,
    PerplexityFilter,
    StreamResult,
    WindowedPerplexity,
)
from sklearn.base import clone
from sklearn.exceptions import NotFittedError


def _stream(user_h, user_s=None, n_sys=16, sys_h=None, rng=None):
    rng = rng or np.random.default_rng(0)
    sys_h = rng.normal(2.0, 1.0, n_sys) if sys_h is None else np.asarray(sys_h, float)
    user_h = np.asarray(user_h, float)
    user_s = user_h if user_s is None else np.asarray(user_s, float)
    n = 3 + n_sys + 3 + user_h.size  # header, system, separator, user
    h = np.concatenate([np.zeros(3), sys_h, np.zeros(3), user_h])
    s = np.concatenate([[np.nan], np.zeros(2 + n_sys + 3), user_s])
    system = np.zeros(n, bool)
    system[3 : 3 + n_sys] = True
    user = np.zeros(n, bool)
    user[-user_h.size :] = True
    return StreamResult(np.arange(n), h, s, system, user)


def _benign(rng, n=40):
    return [_stream(rng.normal(2.0, 1.0, 30), rng=rng) for _ in range(n)]


def _attack(rng, onset=20, length=20, shift=4.0):
    h = np.concatenate([rng.normal(2.0, 1.0, onset), rng.normal(2.0 + shift, 1.0, length)])
    return _stream(h, rng=rng)


def test_cpd_flags_a_suffix_and_localizes_its_onset():
    rng = np.random.default_rng(1)
    det = CPDClassifier(k=0.5).fit(_benign(rng))
    attacks = [_attack(rng) for _ in range(20)]
    assert det.predict(attacks).mean() > 0.9
    onsets = [o for a, o in det.localize(attacks) if a is not None]
    assert np.median(np.abs(np.array(onsets) - 20)) <= 2
    alarms = [a for a, _ in det.localize(attacks) if a is not None]
    assert np.mean(np.array(alarms) >= 20) > 0.9  # triggers inside the suffix


def test_fit_calibrates_to_the_benign_false_positive_rate():
    rng = np.random.default_rng(2)
    benign = _benign(rng, 100)
    det = CPDClassifier(fpr=0.1).fit(benign)
    assert det.predict(benign).mean() <= 0.1
    assert det.threshold_ == pytest.approx(np.quantile(det.benign_scores_, 0.9, method="higher"))
    fixed = CPDClassifier(h=3.0).fit(benign)
    assert fixed.threshold_ == 3.0  # exact: the given h is stored as it is


def test_score_is_the_cusum_maximum_on_the_standardized_stream():
    s = _stream([2.0, 5.0, 5.0, 2.0], n_sys=3, sys_h=[1.0, 2.0, 3.0])
    sigma = 1.482602218505602  # MAD of (1, 2, 3) is 1
    z = (np.array([2.0, 5.0, 5.0, 2.0]) - 2.0) / sigma
    assert CPDClassifier().decision_function([s])[0] == pytest.approx(np.cumsum(z).max())


def test_windowed_perplexity_means():
    s = _stream(np.zeros(6), user_s=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    np.testing.assert_allclose(WindowedPerplexity(window=3).window_means(s), [2, 3, 4, 5])
    assert WindowedPerplexity(window=3).decision_function([s])[0] == pytest.approx(5.0)
    assert WindowedPerplexity(window=10).decision_function([s])[0] == pytest.approx(3.5)
    assert PerplexityFilter().decision_function([s])[0] == pytest.approx(3.5)
    alarm, onset = WindowedPerplexity(window=3, threshold=3.5).localize([s])[0]
    assert (alarm, onset) == (4, 2)


def test_not_fitted_and_bad_input():
    s = [_stream(np.ones(5))]
    with pytest.raises(NotFittedError):
        CPDClassifier().predict(s)
    with pytest.raises(ValueError, match="h must be"):
        CPDClassifier(h=0.0).fit(s)
    with pytest.raises(ValueError, match="k must be"):
        CPDClassifier(k=-1.0).decision_function(s)
    with pytest.raises(ValueError, match="no model/tokenizer"):
        CPDClassifier().decision_function(["a prompt"])
    with pytest.raises(ValueError, match="X is empty"):
        CPDClassifier().decision_function([])
    with pytest.raises(ValueError, match="window"):
        WindowedPerplexity(window=0).decision_function(s)
    with pytest.raises(ValueError, match="fpr"):
        PerplexityFilter(fpr=0.0).fit(s)


def test_scikit_learn_params_and_clone():
    det = CPDClassifier(k=0.5, fpr=0.01)
    assert det.get_params()["k"] == 0.5  # exact: stored parameter
    twin = clone(det)
    assert twin.k == 0.5 and twin.fpr == 0.01  # exact: stored parameters
    assert not hasattr(twin, "threshold_")


def test_guard_gate_skips_low_scores():
    rng = np.random.default_rng(3)
    det = CPDClassifier(k=0.5).fit(_benign(rng))
    streams = _benign(rng, 10) + [_attack(rng) for _ in range(5)]
    seen = []

    def guard(batch):
        seen.extend(batch)
        return [True] * len(batch)

    gate = GuardGate(det, guard, clear_below=det.threshold_)
    flags = gate.predict(streams)
    assert gate.calls_ == len(seen) == int(flags.sum())
    assert flags[-5:].all() and gate.calls_ < len(streams)


def test_guard_gate_checks_lengths():
    rng = np.random.default_rng(4)
    det = CPDClassifier(k=0.5).fit(_benign(rng))
    streams = _benign(rng, 5)
    gate = GuardGate(det, lambda batch: [True] * len(batch), clear_below=-1.0)
    with pytest.raises(ValueError, match="prompts must hold one prompt per entry of X"):
        gate.predict(streams, prompts=["p"] * 3)
    # a guard that answers once for the whole batch must not be broadcast to every prompt
    with pytest.raises(ValueError, match="guard must return one flag per prompt"):
        GuardGate(det, lambda batch: [True], clear_below=-1.0).predict(streams)
