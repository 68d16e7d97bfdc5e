import numpy as np
import scipy.sparse as sp
from enmf._linalg import exact_squared_error, truncated_svd


def test_truncated_svd_both_paths_match_lapack(rng):
    for shape in ((300, 40), (40, 300), (400, 350)):
        # A decaying spectrum, as in data: randomized SVD is exact up to its gap.
        n, m = shape
        X = rng.random((n, 8)) @ rng.random((8, m)) + 0.01 * rng.random(shape)
        for Xin in (X, sp.csr_matrix(X)):
            A, s, B = truncated_svd(Xin, 5, np.random.default_rng(0))
            s_ref = np.linalg.svd(X, compute_uv=False)[:5]
            np.testing.assert_allclose(s, s_ref, rtol=1e-6)
            np.testing.assert_allclose(A.T @ A, np.eye(5), atol=1e-8)
            np.testing.assert_allclose(B.T @ B, np.eye(5), atol=1e-8)
            np.testing.assert_allclose(A.T @ X @ B, np.diag(s), atol=1e-6 * s[0])


def test_sparse_error_formula(rng):
    X = rng.random((20, 10)) * (rng.random((20, 10)) < 0.3)
    W, H = rng.random((20, 3)), rng.random((3, 10))
    ref = np.linalg.norm(X - W @ H) ** 2
    assert np.isclose(exact_squared_error(sp.csr_matrix(X), W, H), ref, rtol=1e-10)
