"""RFO training: it improves the return on pendulum; the SB3-shaped surface; bad input."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from rfo_flowpolicy import (
    EvalCallback,
    FlowPolicy,
    GaussianPolicy,
    Pendulum,
    RPGConfig,
    RPGTrainer,
    WorldModel,
    hopper_terminated,
)

BOX = {"action_low": -2.0, "action_high": 2.0}
TINY = RPGConfig(horizon=4, batch_size=8, warmup_steps=20, env_steps_per_iter=10, critic_iters=2)


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
    model = Pendulum()
    cfg = RPGConfig(horizon=16, batch_size=64, reward_scale=0.1, critic_iters=4, actor_lr=3e-3)
    trainer = RPGTrainer(
        "flow", model, _pendulum_env, cfg, seed=0, policy_kwargs={"hidden": (32, 32), "steps": 2}
    )
    starts = model.initial_state(64, torch.Generator().manual_seed(1))
    before = _model_return(trainer.policy, model, starts)
    trainer.collect(400)
    trainer._update_normalization()
    for _ in range(30):
        stats = trainer.update()
    after = _model_return(trainer.policy, model, starts)
    # the 16-step return (the horizon the gradient sees) from 64 fixed start states
    assert after > before + 5, (before, after)
    assert np.isfinite(stats["actor_loss"]) and "stability_loss" in stats and "alpha" in stats


def test_chunked_rfo_and_gaussian_run_in_the_same_trainer():
    model = Pendulum()
    for pi in (
        FlowPolicy(3, 1, chunk=2, hidden=(16,), **BOX),
        GaussianPolicy(3, 1, hidden=(16,), **BOX),
    ):
        log = RPGTrainer(pi, model, _pendulum_env, TINY).train(40, 20, eval_episodes=1)
        assert log.env_steps == [20, 40] and all(np.isfinite(log.returns))
        assert log.model_steps[-1] == 3 * 8 * 4  # updates at 20, 30, 40 steps: 8 rollouts x 4
        assert log.updates == [1, 3]


def test_one_seed_controls_every_draw():
    def run(seed, disturb):
        torch.manual_seed(disturb)  # torch's global generator must not matter
        tr = RPGTrainer("flow", Pendulum(), "Pendulum-v1", TINY, seed=seed)
        tr.learn(40)
        obs = np.zeros((3, 3), np.float32)
        return tr.predict(obs)[0], tr.last_stats["actor_loss"]

    a1, l1 = run(7, disturb=0)
    a2, l2 = run(7, disturb=123)
    a3, _ = run(8, disturb=0)
    np.testing.assert_array_equal(a1, a2)
    assert l1 == l2  # exact: one seed gives bit-identical runs on CPU
    assert not np.allclose(a1, a3)
    state = torch.get_rng_state()
    RPGTrainer("flow", Pendulum(), "Pendulum-v1", TINY, seed=1).learn(30)
    assert torch.equal(state, torch.get_rng_state())  # the global generator is untouched


def test_learn_callback_and_progress():
    tr = RPGTrainer("gaussian", Pendulum(), "Pendulum-v1", TINY, seed=0)
    seen = []

    def stop_after_three(trainer):
        seen.append(trainer.num_timesteps)
        return len(seen) < 3

    assert tr.learn(100, callback=stop_after_three) is tr
    assert seen == [10, 20, 30] and tr.num_timesteps == 30
    tr.learn(20, progress_bar=True)  # continues from 30
    assert tr.num_timesteps == 50
    cb = EvalCallback(eval_every=25, episodes=1)
    tr.learn(50, callback=cb)  # iterations end at 60, 70, ..., 100
    # an evaluation at the end of the first iteration at or past each multiple of 25
    assert cb.log.env_steps == [80, 100] and len(cb.log.returns) == 2


def test_predict_is_batched_and_chunks_carry_state():
    tr = RPGTrainer("flow", Pendulum(), "Pendulum-v1", TINY, seed=0)
    one, state = tr.predict(np.zeros(3, np.float32), deterministic=True)
    assert one.shape == (1,) and state is None
    many, _ = tr.predict(np.zeros((5, 3), np.float32), deterministic=True)
    assert many.shape == (5, 1) and np.all(np.abs(many) <= 2)
    np.testing.assert_allclose(many, np.repeat(one[None], 5, 0), atol=1e-6)
    chunked = RPGTrainer("flow", Pendulum(), "Pendulum-v1", TINY, policy_kwargs={"chunk": 2})
    obs = np.zeros((4, 3), np.float32)
    a0, rest = chunked.predict(obs)
    assert a0.shape == (4, 1) and rest.shape == (4, 1, 1)
    a1, st = chunked.predict(obs, rest)  # the second action of the same chunk
    np.testing.assert_array_equal(a1, rest[:, 0])
    assert st.shape == (4, 0, 1)
    _, st = chunked.predict(obs, st)  # a new chunk
    assert st.shape == (4, 1, 1)
    _, st = chunked.predict(obs, st, episode_start=np.array([1, 0, 0, 0], bool))  # restart
    assert st.shape == (4, 1, 1)
    with pytest.raises(ValueError, match=r"observation must have shape \(3,\)"):
        tr.predict(np.zeros((2, 4), np.float32))


def test_save_load_round_trip(tmp_path):
    tr = RPGTrainer("flow", Pendulum(), "Pendulum-v1", TINY, seed=3)
    tr.learn(40)
    path = tmp_path / "rfo.pt"
    tr.save(path, include_buffer=True)
    raw = torch.load(path, weights_only=True)  # plain tensors and Python values only
    assert raw["policy_class"] == "FlowPolicy"
    obs = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    want = tr.predict(obs, deterministic=True)[0]
    only = RPGTrainer.load(path)  # no environment: inference only
    np.testing.assert_allclose(only.predict(obs, deterministic=True)[0], want, atol=1e-6)
    with pytest.raises(RuntimeError, match="needs an environment"):
        only.learn(10)
    again = RPGTrainer.load(path, env="Pendulum-v1", model=Pendulum())
    assert again.num_timesteps == 40 and again.buffer.size == 40
    np.testing.assert_allclose(again.predict(obs, deterministic=True)[0], want, atol=1e-6)
    # the same random stream continues after loading
    np.testing.assert_array_equal(tr.predict(obs)[0], again.predict(obs)[0])
    again.learn(20)
    assert again.num_timesteps == 60
    with pytest.raises(ValueError, match=r"not a file written by RPGTrainer\.save"):
        torch.save({"x": 1}, tmp_path / "other.pt")
        RPGTrainer.load(tmp_path / "other.pt")


def test_world_model_learns_and_hopper_rule():
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(512, 3)).astype(np.float32)
    act = rng.uniform(-1, 1, size=(512, 1)).astype(np.float32)
    nxt = obs + 0.1 * np.tanh(obs) + 0.2 * act
    rew = -np.sum(obs**2, 1)
    torch.manual_seed(0)
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
    with pytest.raises(ValueError, match="multiple of the policy's chunk"):
        RPGTrainer(FlowPolicy(3, 1, chunk=3, **BOX), model, _pendulum_env, RPGConfig(horizon=4))
    with pytest.raises(ValueError, match=r"policy has \(obs_dim, act_dim\) = \(5, 1\)"):
        RPGTrainer(FlowPolicy(5, 1, **BOX), model, _pendulum_env)
    with pytest.raises(ValueError, match=r"action box \[\[-1.0\], \[1.0\]\] differs"):
        RPGTrainer(FlowPolicy(3, 1), model, _pendulum_env)  # [-1, 1] on Pendulum's [-2, 2]
    with pytest.raises(TypeError, match="policy must be"):
        RPGTrainer(torch.nn.Linear(3, 1), model, _pendulum_env)
    with pytest.raises(ValueError, match="policy must be one of"):
        RPGTrainer("diffusion", model, _pendulum_env)
    with pytest.raises(TypeError, match=r"env.action_space must be a 1-D .*Discrete\(2\)"):
        RPGTrainer("flow", model, "CartPole-v1")
    with pytest.raises(TypeError, match="env must be"):
        RPGTrainer("flow", model, 3)
    with pytest.raises(ValueError, match="model obs_dim 3 != environment obs_dim 5"):
        from rfo_flowpolicy import make_cartpole_swingup_env

        RPGTrainer("flow", model, make_cartpole_swingup_env)
    bad = RPGTrainer("flow", model, lambda: _NaNObservation(_pendulum_env()))
    with pytest.raises(ValueError, match="observation from the environment contains NaN"):
        bad.collect(5)
    with pytest.raises(ValueError, match="total_timesteps must be an integer >= 1"):
        RPGTrainer("flow", model, _pendulum_env).learn(0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"horizon": 0}, ValueError, "horizon must be an integer >= 1"),
        ({"actor_lr": -1e-3}, ValueError, "actor_lr must be > 0.0"),
        ({"reward_scale": float("nan")}, ValueError, "reward_scale must be a finite number"),
        ({"gamma": 1.5}, ValueError, "gamma must be"),
        ({"lam": -0.1}, ValueError, "lam must be"),
        ({"target_tau": 0.0}, ValueError, "target_tau must be"),
        ({"stability_coef": -0.1}, ValueError, "stability_coef must be >= 0.0"),
        ({"batch_size": 2.5}, TypeError, "batch_size must be an integer"),
        ({"exploration": "yes"}, TypeError, "exploration must be a bool"),
        ({"warmup_steps": -1}, ValueError, "warmup_steps must be an integer >= 0"),
    ],
)
def test_config_is_validated(kwargs, error, match):
    with pytest.raises(error, match=match):
        RPGConfig(**kwargs)
