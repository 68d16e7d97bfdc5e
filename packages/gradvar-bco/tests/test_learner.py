"""The mathematics of the two-point learner: estimator, bounds, hints, bad input."""

import numpy as np
import pytest
from gradvar_bco import Ball, Box, Simplex, TwoPointOptimisticBCO, run, variation


def _one_round_estimates(domain, f, x0, n, delta=0.1, seed=0):
    """n independent estimates g at the same point x0 (one vectorized round)."""
    learner = TwoPointOptimisticBCO(domain, delta, 0.1, n_runs=n, x0=x0, seed=seed)
    x1, x2 = learner.ask()
    g = learner.tell(f(x1), f(x2))
    return g, learner.decision


def test_estimator_unbiased_on_quadratic():
    rng = np.random.default_rng(1)
    d = 4
    Q = rng.standard_normal((d, d))
    H, b = Q @ Q.T, rng.standard_normal(d)
    x0 = np.array([0.2, -0.1, 0.3, 0.0])

    def f(x):
        return 0.5 * np.einsum("si,ij,sj->s", x, H, x) + x @ b

    g, x = _one_round_estimates(Ball(d, 1.0), f, x0, 100_000)
    se = g.std(axis=0, ddof=1) / np.sqrt(len(g))
    # the delta-smoothed quadratic has the same gradient H x + b
    assert np.all(np.abs(g.mean(axis=0) - (H @ x[0] + b)) <= 3 * se)


def test_estimator_unbiased_for_the_smoothed_cubic():
    # f(x) = sum x_i^3: grad f_delta(x) = 3 x^2 + 3 delta^2 / (d + 2) (ball smoothing)
    d, delta = 3, 0.3
    x0 = np.array([0.1, -0.2, 0.25])
    g, x = _one_round_estimates(Ball(d, 1.0), lambda z: np.sum(z**3, axis=-1), x0, 100_000, delta)
    expected = 3 * x[0] ** 2 + 3 * delta**2 / (d + 2)
    se = g.std(axis=0, ddof=1) / np.sqrt(len(g))
    assert np.all(np.abs(g.mean(axis=0) - expected) <= 3 * se)
    # and the unsmoothed gradient is visibly different (the smoothing term matters)
    assert np.max(np.abs(g.mean(axis=0) - 3 * x[0] ** 2)) > 3 * se.max()


def test_second_moment_bound():
    d = 8
    rng = np.random.default_rng(2)
    ell = rng.standard_normal(d)
    # linear loss: E ||g||^2 = d ||l||^2 exactly (L = ||l||)
    g, _ = _one_round_estimates(Ball(d), lambda z: z @ ell, np.zeros(d), 100_000)
    m2 = np.mean(np.sum(g**2, axis=1))
    assert m2 == pytest.approx(d * ell @ ell, rel=0.03)
    # a 1-Lipschitz nonsmooth loss: E ||g||^2 <= c d L^2 with c = 1 (Shamir 2017's form)
    a = np.full(d, 0.05)
    g, _ = _one_round_estimates(
        Ball(d), lambda z: np.linalg.norm(z - a, axis=-1), np.zeros(d), 100_000, delta=0.2
    )
    assert np.mean(np.sum(g**2, axis=1)) <= 1.0 * d * 1.0**2 * 1.02


@pytest.mark.parametrize("domain", [Ball(3, 2.0), Box(-1.0, [1.0, 2.0, 0.5]), Simplex(4)])
def test_queried_points_stay_in_the_domain(domain):
    rng = np.random.default_rng(3)
    learner = TwoPointOptimisticBCO(
        domain, 0.9 * domain.inner_radius, lipschitz=10.0, n_runs=7, seed=4
    )
    for _ in range(200):
        x1, x2 = learner.ask()
        assert np.all(domain.contains(x1, atol=1e-9)) and np.all(domain.contains(x2, atol=1e-9))
        c = rng.standard_normal(domain.dim) * 5  # far outside: pushes to the boundary
        learner.tell(x1 @ c, x2 @ c)


