"""The model-free reference: stable-baselines3's SAC, evaluated like the RPG trainers.

stable-baselines3 is an optional dependency (the ``repro`` extra); it is imported here
only when this function runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rfo_flowpolicy._checks import check_positive_int
from rfo_flowpolicy.rpg import TrainLog, evaluate_policy


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
    device: str = "cpu",
    progress: Callable[[int], None] | None = None,
) -> TrainLog:
    """Train stable-baselines3 SAC and evaluate it on the same schedule as :class:`RPGTrainer`.

    Args:
        make_env: Builds the real gymnasium environment.
        total_env_steps: Environment steps in all.
        eval_every: Steps between evaluations.
        eval_episodes: Episodes per evaluation (deterministic actions).
        eval_seed: Reset seed of the first evaluation episode.
        seed: SAC's seed.
        hidden: Widths of actor and critic networks (ours, for equal capacity).
        learning_starts: Random steps before learning (as our warmup).
        device: Torch device.
        progress: Called with the number of new steps every ``eval_every`` steps.

    Returns:
        The learning curve (``model_steps`` stays 0: SAC uses no model).
    """
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback

    check_positive_int(total_env_steps, "total_env_steps")
    check_positive_int(eval_every, "eval_every")
    log = TrainLog()
    t0 = time.perf_counter()

    def act(obs):
        return agent.predict(obs, deterministic=True)[0]

    class _Eval(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % eval_every == 0:
                log.env_steps.append(self.num_timesteps)
                log.returns.append(evaluate_policy(act, make_env, eval_episodes, eval_seed))
                log.model_steps.append(0)
                log.wall_s.append(time.perf_counter() - t0)
                if progress is not None:
                    progress(eval_every)
            return True

    agent = SAC(
        "MlpPolicy",
        make_env(),
        learning_starts=learning_starts,
        policy_kwargs={"net_arch": list(hidden)},
        seed=seed,
        device=device,
        verbose=0,
    )
    agent.learn(total_timesteps=total_env_steps, callback=_Eval())
    return log
