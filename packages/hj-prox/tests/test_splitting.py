import numpy as np
import pytest
from hj_prox import (
    HJProx,
    Schedule,
    davis_yin,
    douglas_rachford,
    pdhg,
    prox_box,
    prox_group_l2,
    prox_l1,
    prox_l2,
    prox_nonneg,
    prox_quadratic,
    proximal_gradient,
    proximal_point,
)


@pytest.fixture(scope="module")
def lasso():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((60, 8))
    b = A @ np.r_[1.5, -2.0, np.zeros(6)] + 0.1 * rng.standard_normal(60)
    n = len(b)
    lam = 0.1 * np.max(np.abs(A.T @ b)) / n
    import cvxpy as cp

    x = cp.Variable(8)
    cp.Problem(cp.Minimize(cp.sum_squares(A @ x - b) / (2 * n) + lam * cp.norm1(x))).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    L = np.linalg.eigvalsh(A.T @ A / n).max()
    return A, b, lam, L, np.asarray(x.value)


def _pieces(A, b, lam):
    n = len(b)
    return (
        lambda x: A.T @ (A @ x - b) / n,
        lambda v, t: prox_l1(v, t, lam=lam),
        prox_quadratic(A, b),
    )


@pytest.mark.parametrize("accelerated", [False, True])
def test_proximal_gradient_reaches_cvxpy(lasso, accelerated):
    A, b, lam, L, xs = lasso
    grad, pl1, _ = _pieces(A, b, lam)
    r = proximal_gradient(
        grad, pl1, np.zeros(8), 1 / L, accelerated=accelerated, max_iter=5000, tol=1e-13
    )
    np.testing.assert_allclose(r.x, xs, atol=1e-6)
    assert r.n_fevals == 0 and r.history["residual"].size == r.n_iter


def test_douglas_rachford_reaches_cvxpy_and_fixed_point_is_optimal(lasso):
    A, b, lam, _, xs = lasso
    grad, pl1, pq = _pieces(A, b, lam)
    t = 1.0
    r = douglas_rachford(pq, pl1, np.zeros(8), t, max_iter=5000, tol=1e-14)
    np.testing.assert_allclose(r.x, xs, atol=1e-6)
    assert r.converged
    # fixed point z: x = prox_f(z) so (z - x)/t = grad f(x), and -grad f(x) in lam d|x|_1
    g = grad(r.x)
    np.testing.assert_allclose((r.state["z"] - r.x) / t, g, atol=1e-7)
    on = np.abs(r.x) > 1e-8
    np.testing.assert_allclose(g[on], -lam * np.sign(r.x[on]), atol=1e-7)
    assert np.all(np.abs(g[~on]) <= lam + 1e-7)


def test_pdhg_reaches_cvxpy_and_satisfies_kkt():
    # 1-D TV denoising: f = ||x - b||^2/2, g = lam ||.||_1, K = D
    rng = np.random.default_rng(1)
    b = np.repeat([0.0, 2.0, -1.0], 10) + 0.3 * rng.standard_normal(30)
    lam = 0.5
    D = np.diff(np.eye(30), axis=0)
    import cvxpy as cp

    x = cp.Variable(30)
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x - b) + lam * cp.norm1(D @ x))).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    r = pdhg(
        lambda v, t: (v + t * b) / (1 + t),
        lambda v, t: prox_l1(v, t, lam=lam),
        D,
        np.zeros(30),
        max_iter=20000,
        tol=1e-13,
    )
    np.testing.assert_allclose(r.x, x.value, atol=1e-6)
    y = r.state["y"]
    # KKT: x - b + D'y = 0, |y| <= lam, y = lam sign(Dx) where Dx != 0
    np.testing.assert_allclose(r.x - b + D.T @ y, 0.0, atol=1e-7)
    assert np.all(np.abs(y) <= lam + 1e-9)
    dx = D @ r.x
    jump = np.abs(dx) > 1e-6
    np.testing.assert_allclose(y[jump], lam * np.sign(dx[jump]), atol=1e-6)


def test_davis_yin_reaches_cvxpy(lasso):
    A, b, lam, L, _ = lasso
    grad, pl1, _ = _pieces(A, b, lam)
    n = len(b)
    import cvxpy as cp

    x = cp.Variable(8)
    cp.Problem(
        cp.Minimize(cp.sum_squares(A @ x - b) / (2 * n) + lam * cp.norm1(x)), [x >= 0]
    ).solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    r = davis_yin(pl1, prox_nonneg, grad, np.zeros(8), 1 / L, max_iter=5000, tol=1e-14)
    np.testing.assert_allclose(r.x, x.value, atol=1e-6)
    assert np.all(r.x >= 0)


