"""Time of the SADs against D: exact (``jacrev``, all D eigenpairs) vs a matrix-free method
(top 16): ``--method lanczos`` (``scipy.sparse.linalg.eigsh`` on vjp/jvp products, one
vector at a time) or ``--method block`` (block Lanczos on batched vjp/jvp products), at
D = 64, 196, 784.

Model: ``ScoreCNN`` (3 convolutions, 32 channels, 3x3; about 10k parameters at every D),
8 noisy inputs of Gaussian data, float32, one torch thread. Times are interleaved in one
process after a warm-up (:func:`icml26_core.timing.compare_times`) and reported as the
ratio of medians with its bootstrap 95% CI, beside the largest relative error of the
matrix-free top-16 eigenvalues against the exact ones. The issue's target: >= 5x
faster at D = 784 with the top 16 within 1%.

    uv run python packages/score-anisotropy/benchmarks/bench_sad.py [--repeats 3] [--method block]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import score_anisotropy as sa
import torch
from icml26_core.timing import compare_times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dims", type=int, nargs="+", default=[64, 196, 784])
    ap.add_argument("--method", choices=("lanczos", "block"), default="lanczos")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, load average {os.getloadavg()[0]:.1f}")
    m = args.method
    print(f"D | exact s | {m} s | speed-up of {m} [95% CI] | max rel. error top-16")
    for d in args.dims:
        torch.manual_seed(0)
        model = sa.ScoreCNN(d)
        X = np.random.default_rng(0).standard_normal((64, d))
        ex = sa.sad(model, X, n_inputs=8, seed=1)
        lz = sa.sad(model, X, n_inputs=8, seed=1, k=16, method=m)
        err = float(np.max(np.abs(lz.eigenvalues - ex.eigenvalues[:16]) / ex.eigenvalues[:16]))
        c = compare_times(
            lambda model=model, X=X: sa.sad(model, X, n_inputs=8, seed=1, k=16, method=m),
            lambda model=model, X=X: sa.sad(model, X, n_inputs=8, seed=1),
            repeats=args.repeats,
            warmup=0,
            names=(m, "jacrev"),
        )
        ev = c.speedup(at_least=5.0)
        print(
            f"{d} | {c.median_b:.2f} | {c.median_a:.2f} | {c.median_b / c.median_a:.2f}x; "
            f"{ev.summary()}; >= 5x: {ev.verdict} | {err:.1e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
