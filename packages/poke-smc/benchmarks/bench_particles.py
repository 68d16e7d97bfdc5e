"""NFE per second of batched particle evaluation against decoding particles one by one.

POKE-SMC evaluates all particles of all prompts in one forward pass per step. The
alternative a user would otherwise write is a loop over particles (and prompts), one
sequence per forward pass, which is what decoding with a single-sequence sampler
repeatedly amounts to. Both run the same number of trajectories and steps; the table
gives NFE/s (sequences evaluated per second) and the batched/one-by-one ratio. Run:

    uv run python packages/poke-smc/benchmarks/bench_particles.py [--device cuda]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from icml26_core.device import synchronize, torch_device
from poke_smc import MaskedDiffusionTransformer, PokeSMC, ScoreRemasking, SudokuTask, infill


def _time(fn, device) -> float:
    synchronize(device)
    t0 = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--particles", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--blanks", type=int, default=24)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dev = torch_device(args.device)
    task = SudokuTask(9, blanks=args.blanks)
    torch.manual_seed(0)
    model = MaskedDiffusionTransformer(task.vocab_size, task.seq_len, d_model=64, n_layers=3)
    model = model.to(dev).eval()
    x = torch.as_tensor(task.eval_set(args.prompts, np.random.default_rng(0)).inputs, device=dev)
    k = args.blanks
    one = ScoreRemasking(temperature=0.3)
    print(f"sudoku 9x9, {args.blanks} blanks, {args.prompts} prompts, model d=64 x 3 layers, {dev}")
    print(f"{'particles':>9} {'batched NFE/s':>14} {'one-by-one NFE/s':>17} {'ratio':>7}")
    with torch.no_grad():
        infill(model, x[:1], k, one)  # warm-up
        for n in args.particles:
            smc = PokeSMC(n, value="greedy", temperature=0.3)
            nfe = args.prompts * n * k
            t_batched = _time(lambda smc=smc: infill(model, x, k, smc), dev)

            def loop(n=n) -> None:
                for i in range(args.prompts):
                    for _ in range(n):
                        infill(model, x[i : i + 1], k, one)

            t_loop = _time(loop, dev)
            a, b = nfe / t_batched, nfe / t_loop
            print(f"{n:>9} {a:>14.0f} {b:>17.0f} {a / b:>6.1f}x")


if __name__ == "__main__":
    main()
