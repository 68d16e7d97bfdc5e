"""ProximalADMM: KKT at the answer, equivalences, references, bad input."""

import numpy as np
import pytest
import scipy.sparse as sp
from prox_admm import (
    Block,
    BlockMatrix,
    Linearized,
    ProximalADMM,
    kkt_residual,
    l1,
    least_squares,
    mcp_nonneg_regression,
    qp_with_slacks,
    quadratic,
)


def random_pd(rng, d, mu=0.5):
    M = rng.standard_normal((d, d))
    return M @ M.T / d + mu * np.eye(d)


def test_kkt_conditions_hold_at_the_returned_point(data):
    X, y = data
    lam = 0.1 * np.max(np.abs(X.T @ y)) / len(y)
    for split in ("consensus", "copies"):
        pr = mcp_nonneg_regression(X, y, lam, 3.0, split=split)
        res = pr.solver(rho=3.0, max_iter=5000, tol=1e-9).solve()
        assert res.converged
        k = kkt_residual(pr.blocks, pr.A, pr.b, res.x, res.lam)
        assert k["primal"] < 1e-8 and k["dual"] < 1e-6
        beta = pr.solution(res.x)
        assert np.all(beta >= 0)
        # independent stationarity: the prox-gradient fixed point of F = fit + MCP on x >= 0
        from prox_admm import mcp

        G, c = X.T @ X / len(y), X.T @ y / len(y)
        t = 0.5 / np.linalg.eigvalsh(G)[-1]
        fp = mcp(lam, 3.0, nonneg=True).prox(beta - t * (G @ beta - c), t)
        assert np.linalg.norm(fp - beta) / t < 1e-6


def textbook_admm(Q, q, lam, rho, iters):
    """Classic scaled-form ADMM (Boyd et al. 2011, sec. 3.1.1) for
    min 0.5 x'Qx + q'x + lam ||z||_1  s.t.  x - z = 0."""
    d = q.size
    x = np.zeros(d)
    z = np.zeros(d)
    u = np.zeros(d)
    K = Q + rho * np.eye(d)
    out = []
    for _ in range(iters):
        x = np.linalg.solve(K, -q + rho * (z - u))
        v = x + u
        z = np.sign(v) * np.maximum(np.abs(v) - lam / rho, 0.0)
        u = u + x - z
        out.append((x.copy(), z.copy(), rho * u.copy()))
    return out


def test_two_blocks_equal_classic_admm_iterate_for_iterate(rng):
    d = 6
    Q, q = random_pd(rng, d), rng.standard_normal(d)
    rho, lam = 1.7, 0.3
    A = BlockMatrix({(0, 0): np.eye(d), (0, 1): -np.eye(d)}, ([d], [d, d]))
    solver = ProximalADMM([quadratic(Q, q), l1(lam)], A, np.zeros(d), rho=rho, prox_terms=0.0)
    assert solver.modes == ["quad", "prox"]
    x, lm = [np.zeros(d), np.zeros(d)], [np.zeros(d)]
    for xr, zr, lr in textbook_admm(Q, q, lam, rho, 25):
        x, lm = solver.step(x, lm)
        np.testing.assert_allclose(x[0], xr, atol=1e-12)
        np.testing.assert_allclose(x[1], zr, atol=1e-12)
        np.testing.assert_allclose(lm[0], lr, atol=1e-12)
    res = ProximalADMM(
        [quadratic(Q, q), l1(lam)], A, np.zeros(d), rho=rho, max_iter=25, tol=0.0
    ).solve()
    np.testing.assert_allclose(res.x[0], x[0], atol=1e-12)


