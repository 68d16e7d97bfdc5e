"""The drop-in options: sample weights, float32, CSR with just-in-time updates, l1 and
elastic net, the multinomial loss, warm starts, verbose output and the stopping test."""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sag_saga_iag import (
    LinearModelProblem,
    SAGALogisticRegression,
    SAGARidge,
    SAGLogisticRegression,
    SAGRidge,
    Sampler,
    reference_optimum,
    solve,
)
from sag_saga_iag._kernels import lazy_steps
from sag_saga_iag.experiment import sklearn_l1_kw
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler


class FixedOrder(Sampler):
    """Replays one index sequence every epoch (for exact comparisons)."""

    name = "fixed"

    def __init__(self, order):
        super().__init__(len(order))
        self.order = np.asarray(order, dtype=np.int64)

    def epoch(self):
        return self.order.copy()


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _sparse_data(rng, n=80, d=40, density=0.15):
    X = sp.random(n, d, density=density, random_state=np.random.RandomState(1), format="csr")
    X.data = rng.normal(size=X.nnz)
    return X


def test_lazy_steps_equal_the_step_by_step_map():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        x = rng.normal() * 10 ** rng.uniform(-3, 1)
        m = int(rng.integers(0, 200))
        a = 0.0 if rng.random() < 0.3 else 10 ** rng.uniform(-6, -0.5)
        q = rng.normal() * 10 ** rng.uniform(-4, 0)
        b = 0.0 if rng.random() < 0.3 else abs(rng.normal()) * 10 ** rng.uniform(-4, 0)
        v = x
        for _ in range(m):
            t = (1 - a) * v - q
            v = np.sign(t) * max(abs(t) - b, 0.0)
        assert lazy_steps(x, m, a, q, b) == pytest.approx(v, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("method", ["sag", "saga", "iag"])
@pytest.mark.parametrize(
    "loss,l1,intercept",
    [
        ("logistic", 0.0, True),
        ("logistic", 0.01, False),
        ("squared", 0.02, True),
        ("multinomial", 0.005, True),
    ],
)
def test_csr_just_in_time_updates_equal_the_dense_steps(method, loss, l1, intercept):
    if method == "sag" and l1:
        pytest.skip("no proximal SAG")
    rng = np.random.default_rng(0)
    X = _sparse_data(rng)
    n = X.shape[0]
    if loss == "logistic":
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    elif loss == "squared":
        y = rng.normal(size=n)
    else:
        y = rng.integers(0, 3, size=n).astype(float)
    sw = rng.integers(1, 4, size=n).astype(float)
    kw = dict(loss=loss, alpha=0.05, l1=l1, fit_intercept=intercept, sample_weight=sw)
    dense = LinearModelProblem(X.toarray(), y, **kw)
    csr = LinearModelProblem(X, y, **kw)
    order = rng.integers(0, n, size=n)
    a = solve(dense, method, n_epochs=4, sampling=FixedOrder(order), step_size=0.05)
    b = solve(csr, method, n_epochs=4, sampling=FixedOrder(order), step_size=0.05)
    np.testing.assert_allclose(b.x, a.x, rtol=0, atol=1e-11)
    np.testing.assert_allclose(b.history["objective"], a.history["objective"], rtol=1e-12)


def test_integer_sample_weights_equal_repeated_rows(cancer):
    X, y = cancer
    X, y = X[:150], 2.0 * y[:150] - 1
    sw = np.random.default_rng(0).integers(0, 4, size=len(y))
    w = LinearModelProblem(X, y, alpha=1 / (0.5 * len(y)), fit_intercept=True, sample_weight=sw)
    r = LinearModelProblem(
        np.repeat(X, sw, axis=0), np.repeat(y, sw), alpha=1 / (0.5 * sw.sum()), fit_intercept=True
    )
    x_w, x_r = reference_optimum(w)[0], reference_optimum(r)[0]
    np.testing.assert_allclose(x_w, x_r, atol=1e-9)  # the same minimizer (C = 0.5 both ways)
    res = solve(w, "saga", n_epochs=5000, random_state=0, tol=1e-11)
    assert res.converged
    np.testing.assert_allclose(res.x, x_w, atol=1e-8)


def test_weighted_estimators_match_sklearn(cancer):
    X, y = cancer
    sw = np.random.default_rng(1).integers(0, 4, size=len(y)).astype(float)
    ours = SAGALogisticRegression(C=0.5, tol=1e-10, max_iter=20000, random_state=0)
    ours.fit(X, y, sample_weight=sw)
    ref = LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-12, max_iter=200)
    ref.fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-6)
    Xr, yr = X[:200, :8], 3 * X[:200, 0] + np.random.default_rng(2).normal(size=200)
    swr = sw[:200]
    r = SAGRidge(alpha=2.0, tol=1e-10, max_iter=20000, random_state=0).fit(Xr, yr, swr)
    exact = Ridge(alpha=2.0, solver="cholesky").fit(Xr, yr, sample_weight=swr)
    np.testing.assert_allclose(r.coef_, exact.coef_, atol=1e-7)
    assert r.intercept_ == pytest.approx(exact.intercept_, abs=1e-7)


