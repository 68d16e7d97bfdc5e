"""Speed of RFO against the Gaussian RPG, and of the torch dynamics against gymnasium.

Run: uv run python packages/rfo-flowpolicy/benchmarks/bench_rfo.py
Prints (1) policy-gradient steps per second of RFO (flow policy, both regularizers) and
of the Gaussian RPG at equal horizon and batch on pendulum, and (2) environment steps
per second of the differentiable torch dynamics (batch 1 and batched, forward only)
against gymnasium's numpy environments (one environment stepped in a loop).
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch
from rfo_flowpolicy import (
    Acrobot,
    CartPoleSwingUp,
    FlowPolicy,
    GaussianPolicy,
    Pendulum,
    RPGConfig,
    RPGTrainer,
    make_cartpole_swingup_env,
)


def pg_steps_per_s(policy, cfg, updates):
    trainer = RPGTrainer(policy, Pendulum(), lambda: gym.make("Pendulum-v1"), cfg, seed=0)
    trainer.collect(400)
    trainer._update_normalization()
    trainer.update()  # warm-up
    t0 = time.perf_counter()
    for _ in range(updates):
        trainer.update()
    return updates / (time.perf_counter() - t0)


def torch_steps_per_s(model, batch, steps):
    state = model.initial_state(batch)
    a = torch.zeros(batch, 1, dtype=torch.float64)
    with torch.no_grad():
        t0 = time.perf_counter()
        for _ in range(steps):
            state, _, _ = model.step_state(state, a)
    return batch * steps / (time.perf_counter() - t0)


def gym_steps_per_s(env, action, steps):
    env.reset(seed=0)
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(action)
        if term or trunc:
            env.reset()
    return steps / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--horizon", type=int, default=32)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = RPGConfig(horizon=args.horizon, batch_size=args.batch, reward_scale=0.1)
    box = {"action_low": -2.0, "action_high": 2.0}
    rows = []
    for solver, steps in (("euler", 4), ("midpoint", 2)):
        rfo = pg_steps_per_s(FlowPolicy(3, 1, steps=steps, solver=solver, **box), cfg, args.updates)
        rows.append((f"RFO ({solver}, {steps} steps)", rfo))
    gauss_cfg = RPGConfig(
        horizon=args.horizon,
        batch_size=args.batch,
        reward_scale=0.1,
        stability_coef=0.0,
        exploration=False,
    )
    gauss = pg_steps_per_s(GaussianPolicy(3, 1, **box), gauss_cfg, args.updates)
    print(f"Policy-gradient steps/s on pendulum, horizon {args.horizon}, batch {args.batch}:")
    print(f"  {'Gaussian RPG':28s} {gauss:8.2f}  (1.00x)")
    for name, v in rows:
        print(f"  {name:28s} {v:8.2f}  ({v / gauss:.2f}x of Gaussian)")

    print("\nEnvironment steps/s, torch dynamics (forward, float64) vs gymnasium (one env):")
    cases = [
        ("pendulum", Pendulum(), gym.make("Pendulum-v1"), np.zeros(1, np.float32)),
        ("cartpole swing-up", CartPoleSwingUp(), gym.make("CartPole-v1"), 1),
        ("acrobot", Acrobot(), gym.make("Acrobot-v1"), 1),
    ]
    for name, model, env, action in cases:
        g = gym_steps_per_s(env, action, 2000)
        t1 = torch_steps_per_s(model, 1, 500)
        tb = torch_steps_per_s(model, 4096, 100)
        print(
            f"  {name:18s} gymnasium {g:10.0f}   torch b=1 {t1:10.0f} ({t1 / g:.2f}x)"
            f"   torch b=4096 {tb:12.0f} ({tb / g:.1f}x)"
        )
    sw = gym_steps_per_s(make_cartpole_swingup_env(), np.zeros(1, np.float32), 1000)
    print(f"  (our gymnasium swing-up env, numpy wrapper over the torch step: {sw:.0f} steps/s)")


if __name__ == "__main__":
    main()
