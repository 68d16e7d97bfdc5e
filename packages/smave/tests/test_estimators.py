"""The estimators: scikit-learn conformance, recovery, baselines' algebra, bad input."""

import warnings
from functools import partial

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks
from smave import MAVE, OPG, RMAVE, SMAVE, select_n_components, subspace_distance
from smave._base import whitening
from smave.baselines import _dense_projected_step, _solve_b_step


def _single_index(rng, n=400, p=6, noise=0.0):
    X = rng.standard_normal((n, p))
    beta = np.zeros(p)
    beta[:3] = [1.0, -1.0, 1.0]
    beta /= np.linalg.norm(beta)
    u = X @ beta
    y = np.sin(1.5 * u) + 0.5 * u**2 + noise * rng.standard_normal(n)
    return X, y, beta[None, :]


@parametrize_with_checks(
    [
        SMAVE(max_iter=15, random_state=0),
        SMAVE(variant="simplified", max_iter=15, random_state=0),
        OPG(),
        MAVE(max_iter=3),
        RMAVE(max_iter=3),
    ]
)
def test_sklearn_conformance(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "est",
    [
        SMAVE(random_state=0),
        SMAVE(variant="simplified", random_state=0),
        RMAVE(),
        OPG(),
        MAVE(),
    ],
    ids=["smave", "smave-simplified", "rmave", "opg", "mave"],
)
def test_noiseless_single_index_recovered(rng, est):
    X, y, B0 = _single_index(rng)
    est.fit(X, y)
    assert est.components_.shape == (1, 6)
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(1), atol=1e-10)
    tol = 0.05 if not isinstance(est, OPG | MAVE) or isinstance(est, RMAVE) else 0.15
    assert subspace_distance(est.components_, B0) < tol


def test_smave_two_index_from_random_start(rng):
    n, p = 1500, 5
    X = rng.standard_normal((n, p))
    y = X[:, 0] / (0.5 + (X[:, 1] + 1.5) ** 2) + (1 + X[:, 1]) ** 2 + 0.1 * rng.standard_normal(n)
    est = SMAVE(n_components=2, init="random", max_iter=600, random_state=1).fit(X, y)
    assert subspace_distance(est.components_, np.eye(p)[:2]) < 0.2
    # the Riemannian gradient norm on the batches shrinks as the steps decay
    g = est.grad_norm_history_
    assert g[-50:].mean() < 0.5 * g[:50].mean()


def test_components_live_in_x_coordinates(rng):
    # scaling a feature must not change the estimated direction in X coordinates
    X, y, B0 = _single_index(rng, n=600, noise=0.05)
    scale = np.array([1.0, 10.0, 0.1, 3.0, 1.0, 1.0])
    est = RMAVE().fit(X * scale, y)
    B0_scaled = B0 / scale  # the index beta^T x = (beta / s)^T (s x)
    assert subspace_distance(est.components_, B0_scaled) < 0.1
    Xt = est.transform(X * scale)
    np.testing.assert_allclose(Xt, (X * scale - est.mean_) @ est.components_.T)


def test_user_init_and_no_mutation(rng):
    X, y, B0 = _single_index(rng, noise=0.05)
    X0, y0 = X.copy(), y.copy()
    est = SMAVE(init=B0 + 0.1, max_iter=100, random_state=0).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    assert subspace_distance(est.components_, B0) < 0.1
    with pytest.raises(ValueError, match="init must be a finite array of shape"):
        SMAVE(init=np.ones((2, 6))).fit(X, y)


