"""The ask/tell object and the scikit-learn estimator: contracts and bad input."""

import numpy as np
import pytest
from compressed_oja import CompressedOja, CompressedOjaPCA, TheorySchedule
from sklearn.utils.estimator_checks import check_estimator


@pytest.fixture
def X():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3000, 5)) * np.array([2.0, 1.0, 1.0, 0.5, 0.5])


def test_ask_returns_the_estimate_and_an_orthogonal_unit():
    est = CompressedOja(4, 0.1, random_state=0)
    D = est.ask()
    assert D.shape == (2, 4)
    np.testing.assert_allclose(D[0], est.components_[0], atol=0)
    assert abs(D[0] @ D[1]) < 1e-12
    np.testing.assert_allclose(np.linalg.norm(D, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(est.ask(), D, atol=0)  # asking again: the same pending pair
    est.tell(1.0, 0.5)
    assert est.n_measurements_ == 2 and est.n_samples_seen_ == 1


def test_nonadaptive_directions_are_independent_of_the_estimate():
    est = CompressedOja(4, 0.1, measurement="nonadaptive", random_state=0)
    D = est.ask()
    np.testing.assert_allclose(np.linalg.norm(D, axis=1), 1.0, atol=1e-12)
    assert not np.allclose(D[0], est.components_[0])


def test_ask_tell_gives_the_same_iterates_as_partial_fit(X):
    pca = CompressedOjaPCA(eigengap=3.0, t0=50.0, random_state=7).partial_fit(X)
    seed = np.random.RandomState(7).randint(np.iinfo(np.int32).max)
    est = CompressedOja(5, TheorySchedule(3.0, 50.0), random_state=np.random.default_rng(seed))
    for x in X:
        est.step(lambda D: D @ x)  # noqa: B023 - the sample of this round
    np.testing.assert_allclose(pca.components_, est.components_, atol=1e-12)
    assert pca.n_measurements_ == est.n_measurements_ == 2 * len(X)


def test_partial_fit_in_batches_equals_one_pass(X):
    one = CompressedOjaPCA(eigengap=3.0, random_state=1).partial_fit(X)
    two = CompressedOjaPCA(eigengap=3.0, random_state=1)
    for part in np.array_split(X, 3):
        two.partial_fit(part)
    np.testing.assert_allclose(one.components_, two.components_, atol=1e-12)


@pytest.mark.parametrize("measurement", ["adaptive", "nonadaptive", "full", "coordinate"])
def test_every_measurement_finds_the_top_direction(measurement, X):
    pca = CompressedOjaPCA(measurement=measurement, eigengap=3.0, n_passes=3, random_state=0).fit(X)
    assert abs(pca.components_[0, 0]) > 0.95
    assert pca.explained_variance_[0] == pytest.approx(4.0, rel=0.5)
    assert pca.transform(X).shape == (len(X), 1)


def test_input_is_not_mutated(X):
    before = X.copy()
    CompressedOjaPCA(eigengap=3.0, random_state=0).fit(X)
    np.testing.assert_array_equal(X, before)


def test_scikit_learn_estimator_checks():
    check_estimator(CompressedOjaPCA(eigengap=1.0, random_state=0))


def test_errors(X):
    with pytest.raises(RuntimeError, match="ask"):
        CompressedOja(3, 0.1).tell(1.0, 2.0)
    est = CompressedOja(3, 0.1)
    with pytest.raises(ValueError, match="2 measurements"):
        est.step(lambda D: np.ones(3))
    with pytest.raises(TypeError):
        est.tell(1.0)  # one measurement
    est.ask()
    with pytest.raises(ValueError, match="y1 must be finite"):
        est.tell(np.nan, 1.0)
    with pytest.raises(ValueError, match="dim"):
        CompressedOja(1, 0.1)
    with pytest.raises(ValueError, match="measurement"):
        CompressedOja(3, 0.1, measurement="full")
    with pytest.raises(ValueError, match="schedule"):
        CompressedOja(3, -1.0)
    with pytest.raises(ValueError, match="feature"):
        CompressedOjaPCA(eigengap=1.0).fit(X[:, :1])
    bad = X.copy()
    bad[3, 2] = np.inf
    with pytest.raises(ValueError, match="inf"):
        CompressedOjaPCA(eigengap=1.0).fit(bad)
    with pytest.raises(ValueError, match="all zeros"):
        CompressedOjaPCA(eigengap=1.0).fit(np.zeros((10, 3)))
    with pytest.raises(ValueError, match="eigengap"):
        CompressedOjaPCA().fit(X)
    with pytest.raises(ValueError, match="eigengap"):
        CompressedOjaPCA(eigengap=0.0).fit(X)
    with pytest.raises(ValueError, match="t0"):
        CompressedOjaPCA(eigengap=1.0, t0=-1.0).fit(X)
    with pytest.raises(ValueError, match="measurement"):
        CompressedOjaPCA(eigengap=1.0, measurement="one").fit(X)
    with pytest.raises(ValueError, match="n_passes"):
        CompressedOjaPCA(eigengap=1.0, n_passes=0).fit(X)
