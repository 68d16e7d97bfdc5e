"""Fit time of SMAVE against OPG and RMAVE (Xia et al., 2002), as ratios in one run.

Single-index model, p = 50, n from 1000 to 50000 (RMAVE, quadratic in n, is run up to
--rmave-max-n). All fits use single-threaded BLAS so the ratio compares algorithms.

    uv run python packages/smave/benchmarks/bench_fit_time.py            # n = 1000 ... 50000
    uv run python packages/smave/benchmarks/bench_fit_time.py --quick    # n = 1000, 2000
"""

import argparse
import time

import numpy as np
from smave import OPG, RMAVE, SMAVE, subspace_distance
from smave.synthetic import make_index_model
from threadpoolctl import threadpool_limits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--p", type=int, default=50)
    ap.add_argument("--ns", type=int, nargs="+", default=[1000, 2000, 5000, 10000, 20000, 50000])
    ap.add_argument("--rmave-max-n", type=int, default=10000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    ns = [1000, 2000] if args.quick else args.ns
    print(f"{'n':>7} {'method':>6} {'time s':>9} {'distance':>9} {'t / t_SMAVE':>12}")
    with threadpool_limits(limits=1):
        for n in ns:
            X, y, B0 = make_index_model("single", n, args.p, np.random.default_rng(n))
            t_smave = None
            for name, est in [("SMAVE", SMAVE(random_state=0)), ("OPG", OPG()), ("RMAVE", RMAVE())]:
                if name == "RMAVE" and n > args.rmave_max_n:
                    continue
                t0 = time.perf_counter()
                est.fit(X, y)
                secs = time.perf_counter() - t0
                t_smave = secs if name == "SMAVE" else t_smave
                dist = subspace_distance(est.components_, B0)
                print(
                    f"{n:>7} {name:>6} {secs:>9.3f} {dist:>9.4f} {secs / t_smave:>12.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
