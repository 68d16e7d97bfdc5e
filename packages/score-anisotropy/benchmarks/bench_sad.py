"""Time of the SADs against D: exact (``jacrev``, all D eigenpairs) vs the matrix-free
methods (top 16): ``lanczos`` (``scipy.sparse.linalg.eigsh`` on vjp/jvp products, one
vector at a time through a kept linearization) and ``block`` (block Lanczos on batched
vjp/jvp products), at D = 64, 196, 784.

Model: ``ScoreCNN`` (3 convolutions, 32 channels, 3x3; about 10k parameters at every D),
8 noisy inputs of Gaussian data, float32, one thread (torch and the BLAS). At each D,
one call of each method gives the largest relative error of the matrix-free top-16
eigenvalues against the exact ones (and warms all three up); then each matrix-free
method is timed against the exact one, interleaved in this process
(:func:`icml26_core.timing.compare_times`), and reported as the ratio of medians with
its paired bootstrap 95% CI and a verdict on the issue's target (>= 5x faster at
D = 784 with the top 16 within 1%).

    uv run python packages/score-anisotropy/benchmarks/bench_sad.py [--repeats 5] [--dims 784]
"""

from __future__ import annotations

import os

# one BLAS thread, like torch: set before numpy loads OpenBLAS (on a busy machine its
# default thread pool makes the small dense steps of block Lanczos many times slower)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import score_anisotropy as sa  # noqa: E402
import torch  # noqa: E402
from icml26_core.timing import compare_times  # noqa: E402

METHODS = ("lanczos", "block")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dims", type=int, nargs="+", default=[64, 196, 784])
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    args = ap.parse_args()
    torch.set_num_threads(1)
    start = time.time()
    print(
        f"torch {torch.__version__}, 1 thread (torch, BLAS), {args.repeats} interleaved "
        f"rounds per comparison, load average {os.getloadavg()[0]:.1f}"
    )
    print("D | method | exact s | method s | speed-up [95% CI], n; >= 5x | max rel. error top-16")
    for d in args.dims:
        torch.manual_seed(0)
        model = sa.ScoreCNN(d)
        X = np.random.default_rng(0).standard_normal((64, d))

        def exact(model=model, X=X):
            return sa.sad(model, X, n_inputs=8, seed=1)

        ex = exact()
        for m in args.methods:

            def free(model=model, X=X, m=m):
                return sa.sad(model, X, n_inputs=8, seed=1, k=16, method=m)

            top = free().eigenvalues
            err = float(np.max(np.abs(top - ex.eigenvalues[:16]) / ex.eigenvalues[:16]))
            # warm-up: the accuracy calls above (imports, the linearization's tracing)
            c = compare_times(free, exact, repeats=args.repeats, warmup=0, names=(m, "jacrev"))
            ev = c.speedup(at_least=5.0)
            print(
                f"{d} | {m} | {c.median_b:.2f} | {c.median_a:.2f} | {ev.effect:.2f}x "
                f"[{ev.ci_low:.2f}, {ev.ci_high:.2f}], n = {ev.n}; {ev.verdict} | {err:.1e}",
                flush=True,
            )
    print(
        f"(load average {os.getloadavg()[0]:.1f} at the end, "
        f"{(time.time() - start) / 60:.1f} min wall; 2 shared cores)"
    )


if __name__ == "__main__":
    main()
