"""Benchmark: PMSA's inference vs NSGA-II and WS-LKH, and the O(n^2) edge cost of a step.

Run (from the repository root)::

    uv run python packages/pmsa-moco/benchmarks/bench_pmsa_moco.py \
        > packages/pmsa-moco/benchmarks/bench_pmsa_moco.txt

1. Inference: 101 preferences per instance (POMO greedy from every start), PMSA
   (width 64, 3 layers, untrained weights: speed does not depend on training) vs
   pymoo NSGA-II (pop 100) and WS-LKH (elkai, 101 weighted sums), per instance of
   TSP-20, medians. HV side by side is in the experiment (trained models): see the
   package README's results.
2. Training step (batch 32, POMO n rollouts) PMSA / node-only at n = 20, 50, 100,
   interleaved with ``compare_times``; target <= 1.5x at n = 50 (from the issue).
"""

from __future__ import annotations

import copy
import os
import platform
import sys
import time

import numpy as np
import torch
from icml26_core.timing import compare_times
from pmsa_moco import NodeOnlyModel, PMSAModel, solve, train, uniform_instances, uniform_prefs
from pmsa_moco.baselines import nsga2, ws_lkh

torch.set_num_threads(1)
N_INST = int(os.environ.get("BENCH_INSTANCES", "3"))
N_GEN = int(os.environ.get("BENCH_GENS", "150"))


def main() -> None:
    print(
        f"python {sys.version.split()[0]}, torch {torch.__version__}, 1 torch thread, "
        f"{platform.machine()}, load average {os.getloadavg()[0]:.1f}"
    )
    x = uniform_instances(N_INST, 20, seed=1)
    prefs = uniform_prefs(101)
    torch.manual_seed(0)
    pmsa = PMSAModel()
    solve(pmsa, x[:1], prefs)  # warm-up
    t_pmsa, t_nsga, t_lkh = [], [], []
    for i in range(N_INST):
        t0 = time.perf_counter()
        solve(pmsa, x[i : i + 1], prefs)
        t_pmsa.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        nsga2(x[i], n_gen=N_GEN, seed=i)
        t_nsga.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ws_lkh(x[i], prefs)
        t_lkh.append(time.perf_counter() - t0)
    mp, mn, ml = np.median(t_pmsa), np.median(t_nsga), np.median(t_lkh)
    print(f"\n1. inference, TSP-20, 101 preferences, median over {N_INST} instances (wall s)")
    print(f"   PMSA            {mp:.3f}")
    print(
        f"   NSGA-II ({N_GEN} gen) {mn:.3f}   ratio NSGA-II / PMSA = {mn / mp:.1f}x (target >= 10x)"
    )
    print(f"   WS-LKH (elkai)  {ml:.3f}   ratio WS-LKH / PMSA = {ml / mp:.1f}x")

    print(
        "\n2. training step time, batch 32, PMSA / node-only "
        "(compare_times, 3 rounds after 1 warm-up)"
    )
    for n in (20, 50, 100):
        torch.manual_seed(0)
        a, b = PMSAModel(), NodeOnlyModel()
        c = compare_times(
            lambda a=a, n=n: train(copy.deepcopy(a), n, 2, 1, 32, seed=0),
            lambda b=b, n=n: train(copy.deepcopy(b), n, 2, 1, 32, seed=0),
            repeats=3,
            warmup=1,
            names=("PMSA", "node-only"),
        )
        ev = c.speedup()
        print(
            f"   n = {n:3d}: PMSA {c.median_a:.3f} s, node-only {c.median_b:.3f} s, "
            f"PMSA / node-only = {c.median_a / c.median_b:.2f}  "
            f"(node-only/PMSA speed-up evidence: {ev.summary()})"
        )


if __name__ == "__main__":
    main()