def test_rmave_normal_equations_match_brute_force(rng):
    # The moment-based B-step of RMAVE equals the explicit sum over all pairs (i, j).
    n, p, d, h = 40, 4, 2, 0.7
    Z = rng.standard_normal((n, p))
    y = rng.standard_normal(n)
    B, _ = np.linalg.qr(rng.standard_normal((p, d)))
    A, rhs, crit = _dense_projected_step(Z, y, B, h, ridge=0.0)
    P = Z @ B
    K = np.exp(-0.5 * ((P[:, None] - P[None]) ** 2).sum(-1) / h**2)
    W = K / K.sum(1, keepdims=True)
    A_bf = np.zeros((d * p, d * p))
    rhs_bf = np.zeros(d * p)
    crit_bf = 0.0
    for j in range(n):
        D = Z - Z[j]
        X1 = np.column_stack([np.ones(n), D @ B])
        sw = np.sqrt(W[j])
        theta = np.linalg.lstsq(X1 * sw[:, None], y * sw, rcond=None)[0]
        a, b = theta[0], theta[1:]
        crit_bf += np.sum(W[j] * (y - X1 @ theta) ** 2)
        for i in range(n):
            phi = np.kron(b, D[i])  # vec(D b^T), column-major
            A_bf += W[j, i] * np.outer(phi, phi)
            rhs_bf += W[j, i] * (y[i] - a) * phi
    np.testing.assert_allclose(A.reshape(d * p, d * p), A_bf, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(rhs.T.reshape(-1), rhs_bf, rtol=1e-8, atol=1e-10)
    assert crit == pytest.approx(crit_bf / n, rel=1e-8)
    # the B-step solves them
    Bn = _solve_b_step(A, rhs, p, d)
    np.testing.assert_allclose(A_bf @ Bn.T.reshape(-1), rhs_bf, rtol=1e-6, atol=1e-8)


def test_mave_criterion_decreases(rng):
    X, y, _ = _single_index(rng, n=300, noise=0.2)
    est = MAVE(max_iter=10, tol=0.0, ridge=1e-12).fit(X, y)
    h = est.objective_history_
    assert np.all(np.diff(h) <= 1e-9 * h[0])


def test_opg_eigenvalues_concentrate_on_the_index(rng):
    X, y, _ = _single_index(rng, n=800, noise=0.05)
    ev = OPG().fit(X, y).eigenvalues_
    assert ev[0] > 10 * ev[1]


def test_whitening(rng):
    X = rng.standard_normal((200, 4)) @ rng.standard_normal((4, 4))
    X = np.column_stack([X, X[:, 0] + X[:, 1]])  # rank 4 in 5 features
    Z, _, _ = whitening(X)
    assert Z.shape == (200, 4)
    np.testing.assert_allclose(Z.T @ Z / 200, np.eye(4), atol=1e-10)


@pytest.mark.parametrize("cls", [SMAVE, OPG, MAVE, RMAVE])
def test_bad_input(rng, cls):
    X, y, _ = _single_index(rng, n=60)
    with pytest.raises(ValueError, match="n_components=6 must be smaller than n_features=6"):
        cls(n_components=6).fit(X, y)
    with pytest.raises(ValueError, match="y is constant"):
        cls().fit(X, np.full(60, 3.0))
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls().fit(Xn, y)
    with pytest.raises(ValueError, match="n_samples=20 is too few"):
        cls(n_neighbors=30).fit(X[:20], y[:20])
    with pytest.raises(TypeError, match="n_components must be an integer"):
        cls(n_components=1.5).fit(X, y)
    with pytest.raises(ValueError, match="n_components must be an integer >= 1"):
        cls(n_components=0).fit(X, y)
    with pytest.raises(TypeError, match="y must be numeric"):
        cls().fit(X, np.array(["a", "b"] * 30))


def test_bad_hyperparameters(rng):
    X, y, _ = _single_index(rng, n=60)
    with pytest.raises(ValueError, match="variant must be one of"):
        SMAVE(variant="fast").fit(X, y)
    with pytest.raises(ValueError, match="learning_rate must be > 0"):
        SMAVE(learning_rate=-1.0).fit(X, y)
    with pytest.raises(TypeError, match="max_iter must be an integer"):
        SMAVE(max_iter=10.0).fit(X, y)
    with pytest.raises(ValueError, match="bandwidth_floor must be >= 0"):
        SMAVE(bandwidth_floor=-0.1).fit(X, y)
    with pytest.raises(ValueError, match="init must be one of"):
        SMAVE(init="pca").fit(X, y)
    with pytest.raises(ValueError, match="init must be"):
        RMAVE(init="pca").fit(X, y)
    with pytest.raises(TypeError, match="refine must be a bool"):
        MAVE(refine="yes").fit(X, y)


def test_select_n_components_finds_two(rng):
    n = 300
    X = rng.standard_normal((n, 4))
    y = 2 * X[:, 0] + 2 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    sel = select_n_components(OPG(), X, y, [1, 2, 3], cv=3, random_state=0)
    assert sel.best == 2
    assert sel.mean_error[1] < sel.mean_error[0]
    with pytest.raises(ValueError, match="candidates must be"):
        select_n_components(OPG(), X, y, [4])


def test_subspace_distance():
    e = np.eye(4)
    assert subspace_distance(e[:2], e[:2]) == pytest.approx(0.0, abs=1e-12)
    assert subspace_distance(e[:2], e[2:]) == pytest.approx(2.0)  # sqrt(k + k0)
    # basis invariance and principal angle formula sqrt(2) sin(theta)
    theta = 0.3
    v = np.array([np.cos(theta), np.sin(theta), 0, 0])
    assert subspace_distance(v, e[0]) == pytest.approx(np.sqrt(2) * np.sin(theta))
    assert subspace_distance(np.array([[1.0, 1, 0, 0], [1, -1, 0, 0]]), 3 * e[:2]) == pytest.approx(
        0.0, abs=1e-12
    )
    with pytest.raises(ValueError, match="same number of features"):
        subspace_distance(e[:1], np.eye(3)[:1])
    with pytest.raises(ValueError, match="rank"):
        subspace_distance(np.array([[1.0, 0, 0, 0], [2.0, 0, 0, 0]]), e[:2])


def test_simplified_variant_ascends_its_fixed_criterion(rng):
    from smave._init import moment_directions
    from smave.criterion import mave_objective_and_gradient, riemannian_gradient

    X, y, _ = _single_index(rng, n=600, noise=0.1)
    est = SMAVE(variant="simplified", tail_average=0.0, max_iter=400, random_state=0).fit(X, y)
    loc = est.fixed_localization_
    Z = (X - est.mean_) @ est.whitening_
    ys = (y - y.mean()) / y.std()
    B_start = moment_directions(Z, ys, 1)
    F0, G0 = mave_objective_and_gradient(Z, ys, B_start, loc)
    F1, G1 = mave_objective_and_gradient(Z, ys, est.basis_whitened_, loc)
    assert F1 > F0
    g0 = np.linalg.norm(riemannian_gradient(B_start, G0))
    g1 = np.linalg.norm(riemannian_gradient(est.basis_whitened_, G1))
    assert g1 < 0.2 * g0  # near a stationary point of the fixed criterion


def test_neighbour_pool_keeps_the_bandwidth():
    from smave.smave import default_n_neighbors, ideal_neighbors, neighbour_pool_size

    assert neighbour_pool_size(100, 50, 40) == 100  # k >= K: exact k nearest neighbours
    for n, d in [(2000, 1), (50000, 1), (50000, 2)]:
        K, k = ideal_neighbors(n, d), default_n_neighbors(n, d)
        assert k <= 50 and K >= k
        pool = neighbour_pool_size(n, k, K)
        # the k nearest of the pool cover the fraction K / n of the sample, like the K nearest
        assert k / pool == pytest.approx(K / n, rel=0.05)
    # and SMAVE stays accurate at large n where the pool is a small fraction
    rng = np.random.default_rng(3)
    X, y, B0 = _single_index(rng, n=20000, p=8, noise=0.1)
    est = SMAVE(random_state=0).fit(X, y)
    assert est.neighbor_pool_size_ < 20000
    assert subspace_distance(est.components_, B0) < 0.05


def test_localization_is_nearest_neighbours_in_the_projected_space(rng):
    from smave._init import moment_directions

    X, y, _ = _single_index(rng, n=300, noise=0.1)
    est = SMAVE(
        variant="simplified",
        n_neighbors=20,
        neighbor_pool=1.0,
        max_iter=1,
        init="moments",
        bandwidth_floor=0.0,
    ).fit(X, y)
    loc = est.fixed_localization_
    Z = (X - est.mean_) @ est.whitening_
    P = Z @ moment_directions(Z, (y - y.mean()) / y.std(), 1)  # the start's projection
    dist = np.abs(P - P.T)  # (n, n) distances in the projected space (d = 1)
    kth = np.sort(dist, axis=1)[:, 19]
    got = np.take_along_axis(dist, loc.neighbors, axis=1)
    assert np.all(got <= kth[:, None] + 1e-12)  # the 20 nearest in B^T z, not in z
    np.testing.assert_allclose(loc.weights.sum(axis=1), 1.0)
    ambient = np.argsort(((Z[:, None] - Z[None]) ** 2).sum(-1), axis=1)[:, :20]
    overlap = [len(set(a) & set(b)) for a, b in zip(ambient, loc.neighbors, strict=True)]
    assert np.mean(overlap) < 10
    # with the bandwidth floor, neighbours lie within max(k-th distance, floor)
    est = SMAVE(
        variant="simplified",
        n_neighbors=20,
        neighbor_pool=1.0,
        max_iter=1,
        init="moments",
        bandwidth_floor=2.0,
    ).fit(X, y)
    got = np.take_along_axis(dist, est.fixed_localization_.neighbors, axis=1)
    assert np.all(got <= np.maximum(kth, est.bandwidth_floor_)[:, None] + 1e-9)
    assert np.mean(np.max(got, axis=1) > kth + 1e-9) > 0.1  # the floor binds somewhere


@pytest.mark.parametrize("cls", [SMAVE, OPG, RMAVE])
def test_float32_is_preserved(rng, cls):
    X, y, _ = _single_index(rng, n=300, noise=0.05)
    cls = cls if cls is not SMAVE else partial(SMAVE, max_iter=60)
    est = cls(random_state=0).fit(X.astype(np.float32), y.astype(np.float32))
    assert est.components_.dtype == np.float32 and est.mean_.dtype == np.float32
    Xt = est.transform(X.astype(np.float32))
    assert Xt.dtype == np.float32
    # the same subspace as a float64 fit (the computation runs in float64)
    ref = cls(random_state=0).fit(X, y)
    assert subspace_distance(est.components_, ref.components_) < 1e-4
    assert ref.transform(X).dtype == np.float64
    with warnings.catch_warnings():  # integer X of a Gaussian: some projected ties
        warnings.simplefilter("ignore")
        assert cls(random_state=0).fit(X.astype(int), y).components_.dtype == np.float64


def test_object_y_of_numbers_is_accepted(rng):
    X, y, _ = _single_index(rng, n=200, noise=0.05)
    est = OPG().fit(X, y.astype(object))
    np.testing.assert_allclose(est.components_, OPG().fit(X, y).components_)


def test_discrete_integer_levels_recovered():
    # raw integer covariates with 10 levels: tied projected distances made SMAVE's start
    # and localization fail (distance 1.41, orthogonal) where OPG and RMAVE got 0.25, 0.21
    from smave.synthetic import make_discrete_model

    X, y, B0 = make_discrete_model("levels", "multi", 500, 4, np.random.default_rng(0))
    d_smave = subspace_distance(SMAVE(2, random_state=0).fit(X, y).components_, B0)
    d_rmave = subspace_distance(RMAVE(2).fit(X, y).components_, B0)
    assert d_smave < 0.4
    assert d_smave < 1.5 * d_rmave


def test_duplicated_rows_count_as_locations(rng):
    # 10 copies of each of 150 rows: the bandwidth counts distinct locations, so the
    # estimate from the duplicated sample is as good as from the 150 rows themselves
    X, y, B0 = _single_index(rng, n=150, p=5, noise=0.05)
    Xd, yd = np.repeat(X, 10, axis=0), np.repeat(y, 10) + 0.05 * rng.standard_normal(1500)
    est = SMAVE(random_state=0).fit(Xd, yd)
    assert est.n_distinct_rows_ == 150
    assert subspace_distance(est.components_, B0) < 0.1


def test_fully_tied_neighbourhoods_warn():
    from smave import TiedNeighborsWarning

    rng = np.random.default_rng(2)
    X = np.column_stack([rng.integers(0, 3, 600), rng.standard_normal((600, 3))])
    y = X[:, 0] + 0.1 * rng.standard_normal(600)
    e0 = np.eye(4)[:1]
    # localized once at the start e0, where the projection takes 3 values: every
    # neighbourhood is tied, widened to reach the next level, and the user is told
    with pytest.warns(TiedNeighborsWarning, match="distance zero"):
        est = SMAVE(variant="simplified", init=e0, random_state=0).fit(X, y)
    assert est.tied_fraction_ > 0.9
    loc = est.fixed_localization_
    levels = X[loc.neighbors, 0]
    assert np.all(levels.max(axis=1) > levels.min(axis=1))  # every fit spans two levels
    assert subspace_distance(est.components_, e0) < 0.05
    # continuous data: no tie, no warning
    Xc, yc, _ = _single_index(rng, n=500)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TiedNeighborsWarning)
        assert SMAVE(random_state=0).fit(Xc, yc).tied_fraction_ == 0.0  # exact: a count ratio, 0/n