@pytest.mark.parametrize("step_scale", [1.0, np.array([0.25, 0.5, 1, 2, 4, 8, 0.125, 1])])
def test_linearized_regret_below_the_bound_for_every_seed(step_scale):
    d, T, n = 5, 400, 8
    dom = Ball(d, 1.0)
    rng = np.random.default_rng(5)
    centers = rng.uniform(-0.7, 0.7, size=(T, n, d)) / np.sqrt(d)
    G = 2.0  # ||x - c|| <= 2 on the unit ball
    learner = TwoPointOptimisticBCO(dom, 0.05, lipschitz=G, step_scale=step_scale, n_runs=n, seed=6)
    gs, xs = [], []
    for t in range(T):
        x1, x2 = learner.ask()
        xs.append(learner.decision)
        gs.append(
            learner.tell(
                0.5 * np.sum((x1 - centers[t]) ** 2, 1), 0.5 * np.sum((x2 - centers[t]) ** 2, 1)
            )
        )
    gs, xs = np.array(gs), np.array(xs)
    bound = learner.linearized_bound()
    for _ in range(20):  # comparators in the shrunk set
        u = dom.project(rng.standard_normal(d), shrink=0.05)
        lin = np.einsum("tsi,tsi->s", gs, xs - u)
        assert np.all(lin <= bound)


def test_expected_regret_below_the_documented_bound():
    # E regret <= D sqrt(c + E S_T)(1/2 + 2 sqrt(1 + a_max/c)) + T delta G (2 + D / r)
    d, T, n, delta = 4, 500, 20, 0.05
    dom = Ball(d, 1.0)
    rng = np.random.default_rng(7)
    cs = 0.3 * rng.standard_normal((T, d)) / np.sqrt(d)

    def losses(t, x):
        return np.linalg.norm(x - cs[t], axis=-1)  # 1-Lipschitz, convex

    u = np.median(cs, axis=0)
    learner = TwoPointOptimisticBCO(dom, delta, lipschitz=1.0, n_runs=n, seed=8)
    res = run(learner, losses, T, comparator=u)
    c = (d * 1.0) ** 2
    lin = (
        dom.diameter
        * np.sqrt(c + learner.S.mean())
        * (0.5 + 2 * np.sqrt(1 + learner.a_max.max() / c))
    )
    bound = lin + T * delta * 1.0 * (2 + dom.diameter / dom.inner_radius)
    assert res.regret.mean() <= bound
    assert np.all(res.regret <= bound)


def test_perfect_hint_removes_the_variation_term():
    # l_t flips sign every round (large variation); with the hint m_t = E g_t = l_t only
    # the estimator's variance remains: E ||g - l||^2 = (d - 1) ||l||^2 per round.
    d, T, n = 6, 300, 200
    ell = np.ones(d) / np.sqrt(d)
    seq = [ell * (-1) ** t for t in range(T + 1)]

    def play(perfect):
        learner = TwoPointOptimisticBCO(Box(-1.0, 1.0, dim=d), 0.1, lipschitz=1.0, n_runs=n, seed=9)
        learner._hint = np.broadcast_to(seq[0], (n, d)).copy() if perfect else learner._hint
        for t in range(T):
            x1, x2 = learner.ask()
            learner.tell(x1 @ seq[t], x2 @ seq[t], hint=seq[t + 1] if perfect else None)
        return learner.S.mean() / T

    assert play(True) == pytest.approx(d - 1.0, rel=0.05)
    assert play(False) > 1.5 * (d - 1.0)


def test_strongly_convex_and_fixed_steps():
    dom = Ball(2)
    sc = TwoPointOptimisticBCO(dom, 0.1, strong_convexity=0.5, lipschitz=1.0)
    c0 = np.sqrt((2 * 1.0) ** 2) / dom.diameter
    for t in range(3):
        assert sc.eta()[0] == pytest.approx(1.0 / (0.5 * (t + 1) + c0))
        x1, x2 = sc.ask()
        sc.tell(float(x1.sum()), float(x2.sum()))
    arr = TwoPointOptimisticBCO(dom, 0.1, np.array([0.1, 0.2]), n_runs=2)
    np.testing.assert_allclose(arr.eta(), [0.1, 0.2])
    ch = TwoPointOptimisticBCO(dom, 0.1, "chiang", lipschitz=1.0, variation_budget=3.0)
    assert ch.eta()[0] == pytest.approx(dom.diameter / (2 * np.sqrt(3.0 + 1.0)))


