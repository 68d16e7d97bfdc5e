import numpy as np
import pytest
import scipy.sparse as sp
from enmf import ENMF, HALS, factors_equivalent, kkt_residuals
from sklearn.decomposition import NMF
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks


@parametrize_with_checks([ENMF(2, random_state=0), HALS(2, random_state=0)])
def test_sklearn_conventions(estimator, check):
    check(estimator)


def planted(rng, n=60, m=40, r=4):
    """Exact-rank nonnegative matrix with sparse (hence essentially unique) factors."""
    W = rng.random((n, r)) * (rng.random((n, r)) < 0.5)
    H = rng.random((r, m)) * (rng.random((r, m)) < 0.5)
    W[:r] += np.eye(r)  # separability: pure rows make the factorization unique
    H[:, :r] += np.eye(r)
    return W @ H, W, H


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: ENMF(5, **kw),
        lambda **kw: ENMF(5, algorithm="extrapolated", **kw),
        lambda **kw: HALS(5, **kw),
        lambda **kw: HALS(5, accelerated=True, extrapolate=True, **kw),
    ],
)
def test_converges_to_kkt_point(make, rng):
    X = rng.random((80, 30))
    model = make(tol=1e-7, max_iter=5000, random_state=0)
    W = model.fit_transform(X)
    H = model.components_
    res = kkt_residuals(X, W, H)
    assert (W >= 0).all() and (H >= 0).all()
    assert res.negativity == 0.0  # exact: W, H are clipped at 0, no negative entry
    assert res.dual_W < 1e-5 and res.dual_H < 1e-5
    assert res.complementarity_W < 1e-5 and res.complementarity_H < 1e-5
    assert res.projected_gradient < 1e-5


@pytest.mark.slow
def test_kkt_on_real_digits():
    from sklearn.datasets import load_digits

    X = load_digits().data[:400]
    model = ENMF(8, tol=1e-6, max_iter=3000, random_state=0)
    W = model.fit_transform(X)
    assert kkt_residuals(X, W, model.components_).max < 1e-4


def test_reconstruction_err_is_frobenius_like_sklearn(rng):
    X = rng.random((50, 20))
    model = ENMF(4, random_state=0)
    W = model.fit_transform(X)
    assert model.reconstruction_err_ == pytest.approx(
        np.linalg.norm(X - W @ model.components_), rel=1e-10
    )
    sk = NMF(4, init="nndsvda", max_iter=2000, tol=1e-8).fit(X)
    # Same quantity: both are ||X - WH||_F and land close to each other.
    assert model.reconstruction_err_ < 1.05 * sk.reconstruction_err_


def test_recovers_planted_exact_rank_factorization(rng):
    X, W_true, H_true = planted(rng)
    model = ENMF(4, tol=1e-10, max_iter=5000, random_state=0)
    W = model.fit_transform(X)
    assert model.reconstruction_err_ / np.linalg.norm(X) < 1e-4
    eq = factors_equivalent(W_true, H_true, W, model.components_, tol=1e-2)
    assert eq.equivalent, eq.distance


@pytest.mark.parametrize("algorithm", ["paper", "extrapolated"])
def test_recovers_planted_factors_with_both_algorithms(rng, algorithm):
    X, W_true, H_true = planted(rng)
    model = ENMF(4, algorithm=algorithm, tol=1e-10, max_iter=5000, random_state=0)
    W = model.fit_transform(X)
    assert factors_equivalent(W_true, H_true, W, model.components_, tol=1e-2).equivalent


def test_paper_start_is_feasible_and_records_its_stages(rng):
    X = rng.random((40, 25))
    model = ENMF(3, max_iter=1, random_state=0)
    with pytest.warns(ConvergenceWarning):
        model.fit(X)
    assert model.path_steps_ >= 1 and model.exterior_distance_ > 0
    ext = ENMF(3, algorithm="extrapolated", max_iter=1, random_state=0)
    with pytest.warns(ConvergenceWarning):
        ext.fit(X)
    assert ext.path_steps_ is None