def test_float32_is_kept_and_as_accurate(cancer):
    X, y = cancer
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    ours = SAGALogisticRegression(C=0.5, tol=1e-10, max_iter=20000, random_state=0).fit(X32, y)
    assert ours.coef_.dtype == np.float32 and ours.intercept_.dtype == np.float32
    assert ours.predict_proba(X32).dtype == np.float32
    ref = LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-12).fit(
        X32.astype(np.float64), y
    )
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
    prob = LinearModelProblem(X32, 2.0 * y - 1)
    assert prob.X is X32  # no float64 copy of the data
    r = SAGRidge(alpha=100.0, random_state=0).fit(X32, X32[:, 0] * 2)
    assert r.coef_.dtype == np.float32 and r.predict(X32).dtype == np.float32


def test_sparse_estimators_match_dense(cancer):
    X, y = cancer
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0.0))
    for E in (SAGLogisticRegression, SAGALogisticRegression):
        a = E(C=0.5, tol=1e-10, max_iter=20000, random_state=0).fit(Xs, y)
        b = LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-12).fit(Xs.toarray(), y)
        np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
        np.testing.assert_allclose(a.predict_proba(Xs), b.predict_proba(Xs.toarray()), atol=1e-6)
    # csc, coo and other formats are accepted (used as CSR)
    SAGALogisticRegression(max_iter=5, tol=0.0).fit(sp.csc_matrix(Xs), y)


def _l1_reference(prob):
    """min f(u - v) + l1 sum(u + v) over u, v >= 0 by L-BFGS-B: an independent l1 optimum."""
    d, K = prob.n_features, prob.n_outputs
    smooth = LinearModelProblem(
        prob.X,
        prob.y,
        loss=prob.loss,
        alpha=prob.alpha,
        fit_intercept=prob.fit_intercept,
        sample_weight=prob.sample_weight,
    )
    m = d * K

    def fg(z):
        W = (z[:m] - z[m : 2 * m]).reshape(d, K)
        x = np.vstack([W, z[2 * m :].reshape(-1, K)]).ravel()
        g = smooth.gradient(x).reshape(-1, K)
        f = smooth.value(x) + prob.l1 * z[: 2 * m].sum()
        gw = g[:d].ravel()
        return f, np.concatenate([gw + prob.l1, -gw + prob.l1, g[d:].ravel()])

    nb = prob.dim - m
    res = minimize(
        fg,
        np.zeros(2 * m + nb),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0, None)] * (2 * m) + [(None, None)] * nb,
        options={"maxiter": 50000, "gtol": 1e-14, "ftol": 0.0, "maxcor": 50},
    )
    W = (res.x[:m] - res.x[m : 2 * m]).reshape(d, K)
    return np.vstack([W, res.x[2 * m :].reshape(-1, K)]).ravel()


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_l1_and_elastic_net_reach_the_optimum_and_sklearn_saga(l1_ratio, cancer):
    X, y = cancer
    X, y = X[:250, :10], y[:250]
    C = 0.05
    ours = SAGALogisticRegression(
        C=C, l1_ratio=l1_ratio, tol=1e-10, max_iter=30000, random_state=0
    ).fit(X, y)
    strength = 1.0 / (C * len(y))
    prob = LinearModelProblem(
        X, 2.0 * y - 1, alpha=(1 - l1_ratio) * strength, l1=l1_ratio * strength, fit_intercept=True
    )
    ref = _l1_reference(prob)
    got = np.append(ours.coef_.ravel(), ours.intercept_)
    np.testing.assert_allclose(got, ref, atol=1e-6)
    assert np.sum(ours.coef_ == 0) > 0  # the prox makes exact zeros
    sk = LogisticRegression(
        C=C, solver="saga", tol=1e-12, max_iter=30000, random_state=0, **sklearn_l1_kw(l1_ratio)
    ).fit(X, y)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=1e-6)


