"""Choose SMAVE's constants on validation seeds that the experiment's verdicts never read.

The experiment draws its synthetic data from seeds ``ctx.seed + offset`` with offsets
below 10^6 (``smave.experiment``); this script draws from offsets at or above
``VALIDATION_OFFSET`` = 7 * 10^6, so nothing chosen here is tested on the data that chose
it. For every configuration it prints the geometric mean of distance(SMAVE) /
distance(RMAVE) on the experiment's model family (single- and multi-index, p = 20 and 50,
n = 500 and 2000) and the mean distance on discrete and tied designs.

    uv run python packages/smave/benchmarks/validate_constants.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from smave import RMAVE, SMAVE, subspace_distance
from smave.synthetic import DISCRETE_KINDS, make_discrete_model, make_index_model
from threadpoolctl import threadpool_limits

VALIDATION_OFFSET = 7_000_000

CONFIGS = {
    "moments, no floor": dict(init="moments", bandwidth_floor=0.0),
    "moments, floor 0.5": dict(init="moments", bandwidth_floor=0.5),
    "auto, floor 0.5": dict(init="auto", bandwidth_floor=0.5),
    "auto, floor 1.0": dict(init="auto", bandwidth_floor=1.0),
}
BUDGETS = (200, 400, 800, 1600)
BUDGET_NS = (1000, 4000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    settings = [(m, p, n) for m in ("single", "multi") for p in (20, 50) for n in (500, 2000)]
    discrete = [(kind, m) for kind in DISCRETE_KINDS for m in ("single", "multi")]
    logr = {c: [] for c in CONFIGS}
    disc = {c: {s: [] for s in discrete} for c in [*CONFIGS, "RMAVE"]}
    ladder = {n: {T: [] for T in BUDGETS} for n in BUDGET_NS}
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        for s in range(args.seeds):
            for gi, (model, p, n) in enumerate(settings):
                rng = np.random.default_rng(VALIDATION_OFFSET + 1000 * gi + s)
                X, y, B0 = make_index_model(model, n, p, rng)
                d = B0.shape[0]
                dr = subspace_distance(RMAVE(d).fit(X, y).components_, B0)
                for c, kw in CONFIGS.items():
                    ds = subspace_distance(SMAVE(d, random_state=s, **kw).fit(X, y).components_, B0)
                    logr[c].append(np.log(ds / dr))
            for gi, (kind, model) in enumerate(discrete):
                rng = np.random.default_rng(VALIDATION_OFFSET + 500_000 + 1000 * gi + s)
                X, y, B0 = make_discrete_model(kind, model, 1000, 6, rng)
                d = B0.shape[0]
                disc["RMAVE"][(kind, model)].append(
                    subspace_distance(RMAVE(d).fit(X, y).components_, B0)
                )
                for c, kw in CONFIGS.items():
                    est = SMAVE(d, random_state=s, **kw).fit(X, y)
                    disc[c][(kind, model)].append(subspace_distance(est.components_, B0))
            for gi, n in enumerate(BUDGET_NS):
                rng = np.random.default_rng(VALIDATION_OFFSET + 900_000 + 1000 * gi + s)
                X, y, B0 = make_index_model("single", n, 20, rng)
                dr = subspace_distance(RMAVE(1).fit(X, y).components_, B0)
                for T in BUDGETS:
                    ds = subspace_distance(
                        SMAVE(1, max_iter=T, random_state=s).fit(X, y).components_, B0
                    )
                    ladder[n][T].append(np.log(ds / dr))
            print(f"seed {s} done, {time.perf_counter() - t0:.0f} s", flush=True)
    print(
        "\ncontinuous: geometric mean of distance(SMAVE) / distance(RMAVE) "
        f"over {len(settings)} settings x {args.seeds} seeds"
    )
    for c, v in logr.items():
        print(f"  {c:28s} {np.exp(np.mean(v)):.3f}  (worst {np.exp(np.max(v)):.2f})")
    print("\ndiscrete designs (n = 1000, p = 6): mean distance")
    head = "  ".join(f"{k[0][:5]}-{k[1][:5]}" for k in discrete)
    print(f"  {'':28s} {head}")
    for c, v in disc.items():
        print(f"  {c:28s} " + "  ".join(f"{np.mean(v[k]):11.3f}" for k in discrete))
    print(
        "\nbudget: geometric mean of distance(SMAVE at max_iter) / distance(RMAVE), "
        "single-index, p = 20"
    )
    for n, row in ladder.items():
        print(
            f"  n = {n:5d}: " + "  ".join(f"{T}: {np.exp(np.mean(v)):.2f}" for T, v in row.items())
        )


if __name__ == "__main__":
    main()
