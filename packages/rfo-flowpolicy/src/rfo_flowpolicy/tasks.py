"""The benchmark tasks and methods of the experiment, as plain functions (picklable jobs).

A task bundles the real gymnasium environment, the differentiable model the RPG
trainers use (analytic torch dynamics for classic control, a learned world model for
MuJoCo) and its hyperparameters. :func:`run_job` trains one (task, method, seed).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from icml26_core.device import torch_threads

from rfo_flowpolicy.dynamics import CartPoleSwingUp, Pendulum, make_cartpole_swingup_env
from rfo_flowpolicy.policies import FlowPolicy, GaussianPolicy
from rfo_flowpolicy.rpg import RPGConfig, RPGTrainer
from rfo_flowpolicy.worldmodel import WorldModel, hopper_terminated, never_terminated

TASKS = ("pendulum", "cartpole_swingup", "halfcheetah", "hopper")
METHODS = (
    "RFO",
    "Gaussian RPG",
    "SAC (sb3)",
    "RFO w/o stability",
    "RFO w/o exploration",
    "RFO chunk=2",
)
FLOW_STEPS = 2
"""Euler steps of the flow policies in the experiment (2 keeps the CPU budget)."""
ABLATIONS = ("RFO w/o stability", "RFO w/o exploration")


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
        action_low: Lower action bound.
        action_high: Upper action bound.
        config: RPG hyperparameters of this task.
        learned_model: Whether the dynamics are a learned world model (MuJoCo).
        episode_steps: Time limit of an episode, per scale.
    """

    name: str
    obs_dim: int
    act_dim: int
    action_low: float
    action_high: float
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
        env_id = {"halfcheetah": "HalfCheetah-v5", "hopper": "Hopper-v5"}[self.name]
        return functools.partial(_gym_env, env_id, steps)

    def make_model(self) -> Any:
        """The differentiable dynamics the RPG trainers roll out through."""
        if self.name == "pendulum":
            return Pendulum()
        if self.name == "cartpole_swingup":
            return CartPoleSwingUp()
        term = hopper_terminated if self.name == "hopper" else never_terminated
        return WorldModel(self.obs_dim, self.act_dim, terminated_fn=term)


_CLASSIC = RPGConfig(horizon=32, batch_size=128, env_steps_per_iter=5, warmup_steps=400)
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
SPECS = {
    "pendulum": TaskSpec(
        "pendulum",
        3,
        1,
        -2.0,
        2.0,
        replace(_CLASSIC, reward_scale=0.1),
        False,
        {"smoke": 50, "default": 200, "full": 200},
    ),
    "cartpole_swingup": TaskSpec(
        "cartpole_swingup",
        5,
        1,
        -1.0,
        1.0,
        replace(_CLASSIC, env_steps_per_iter=10),
        False,
        {"smoke": 50, "default": 200, "full": 200},
    ),
    "halfcheetah": TaskSpec(
        "halfcheetah",
        17,
        6,
        -1.0,
        1.0,
        _MUJOCO,
        True,
        {"smoke": 50, "default": 200, "full": 1000},
    ),
    "hopper": TaskSpec(
        "hopper", 11, 3, -1.0, 1.0, _MUJOCO, True, {"smoke": 50, "default": 200, "full": 1000}
    ),
}


def make_policy(spec: TaskSpec, method: str):
    """The policy of ``method`` on ``spec`` (flow for RFO variants, Gaussian otherwise)."""
    box = {"action_low": spec.action_low, "action_high": spec.action_high}
    if method == "Gaussian RPG":
        return GaussianPolicy(spec.obs_dim, spec.act_dim, **box)
    chunk = 2 if method == "RFO chunk=2" else 1
    return FlowPolicy(spec.obs_dim, spec.act_dim, chunk=chunk, steps=FLOW_STEPS, **box)


def method_config(spec: TaskSpec, method: str, warmup: int) -> RPGConfig:
    """The task's hyperparameters with the method's regularizer switches."""
    cfg = replace(spec.config, warmup_steps=warmup)
    if method == "Gaussian RPG":
        return replace(cfg, stability_coef=0.0, exploration=False)
    if method == "RFO w/o stability":
        return replace(cfg, stability_coef=0.0)
    if method == "RFO w/o exploration":
        return replace(cfg, exploration=False)
    return cfg


def _run_job(
    task: str,
    method: str,
    seed: int,
    scale: str,
    total_steps: int,
    eval_every: int,
    eval_episodes: int,
    warmup: int,
    device: str = "cpu",
) -> dict[str, Any]:
    """Train one method on one task with one seed; return its learning curve.

    Returns:
        A dict with ``task``, ``method``, ``seed``, ``env_steps``, ``returns``,
        ``model_steps``, ``wall_s`` and ``stats``.
    """
    torch.manual_seed(seed)
    spec = SPECS[task]
    make_env = spec.make_env_fn(scale)
    if method == "SAC (sb3)":
        from rfo_flowpolicy.baselines import train_sac

        log = train_sac(
            make_env,
            total_steps,
            eval_every,
            eval_episodes=eval_episodes,
            seed=seed,
            learning_starts=warmup,
            device=device,
        )
    else:
        trainer = RPGTrainer(
            make_policy(spec, method),
            spec.make_model(),
            make_env,
            method_config(spec, method, warmup),
            seed=seed,
            device=device,
        )
        log = trainer.train(total_steps, eval_every, eval_episodes)
    return {
        "task": task,
        "method": method,
        "seed": seed,
        "env_steps": log.env_steps,
        "returns": log.returns,
        "model_steps": log.model_steps,
        "wall_s": log.wall_s[-1] if log.wall_s else 0.0,
        "stats": log.stats,
    }


def run_job(**job: Any) -> dict[str, Any]:
    """Train one method on one task with one seed (see :func:`_run_job`), on one torch thread.

    The networks are small: on a shared 2-core machine more intra-op threads only
    contend. The caller's thread count is restored afterwards.
    """
    with torch_threads(1):
        return _run_job(**job)
