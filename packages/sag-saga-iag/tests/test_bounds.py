import math

import numpy as np
import pytest
from sag_saga_iag import (
    MarkovSampler,
    Smoothness,
    delay_bound,
    error_constant,
    make_sampler,
    max_lemma_iag_bound,
    solve,
    theory_step_size,
    unified_bound,
)


def test_theory_step_is_the_root_of_the_step_condition():
    s = Smoothness(L=2.0, L_bar=3.0, L_max=7.0, mu=0.1)
    for method in ("sag", "saga", "iag"):
        for tau in (0, 1, 10, 1000):
            g = theory_step_size(method, s, tau)
            E = error_constant(method, s)
            assert 2 * g**2 * E**2 * tau**2 + s.L * g == pytest.approx(1.0, rel=1e-12)
    assert error_constant("saga", s) == pytest.approx(10.0)  # L_max + L_bar
    assert error_constant("iag", s) == pytest.approx(3.0)  # L_bar
    assert theory_step_size("sag", s, 0) == pytest.approx(1 / s.L)


def test_bound_formula():
    s = Smoothness(L=2.0, L_bar=3.0, L_max=7.0, mu=0.1)
    b = unified_bound("iag", s, tau=50)
    assert b.rate == pytest.approx(1 - min(b.step_size * 0.1, 1 / 100))
    k = np.array([0, 10, 1000])
    np.testing.assert_allclose(b.suboptimality(k, 2.0), 2.0 * b.rate**k)
    assert b.steps_to(1e-6) == math.ceil(math.log(1e-6) / math.log(b.rate))
    # tau = 0 is gradient descent: rate 1 - mu/L at gamma = 1/L
    gd = unified_bound("sag", s, tau=0)
    assert gd.rate == pytest.approx(1 - 0.1 / 2.0)
    # a smaller step is allowed and slower; a larger one is refused
    half = unified_bound("sag", s, tau=50, step_size=b.step_size / 2)
    assert half.rate > unified_bound("sag", s, tau=50).rate
    with pytest.raises(ValueError, match="larger than the largest step"):
        unified_bound("sag", s, tau=50, step_size=1.0)
    with pytest.raises(ValueError, match="step_size"):
        unified_bound("sag", s, tau=50, step_size=0.0)
    # non-convex: only the gradient-norm bound
    nc = unified_bound("sag", Smoothness(2.0, 3.0, 7.0, None), tau=5)
    assert nc.rate == 1.0  # exact: no strong convexity, the rate is set to 1.0
    assert nc.gradient_norm_sq(100, 4.0) == pytest.approx(8.0 / (nc.step_size * 100))


def test_delay_bounds():
    assert delay_bound("cyclic", 10, method="iag") == 9
    assert delay_bound("cyclic", 10, method="saga") == 10
    assert delay_bound("reshuffle", 10) == 18
    assert delay_bound("reshuffle", 10, method="saga") == 19
    n, T, d = 50, 5000, 0.05
    m = math.ceil(math.log(n * T / d) / -math.log1p(-1 / n))
    assert delay_bound("uniform", n, horizon=T, delta=d, method="saga") == m
    assert delay_bound("uniform", n, horizon=T, delta=d) == m - 1
    assert delay_bound("uniform", n, horizon=20) == 19  # never more than T - 1
    with pytest.raises(ValueError, match="horizon"):
        delay_bound("uniform", 10)
    with pytest.raises(ValueError, match="delta"):
        delay_bound("uniform", 10, horizon=100, delta=1.5)
    with pytest.raises(ValueError, match="sampling"):
        delay_bound("random", 10)


def test_uniform_delay_tail_matches_its_probability():
    # P(an entry is older than t) = (1 - 1/n)^t: check the empirical tail at one t
    n, t = 20, 40
    rng = np.random.default_rng(0)
    idx = rng.integers(0, n, size=200_000)
    last = np.full(n, -1)
    ages = []
    for k, j in enumerate(idx):
        if k > 1000:
            ages.append(k - last[0])
        last[j] = k
    p_emp = np.mean(np.array(ages) > t)
    assert p_emp == pytest.approx((1 - 1 / n) ** t, rel=0.1)