def test_auto_start_keeps_the_better_criterion(rng):
    X, y, _ = _single_index(rng, n=600, noise=0.1)
    est = SMAVE(random_state=0).fit(X, y)
    scores = est.start_objective_
    assert set(scores) == {"moments", "opg"}
    assert est.init_ == max(scores, key=scores.get)
    assert SMAVE(init="opg", random_state=0).fit(X, y).start_objective_ == {}


def test_opg_start_on_all_centres_is_opg(rng):
    from smave.baselines import opg_directions

    X, y, _ = _single_index(rng, n=200, noise=0.05)
    est = OPG().fit(X, y)
    Z = (X - est.mean_) @ est.whitening_
    ys = (y - y.mean()) / y.std()
    B = opg_directions(Z, ys, 1, np.random.RandomState(0), n_centers=500)  # n <= n_centers
    np.testing.assert_allclose(np.abs(B.T @ est.basis_whitened_), 1.0, atol=1e-10)


def test_opg_matches_brute_force(rng):
    # OPG against an explicit per-point weighted least-squares loop (Xia et al. 2002)
    from scipy.spatial import cKDTree
    from smave._base import orthonormal_rows

    X, y, _ = _single_index(rng, n=120, p=4, noise=0.1)
    est = OPG(n_components=2, n_neighbors=15, ridge=0.05).fit(X, y)
    Z, _, W = whitening(X)
    ys = (y - y.mean()) / y.std()
    dist, nb = cKDTree(Z).query(Z, k=15)
    M = np.zeros((4, 4))
    for j in range(120):
        h = dist[j].max()
        w = np.exp(-0.5 * (dist[j] / h) ** 2)
        w /= w.sum()
        D = np.column_stack([np.ones(15), Z[nb[j]] - Z[j]])
        A = D.T @ (w[:, None] * D) + np.diag([0.0, *[0.05 * h**2] * 4])
        b = np.linalg.solve(A, D.T @ (w * ys[nb[j]]))[1:]
        M += np.outer(b, b) / 120
    V = np.linalg.eigh(M)[1][:, ::-1][:, :2]
    assert subspace_distance(est.components_, orthonormal_rows(W, V)) < 1e-8


