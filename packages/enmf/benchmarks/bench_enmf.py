"""eNMF against scikit-learn's NMF on the experiment's real matrices, in one run.

For each (matrix, rank): the wall time and error of ``sklearn.decomposition.NMF(r)``
with its defaults (solver cd, init nndsvda; median time of 3 runs), the time eNMF
needs to reach that same error (from its per-iteration trace, initialization
included), their ratio (target: >= 1.5 on every real matrix), and both estimators'
default ``fit`` for reference. Everything single-threaded.

    uv run python packages/enmf/benchmarks/bench_enmf.py [--ranks 10,20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from enmf import ENMF
from enmf._data import digits, faces, wikipedia_tfidf
from enmf._linalg import squared_norm
from enmf._timing import measure_curve, sklearn_default
from threadpoolctl import threadpool_limits

TARGET_RATIO = 1.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="10,20", help="comma-separated ranks")
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing (median)")
    args = parser.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    data = {"digits": digits(), "faces": faces(), "wikipedia tf-idf": wikipedia_tfidf()}
    warnings.simplefilter("ignore")

    header = (
        f"{'matrix':18} {'r':>3} {'sklearn t(s)':>12} {'sklearn err':>11} "
        f"{'eNMF t->err':>11} {'ratio':>6} | {'ENMF fit t':>10} {'ENMF err':>9}"
    )
    print(header)
    print("-" * len(header))
    ratios = []
    for name, X in data.items():
        x_norm = np.sqrt(squared_norm(X))
        for r in ranks:
            runs = [sklearn_default(X, r, seed=0) for _ in range(args.repeats)]
            t_sk = float(np.median([t for t, _ in runs]))
            target = runs[0][1]
            to_target = []
            for _ in range(args.repeats):
                curve = measure_curve("eNMF", X, r, horizon=1.5 * t_sk, seed=0)
                to_target.append(curve.time_to(target))
            t_en = float(np.median(to_target))
            ratio = t_sk / t_en
            ratios.append(ratio)
            with threadpool_limits(1):
                t0 = time.perf_counter()
                model = ENMF(r, random_state=0).fit(X)
                t_fit = time.perf_counter() - t0
            print(
                f"{name:18} {r:>3} {t_sk:>12.3f} {target:>11.5f} {t_en:>11.3f} {ratio:>6.2f} | "
                f"{t_fit:>10.3f} {model.reconstruction_err_ / x_norm:>9.5f}"
            )
    met = all(r >= TARGET_RATIO for r in ratios)
    print(
        f"\nratio = sklearn default time / eNMF time to the same error; target >= {TARGET_RATIO} "
        f"on every real matrix: {'met' if met else 'NOT met'} "
        f"(min {min(ratios):.2f}, median {float(np.median(ratios)):.2f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
