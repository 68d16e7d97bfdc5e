import warnings

import numpy as np
import pytest
from sag_saga_iag import (
    IAGLogisticRegression,
    IAGRidge,
    LinearModelProblem,
    SAGALogisticRegression,
    SAGARidge,
    SAGLogisticRegression,
    SAGRidge,
    reference_optimum,
)
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

ESTIMATORS = (
    SAGLogisticRegression,
    SAGALogisticRegression,
    IAGLogisticRegression,
    SAGRidge,
    SAGARidge,
    IAGRidge,
)
_WEIGHT_CHECKS = {
    name: "compares weighted and repeated fits to rtol 1e-7, which only a fit to a tight tol "
    "meets: see test_sklearn_compatible_at_tight_tol (slow) and "
    "test_options.py::test_integer_sample_weights_equal_repeated_rows"
    for name in (
        "check_sample_weight_equivalence_on_dense_data",
        "check_sample_weight_equivalence_on_sparse_data",
    )
}


# One estimator in the default run (the six share their API code and differ only in the
# update rule or the loss); max_iter=100 keeps the checks fast. All six, every check, at a
# tight tol: test_sklearn_compatible_at_tight_tol (slow).
@parametrize_with_checks(
    [SAGALogisticRegression(max_iter=100)],
    expected_failed_checks=lambda est: _WEIGHT_CHECKS,
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


# every check, the sample-weight equivalence included, at a tol that reaches the optimum
@pytest.mark.slow
@parametrize_with_checks([E(max_iter=50_000, tol=1e-10) for E in ESTIMATORS])
def test_sklearn_compatible_at_tight_tol(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize(
    "ours,solver", [(SAGLogisticRegression, "sag"), (SAGALogisticRegression, "saga")]
)
def test_logistic_matches_sklearn_and_the_optimum(ours, solver, cancer):
    X, y = cancer
    C = 0.1
    est = ours(C=C, tol=1e-12, max_iter=5000, random_state=0).fit(X, y)
    sk = LogisticRegression(C=C, solver=solver, tol=1e-12, max_iter=5000, random_state=0).fit(X, y)
    np.testing.assert_allclose(est.coef_, sk.coef_, atol=1e-6)
    np.testing.assert_allclose(est.intercept_, sk.intercept_, atol=1e-6)
    prob = LinearModelProblem(X, 2.0 * y - 1, alpha=1 / (C * len(y)), fit_intercept=True)
    x_star, _ = reference_optimum(prob)
    np.testing.assert_allclose(np.append(est.coef_, est.intercept_), x_star, atol=1e-8)
    np.testing.assert_array_equal(est.predict(X), sk.predict(X))
    np.testing.assert_allclose(est.predict_proba(X), sk.predict_proba(X), atol=1e-6)


def test_ridge_matches_sklearn_and_closed_form():
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = SAGRidge(alpha=10.0, tol=1e-12, max_iter=5000, random_state=0).fit(X, y)
    sk = Ridge(alpha=10.0, solver="sag", tol=1e-12, max_iter=5000, random_state=0).fit(X, y)
    exact = Ridge(alpha=10.0, solver="cholesky").fit(X, y)
    np.testing.assert_allclose(est.coef_, sk.coef_, atol=1e-6)
    np.testing.assert_allclose(est.coef_, exact.coef_, atol=1e-8)
    assert est.intercept_ == pytest.approx(exact.intercept_, abs=1e-8)


def test_estimator_bad_input():
    X, y = np.ones((4, 2)), np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="C must be > 0"):
        SAGLogisticRegression(C=0.0).fit(X, y)
    with pytest.raises(ValueError, match="step_size"):
        SAGLogisticRegression(step_size=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="sampling"):
        SAGRidge(sampling="shuffle").fit(X, y)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        SAGRidge(alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        SAGRidge().fit(X, y[:3])
    with pytest.raises(ValueError, match="NaN"):
        SAGRidge().fit(np.array([[np.nan, 1.0]] * 4), y)
    with pytest.raises(ValueError, match="2 classes"):
        SAGLogisticRegression().fit(X, np.zeros(4))


def test_three_classes_use_the_multinomial_loss():
    X, _ = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:200]
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    est = SAGALogisticRegression(C=0.5, tol=1e-10, max_iter=20000, random_state=0).fit(X, y3)
    ref = LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-12).fit(X, y3)
    assert est.coef_.shape == (3, X.shape[1])
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), atol=1e-6)
    np.testing.assert_allclose(est.predict_proba(X).sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(est.predict_log_proba(X)), est.predict_proba(X), rtol=1e-10)
