import numpy as np
import pytest
import scipy.sparse as sp
from enmf import HALS, kkt_residuals
from enmf.hals import hals_solve, hals_sweep, nnls_rows
from enmf.init import nndsvd, random_start
from sklearn.decomposition import NMF


def objective(X, W, H):
    return 0.5 * np.linalg.norm(X - W @ H) ** 2


def test_sweep_is_exact_block_minimizer(rng):
    """Each row update solves its one-row NNLS exactly: no single row can do better."""
    X = rng.random((20, 15))
    G = rng.random((20, 3))
    F = np.ascontiguousarray(rng.random((3, 15)))
    hals_sweep(F, G.T @ X, G.T @ G)
    k = 2  # the last row updated sees all others at their final values
    others = [j for j in range(3) if j != k]
    R = X - G[:, others] @ F[others]
    best = np.maximum(G[:, k] @ R / (G[:, k] @ G[:, k]), 0.0)
    np.testing.assert_allclose(F[k], best, atol=1e-12)


@pytest.mark.parametrize("accelerated", [False, True])
def test_objective_decreases_monotonically(rng, accelerated):
    X = rng.random((60, 40))
    W0, H0 = random_start(X, 6, rng)
    res = hals_solve(X, W0, H0, max_iter=100, tol=0.0, inner=accelerated)
    errs = np.array(res.trace.errors)
    assert np.all(np.diff(errs) <= 1e-10 * errs[0])
    assert objective(X, res.W, res.H) == pytest.approx(0.5 * errs[-1] ** 2, rel=1e-8)


def test_same_iterates_as_sklearn_cd(rng):
    """HALS and sklearn's cd update the same coordinates in the same order."""
    X = rng.random((40, 25))
    W0, H0 = random_start(X, 4, rng)
    for k in (1, 5, 30):
        res = hals_solve(X, W0, H0, max_iter=k, tol=0.0, inner=False)
        sk = NMF(4, init="custom", solver="cd", max_iter=k, tol=0.0)
        W_sk = sk.fit_transform(X, W=W0.copy(), H=H0.copy())
        np.testing.assert_allclose(res.W, W_sk, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(res.H, sk.components_, rtol=1e-9, atol=1e-12)


def test_converged_error_agrees_with_sklearn_cd(rng):
    X = rng.random((100, 30))
    ours = HALS(5, init="nndsvda", tol=1e-8, max_iter=5000).fit(X)
    sk = NMF(5, init="nndsvda", solver="cd", tol=1e-8, max_iter=5000).fit(X)
    assert ours.reconstruction_err_ == pytest.approx(sk.reconstruction_err_, rel=1e-3)
    W = ours.transform(X)
    assert kkt_residuals(X, W, ours.components_).max < 1e-4


def test_sparse_and_dense_agree(rng):
    X = rng.random((30, 20)) * (rng.random((30, 20)) < 0.4)
    W0, H0 = random_start(X, 3, rng)
    # inner=False: the number of inner sweeps depends on nnz, by design.
    a = hals_solve(X, W0, H0, max_iter=20, tol=0.0, inner=False)
    b = hals_solve(sp.csr_matrix(X), W0, H0, max_iter=20, tol=0.0, inner=False)
    np.testing.assert_allclose(a.W, b.W, atol=1e-10)
    np.testing.assert_allclose(a.H, b.H, atol=1e-10)


def test_nndsvd_is_nonnegative_and_close_to_sklearn_quality(rng):
    X = rng.random((50, 30))
    W, H = nndsvd(X, 5, rng)
    assert (W >= 0).all() and (H >= 0).all()
    # Leading pair: rank-1 NNDSVD is the (nonnegative) best rank-1 approximation.
    W1, H1 = nndsvd(X, 1, rng)
    A, s, Bt = np.linalg.svd(X)
    np.testing.assert_allclose(W1 @ H1, s[0] * np.outer(A[:, 0], Bt[0]), atol=1e-8)
    Wa, Ha = nndsvd(X, 5, rng, fill="mean")
    assert (Wa > 0).all() and (Ha > 0).all()


def test_nnls_rows_is_row_independent(rng):
    X = rng.random((20, 10))
    H = rng.random((3, 10))
    full = nnls_rows(X, H)
    np.testing.assert_allclose(nnls_rows(X[5:9], H), full[5:9], atol=1e-9)