def test_markov_hitting_times_closed_form_vs_fundamental_matrix():
    n, lazy = 7, 0.3
    for graph in ("complete", "cycle"):
        s = MarkovSampler(n, 0, graph=graph, laziness=lazy)
        if graph == "complete":
            P = np.full((n, n), (1 - lazy) / (n - 1))
        else:
            P = np.zeros((n, n))
            for i in range(n):
                P[i, (i + 1) % n] += (1 - lazy) / 2
                P[i, (i - 1) % n] += (1 - lazy) / 2
        np.fill_diagonal(P, lazy)
        m = MarkovSampler(n, 0, transition=P)
        assert s.max_hitting_time() == pytest.approx(m.max_hitting_time(), rel=1e-9)


def test_samplers():
    n = 9
    assert np.array_equal(make_sampler("cyclic", n).epoch(), np.arange(n))
    assert np.array_equal(np.sort(make_sampler("reshuffle", n, 0).epoch()), np.arange(n))
    u = make_sampler("uniform", n, 0).epoch()
    assert u.min() >= 0 and u.max() < n
    walk = MarkovSampler(n, 1, graph="cycle")
    a, b = walk.epoch(), walk.epoch()
    steps = np.diff(np.concatenate([a, b])) % n
    assert set(steps.tolist()) <= {1, n - 1}  # continues across epochs
    P = np.eye(n)[np.roll(np.arange(n), -1)]  # deterministic i -> i+1
    m = MarkovSampler(n, 0, transition=P)
    e = m.epoch()
    assert np.all(np.diff(e) % n == 1)
    with pytest.raises(ValueError, match="row-stochastic"):
        MarkovSampler(3, 0, transition=np.ones((3, 3)))
    with pytest.raises(ValueError, match="laziness"):
        MarkovSampler(3, 0, laziness=1.0)


@pytest.mark.parametrize(
    "method,sampling",
    [
        ("sag", "uniform"),
        ("saga", "uniform"),
        ("iag", "cyclic"),
        ("sag", "reshuffle"),
        ("saga", "cyclic"),
        ("sag", "markov"),
    ],
)
def test_measured_runs_lie_below_the_bound(method, sampling, logistic_problem):
    prob, _, f_star = logistic_problem
    n, epochs = prob.n, 60
    tau = delay_bound(sampling, n, method=method, horizon=n * epochs)
    bound = unified_bound(method, prob.smoothness(), tau)
    for seed in range(3):
        res = solve(
            prob,
            method,
            n_epochs=epochs,
            sampling=sampling,
            step_size=bound.step_size,
            random_state=seed,
            f_star=f_star,
        )
        sub = res.history["suboptimality"]
        assert np.all(
            sub <= bound.suboptimality(res.history["epoch"] * n, sub[0]) * (1 + 1e-9) + 1e-15
        )
        assert res.max_delay <= tau
        assert sub[-1] < sub[0]


def test_earlier_iag_bound_holds_and_is_looser(logistic_problem):
    prob, _, f_star = logistic_problem
    s, n = prob.smoothness(), prob.n
    old = max_lemma_iag_bound(s, n - 1)
    new = unified_bound("iag", s, n - 1)
    assert old.steps_to(1e-6) > 10 * new.steps_to(1e-6)
    res = solve(prob, "iag", n_epochs=20, step_size=old.step_size, f_star=f_star)
    sub = res.history["suboptimality"]
    assert np.all(sub <= old.suboptimality(res.history["epoch"] * n, sub[0]))
    with pytest.raises(ValueError, match="mu"):
        max_lemma_iag_bound(Smoothness(1.0, 1.0, 1.0, None), 5)


def test_realized_cyclic_and_reshuffle_delays_are_exact(ridge_problem):
    prob, _, _ = ridge_problem
    n = prob.n
    assert solve(prob, "iag", n_epochs=3).max_delay == n - 1
    assert solve(prob, "saga", n_epochs=3, sampling="cyclic").max_delay == n
    r = solve(prob, "sag", n_epochs=30, sampling="reshuffle", random_state=0)
    assert n - 1 <= r.max_delay <= 2 * n - 2
