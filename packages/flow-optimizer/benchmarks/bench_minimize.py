"""Wall time of one ``minimize`` against pycma's CMA-ES and multi-start Adam.

Shifted, rotated Rastrigin at d = 10, 100, 1000; 640 evaluations for each method
(N = 32 candidates, 19 Euler steps for FlowOptimizer; an untrained field of the default
size costs the same as a trained one); float32 for FlowOptimizer, float64 for the
baselines (pycma works in float64); one torch thread. Times are interleaved in one
process after a warm-up (:func:`icml26_core.timing.compare_times`); the ratio is
median(baseline) / median(FlowOptimizer) with its bootstrap 95% CI (> 1: FlowOptimizer
faster). Also times the two training stages at d = 10 with the default experiment's
settings.

    uv run python packages/flow-optimizer/benchmarks/bench_minimize.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from flow_optimizer import FlowOptimizer
from flow_optimizer.baselines import cma_es, multistart_adam
from flow_optimizer.problems import Rastrigin
from icml26_core.timing import compare_times

BUDGET = 640


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, {BUDGET} evaluations, {args.repeats} rounds")
    opt = FlowOptimizer(n_candidates=32, n_steps=19)
    for d in (10, 100, 1000):
        p = Rastrigin().sample_instance(np.random.default_rng(0), d)
        flow = lambda p=p: opt.minimize(p, BUDGET)  # noqa: E731
        for name, base in (
            ("CMA-ES", lambda p=p: cma_es(p, BUDGET)),
            ("multi-start Adam", lambda p=p: multistart_adam(p, BUDGET, n_starts=32)),
        ):
            cmp = compare_times(flow, base, repeats=args.repeats, names=("FlowOptimizer", name))
            ev = cmp.speedup()
            ci = f" [{ev.ci_low:.3g}, {ev.ci_high:.3g}]" if ev.n >= 5 else ""
            print(
                f"d = {d:5d}: FlowOptimizer {cmp.median_a * 1e3:8.1f} ms, {name} "
                f"{cmp.median_b * 1e3:8.1f} ms; {name} / FlowOptimizer = "
                f"{cmp.median_b / cmp.median_a:.3g}{ci}",
                flush=True,
            )
    fam = Rastrigin()

    def sampler(r):
        return fam.sample_instance(r, 10)

    t = time.perf_counter()
    opt.fit_flow_matching(sampler, iterations=15, instances_per_iteration=3)
    t1 = time.perf_counter()
    opt.fine_tune(sampler, iterations=20, instances_per_iteration=3)
    t2 = time.perf_counter()
    print(
        f"training at d = 10 (default experiment): stage 1 {t1 - t:.1f} s, stage 2 {t2 - t1:.1f} s"
    )


if __name__ == "__main__":
    main()