def test_step_scale_sets_the_first_step():
    dom = Ball(4)
    scales = np.array([0.5, 1.0, 3.0])
    ad = TwoPointOptimisticBCO(dom, 0.1, lipschitz=2.0, step_scale=scales, n_runs=3)
    x1, x2 = ad.ask()  # the first step, before any estimate: s D / (k G)
    np.testing.assert_allclose(ad.eta(), scales * dom.diameter / (4 * 2.0))
    ad.tell(np.ones(3), np.zeros(3))
    a = ad.S  # the same ||g||^2 in every run: steps keep the ratio of their scales
    np.testing.assert_allclose(ad.eta(), dom.diameter / np.sqrt((4 * 2.0 / scales) ** 2 + a))
    sc = TwoPointOptimisticBCO(dom, 0.1, strong_convexity=0.5, lipschitz=1.0, step_scale=2.0)
    assert sc.eta()[0] == pytest.approx(1.0 / (0.5 + 4 * 1.0 / (2.0 * dom.diameter)))
    free = TwoPointOptimisticBCO(dom, 0.1, step_scale=np.array([1.0, 2.0]), n_runs=2, seed=0)
    x1, x2 = free.ask()
    g = free.tell(np.sum(x1, 1), np.sum(x2, 1))  # c from the first estimate, then / s^2
    c = np.max(np.sum(g**2, 1)) / np.array([1.0, 2.0]) ** 2
    np.testing.assert_allclose(free.eta(), dom.diameter / np.sqrt(c + free.S))


def test_single_run_shapes_and_convergence():
    learner = TwoPointOptimisticBCO(Ball(3), delta=0.05, lipschitz=4.0, seed=0)
    for _ in range(1500):
        x1, x2 = learner.ask()
        assert x1.shape == (3,)
        g = learner.tell(np.sum((x1 - 0.5) ** 2), np.sum((x2 - 0.5) ** 2))
        assert g.shape == (3,)
    np.testing.assert_allclose(learner.decision, 0.5, atol=0.1)


def test_variation_of_a_known_sequence():
    T, d = 5, 2
    grads = np.zeros((T, 1, d))
    grads[:, 0, 0] = np.arange(T)  # consecutive differences of 1
    out = variation(grads, comparator_losses=np.ones(T))
    assert out["V"] == pytest.approx(T - 1)
    assert out["W"] == pytest.approx(np.sum((np.arange(T) - 2.0) ** 2))
    assert out["F"] == pytest.approx(T)


def test_bad_input_raises():
    dom = Ball(2, 1.0)
    with pytest.raises(ValueError, match="delta"):
        TwoPointOptimisticBCO(dom, 1.0)
    with pytest.raises(ValueError, match="delta"):
        TwoPointOptimisticBCO(dom, 0.0)
    with pytest.raises(ValueError, match="step_size"):
        TwoPointOptimisticBCO(dom, 0.1, "fast")
    with pytest.raises(ValueError, match="step_size"):
        TwoPointOptimisticBCO(dom, 0.1, -1.0)
    with pytest.raises(ValueError, match="variation_budget"):
        TwoPointOptimisticBCO(dom, 0.1, "chiang")
    with pytest.raises(ValueError, match="x0"):
        TwoPointOptimisticBCO(dom, 0.1, x0=np.zeros(3))
    with pytest.raises(ValueError, match="step_scale"):
        TwoPointOptimisticBCO(dom, 0.1, step_scale=0.0)
    with pytest.raises(ValueError, match="step_scale"):
        TwoPointOptimisticBCO(dom, 0.1, step_scale=np.ones(2), n_runs=3)
    with pytest.raises(TypeError, match="domain"):
        TwoPointOptimisticBCO("ball", 0.1)
    learner = TwoPointOptimisticBCO(dom, 0.1, n_runs=3)
    with pytest.raises(RuntimeError, match="before ask"):
        learner.tell(np.zeros(3), np.zeros(3))
    learner.ask()
    with pytest.raises(RuntimeError, match="twice"):
        learner.ask()
    with pytest.raises(ValueError, match="f1"):
        learner.tell(np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="f2"):
        learner.tell(np.zeros(3), np.array([0.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="hint"):
        learner.tell(np.zeros(3), np.zeros(3), hint=np.zeros(5))
    with pytest.raises(ValueError, match="empty"):
        Box([0.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="dim"):
        Simplex(1)
    with pytest.raises(ValueError, match="radius"):
        Ball(2, 0.0)
    with pytest.raises(ValueError, match="T"):
        run(TwoPointOptimisticBCO(dom, 0.1), lambda t, x: x.sum(-1), 0)
    with pytest.raises(ValueError, match="gradients"):
        variation(np.zeros((3, 2)))
