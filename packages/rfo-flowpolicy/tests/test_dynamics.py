"""The torch dynamics against gymnasium's own environments, step for step."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from rfo_flowpolicy import Acrobot, CartPoleSwingUp, Pendulum, make_cartpole_swingup_env


def _t(x):
    return torch.as_tensor(np.asarray(x, dtype=np.float64))[None]


def test_pendulum_matches_gymnasium():
    env, model = gym.make("Pendulum-v1"), Pendulum()
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(200):
        state = np.array(env.unwrapped.state, dtype=np.float64)
        u = rng.uniform(-2.5, 2.5, size=(1,)).astype(np.float32)  # beyond the box: clipping
        obs, r, term, _, _ = env.step(u)
        s2, r2, d2 = model.step_state(_t(state), _t(u))
        np.testing.assert_allclose(s2[0].numpy(), env.unwrapped.state, rtol=0, atol=1e-6)
        np.testing.assert_allclose(model.observe(s2)[0].numpy(), obs, rtol=0, atol=1e-6)
        assert abs(float(r2[0]) - r) < 1e-6 and bool(d2[0]) == term
        # the observation-space step agrees too (angle recovered through atan2)
        o_next, _, _ = model.step(model.observe(_t(state)), _t(u))
        np.testing.assert_allclose(o_next[0].numpy(), obs, rtol=0, atol=1e-6)


def test_cartpole_physics_match_gymnasium():
    env, model = gym.make("CartPole-v1"), CartPoleSwingUp()
    rng = np.random.default_rng(1)
    steps = 0
    for ep in range(5):
        env.reset(seed=ep)
        done = False
        while not done:
            state = np.array(env.unwrapped.state, dtype=np.float64)
            a = int(rng.integers(2))
            _, _, term, trunc, _ = env.step(a)
            s2, _, _ = model.step_state(
                _t(state), torch.tensor([[2.0 * a - 1.0]], dtype=torch.float64)
            )
            np.testing.assert_allclose(s2[0].numpy(), env.unwrapped.state, rtol=0, atol=1e-6)
            done, steps = term or trunc, steps + 1
    assert steps > 40


def test_acrobot_matches_gymnasium():
    env, model = gym.make("Acrobot-v1"), Acrobot()
    rng = np.random.default_rng(2)
    env.reset(seed=3)
    for _ in range(300):
        state = np.array(env.unwrapped.state, dtype=np.float64)
        a = int(rng.integers(3))
        obs, _, term, _, _ = env.step(a)
        s2, _, d2 = model.step_state(_t(state), torch.tensor([[a - 1.0]], dtype=torch.float64))
        np.testing.assert_allclose(s2[0].numpy(), env.unwrapped.state, rtol=0, atol=1e-6)
        np.testing.assert_allclose(model.observe(s2)[0].numpy(), obs, rtol=0, atol=1e-6)
        assert bool(d2[0]) == term
        if term:
            env.reset(seed=4)


def test_swingup_env_is_the_model_and_gymnasium_compatible():
    env = make_cartpole_swingup_env()
    from gymnasium.utils.env_checker import check_env

    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (5,) and obs[2] < -0.99  # hanging down
    model = CartPoleSwingUp()
    o = torch.as_tensor(obs, dtype=torch.float64)[None]
    o2, r, _ = model.step(o, torch.tensor([[0.5]], dtype=torch.float64))
    obs2, r_env, *_ = env.step(np.array([0.5], dtype=np.float32))
    np.testing.assert_allclose(o2[0].numpy(), obs2, atol=1e-6)
    assert abs(float(r[0]) - r_env) < 1e-6


def test_dynamics_are_differentiable():
    model = Pendulum()
    obs = model.observe(torch.tensor([[2.0, 0.5]], dtype=torch.float64))
    u = torch.tensor([[0.3]], dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda a: model.step(obs, a)[0], (u,))
    torch.autograd.gradcheck(lambda a: model.step(obs, a)[1], (u,))


@pytest.mark.parametrize("model", [Pendulum(), CartPoleSwingUp(), Acrobot()])
def test_model_rejects_bad_input(model):
    obs = model.observe(model.initial_state(2))
    with pytest.raises(ValueError, match="obs"):
        model.step(obs[:, :-1], torch.zeros(2, 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="NaN"):
        model.step(obs, torch.full((2, 1), float("nan"), dtype=torch.float64))
    with pytest.raises(ValueError, match="batch"):
        model.step(obs, torch.zeros(3, 1, dtype=torch.float64))
