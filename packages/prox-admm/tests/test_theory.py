"""Our assumption, its check, the descent certificate and the iteration map (Chen's example)."""

import numpy as np
import pytest
from prox_admm import (
    BlockMatrix,
    ProximalADMM,
    check_assumptions,
    chen_example,
    descent_certificate,
    iteration_spectral_radius,
    jacobi_tau,
    mcp_nonneg_regression,
    quadratic,
    suggest_rho,
)


def test_check_assumptions_reports_the_rank_conditions_row_by_row():
    eye = np.eye(3)
    A = BlockMatrix({(0, 0): eye, (0, 2): -eye, (1, 0): eye, (1, 1): -eye}, ([3, 3], [3, 3, 3]))
    rep = check_assumptions(A)
    # the whole matrix is 6 x 9: no full column rank, the case whole-matrix analyses exclude
    assert rep.whole_shape == (6, 9) and rep.whole_rank == 6 and rep.whole_full_column_rank is False
    assert [r.anti_diagonal for r in rep.rows] == [2, 1]
    assert all(r.full_column_rank and r.full_row_rank and r.range_condition for r in rep.rows)
    assert rep.rows[0].sigma_min == pytest.approx(1.0)
    # a rank-deficient anti-diagonal block whose range misses the row: (R) fails on that row
    B = np.diag([1.0, 1.0, 0.0])
    A2 = BlockMatrix({(0, 0): eye, (0, 1): B}, ([3], [3, 3]))
    rep2 = check_assumptions(A2)
    assert rep2.rows[0].rank == 2 and not rep2.rows[0].full_column_rank
    assert not rep2.range_condition
    assert "range condition False" in str(rep2)


def test_certificate_and_monotone_merit_in_the_nonconvex_run(data):
    X, y = data
    lam = 0.1 * np.max(np.abs(X.T @ y)) / len(y)
    pr = mcp_nonneg_regression(X, y, lam, 1.5, split="consensus")
    rho, cert = suggest_rho(pr.blocks, pr.A, pr.b)
    assert cert.ok and np.all(cert.margin > 0)
    # the condition is tight-ish: a penalty a quarter of the suggested one fails it
    assert not descent_certificate(pr.solver(rho=rho / 4)).ok
    res = pr.solver(rho=rho, max_iter=3000, tol=1e-9).solve()
    assert res.converged
    merit = cert.merit(res)
    inc = np.diff(merit) / np.maximum(np.abs(merit[1:]), 1.0)
    assert np.max(inc) <= 1e-12
    # and the merit decreased by at least sum_i c_i ||dx_i||^2 at every iteration
    drop = -np.diff(merit)
    need = res.history["step_sq"][1:] @ cert.margin
    assert np.all(drop >= need - 1e-10 * np.maximum(np.abs(merit[1:]), 1.0))


def test_certificate_refuses_what_the_assumption_does_not_cover(data):
    X, y = data
    lam = 0.1 * np.max(np.abs(X.T @ y)) / len(y)
    copies = mcp_nonneg_regression(X, y, lam, 3.0, split="copies")
    cert = descent_certificate(copies.solver(rho=1.0))
    assert not cert.ok and "(S) fails" in cert.reason
    with pytest.raises(ValueError, match="no penalty on the grid"):
        suggest_rho(copies.blocks, copies.A, copies.b)
    cons = mcp_nonneg_regression(X, y, lam, 3.0)
    assert "dual_step" in descent_certificate(cons.solver(rho=10.0, dual_step=0.5)).reason


def test_chen_example_direct_admm_diverges_proximal_converges():
    prob = chen_example()
    assert prob.A.n_rows == 1  # one block row: inside the class
    rad = {}
    for tau in (0.0, 0.5, 1.0, 2.0, 5.0, 10.0):
        rad[tau], _ = iteration_spectral_radius(prob.solver(rho=1.0, prox_terms=tau))
    # the observation: tau = 0, 0.5, 1 diverge, tau = 2, 5, 10 converge
    assert rad[0.0] > 1.0 and rad[0.5] > 1.0 and rad[1.0] > 1.0
    assert rad[2.0] < 1.0 and rad[5.0] < 1.0 and rad[10.0] < 1.0
    np.testing.assert_allclose(rad[0.0], 1.0278, atol=1e-3)  # Chen et al. (2016): 1.0278
    rule = jacobi_tau(prob.A, 1.0)
    np.testing.assert_allclose(rule, [6.0, 12.0, 18.0])  # 2 ||A_i||^2
    x0 = np.array([1.0, -0.5, 0.3])
    direct = prob.solver(rho=1.0, prox_terms=0.0, max_iter=700, tol=0.0).solve(x0)
    prox = prob.solver(rho=1.0, prox_terms=rule, max_iter=3000, tol=1e-8).solve(x0)
    assert direct.kkt > 1e6 * np.linalg.norm(prob.A.to_dense() @ x0)
    assert prox.converged and np.max(np.abs(prox.x)) < 1e-7


def test_spectral_radius_predicts_the_observed_rate(rng):
    """On a quadratic problem the KKT residual contracts at the spectral radius of the map."""
    d = 3
    Ab = {
        (0, 0): rng.standard_normal((d, d)),
        (0, 1): rng.standard_normal((d, d)),
        (0, 2): np.eye(d),
        (1, 0): rng.standard_normal((d, d)),
        (1, 1): np.eye(d),
    }
    A = BlockMatrix(Ab, ([d, d], [d, d, d]))
    blocks = []
    for _ in range(3):
        M = rng.standard_normal((d, d))
        blocks.append(quadratic(M @ M.T / d + 0.5 * np.eye(d), rng.standard_normal(d)))
    solver = ProximalADMM(
        blocks,
        A,
        [rng.standard_normal(d), rng.standard_normal(d)],
        rho=1.0,
        max_iter=3000,
        tol=1e-12,
    )
    rad, n_unit = iteration_spectral_radius(solver)
    assert n_unit == 0 and rad < 1.0
    res = solver.solve()
    k = res.history["kkt"]
    t = np.arange(k.size)
    window = (k < 1e-3) & (k > 1e-11)
    slope = np.polyfit(t[window], np.log(k[window]), 1)[0]
    np.testing.assert_allclose(np.exp(slope), rad, atol=0.02)


def test_iteration_map_needs_quadratic_blocks(data):
    X, y = data
    pr = mcp_nonneg_regression(X, y, 0.1, 3.0)
    with pytest.raises(ValueError, match="not a quadratic"):
        iteration_spectral_radius(pr.solver(rho=1.0))
