"""Bits to the target AUC and wall time per step: compressed gossip (top-k 5%, error feedback)
against uncompressed gossip, simulated (one process, 8 nodes on a ring, MNIST-5k 0 vs rest,
linear AUC saddle, the experiment's step size 0.3, momentum 0.9, tracking).

Bits: one run of each per seed; the target is the uncompressed seed-mean final AUC - 0.01
(the experiment's); "bits to target" is the mean bits sent per node at the first evaluation
(every 10 steps) whose node-mean test AUC reaches it. Time: 50 steps of each (setup
included, the same for both), interleaved after a warm-up
(:func:`icml26_core.timing.compare_times`), the ratio of medians with its bootstrap 95% CI.
The 4-process gloo timing and all-reduce are not measured here (see the README).

    uv run python packages/compressed-dsgda/benchmarks/bench_gossip.py [--repeats 7]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from compressed_dsgda._auc import Method, load_auc_data, run_auc
from icml26_core.decentralized import Identity, TopK, mixing_matrix, topology
from icml26_core.timing import compare_times

LR, STEPS, BATCH = 0.3, 400, 16


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    data = load_auc_data("mnist")
    W = mixing_matrix(topology("ring", 8))
    ours = Method("ours top-k 5%", TopK(0.05))
    plain = Method("uncompressed", Identity())

    def run(m, seed, steps=STEPS, every=10):
        return run_auc(
            data,
            m,
            W,
            steps=steps,
            seed=seed,
            lr_primal=LR,
            lr_dual=LR,
            batch=BATCH,
            eval_every=every,
        )

    seeds = list(range(args.seeds))
    tr = {m.name: [run(m, s) for s in seeds] for m in (plain, ours)}
    target = float(np.mean([t.final_auc for t in tr["uncompressed"]])) - 0.01

    def bits_to(t):
        for a, b in zip(t.auc, t.bits, strict=True):
            if a >= target:
                return b
        return float("inf")

    print(f"MNIST-5k 0 vs rest, ring n = 8, {STEPS} steps, lr {LR}, seeds {seeds}")
    print(f"target AUC (uncompressed mean final - 0.01) = {target:.4f}")
    b = {}
    for name, ts in tr.items():
        b[name] = float(np.mean([bits_to(t) for t in ts]))
        auc = np.mean([t.final_auc for t in ts])
        print(
            f"{name:>15}: final AUC {auc:.4f}, bits per node to target {b[name] / 1e6:.4f} Mbit, "
            f"total {np.mean([t.bits_per_node for t in ts]) / 1e6:.3f} Mbit"
        )
    print(
        f"bits to target, uncompressed / top-k 5%: {b['uncompressed'] / b['ours top-k 5%']:.2f}x "
        "(target of the issue: >= 8x)"
    )
    n = 50
    c = compare_times(
        lambda: run(ours, 0, steps=n, every=n),
        lambda: run(plain, 0, steps=n, every=n),
        repeats=args.repeats,
        names=("top-k 5%", "uncompressed"),
    )
    print(
        f"wall time per step (simulated, {n}-step runs, one torch thread): top-k 5% "
        f"{c.median_a / n * 1e3:.3f} ms, uncompressed {c.median_b / n * 1e3:.3f} ms"
    )
    print("speed-up of top-k 5% over uncompressed (ratio of medians):")
    print(c.speedup().summary())


if __name__ == "__main__":
    main()