def test_dual_update_order_does_not_matter(rng):
    """lam_k right after its anti-diagonal block, or at the end of the sweep: same iterates."""
    d = 3
    Ab = {
        (0, 0): rng.standard_normal((d, d)),
        (0, 1): rng.standard_normal((d, d)),
        (0, 2): np.eye(d),
        (1, 0): rng.standard_normal((d, d)),
        (1, 1): np.eye(d),
    }
    A = BlockMatrix(Ab, ([d, d], [d, d, d]))
    blocks = [quadratic(random_pd(rng, d), rng.standard_normal(d)) for _ in range(3)]
    b = [rng.standard_normal(d), rng.standard_normal(d)]
    rho = [0.7, 1.3]
    solver = ProximalADMM(blocks, A, b, rho=rho)
    x, lm = [np.zeros(d)] * 3, [np.zeros(d)] * 2
    x1, l1_ = solver.step(x, lm)
    # manual sweep with the eager dual update of row 1 right after block 1
    xs, ls = [v.copy() for v in x], [v.copy() for v in lm]
    for i in range(3):
        H = sum(rho[k] * Ab[(k, i)].T @ Ab[(k, i)] for k in A.rows_of[i])
        c = blocks[i].q.copy()
        for k in A.rows_of[i]:
            rest = sum(Ab[(k, j)] @ xs[j] for j in A.cols_of[k] if j != i) - b[k]
            c += Ab[(k, i)].T @ (ls[k] + rho[k] * rest)
        xs[i] = np.linalg.solve(blocks[i].Q + H, -c)
        if i == 1:  # row 1 is complete: update its multiplier now
            ls[1] = ls[1] + rho[1] * (Ab[(1, 0)] @ xs[0] + Ab[(1, 1)] @ xs[1] - b[1])
    ls[0] = ls[0] + rho[0] * (sum(Ab[(0, j)] @ xs[j] for j in range(3)) - b[0])
    for u, v in zip(x1 + l1_, xs + ls, strict=True):
        np.testing.assert_allclose(u, v, atol=1e-10)


@pytest.mark.slow  # importing cvxpy alone takes 20-50 s on the shared 2-core machine
def test_random_strongly_convex_qps_match_cvxpy(rng):
    cp = pytest.importorskip("cvxpy")
    for _ in range(3):
        n = 8
        Q, q = random_pd(rng, n, 0.3), rng.standard_normal(n)
        C1 = rng.standard_normal((5, n))
        C2 = rng.standard_normal((3, n))
        prob = qp_with_slacks(Q, q, [(C1, -0.5, 0.5), (C2, 0.2, 0.2)])
        res = prob.solver(rho=1.0, max_iter=20000, tol=1e-10).solve()
        assert res.converged
        x = cp.Variable(n)
        ref = cp.Problem(
            cp.Minimize(0.5 * cp.quad_form(x, Q) + q @ x),
            [C1 @ x >= -0.5, C1 @ x <= 0.5, C2 @ x == 0.2],
        )
        ref.solve(solver="CLARABEL")
        np.testing.assert_allclose(prob.solution(res.x), x.value, atol=1e-5)
        assert prob.objective(prob.solution(res.x)) == pytest.approx(ref.value, rel=1e-7, abs=1e-8)


def test_linearized_gradient_and_solve_modes_reach_the_same_solution(rng):
    d = 5
    Q0, q0 = random_pd(rng, d), rng.standard_normal(d)
    Q1, q1 = random_pd(rng, d), rng.standard_normal(d)
    B = rng.standard_normal((d, d))
    A = BlockMatrix({(0, 0): B, (0, 1): np.eye(d)}, ([d], [d, d]))
    b = rng.standard_normal(d)
    exact = ProximalADMM(
        [quadratic(Q0, q0), quadratic(Q1, q1)], A, b, rho=1.0, max_iter=20000, tol=1e-11
    ).solve()
    grad_block = Block(
        f=lambda x: 0.5 * x @ Q0 @ x + q0 @ x,
        grad=lambda x: Q0 @ x + q0,
        lipschitz=float(np.linalg.eigvalsh(Q0)[-1]),
    )
    lin = ProximalADMM(
        [grad_block, quadratic(Q1, q1)],
        A,
        b,
        rho=1.0,
        prox_terms=[Linearized(), None],
        max_iter=50000,
        tol=1e-11,
    ).solve()
    assert lin.modes[0] == "gradient" and lin.converged

    def solve(sub):
        return np.linalg.solve(Q0 + sub.M, -(q0 + sub.c))

    user = ProximalADMM(
        [Block(solve=solve, f=lambda x: 0.5 * x @ Q0 @ x + q0 @ x), quadratic(Q1, q1)],
        A,
        b,
        rho=1.0,
        max_iter=20000,
        tol=1e-11,
    ).solve()
    assert user.modes[0] == "solve"
    assert exact.converged and user.converged
    np.testing.assert_allclose(lin.x[0], exact.x[0], atol=1e-8)
    np.testing.assert_allclose(user.x[0], exact.x[0], atol=1e-9)
    assert user.n_iter == exact.n_iter
    # a prox block behind a non-identity A: the exact prox step is impossible, linearized works
    with pytest.raises(ValueError, match="not a prox step"):
        ProximalADMM([l1(0.1), quadratic(Q1, q1)], A, b, prox_terms=0.0)
    lp = ProximalADMM([l1(0.1), quadratic(Q1, q1)], A, b, rho=1.0, max_iter=50000, tol=1e-9).solve()
    assert lp.modes[0] == "linearized" and lp.converged
    k = kkt_residual([l1(0.1), quadratic(Q1, q1)], A, b, lp.x, lp.lam)
    assert k["kkt"] < 1e-6


