import numpy as np
import pytest
from sag_saga_iag import (
    FiniteSum,
    LinearModelProblem,
    Sampler,
    Smoothness,
    reference_optimum,
    solve,
)


class FixedOrder(Sampler):
    """Replays a given index sequence (for exact comparisons)."""

    name = "fixed"

    def __init__(self, order):
        super().__init__(len(order))
        self.order = np.asarray(order, dtype=np.int64)

    def epoch(self):
        return self.order.copy()


@pytest.mark.parametrize(
    "method,sampling",
    [
        ("sag", "uniform"),
        ("saga", "uniform"),
        ("iag", "cyclic"),
        ("sag", "reshuffle"),
        ("saga", "markov"),
    ],
)
@pytest.mark.parametrize("which", ["ridge_problem", "logistic_problem"])
def test_reaches_high_precision_optimum(method, sampling, which, request):
    prob, x_star, f_star = request.getfixturevalue(which)
    step = "auto" if method != "iag" else 0.5 / prob.smoothness().L_max
    res = solve(
        prob, method, n_epochs=400, sampling=sampling, step_size=step, random_state=0, f_star=f_star
    )
    assert np.max(np.abs(res.x - x_star)) < 1e-10
    assert res.history["suboptimality"][-1] < 1e-13
    assert np.linalg.norm(prob.gradient(x_star)) < 1e-13  # the reference itself is exact


def _reference_run(prob, method, order, gamma, n_epochs):
    """Textbook SAG/SAGA: the average recomputed from the whole table at every step."""
    x = np.zeros(prob.dim)
    table = np.stack([prob.grad_i(x, i) - prob.regularizer_gradient(x) for i in range(prob.n)])
    for _ in range(n_epochs):
        for j in order:
            g = prob.grad_i(x, j) - prob.regularizer_gradient(x)
            if method == "saga":
                d = g - table[j] + table.mean(axis=0)
                table[j] = g
            else:
                table[j] = g
                d = table.mean(axis=0)
            x = x - gamma * (d + prob.regularizer_gradient(x))
    return x


@pytest.mark.parametrize("method", ["sag", "saga"])
def test_memory_table_update_is_exact(method, logistic_problem):
    prob, _, _ = logistic_problem
    order = np.random.default_rng(3).integers(0, prob.n, size=prob.n)
    gamma = 0.05
    res = solve(prob, method, n_epochs=3, sampling=FixedOrder(order), step_size=gamma)
    ref = _reference_run(prob, method, order, gamma, 3)
    np.testing.assert_allclose(res.x, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["sag", "saga", "iag"])
def test_generic_oracle_matches_linear_fast_path(method, ridge_problem):
    # alpha = 0: the fast path applies the regularizer at the current point, the generic
    # table stores it stale, so only an unregularized sum makes them the same algorithm
    base, _, _ = ridge_problem
    prob = LinearModelProblem(base.A, base.y, loss="squared", alpha=0.0)
    f_star = reference_optimum(prob)[1]
    generic = FiniteSum(prob.n, prob.dim, prob.grad_i, prob.value, smoothness=prob.smoothness())
    a = solve(prob, method, n_epochs=5, random_state=7, f_star=f_star)
    b = solve(generic, method, n_epochs=5, random_state=7, f_star=f_star)
    np.testing.assert_allclose(a.x, b.x, rtol=0, atol=1e-12)
    assert a.max_delay == b.max_delay


def test_saga_estimate_is_unbiased(logistic_problem):
    prob, _, _ = logistic_problem
    rng = np.random.default_rng(5)
    x = rng.normal(size=prob.dim)
    old = rng.normal(size=prob.dim)  # the table holds gradients taken at another point
    table = np.stack([prob.grad_i(old, i) for i in range(prob.n)])
    est = np.stack([prob.grad_i(x, j) - table[j] + table.mean(axis=0) for j in range(prob.n)])
    full = prob.gradient(x)
    # exact expectation over the uniform index
    np.testing.assert_allclose(est.mean(axis=0), full, atol=1e-12)
    # and a Monte Carlo z-test on 20000 draws, per coordinate at the 1e-4 level
    draws = est[rng.integers(0, prob.n, size=20_000)]
    z = (draws.mean(axis=0) - full) / (draws.std(axis=0, ddof=1) / np.sqrt(len(draws)))
    assert np.all(np.abs(z) < 4.5)
    # SAG's estimate is biased: its mean is the table average, not the gradient
    sag_mean = np.mean(
        [(table.sum(0) - table[j] + prob.grad_i(x, j)) / prob.n for j in range(prob.n)], 0
    )
    assert np.linalg.norm(sag_mean - full) > 1e-3


def test_callback_history_and_stop(ridge_problem):
    prob, _, f_star = ridge_problem
    seen = []

    def cb(epoch, x, info):
        seen.append((epoch, info["suboptimality"]))
        return info["suboptimality"] < 1e-8

    res = solve(prob, "saga", n_epochs=500, random_state=0, f_star=f_star, callback=cb)
    assert res.converged and res.n_epochs == len(seen) < 500
    h = res.history
    assert len(h["epoch"]) == res.n_epochs + 1 and h["grad_evals"][0] == prob.n
    np.testing.assert_allclose(h["suboptimality"], h["objective"] - f_star)
    assert np.all(np.diff(h["time_s"]) >= 0)


