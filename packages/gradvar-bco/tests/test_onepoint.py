"""The one-point learners: the barrier step, the estimator relative to the hint, bad input."""

import numpy as np
import pytest
from gradvar_bco import Box, OnePointBoxLinear, OnePointGradientDescent
from gradvar_bco.onepoint import barrier_ftrl_point

LO, HI = np.array([-1.0, 0.0, -2.0]), np.array([1.0, 3.0, -1.5])


def test_barrier_point_is_the_minimizer():
    theta = np.random.default_rng(0).normal(0, 5, (50, 3))
    x, h = barrier_ftrl_point(theta, LO, HI)
    assert np.all((x > LO) & (x < HI))
    # first-order condition of <theta, x> - log(x - lo) - log(hi - x)
    np.testing.assert_allclose(theta - 1 / (x - LO) + 1 / (HI - x), 0.0, atol=1e-8)
    np.testing.assert_allclose(h, 1 / (x - LO) ** 2 + 1 / (HI - x) ** 2, rtol=1e-10)
    x0, _ = barrier_ftrl_point(np.zeros(3), LO, HI)
    np.testing.assert_allclose(x0, (LO + HI) / 2)


def test_barrier_point_stays_inside_at_extreme_tilt():
    x, h = barrier_ftrl_point(np.array([1e30, -1e30, 1e3]), LO, HI)
    assert np.all((x > LO) & (x < HI)) and np.all(np.isfinite(h))
    assert np.all(h[:2] > 1e10)  # pushed to the faces, still finite


def _second_round(outside_hint, loss, n=200_000, **kw):
    """n runs: round 1 with an outside hint, then the estimate of round 2."""
    learner = OnePointBoxLinear(LO, HI, step_size=0.05, n_runs=n, seed=3, **kw)
    x = learner.ask()
    learner.tell(x @ loss, hint=outside_hint)
    x = learner.ask()
    return learner, x, learner.tell(x @ loss)


@pytest.mark.parametrize(
    "hint, rate", [(np.zeros(3), 0.0), (np.array([0.9, -0.4, 2.0]), 0.0), (np.zeros(3), 0.5)]
)
def test_estimate_is_unbiased_for_any_hint_and_baseline(hint, rate):
    loss = np.array([0.5, -1.0, 0.25])
    learner, _, g = _second_round(hint, loss, hint="none", baseline_rate=rate)
    assert rate == 0.0 or np.std(learner._b) > 0.01  # exact: a literal; b was not 0
    se = g.std(axis=0, ddof=1) / np.sqrt(len(g))
    assert np.all(np.abs(g.mean(axis=0) - loss) <= 3.5 * se)


def test_variance_is_relative_to_the_hint():
    loss = np.array([0.5, -1.0, 0.25])
    _, _, g_far = _second_round(np.zeros(3), loss, n=20_000, hint="none")
    near, x, g_near = _second_round(loss + 0.01, loss, n=20_000, hint="none")
    # local dual norm ||g - m||^2 / h summed = d^2 <l - m, x_t>^2, exactly
    m = loss + 0.01
    local = np.sum((g_near - m) ** 2 / near._h, axis=-1)
    np.testing.assert_allclose(local, 9 * ((loss - m) @ x.T) ** 2, rtol=1e-8)
    assert g_near.var(axis=0).sum() < 1e-2 * g_far.var(axis=0).sum()


def test_perfect_hint_gives_the_loss_exactly():
    loss = np.array([0.3, 0.2, -0.7])
    learner = OnePointBoxLinear(LO, HI, n_runs=4, seed=0)
    learner.ask()
    learner.tell(np.zeros(4), hint=loss)
    for _ in range(20):
        x = learner.ask()
        g = learner.tell(x @ loss, hint=loss)
        np.testing.assert_allclose(g, np.broadcast_to(loss, g.shape), atol=1e-10)
    np.testing.assert_allclose(learner.A, 0.0, atol=1e-18)  # no residual ever


def test_tracking_hint_learns_a_constant_loss_and_points_stay_inside():
    rng = np.random.default_rng(5)
    loss = rng.uniform(-1, 1, 3)
    # the hint's error e = l - m is contracted by the learned rate, from |e| = |l| at m = 0
    # (it tracks less once x̂ nears a corner: the rate shrinks with the barrier's curvature)
    learner = OnePointBoxLinear(-1.0, 1.0, dim=3, n_runs=20, baseline_rate=0.1, seed=1)
    for _ in range(3000):
        x = learner.ask()
        assert np.all((x >= -1.0) & (x <= 1.0))
        learner.tell(x @ loss)
    err = np.linalg.norm(learner.hint_estimate - loss, axis=-1)
    assert np.median(err) < 0.5 * np.linalg.norm(loss)
    # it plays towards the minimizing corner
    corner = -np.sign(loss)
    assert np.all(np.abs(learner.decision - corner).mean(axis=0) < 0.5)


