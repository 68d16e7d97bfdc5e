"""Model-free references: stable-baselines3's SAC and PPO, evaluated like the RPG trainers.

stable-baselines3 is an optional dependency (the ``repro`` extra); it is imported here
only when these functions run. Both evaluate the deterministic policy every
``eval_every`` real steps on the same episodes as :class:`~rfo_flowpolicy.EvalCallback`
and can stop at the first evaluation that reaches a target return ("run until it
reaches RFO's return").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from icml26_core.validation import check_int

from rfo_flowpolicy.rpg import TrainLog, evaluate_policy


def _learn(
    agent: Any,
    make_env: Callable[[], Any],
    total_env_steps: int,
    eval_every: int,
    eval_episodes: int,
    eval_seed: int,
    target_return: float | None,
    updates: Callable[[], int],
) -> TrainLog:
    from stable_baselines3.common.callbacks import BaseCallback

    log = TrainLog()
    t0 = time.perf_counter()

    def act(obs):
        return agent.predict(obs, deterministic=True)[0]

    class _Eval(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % eval_every:
                return True
            ret = evaluate_policy(act, make_env, eval_episodes, eval_seed)
            log.env_steps.append(self.num_timesteps)
            log.returns.append(ret)
            log.model_steps.append(0)
            log.updates.append(updates())
            log.wall_s.append(time.perf_counter() - t0)
            return target_return is None or ret < target_return

    agent.learn(total_timesteps=total_env_steps, callback=_Eval())
    log.stats = {
        "reached_target": float(
            bool(log.returns) and target_return is not None and log.returns[-1] >= target_return
        )
    }
    return log


def train_sac(
    make_env: Callable[[], Any],
    total_env_steps: int,
    eval_every: int,
    *,
    eval_episodes: int = 5,
    eval_seed: int = 10_000,
    seed: int = 0,
    hidden: tuple[int, ...] = (64, 64),
    learning_starts: int = 400,
    learning_rate: float = 1e-3,
    target_return: float | None = None,
    device: str = "cpu",
) -> TrainLog:
    """Train stable-baselines3 SAC, evaluating on the schedule of :class:`RPGTrainer`.

    Hyperparameters are stable-baselines3's defaults (one gradient step per real
    step, batch 256, automatic entropy tuning) except the network widths (ours, for
    equal capacity), ``learning_starts`` (our warm-up) and the learning rate 1e-3 of the
    RL Baselines3 Zoo's tuned Pendulum-v1 setting.

    Args:
        make_env: Builds the real gymnasium environment.
        total_env_steps: Environment steps in all (the cap when ``target_return`` is set).
        eval_every: Steps between evaluations.
        eval_episodes: Episodes per evaluation (deterministic actions).
        eval_seed: Reset seed of the first evaluation episode.
        seed: SAC's seed.
        hidden: Widths of actor and critic networks.
        learning_starts: Random steps before learning.
        learning_rate: Adam step size of every network.
        target_return: Stop at the first evaluation whose mean return reaches it.
        device: Torch device.

    Returns:
        The learning curve (``model_steps`` stays 0: SAC uses no model; ``updates``
        counts SAC's gradient steps).
    """
    from stable_baselines3 import SAC

    total = check_int("total_env_steps", total_env_steps, low=1)
    every = check_int("eval_every", eval_every, low=1)
    agent = SAC(
        "MlpPolicy",
        make_env(),
        learning_starts=learning_starts,
        learning_rate=learning_rate,
        policy_kwargs={"net_arch": list(hidden)},
        seed=seed,
        device=device,
        verbose=0,
    )
    return _learn(
        agent,
        make_env,
        total,
        every,
        eval_episodes,
        eval_seed,
        target_return,
        lambda: int(agent._n_updates),
    )


def train_ppo(
    make_env: Callable[[], Any],
    total_env_steps: int,
    eval_every: int,
    *,
    eval_episodes: int = 5,
    eval_seed: int = 10_000,
    seed: int = 0,
    hidden: tuple[int, ...] = (64, 64),
    target_return: float | None = None,
    device: str = "cpu",
    **ppo_kwargs: Any,
) -> TrainLog:
    """Train stable-baselines3 PPO, evaluating on the schedule of :class:`RPGTrainer`.

    stable-baselines3's defaults (2048-step rollouts, 10 epochs of minibatches of 64,
    GAE lambda 0.95, clip 0.2) with 64 x 64 networks (its default widths and ours).

    Args:
        make_env: Builds the real gymnasium environment.
        total_env_steps: Environment steps in all (the cap when ``target_return`` is set).
        eval_every: Steps between evaluations.
        eval_episodes: Episodes per evaluation (deterministic actions).
        eval_seed: Reset seed of the first evaluation episode.
        seed: PPO's seed.
        hidden: Widths of the policy and value networks.
        target_return: Stop at the first evaluation whose mean return reaches it.
        device: Torch device.
        ppo_kwargs: Other arguments of ``stable_baselines3.PPO``.

    Returns:
        The learning curve (``updates`` counts PPO's minibatch gradient steps).
    """
    from stable_baselines3 import PPO

    total = check_int("total_env_steps", total_env_steps, low=1)
    every = check_int("eval_every", eval_every, low=1)
    agent = PPO(
        "MlpPolicy",
        make_env(),
        policy_kwargs={"net_arch": list(hidden)},
        seed=seed,
        device=device,
        verbose=0,
        **ppo_kwargs,
    )
    return _learn(
        agent,
        make_env,
        total,
        every,
        eval_episodes,
        eval_seed,
        target_return,
        lambda: int(agent._n_updates) * max(1, agent.n_steps // agent.batch_size),
    )
