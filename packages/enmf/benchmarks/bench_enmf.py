"""eNMF's default ``fit`` against scikit-learn's default ``NMF`` fit, timed interleaved.

For each real matrix and rank, ``ENMF(r)`` (the paper's algorithm),
``ENMF(r, algorithm="extrapolated")`` and ``sklearn.decomposition.NMF(r)`` are each
fitted with their defaults, timed interleaved in one process after a warm-up
(:func:`icml26_core.timing.compare_times`, one BLAS thread), and their relative errors
printed beside the speed-up of each over scikit-learn (ratio of medians, with its
bootstrap 95% CI).

    uv run python packages/enmf/benchmarks/bench_enmf.py [--ranks 10,20] [--repeats 5]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from enmf import ENMF
from enmf._data import digits, faces, wikipedia_tfidf
from enmf._linalg import squared_norm
from icml26_core.timing import compare_times
from sklearn.decomposition import NMF
from threadpoolctl import threadpool_limits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="10,20", help="comma-separated ranks")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    data = {"digits": digits(), "faces": faces(), "wikipedia tf-idf": wikipedia_tfidf()}
    warnings.simplefilter("ignore")
    print(
        f"{'matrix':18} {'r':>3} {'estimator':24} {'rel. error':>10} {'median s':>9} "
        f"{'speed-up vs sklearn [95% CI]':>30}"
    )
    for name, X in data.items():
        x_norm = np.sqrt(squared_norm(X))
        for r in ranks:
            errors = {}

            def fit(make, key, X=X, x_norm=x_norm, errors=errors):
                def call():
                    model = make().fit(X)
                    errors[key] = model.reconstruction_err_ / x_norm

                return call

            sk = fit(lambda r=r: NMF(r, random_state=0), "sklearn NMF (default)")
            with threadpool_limits(1):
                for label, make in (
                    ("ENMF (paper)", lambda r=r: ENMF(r, random_state=0)),
                    (
                        "ENMF (extrapolated)",
                        lambda r=r: ENMF(r, algorithm="extrapolated", random_state=0),
                    ),
                ):
                    c = compare_times(
                        fit(make, label), sk, repeats=args.repeats, names=(label, "sklearn")
                    )
                    ev = c.speedup()
                    print(
                        f"{name:18} {r:>3} {label:24} {errors[label]:>10.5f} "
                        f"{c.median_a:>9.3f} {ev.effect:>12.2f} [{ev.ci_low:.2f}, "
                        f"{ev.ci_high:.2f}]"
                    )
            print(
                f"{name:18} {r:>3} {'sklearn NMF (default)':24} "
                f"{errors['sklearn NMF (default)']:>10.5f} {c.median_b:>9.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