def test_proximal_point_exact_and_hj_with_schedule():
    # f = ||x - c||^2 / 2: PPM contracts by 1/(1+t) towards c
    c = np.array([1.0, -2.0, 0.5])
    fq = lambda y: 0.5 * ((y - c) ** 2).sum(-1)  # noqa: E731
    r = proximal_point(
        lambda v, t: (v + t * c) / (1 + t), np.zeros(3), t=1.0, tol=1e-12, max_iter=200
    )
    np.testing.assert_allclose(r.x, c, atol=1e-10)
    fixed = proximal_point(
        HJProx(fq, delta=0.5, n_samples=200, rng=0), np.zeros(3), t=1.0, max_iter=60, tol=0.0
    )
    sched = Schedule(n0=200, growth=1.15, n_max=200_000, delta0=0.5, decay=0.85)
    grown = proximal_point(
        HJProx(fq, schedule=sched, rng=0), np.zeros(3), t=1.0, max_iter=60, tol=0.0
    )
    e_fixed, e_grown = np.linalg.norm(fixed.x - c), np.linalg.norm(grown.x - c)
    assert e_grown < 0.2 * e_fixed  # summable errors: the noise floor goes away
    assert grown.n_fevals > fixed.n_fevals
    assert np.all(np.diff(grown.history["n_fevals"]) > 0)


def test_hj_plugs_into_proximal_gradient(lasso):
    A, b, lam, L, xs = lasso
    grad, _, _ = _pieces(A, b, lam)
    hj = HJProx(lambda y: lam * np.abs(y).sum(-1), delta=1e-3, n_samples=1000, rng=0)
    r = proximal_gradient(grad, hj, np.zeros(8), 1 / L, max_iter=200, tol=0.0)
    assert np.linalg.norm(r.x - xs) < 0.1 * np.linalg.norm(xs)  # biased, not exact
    assert r.n_fevals == 200 * 1000


def test_exact_prox_helpers():
    np.testing.assert_allclose(prox_l1(np.array([1.0, -0.2]), 0.5), [0.5, 0.0])
    np.testing.assert_allclose(
        prox_l2(np.array([[3.0, 4.0], [0.1, 0.0]]), 1.0), [[2.4, 3.2], [0.0, 0.0]]
    )
    np.testing.assert_allclose(prox_box(np.array([-3.0, 3.0]), 1.0, -1.0, 2.0), [-1.0, 2.0])
    np.testing.assert_allclose(prox_nonneg(np.array([-3.0, 3.0]), 1.0), [0.0, 3.0])
    np.testing.assert_allclose(
        prox_group_l2(np.array([3.0, 4.0, 1.0]), 1.0, np.array([0, 0, 1]), lam=1.0),
        [3.0 * (1 - np.sqrt(2) / 5), 4.0 * (1 - np.sqrt(2) / 5), 0.0],
    )
    # prox_quadratic solves its optimality condition
    rng = np.random.default_rng(0)
    A, b, v = rng.standard_normal((7, 3)), rng.standard_normal(7), rng.standard_normal(3)
    z = prox_quadratic(A, b)(v, 0.7)
    np.testing.assert_allclose(z - v + 0.7 * A.T @ (A @ z - b) / 7, 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="partition"):
        prox_group_l2(np.ones(3), 1.0, [[0, 1]])
    with pytest.raises(ValueError, match="lower"):
        prox_box(np.ones(2), 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="t must be"):
        prox_l1(np.ones(2), 0.0)


def test_solver_bad_input():
    p = prox_l1
    with pytest.raises(ValueError, match="step"):
        proximal_gradient(lambda x: x, p, np.zeros(2), 0.0)
    with pytest.raises(ValueError, match="x0"):
        proximal_point(p, np.array([np.nan]))
    with pytest.raises(ValueError, match="max_iter"):
        douglas_rachford(p, p, np.zeros(2), max_iter=0)
    with pytest.raises(ValueError, match="relax"):
        davis_yin(p, p, lambda x: x, np.zeros(2), 1.0, relax=2.0)
    with pytest.raises(TypeError, match="prox_g"):
        douglas_rachford(p, "l1", np.zeros(2))
    with pytest.raises(ValueError, match="x0 must have shape"):
        pdhg(p, p, np.eye(3), np.zeros(2))
    with pytest.raises(ValueError, match="t must be"):
        proximal_point(p, np.zeros(2), t=-1.0)
