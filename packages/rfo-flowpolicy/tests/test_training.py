"""RFO training: it improves the return on pendulum; the trainer rejects bad input."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from rfo_flowpolicy import (
    FlowPolicy,
    GaussianPolicy,
    Pendulum,
    RPGConfig,
    RPGTrainer,
    WorldModel,
    hopper_terminated,
)


def _pendulum_env():
    return gym.make("Pendulum-v1")


@torch.no_grad()
def _model_return(policy, model, starts, steps=16):
    """Deterministic return in the torch pendulum (equal to gymnasium's, see test_dynamics)."""
    state, total = starts.clone(), torch.zeros(starts.shape[0], dtype=torch.float64)
    for _ in range(steps):
        a = policy(model.observe(state).float(), deterministic=True).double()
        state, r, _ = model.step_state(state, a)
        total += r
    return total.mean().item()


def test_rfo_improves_pendulum_return_in_a_few_seconds():
    torch.manual_seed(0)
    model = Pendulum()
    pi = FlowPolicy(3, 1, hidden=(32, 32), steps=2, action_low=-2.0, action_high=2.0)
    cfg = RPGConfig(horizon=16, batch_size=64, reward_scale=0.1, critic_iters=4, actor_lr=3e-3)
    trainer = RPGTrainer(pi, model, _pendulum_env, cfg, seed=0)
    starts = model.initial_state(64, torch.Generator().manual_seed(1))
    before = _model_return(pi, model, starts)
    trainer.collect(400)
    trainer._update_normalization()
    for _ in range(30):
        stats = trainer.update()
    after = _model_return(pi, model, starts)
    # the 16-step return (the horizon the gradient sees) from 64 fixed start states
    assert after > before + 5, (before, after)
    assert np.isfinite(stats["actor_loss"]) and "stability_loss" in stats and "alpha" in stats


def test_chunked_rfo_and_gaussian_run_in_the_same_trainer():
    model = Pendulum()
    for pi in (
        FlowPolicy(3, 1, chunk=2, hidden=(16,), action_low=-2.0, action_high=2.0),
        GaussianPolicy(3, 1, hidden=(16,), action_low=-2.0, action_high=2.0),
    ):
        cfg = RPGConfig(horizon=4, batch_size=8, warmup_steps=20, env_steps_per_iter=10)
        log = RPGTrainer(pi, model, _pendulum_env, cfg).train(40, 20, eval_episodes=1)
        assert log.env_steps == [20, 40] and all(np.isfinite(log.returns))
        assert log.model_steps[-1] == 3 * 8 * 4  # updates at 20, 30, 40 steps: 8 rollouts x 4


def test_world_model_learns_and_hopper_rule():
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(512, 3)).astype(np.float32)
    act = rng.uniform(-1, 1, size=(512, 1)).astype(np.float32)
    nxt = obs + 0.1 * np.tanh(obs) + 0.2 * act
    rew = -np.sum(obs**2, 1)
    wm = WorldModel(3, 1, hidden=(64, 64))
    first = wm.fit(obs, act, rew, nxt, iters=20, generator=torch.Generator().manual_seed(0))
    last = wm.fit(obs, act, rew, nxt, iters=300, generator=torch.Generator().manual_seed(0))
    assert last < 0.2 * first
    o2, _r, _ = wm.step(torch.as_tensor(obs[:4]), torch.as_tensor(act[:4]))
    np.testing.assert_allclose(o2.detach().numpy(), nxt[:4], atol=0.15)
    healthy = torch.zeros(2, 11)
    healthy[:, 0] = 1.25
    healthy[1, 1] = 0.5  # torso tilted too far
    assert hopper_terminated(healthy).tolist() == [False, True]


class _NaNObservation(gym.Wrapper):
    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        return obs * np.nan, r, term, trunc, info


def test_trainer_rejects_bad_input():
    model = Pendulum()
    pi = FlowPolicy(3, 1, action_low=-2.0, action_high=2.0)
    with pytest.raises(ValueError, match="horizon must be >= 1"):
        RPGConfig(horizon=0)
    with pytest.raises(ValueError, match="multiple of the policy's chunk"):
        RPGTrainer(FlowPolicy(3, 1, chunk=3), model, _pendulum_env, RPGConfig(horizon=4))
    with pytest.raises(ValueError, match=r"policy has \(obs_dim, act_dim\) = \(5, 1\)"):
        RPGTrainer(FlowPolicy(5, 1), model, _pendulum_env)
    with pytest.raises(TypeError, match="policy must be"):
        RPGTrainer(torch.nn.Linear(3, 1), model, _pendulum_env)
    bad = RPGTrainer(pi, model, lambda: _NaNObservation(_pendulum_env()))
    with pytest.raises(ValueError, match="observation from the environment contains NaN"):
        bad.collect(5)
    with pytest.raises(ValueError, match="total_env_steps must be >= 1"):
        RPGTrainer(pi, model, _pendulum_env).train(0, 10)