def test_penalties_give_the_same_iterates_as_sklearn_cd(rng):
    """alpha_W, alpha_H and l1_ratio follow scikit-learn's scaling exactly."""
    X = rng.random((30, 20))
    W0, H0 = rng.random((30, 3)), rng.random((3, 20))
    kw = dict(alpha_W=0.01, alpha_H=0.02, l1_ratio=0.3)
    ours = HALS(3, init="custom", max_iter=15, tol=0.0, **kw)
    with pytest.warns(ConvergenceWarning):
        W = ours.fit_transform(X, W=W0, H=H0)
    sk = NMF(3, init="custom", solver="cd", max_iter=15, tol=0.0, **kw)
    W_sk = sk.fit_transform(X, W=W0.copy(), H=H0.copy())
    np.testing.assert_allclose(W, W_sk, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.components_, sk.components_, rtol=1e-8, atol=1e-10)


def test_l1_penalty_makes_factors_sparser(rng):
    X = rng.random((60, 30))
    plain = ENMF(5, random_state=0, max_iter=500).fit(X)
    sparse = ENMF(5, random_state=0, max_iter=500, alpha_W=0.02, l1_ratio=1.0).fit(X)
    assert (sparse.components_ == 0).mean() + (sparse.transform(X) == 0).mean() > (
        (plain.components_ == 0).mean() + (plain.transform(X) == 0).mean()
    )


def test_auto_rank_comes_from_custom_factors(rng):
    X = rng.random((12, 8))
    W0, H0 = rng.random((12, 3)), rng.random((3, 8))
    model = ENMF("auto", init="custom", max_iter=500)
    model.fit_transform(X, W=W0, H=H0)
    assert model.n_components_ == 3 and model.components_.shape == (3, 8)
    assert ENMF("auto", max_iter=500).fit(X).n_components_ == 8


def test_factors_without_custom_init_warn(rng):
    X = rng.random((12, 8))
    with pytest.warns(RuntimeWarning, match="init='custom'"):
        ENMF(2).fit_transform(X, W=rng.random((12, 2)), H=rng.random((2, 8)))


def test_verbose_prints_progress(rng, capsys):
    ENMF(2, verbose=2, max_iter=500).fit(rng.random((12, 8)))
    out = capsys.readouterr().out
    assert "[ENMF] start" in out and "iteration    1" in out


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_extreme_scales_fit_like_unit_scale(rng, scale):
    """X * 1e300 overflows squared norms and X * 1e-300 underflows them: both still fit."""
    X = rng.random((30, 12))
    ref = ENMF(3, random_state=0, tol=1e-9, max_iter=3000).fit(X)
    model = ENMF(3, random_state=0, tol=1e-9, max_iter=3000)
    W = model.fit_transform(X * scale)
    assert np.all(np.isfinite(W)) and model.reconstruction_err_ > 0
    assert model.reconstruction_err_ / scale == pytest.approx(ref.reconstruction_err_, rel=1e-6)
    # the same factorization up to the scale split between W and H
    W_ref = ref.transform(X)
    np.testing.assert_allclose(
        (W / scale) @ model.components_, W_ref @ ref.components_, rtol=1e-5, atol=1e-8
    )
    np.testing.assert_allclose(
        (model.transform(X * scale) / scale) @ model.components_,
        W_ref @ ref.components_,
        rtol=1e-5,
        atol=1e-6,
    )


def test_kullback_leibler_is_refused_with_a_pointer(rng):
    with pytest.raises(ValueError, match=r"beta_loss must be 'frobenius'.*solver='mu'"):
        ENMF(2, beta_loss="kullback-leibler").fit(rng.random((5, 4)))


def test_sparse_input_matches_dense(rng):
    X = rng.random((40, 20)) * (rng.random((40, 20)) < 0.4)
    dense = ENMF(3, random_state=0, tol=1e-8, max_iter=3000)
    W_d = dense.fit_transform(X)
    for fmt in (sp.csr_matrix, sp.csc_array):
        model = ENMF(3, random_state=0, tol=1e-8, max_iter=3000)
        W_s = model.fit_transform(fmt(X))
        np.testing.assert_allclose(W_s @ model.components_, W_d @ dense.components_, atol=1e-6)
        assert model.reconstruction_err_ == pytest.approx(dense.reconstruction_err_, rel=1e-6)