def test_inputs_are_not_modified(ridge_problem):
    rng = np.random.default_rng(0)
    X, y, x0 = rng.normal(size=(20, 3)), rng.normal(size=20), rng.normal(size=3)
    Xc, yc, x0c = X.copy(), y.copy(), x0.copy()
    prob = LinearModelProblem(X, y, loss="squared", alpha=0.1)
    solve(prob, "sag", x0, n_epochs=3, random_state=0)
    assert np.array_equal(X, Xc) and np.array_equal(y, yc) and np.array_equal(x0, x0c)


def test_bad_input_raises(ridge_problem):
    prob, _, _ = ridge_problem
    with pytest.raises(ValueError, match="n >= 1"):
        LinearModelProblem(np.zeros((0, 3)), np.zeros(0), loss="squared")
    with pytest.raises(ValueError, match="shape"):
        LinearModelProblem(np.ones((4, 2)), np.ones(5), loss="squared")
    with pytest.raises(ValueError, match="finite"):
        LinearModelProblem(np.array([[1.0, np.nan]]), np.ones(1), loss="squared")
    with pytest.raises(ValueError, match=r"\{-1, \+1\}"):
        LinearModelProblem(np.ones((2, 2)), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="step_size"):
        solve(prob, "sag", step_size=0.0)
    with pytest.raises(ValueError, match="step_size"):
        solve(prob, "sag", step_size=-1e-3)
    with pytest.raises(ValueError, match="step_size"):
        solve(prob, "sag", step_size="huge")
    with pytest.raises(ValueError, match="method"):
        solve(prob, "adam")
    with pytest.raises(ValueError, match="sampling"):
        solve(prob, "sag", sampling="random")
    with pytest.raises(ValueError, match="x0"):
        solve(prob, "sag", np.zeros(prob.dim + 1))
    with pytest.raises(ValueError, match="n_epochs"):
        solve(prob, "sag", n_epochs=0)
    with pytest.raises(TypeError, match="problem"):
        solve("not a problem", "sag")
    with pytest.raises(ValueError, match="n must be"):
        FiniteSum(0, 2, lambda x, i: x)
    with pytest.raises(FloatingPointError, match="diverged"):
        solve(prob, "sag", step_size=1e3, n_epochs=50, random_state=0)


def test_smoothness_constants_are_valid(logistic_problem):
    prob, _, _ = logistic_problem
    s = prob.smoothness()
    rng = np.random.default_rng(2)
    for _ in range(5):  # Hessian eigenvalues lie in [mu, L] everywhere we look
        ev = np.linalg.eigvalsh(prob.hessian(rng.normal(size=prob.dim) * 3))
        assert s.mu - 1e-12 <= ev[0] and ev[-1] <= s.L + 1e-12
    assert s.L <= s.L_bar + 1e-12 <= s.L_max + 1e-12
    # gradient agrees with finite differences of the value
    x = rng.normal(size=prob.dim)
    e = np.eye(prob.dim) * 1e-6
    fd = np.array([(prob.value(x + v) - prob.value(x - v)) / 2e-6 for v in e])
    np.testing.assert_allclose(prob.gradient(x), fd, atol=1e-7)


def test_reference_optimum_matches_closed_form_ridge(ridge_problem):
    prob, x_star, _ = ridge_problem
    A, y = prob.A, prob.y
    closed = np.linalg.solve(A.T @ A / prob.n + prob.alpha * np.eye(prob.dim), A.T @ y / prob.n)
    np.testing.assert_allclose(x_star, closed, atol=1e-13)
    assert reference_optimum(prob)[1] <= prob.value(closed) + 1e-15


def test_nonconvex_regularizer_gradient_and_smoothness():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 4))
    prob = LinearModelProblem(X, np.sign(X[:, 0] + 0.1), alpha=0.0, nonconvex=0.3)
    x = rng.normal(size=4)
    fd = np.array([(prob.value(x + v) - prob.value(x - v)) / 2e-6 for v in np.eye(4) * 1e-6])
    np.testing.assert_allclose(prob.gradient(x), fd, atol=1e-7)
    s = prob.smoothness()
    assert s.mu is None
    for point in (x, 5.0 * np.ones(4), np.zeros(4)):
        ev = np.linalg.eigvalsh(prob.hessian(point))
        assert np.all(np.abs(ev) <= s.L + 1e-12)
    assert np.linalg.eigvalsh(prob.hessian(5.0 * np.ones(4)))[0] < 0  # truly non-convex


def test_finite_sum_oracle_shape_is_checked():
    prob = FiniteSum(3, 2, lambda x, i: np.zeros(3), smoothness=Smoothness(1, 1, 1, 1))
    with pytest.raises(ValueError, match="shape"):
        solve(prob, "sag", step_size=0.1)