def test_hint_beats_no_hint_on_a_slow_sequence():
    rng = np.random.default_rng(2)
    T, n, d = 3000, 20, 4
    ls = np.clip(rng.uniform(-1, 1, (n, d)) + np.cumsum(rng.normal(0, 1e-3, (T, n, d)), 0), -1, 1)
    regret = {}
    for hint in ("tracking", "none"):
        learner = OnePointBoxLinear(-1.0, 1.0, dim=d, step_scale=0.25, hint=hint, n_runs=n, seed=0)
        total = np.zeros(n)
        for lt in ls:
            y = np.sum(lt * learner.ask(), -1)
            learner.tell(y)
            total += y
        regret[hint] = total + np.abs(ls.sum(0)).sum(-1)
    floor = np.abs(ls.sum(0)).sum(-1)  # the centre's regret
    assert np.mean(regret["tracking"]) < 0.8 * np.mean(regret["none"])
    assert np.mean(regret["none"]) < 0.5 * np.mean(floor)


def test_single_run_shapes_and_repr():
    learner = OnePointBoxLinear(0.0, 1.0, dim=2, seed=0)
    x = learner.ask()
    assert x.shape == (2,)
    assert learner.tell(float(x.sum())).shape == (2,)
    assert learner.decision.shape == (2,) and "OnePointBoxLinear" in repr(learner)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(hint="mean"), "hint must be one of"),
        (dict(hint_rate=0.0), "hint_rate"),
        (dict(hint_rate=1.5), "hint_rate"),
        (dict(step_size="fixed"), "step_size must be one of"),
        (dict(step_size=-1.0), "step_size"),
        (dict(step_scale="big"), "step_scale must be a float"),
        (dict(step_scale=np.ones(3)), "step_scale as an array"),
        (dict(baseline_rate=-0.1), "baseline_rate"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OnePointBoxLinear(-1.0, 1.0, dim=2, n_runs=2, **kwargs)


def test_bad_protocol_and_values():
    with pytest.raises(ValueError, match="empty"):
        OnePointBoxLinear(1.0, -1.0, dim=2)
    learner = OnePointBoxLinear(-1.0, 1.0, dim=2, n_runs=2, seed=0)
    with pytest.raises(RuntimeError, match="before ask"):
        learner.tell(np.zeros(2))
    learner.ask()
    with pytest.raises(RuntimeError, match="twice"):
        learner.ask()
    with pytest.raises(ValueError, match="shape"):
        learner.tell(np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        learner.tell(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="hint must be finite"):
        learner.tell(np.zeros(2), hint=np.zeros(5))


def test_bgd_one_point_is_unbiased_on_linear_losses_and_stays_inside():
    box = Box(LO, HI)
    loss = np.array([0.5, -1.0, 0.25])
    bgd = OnePointGradientDescent(box, 0.2, 0.01, n_runs=200_000, seed=0)
    x = bgd.ask()
    assert np.all((x >= LO) & (x <= HI))
    g = bgd.tell(x @ loss)
    se = g.std(axis=0, ddof=1) / np.sqrt(len(g))
    assert np.all(np.abs(g.mean(axis=0) - loss) <= 3.5 * se)
    y = bgd.decision
    assert np.all(np.abs(y - box.center) <= (HI - LO) / 2 - 0.2 + 1e-12)  # the shrunk box


def test_bgd_one_point_bad_input():
    box = Box(-1.0, 1.0, dim=2)
    with pytest.raises(ValueError, match="delta must be <"):
        OnePointGradientDescent(box, 1.0, 0.1)
    with pytest.raises(ValueError, match="step_size"):
        OnePointGradientDescent(box, 0.1, 0.0)
    bgd = OnePointGradientDescent(box, 0.1, 0.1, seed=0)
    with pytest.raises(RuntimeError, match="before ask"):
        bgd.tell(0.0)
    bgd.ask()
    with pytest.raises(ValueError, match="finite"):
        bgd.tell(float("inf"))