def test_float32_in_float32_out_and_input_untouched(rng):
    X = rng.random((30, 10)).astype(np.float32)
    before = X.copy()
    model = ENMF(2, random_state=0)
    W = model.fit_transform(X)
    assert W.dtype == np.float32 and model.components_.dtype == np.float32
    assert model.transform(X).dtype == np.float32
    np.testing.assert_array_equal(X, before)


def test_transform_matches_fit_and_inverse_transform(rng):
    X = rng.random((50, 15))
    model = ENMF(3, tol=1e-9, max_iter=5000, random_state=0)
    W = model.fit_transform(X)
    np.testing.assert_allclose(model.transform(X), W, atol=1e-5)
    np.testing.assert_allclose(model.inverse_transform(W), W @ model.components_)
    assert model.n_components_ == 3 and model.n_features_in_ == 15


def test_transform_is_nonnegative_least_squares(rng):
    from scipy.optimize import nnls

    X = rng.random((12, 15))
    model = ENMF(4, random_state=0).fit(X)
    W = model.transform(X)
    for i in range(X.shape[0]):
        w_ref, _ = nnls(model.components_.T, X[i])
        np.testing.assert_allclose(W[i], w_ref, atol=1e-6)


@pytest.mark.parametrize(
    ("X", "kwargs", "match"),
    [
        (-np.ones((5, 4)), {}, "Negative values.*argument X"),
        (np.full((5, 4), np.nan), {}, "NaN"),
        (np.full((5, 4), np.inf), {}, "infinity"),
        (np.ones(5), {}, "2D array"),
        (np.ones((0, 4)), {}, "0 sample"),
        (np.ones((5, 0)), {}, "0 feature"),
        (np.ones((5, 4)), {"n_components": 0}, "n_components must be an integer >= 1"),
        (np.ones((5, 4)), {"n_components": 5}, r"n_components=5 must be <= min"),
        (np.ones((5, 4)), {"max_iter": 0}, "max_iter"),
        (np.ones((5, 4)), {"tol": -1.0}, "tol"),
        (np.ones((5, 4)), {"beta": 1.5}, "beta"),
        (np.ones((5, 4)), {"init": "nndsvd"}, "init must be one of"),
        (np.ones((5, 4)), {"algorithm": "fast"}, "algorithm must be one of"),
        (np.ones((5, 4)), {"rotation": "l3"}, "rotation must be one of"),
        (np.ones((5, 4)), {"path_steps": -1}, "path_steps"),
        (np.ones((5, 4)), {"alpha_W": -1.0}, "alpha_W"),
        (np.ones((5, 4)), {"l1_ratio": 2.0}, "l1_ratio"),
    ],
)
def test_bad_input_raises_value_error_naming_it(X, kwargs, match):
    params = {"n_components": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        ENMF(**params).fit(X)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_components": 2.0}, "n_components must be an integer"),
        ({"max_iter": 1.5}, "max_iter must be an integer"),
        ({"tol": "small"}, "tol must be a real number"),
        ({"accelerated": 1}, "accelerated must be a bool"),
        ({"n_components": "many"}, "n_components must be an integer"),
    ],
)
def test_wrong_types_raise_type_error_naming_them(kwargs, match):
    with pytest.raises(TypeError, match=match):
        ENMF(**{"n_components": 2, **kwargs}).fit(np.ones((5, 4)))


def test_negative_sparse_entries_are_refused():
    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, -2.0], [3.0, 1.0]]))
    with pytest.raises(ValueError, match="Negative values"):
        ENMF(1).fit(X)


def test_custom_init_needs_w_and_h(rng):
    X = rng.random((10, 6))
    with pytest.raises(ValueError, match="needs W"):
        ENMF(2, init="custom").fit_transform(X)
    W0, H0 = rng.random((10, 2)), rng.random((2, 6))
    W = ENMF(2, init="custom", tol=1e-8, max_iter=2000).fit_transform(X, W=W0, H=H0)
    assert W.shape == (10, 2)
