"""Claim 3 of the experiment (tol = 0 gives the sequential run) in float32 and float64.

Reruns only the tol = 0 part of ``icml26 run paso-optim`` at default scale: the MNIST-5k
CNN of the experiment (or the digits MLP), ``T_exact`` steps (100 / 200), PASO P = 8,
tol = 0 (``backend="vmap"``) against sequential ``torch.optim.Adam``, seeds 0-4 as in the
experiment, one torch thread; prints max|x_T - x_T^seq| per seed and the rounds. float64
is the same run with the model and the inputs cast to float64, to tell float32 rounding
from a defect of the rule. Not asserted in tests.

    uv run python packages/paso-optim/benchmarks/check_exact.py [--task cnn|mlp]
"""

from __future__ import annotations

import argparse
import os

import torch
from paso_optim import experiment as E


class _Default:
    """Stands in for the run context: the default scale's values."""

    def pick(self, smoke=None, default=None, full=None):
        return default


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", choices=("cnn", "mlp"), default="cnn")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    build = E._mnist_task if args.task == "cnn" else E._digits_task
    load = os.getloadavg()[0]
    print(f"claim 3 (tol = 0, P = {E.P_MAIN}) vs sequential Adam, 1 thread, load {load:.1f}")
    for dtype in (torch.float32, torch.float64):
        task = build(_Default())
        make = task.make_model
        task.make_model = lambda make=make, dtype=dtype: make().to(dtype)
        task.X, task.X_test = task.X.to(dtype), task.X_test.to(dtype)
        diffs, rounds = [], []
        for seed in seeds:
            seq, _ = E._sequential(task, seed, task.steps_exact, E._batch_fn(task, seed), task.lr)
            _, res = E._paso(task, seed, task.steps_exact, E.P_MAIN, 0.0, None)
            diffs.append(float((res.params - E._flat(seq)).abs().max()))
            rounds.append(res.rounds)
        per_seed = " ".join(f"{d:.2e}" for d in diffs)
        print(
            f"{task.name} {str(dtype).removeprefix('torch.')} T = {task.steps_exact}: "
            f"max|x_T - x_T^seq| per seed {per_seed}; max {max(diffs):.2e}; "
            f"rounds {rounds}",
            flush=True,
        )


if __name__ == "__main__":
    main()
