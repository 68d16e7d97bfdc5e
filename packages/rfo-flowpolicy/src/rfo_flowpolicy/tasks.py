"""The benchmark tasks and methods of the experiment, as plain functions (picklable jobs).

A task bundles the real gymnasium environment, the differentiable model the RPG
trainers use (analytic torch dynamics for classic control, a learned world model for
MuJoCo) and its hyperparameters. :func:`run_job` trains one (task, method, seed) and
returns its learning curve; the ``"zero action"`` method only evaluates the floor.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from icml26_core.device import torch_threads

from rfo_flowpolicy.dynamics import (
    Acrobot,
    CartPoleSwingUp,
    Pendulum,
    make_acrobot_env,
    make_cartpole_swingup_env,
)
from rfo_flowpolicy.rpg import RPGConfig, RPGTrainer, episode_returns
from rfo_flowpolicy.worldmodel import WorldModel, hopper_terminated, never_terminated

EXACT = ("pendulum", "cartpole_swingup", "acrobot")
"""Tasks whose rollouts run through exact differentiable dynamics."""
LEARNED = ("halfcheetah", "hopper")
"""MuJoCo tasks: rollouts through a world model learned from the real transitions."""
TASKS = EXACT + LEARNED
RPG_METHODS = (
    "RFO",
    "Gaussian RPG",
    "RFO w/o stability",
    "RFO w/o exploration",
    "RFO chunk=2",
)
ABLATIONS = ("RFO w/o stability", "RFO w/o exploration")
BASELINES = ("SAC (sb3)", "PPO (sb3)")
FLOOR = "zero action"
METHODS = (FLOOR, *RPG_METHODS, *BASELINES)
FLOW_STEPS = 2
"""Euler steps of the flow policies in the experiment (2 keeps the CPU budget)."""


def _gym_env(env_id: str, max_episode_steps: int):
    import gymnasium as gym

    return gym.make(env_id, max_episode_steps=max_episode_steps)


@dataclass(frozen=True)
class TaskSpec:
    """One benchmark task.

    Attributes:
        name: Task name.
        obs_dim: Observation size.
        act_dim: Action size.
        config: RPG hyperparameters of this task.
        learned_model: Whether the dynamics are a learned world model (MuJoCo).
        episode_steps: Time limit of an episode, per scale.
    """

    name: str
    obs_dim: int
    act_dim: int
    config: RPGConfig
    learned_model: bool
    episode_steps: dict[str, int] = field(default_factory=dict)

    def make_env_fn(self, scale: str):
        """A picklable function building the real environment at this scale."""
        steps = self.episode_steps[scale]
        if self.name == "pendulum":
            return functools.partial(_gym_env, "Pendulum-v1", steps)
        if self.name == "cartpole_swingup":
            return functools.partial(make_cartpole_swingup_env, steps)
        if self.name == "acrobot":
            return functools.partial(make_acrobot_env, steps)
        env_id = {"halfcheetah": "HalfCheetah-v5", "hopper": "Hopper-v5"}[self.name]
        return functools.partial(_gym_env, env_id, steps)

    def make_model(self, seed: int = 0) -> Any:
        """The differentiable dynamics the RPG trainers roll out through.

        A world model's initial weights are drawn from ``seed`` (in a forked RNG).
        """
        if self.name == "pendulum":
            return Pendulum()
        if self.name == "cartpole_swingup":
            return CartPoleSwingUp()
        if self.name == "acrobot":
            return Acrobot()
        term = hopper_terminated if self.name == "hopper" else never_terminated
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return WorldModel(self.obs_dim, self.act_dim, terminated_fn=term)


_CLASSIC = RPGConfig(horizon=32, batch_size=64, env_steps_per_iter=5, warmup_steps=200)
_MUJOCO = RPGConfig(
    horizon=8,
    batch_size=128,
    env_steps_per_iter=25,
    updates_per_iter=2,
    warmup_steps=1000,
    model_fit_iters=25,
    gamma=0.99,
    target_entropy_per_dim=-1.0,
)
_EP = {"smoke": 50, "default": 200, "full": 200}
SPECS = {
    "pendulum": TaskSpec("pendulum", 3, 1, replace(_CLASSIC, reward_scale=0.1), False, _EP),
    "cartpole_swingup": TaskSpec(
        "cartpole_swingup", 5, 1, replace(_CLASSIC, env_steps_per_iter=5), False, _EP
    ),
    "acrobot": TaskSpec(
        "acrobot",
        6,
        1,
        replace(_CLASSIC, reward_scale=0.5, horizon=16),  # RK4 steps: half the horizon
        False,
        {"smoke": 50, "default": 200, "full": 500},
    ),
    "halfcheetah": TaskSpec(
        "halfcheetah", 17, 6, _MUJOCO, True, {"smoke": 50, "default": 200, "full": 1000}
    ),
    "hopper": TaskSpec("hopper", 11, 3, _MUJOCO, True, {"smoke": 50, "default": 200, "full": 1000}),
}


def policy_spec(method: str) -> tuple[str, dict[str, Any]]:
    """The policy name and keyword arguments of an RPG method."""
    if method == "Gaussian RPG":
        return "gaussian", {}
    chunk = 2 if method == "RFO chunk=2" else 1
    return "flow", {"chunk": chunk, "steps": FLOW_STEPS}


def method_config(spec: TaskSpec, method: str, warmup: int, **overrides: Any) -> RPGConfig:
    """The task's hyperparameters with the method's regularizer switches."""
    cfg = replace(spec.config, warmup_steps=warmup, **overrides)
    if method == "Gaussian RPG":
        return replace(cfg, stability_coef=0.0, exploration=False)
    if method == "RFO w/o stability":
        return replace(cfg, stability_coef=0.0)
    if method == "RFO w/o exploration":
        return replace(cfg, exploration=False)
    return cfg


def _zero_action(act_dim: int):
    zero = np.zeros(act_dim, np.float32)
    return lambda obs: zero


def _run_job(
    task: str,
    method: str,
    seed: int,
    scale: str,
    total_steps: int,
    eval_every: int,
    eval_episodes: int,
    eval_seed: int,
    warmup: int,
    device: str = "cpu",
    target_return: float | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train one method on one task with one seed; return its learning curve.

    For the baselines, ``target_return`` (if given) stops training at the first
    evaluation that reaches it; ``total_steps`` is then the cap.

    Returns:
        A dict with ``task``, ``method``, ``seed``, ``total_steps`` (the budget or cap),
        ``target_return``, ``env_steps``, ``returns`` (mean
        evaluation return at each evaluation), ``final_episodes`` (the last
        evaluation's per-episode returns), ``model_steps``, ``updates``, ``wall_s``,
        ``cpu_s`` and ``stats``.
    """
    spec = SPECS[task]
    make_env = spec.make_env_fn(scale)
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {
        "task": task,
        "method": method,
        "seed": seed,
        "total_steps": total_steps,
        "target_return": target_return,
    }
    if method == FLOOR:
        eps = episode_returns(_zero_action(spec.act_dim), make_env, eval_episodes, eval_seed)
        out.update(env_steps=[0], returns=[float(np.mean(eps))], model_steps=[0], updates=[0])
        out["final_episodes"] = eps
        out["stats"] = {}
    elif method in BASELINES:
        from rfo_flowpolicy.baselines import train_ppo, train_sac

        fn = train_sac if method == "SAC (sb3)" else train_ppo
        kw = {"learning_starts": warmup} if method == "SAC (sb3)" else {}
        log = fn(
            make_env,
            total_steps,
            eval_every,
            eval_episodes=eval_episodes,
            eval_seed=eval_seed,
            seed=seed,
            device=device,
            target_return=target_return,
            **kw,
        )
        out.update(
            env_steps=log.env_steps,
            returns=log.returns,
            model_steps=log.model_steps,
            updates=log.updates,
            stats=log.stats,
        )
    else:
        name, kwargs = policy_spec(method)
        trainer = RPGTrainer(
            name,
            spec.make_model(seed),
            make_env,
            method_config(spec, method, warmup, **(overrides or {})),
            seed=seed,
            device=device,
            policy_kwargs=kwargs,
        )
        log = trainer.train(total_steps, eval_every, eval_episodes, eval_seed)
        out.update(
            env_steps=log.env_steps,
            returns=log.returns,
            model_steps=log.model_steps,
            updates=log.updates,
            stats=log.stats,
        )
    out["wall_s"] = time.perf_counter() - t0
    out["cpu_s"] = time.process_time() - c0
    return out


def run_job(**job: Any) -> dict[str, Any]:
    """Train one method on one task with one seed (see :func:`_run_job`), on one torch thread.

    The networks are small: on a shared 2-core machine more intra-op threads only
    contend. The caller's thread count is restored afterwards.
    """
    with torch_threads(1):
        return _run_job(**job)