def test_rmave_iterations_match_brute_force(rng):
    # Three RMAVE iterations against an explicit implementation of Xia et al.'s refined
    # MAVE: dense projected Gaussian weights over all pairs, a weighted local linear fit
    # per centre, then the B-step as one least-squares problem over all pairs (i, j)
    from smave._base import orthonormal_rows

    n, p, d, ridge, iters = 40, 3, 2, 0.01, 3
    X = rng.standard_normal((n, p))
    y = X[:, 0] ** 2 + np.sin(X[:, 1]) + 0.1 * rng.standard_normal(n)
    init = np.array([[1.0, 0.2, 0.0], [0.0, 1.0, 0.3]])
    est = RMAVE(d, init=init, max_iter=iters, tol=0.0, ridge=ridge).fit(X, y)
    Z, _, W = whitening(X)
    ys = (y - y.mean()) / y.std()
    B, _ = np.linalg.qr(np.linalg.pinv(W) @ init.T)
    h = (4.0 / (d + 2)) ** (1.0 / (d + 4)) * n ** (-1.0 / (d + 4))
    for _ in range(iters):
        P = Z @ B
        K = np.exp(-0.5 * ((P[:, None] - P[None]) ** 2).sum(-1) / h**2)
        Wt = K / K.sum(1, keepdims=True)  # Wt[j, i]: weight of point i at centre j
        rows, rhs = [], []
        for j in range(n):
            D1 = np.column_stack([np.ones(n), P - P[j]])
            A = D1.T @ (Wt[j][:, None] * D1) + np.diag([0.0] + [ridge * h**2] * d)
            a, *b = np.linalg.solve(A, D1.T @ (Wt[j] * ys))
            for i in range(n):
                sw = np.sqrt(Wt[j, i])
                rows.append(sw * np.kron(b, Z[i] - Z[j]))  # vec((z_i - z_j) b^T), column-major
                rhs.append(sw * (ys[i] - a))
        vecB = np.linalg.lstsq(np.asarray(rows), np.asarray(rhs), rcond=None)[0]
        B, _ = np.linalg.qr(vecB.reshape(d, p).T)
    assert subspace_distance(est.components_, orthonormal_rows(W, B)) < 1e-6