def test_sparse_and_history(rng):
    n = 400
    Q = sp.diags_array(rng.uniform(0.5, 2.0, n)).tocsr()
    q = rng.standard_normal(n)
    C = sp.random_array((300, n), density=0.01, random_state=1, format="csr") + sp.eye_array(300, n)
    prob = qp_with_slacks(Q, q, [(C, -1.0, 1.0)])
    res = prob.solver(rho=1.0, max_iter=5000, tol=1e-8).solve()
    assert res.converged and res.history["kkt"].shape == (res.n_iter,)
    assert res.history["step_sq"].shape == (res.n_iter, 2)
    assert np.all(np.diff(res.history["time"]) >= 0)


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"rho": 0.0}, ValueError, "rho must be > 0"),
        ({"rho": -1.0}, ValueError, "rho must be > 0"),
        ({"rho": [1.0, 1.0]}, ValueError, "one float or 1 floats"),
        ({"prox_terms": -np.eye(2)}, ValueError, "positive semidefinite"),
        ({"prox_terms": np.ones((3, 3))}, ValueError, r"must have shape \(2, 2\)"),
        ({"prox_terms": "big"}, ValueError, "'linearized'"),
        ({"prox_terms": -1.0}, ValueError, "prox_terms"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"dual_step": 2.0}, ValueError, "dual_step"),
        ({"tol": float("nan")}, ValueError, "tol"),
    ],
)
def test_bad_parameters(kwargs, err, match):
    A = BlockMatrix({(0, 0): np.eye(2), (0, 1): -np.eye(2)}, ([2], [2, 2]))
    with pytest.raises(err, match=match):
        ProximalADMM([quadratic(np.eye(2)), quadratic(np.eye(2))], A, np.zeros(2), **kwargs)


def test_bad_shapes_and_values():
    A = BlockMatrix({(0, 0): np.eye(2), (0, 1): -np.eye(2)}, ([2], [2, 2]))
    two = [quadratic(np.eye(2)), quadratic(np.eye(2))]
    with pytest.raises(ValueError, match="2 block columns but 3 blocks"):
        ProximalADMM([*two, quadratic(np.eye(2))], A, np.zeros(2))
    with pytest.raises(ValueError, match="dimension 3"):
        ProximalADMM([quadratic(np.eye(3)), two[1]], A, np.zeros(2))
    with pytest.raises(ValueError, match="b must have length 2"):
        ProximalADMM(two, A, np.zeros(3))
    with pytest.raises(ValueError, match=r"b\[0\] holds NaN"):
        ProximalADMM(two, A, [np.array([np.nan, 0.0])])
    with pytest.raises(TypeError, match="BlockMatrix"):
        ProximalADMM(two, np.eye(2), np.zeros(2))
    with pytest.raises(TypeError, match=r"blocks\[1\] must be a Block"):
        ProximalADMM([two[0], np.eye(2)], A, np.zeros(2))
    s = ProximalADMM(two, A, np.zeros(2))
    with pytest.raises(ValueError, match="x0"):
        s.solve(np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        s.solve([np.zeros(2), np.array([np.inf, 0.0])])
    with pytest.raises(ValueError, match="not strictly convex"):
        ProximalADMM(
            [quadratic(np.zeros((2, 2))), two[1]],
            BlockMatrix({(0, 0): np.ones((2, 2)), (0, 1): np.eye(2)}, ([2], [2, 2])),
            np.zeros(2),
        )
    with pytest.raises(ValueError, match="lipschitz"):
        ProximalADMM([Block(grad=lambda x: x), two[1]], A, np.zeros(2))


def test_caller_arrays_are_not_modified(rng):
    d = 3
    A = BlockMatrix({(0, 0): np.eye(d), (0, 1): -np.eye(d)}, ([d], [d, d]))
    x0 = [rng.standard_normal(d), rng.standard_normal(d)]
    keep = [v.copy() for v in x0]
    b = rng.standard_normal(d)
    bk = b.copy()
    ProximalADMM([least_squares(np.eye(d), b), l1(0.1)], A, b, max_iter=10).solve(x0)
    for u, v in zip(x0, keep, strict=True):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(b, bk)