def test_multinomial_gradient_hessian_and_fit():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    prob = LinearModelProblem(X, y, loss="multinomial", alpha=0.01, fit_intercept=True)
    assert prob.n_outputs == 3 and prob.dim == 15
    rng = np.random.default_rng(0)
    x = rng.normal(size=prob.dim)
    h = 1e-6
    fd = np.array([(prob.value(x + e) - prob.value(x - e)) / (2 * h) for e in np.eye(15) * h])
    np.testing.assert_allclose(prob.gradient(x), fd, atol=1e-7)
    v = rng.normal(size=15)
    hv = (prob.gradient(x + h * v) - prob.gradient(x - h * v)) / (2 * h)
    np.testing.assert_allclose(prob.hessian(x) @ v, hv, atol=1e-6)
    s = prob.smoothness()
    assert np.linalg.eigvalsh(prob.hessian(x))[-1] <= s.L + 1e-12
    for E in (SAGLogisticRegression, SAGALogisticRegression):
        ours = E(C=0.5, tol=1e-10, max_iter=50000, random_state=0).fit(X, y)
        ref = LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-12).fit(X, y)
        assert ours.coef_.shape == (3, 4)
        # the intercepts are defined up to a common shift; both solvers keep their sum at 0
        np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
        np.testing.assert_allclose(
            ours.intercept_ - ours.intercept_.mean(),
            ref.intercept_ - ref.intercept_.mean(),
            atol=1e-6,
        )
        np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)
        np.testing.assert_allclose(ours.predict_proba(X).sum(axis=1), 1.0)


def test_badly_scaled_feature_warns_instead_of_stopping_silently():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X[:, 0] *= 1e6
    y = (y == 1).astype(int)
    with pytest.warns(ConvergenceWarning, match="standardize"):
        est = SAGALogisticRegression(max_iter=300, random_state=0).fit(X, y)
    ref = LogisticRegression(solver="newton-cholesky", tol=1e-12).fit(X, y)
    # the warning is honest: the coefficients are far from the optimum
    assert np.max(np.abs(est.coef_ - ref.coef_)) > 1e-2


def test_tol_is_a_test_on_the_gradient_mapping(cancer):
    X, y = cancer
    prob = LinearModelProblem(X, 2.0 * y - 1, alpha=1e-3, l1=2e-3, fit_intercept=True)
    res = solve(prob, "saga", n_epochs=5000, random_state=0, tol=1e-8, record_objective=False)
    assert res.converged and res.grad_mapping <= 1e-8
    exact = np.max(np.abs(prob.gradient_mapping(res.x, res.step_size)))
    assert exact == pytest.approx(res.grad_mapping, rel=1e-9)
    with pytest.warns(ConvergenceWarning, match="did not reach tol"):
        short = solve(prob, "saga", n_epochs=3, random_state=0, tol=1e-8)
    assert not short.converged and short.grad_mapping > 1e-8


def test_warm_start_and_verbose(cancer, capsys):
    X, y = cancer
    est = SAGALogisticRegression(C=0.5, tol=1e-6, warm_start=True, random_state=0).fit(X, y)
    first = est.n_iter_[0]
    est.fit(X, y)
    assert est.n_iter_[0] <= 2 < first
    r = SAGARidge(alpha=100.0, tol=1e-6, warm_start=True, random_state=0).fit(X, X[:, 0])
    r.set_params(verbose=1).fit(X, X[:, 0])
    out = capsys.readouterr().out
    assert re.search(r"saga epoch 1: gradient mapping \d", out)


def test_option_errors(cancer):
    X, y = cancer
    with pytest.raises(ValueError, match="l1_ratio > 0 needs SAGA"):
        SAGLogisticRegression(l1_ratio=0.5).fit(X, y)
    with pytest.raises(ValueError, match="l1_ratio"):
        SAGALogisticRegression(l1_ratio=1.5).fit(X, y)
    with pytest.raises(ValueError, match="sample_weight"):
        SAGALogisticRegression().fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="sample_weight"):
        SAGALogisticRegression().fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(TypeError, match="warm_start"):
        SAGALogisticRegression(warm_start="yes").fit(X, y)
    with pytest.raises(ValueError, match="an l1 term needs"):
        solve(LinearModelProblem(X, 2.0 * y - 1, l1=0.1), "sag")
    with pytest.raises(ValueError, match="dense"):
        LinearModelProblem(sp.csr_matrix(X), 2.0 * y - 1, nonconvex=0.1)
    with pytest.raises(ValueError, match="multinomial"):
        LinearModelProblem(X, y + 0.5, loss="multinomial")
    # C = inf means no penalty, as in scikit-learn
    est = SAGALogisticRegression(C=np.inf, max_iter=3, tol=0.0).fit(X, y)
    assert np.all(np.isfinite(est.coef_))


def test_only_public_sklearn_api():
    src = Path(__file__).parents[1] / "src" / "sag_saga_iag"
    for f in src.glob("*.py"):
        text = f.read_text()
        hits = [m for m in re.findall(r"sklearn(?:\.\w+)*\.(_\w+)", text) if not m.startswith("__")]
        assert not hits, f"private sklearn names in {f.name}: {hits}"


def test_no_convergence_warning_when_converged(cancer):
    X, y = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        SAGALogisticRegression(random_state=0).fit(X, y)
