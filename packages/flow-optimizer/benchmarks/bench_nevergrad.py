"""Wall time of one ``minimize`` against nevergrad's OnePlusOne, CMA and SPSA.

Shifted, rotated Rastrigin at d = 10 and 100; 640 evaluations for each method
(N = 32 candidates, 19 Euler steps for FlowOptimizer, an untrained field of the default
size: it costs the same as a trained one); nevergrad 1.0.12 with its defaults, one
candidate per ask/tell (as in the experiment, :func:`flow_optimizer.baselines.nevergrad_minimize`);
one torch thread. Times are interleaved in one process after a warm-up
(:func:`icml26_core.timing.compare_times`); the ratio is median(nevergrad) /
median(FlowOptimizer) with its bootstrap 95% CI (> 1: FlowOptimizer faster). d = 1000
is left out: nevergrad's CMA there costs minutes per run (pycma's alone is timed in
``bench_minimize.py``).

    uv run python packages/flow-optimizer/benchmarks/bench_nevergrad.py [--repeats 5]
"""

from __future__ import annotations

import argparse

import nevergrad
import numpy as np
import torch
from flow_optimizer import FlowOptimizer
from flow_optimizer.baselines import NEVERGRAD_OPTIMIZERS, nevergrad_minimize
from flow_optimizer.problems import Rastrigin
from icml26_core.timing import compare_times

BUDGET = 640


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(
        f"torch {torch.__version__}, nevergrad {nevergrad.__version__}, 1 thread, "
        f"{BUDGET} evaluations, {args.repeats} rounds"
    )
    opt = FlowOptimizer(n_candidates=32, n_steps=19)
    for d in (10, 100):
        p = Rastrigin().sample_instance(np.random.default_rng(0), d)
        flow = lambda p=p: opt.minimize(p, BUDGET)  # noqa: E731
        for name in NEVERGRAD_OPTIMIZERS:
            base = lambda p=p, name=name: nevergrad_minimize(p, BUDGET, optimizer=name)  # noqa: E731
            label = f"nevergrad {name}"
            cmp = compare_times(flow, base, repeats=args.repeats, names=("FlowOptimizer", label))
            ev = cmp.speedup()
            ci = f" [{ev.ci_low:.3g}, {ev.ci_high:.3g}]" if ev.n >= 5 else ""
            print(
                f"d = {d:4d}: FlowOptimizer {cmp.median_a * 1e3:8.1f} ms, {label} "
                f"{cmp.median_b * 1e3:8.1f} ms; {label} / FlowOptimizer = "
                f"{cmp.median_b / cmp.median_a:.3g}{ci}",
                flush=True,
            )


if __name__ == "__main__":
    main()
