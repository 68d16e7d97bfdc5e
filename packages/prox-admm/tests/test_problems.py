"""Ready problems: what ours returns satisfies the optimality conditions of the original problem."""

import numpy as np
import pytest
from prox_admm import consensus, elastic_net_box, kkt_residual, l1, least_squares, qp_with_slacks


def test_qp_with_slacks_satisfies_the_kkt_conditions_of_the_original_qp(rng):
    """Stationarity, feasibility and complementary slackness of min 0.5 x'Qx + q'x, l <= Cx <= u."""
    for _ in range(3):
        n = 8
        M = rng.standard_normal((n, n))
        Q, q = M @ M.T / n + 0.3 * np.eye(n), rng.standard_normal(n)
        C1, C2 = rng.standard_normal((5, n)), rng.standard_normal((3, n))
        prob = qp_with_slacks(Q, q, [(C1, -0.5, 0.5), (C2, 0.2, 0.2)])
        assert prob.names == [
            "x",
            "s_1",
            "s_0",
        ]  # row k's slack is its anti-diagonal block m - 1 - k
        res = prob.solver(rho=1.0, max_iter=20000, tol=1e-10).solve()
        assert res.converged
        x = prob.solution(res.x)
        y1, y2 = res.lam  # multipliers of C1 x - s_0 = 0 and C2 x - s_1 = 0
        np.testing.assert_allclose(Q @ x + q + C1.T @ y1 + C2.T @ y2, 0.0, atol=1e-8)
        np.testing.assert_allclose(C2 @ x, 0.2, atol=1e-9)
        c1 = C1 @ x
        assert np.all(np.abs(c1) <= 0.5 + 1e-9)
        up, lo = c1 > 0.5 - 1e-7, c1 < -0.5 + 1e-7
        assert np.all(y1[up] >= -1e-8) and np.all(y1[lo] <= 1e-8)
        np.testing.assert_allclose(y1[~(up | lo)], 0.0, atol=1e-7)
        assert up.any() or lo.any()  # some bound is active: the test is not vacuous


def test_consensus_lasso_satisfies_the_lasso_optimality_conditions(data):
    """Lasso split over 3 sample parts: the subgradient conditions of the lasso."""
    X, y = data
    n, d = X.shape
    alpha = 0.05
    parts = [least_squares(X[i::3], y[i::3], 1.0 / n) for i in range(3)]
    prob = consensus(parts, l1(alpha), d)
    assert prob.A.n_rows == 3 and prob.A.n_blocks == 4
    res = prob.solver(rho=1.0, max_iter=20000, tol=1e-10).solve()
    assert res.converged
    beta = prob.solution(res.x)
    g = (
        X.T @ (y - X @ beta) / n
    )  # must equal alpha sign(b_j) where b_j != 0, lie in [-alpha, alpha] where 0
    nz = np.abs(beta) > 1e-9
    assert nz.any() and (~nz).any()  # both kinds of coordinates are checked
    np.testing.assert_allclose(g[nz], alpha * np.sign(beta[nz]), atol=1e-8)
    assert np.all(np.abs(g[~nz]) <= alpha + 1e-8)
    k = kkt_residual(prob.blocks, prob.A, prob.b, res.x, res.lam)
    assert k["kkt"] < 1e-8


def test_elastic_net_box_satisfies_the_optimality_conditions(data):
    """Non-negative elastic net (scikit-learn's scaling): the KKT conditions on b >= 0."""
    X, y = data
    n, d = X.shape
    alpha, l1r = 0.02, 0.5
    prob = elastic_net_box(X, y, alpha=alpha, l1_ratio=l1r, lower=0.0)
    res = prob.solver(rho=1.0, max_iter=20000, tol=1e-10).solve()
    assert res.converged
    beta = prob.solution(res.x)
    assert np.all(beta >= 0)
    grad = X.T @ (X @ beta - y) / n + alpha * (1 - l1r) * beta + alpha * l1r  # gradient on b > 0
    pos = beta > 1e-9
    assert pos.any() and (~pos).any()  # the bound is active somewhere: the test is not vacuous
    np.testing.assert_allclose(grad[pos], 0.0, atol=1e-8)
    assert np.all(grad[~pos] >= -1e-8)
    assert prob.objective(-np.ones(d)) == np.inf  # exact: an infeasible point is inf by definition


def test_problem_constructors_reject_bad_input(rng):
    X, y = rng.standard_normal((10, 3)), rng.standard_normal(10)
    with pytest.raises(ValueError, match="y must have shape"):
        elastic_net_box(X, y[:5], 0.1)
    with pytest.raises(ValueError, match="l1_ratio"):
        elastic_net_box(X, y, 0.1, l1_ratio=1.5)
    with pytest.raises(ValueError, match="at least one"):
        qp_with_slacks(np.eye(3), np.zeros(3), [])
    with pytest.raises(ValueError, match="C has 2 columns, expected 3"):
        qp_with_slacks(np.eye(3), np.zeros(3), [(np.ones((1, 2)), 0.0, 1.0)])
    with pytest.raises(ValueError, match="lower bound above upper"):
        qp_with_slacks(np.eye(3), np.zeros(3), [(np.ones((1, 3)), 1.0, 0.0)])
    with pytest.raises(ValueError, match="at least one smooth block"):
        consensus([], l1(0.1), 3)
    from prox_admm import mcp_nonneg_regression

    with pytest.raises(ValueError, match="split"):
        mcp_nonneg_regression(X, y, 0.1, split="rows")
    with pytest.raises(ValueError, match="finite"):
        mcp_nonneg_regression(np.full((10, 3), np.nan), y, 0.1)
