"""Experiment ``smave``: subspace recovery, real-data prediction error, cost at equal accuracy.

Three parts, each against OPG and RMAVE (Xia et al., 2002) written in this package, with
the trivial floors beside them:

1. Synthetic subspace recovery at moderate-to-high ambient dimension: single- and
   multi-index models (:func:`smave.synthetic.make_index_model`), p = 20 and 50, two
   sample sizes, fresh seeds; ``||P_B - P_B0||_F`` per seed. Floors: a uniformly random
   subspace and SMAVE's start without a step ("stop at once").
2. Cost at equal accuracy: on the single-index model at p = 20 and growing n, SMAVE with
   its default budget (``max_iter="auto"``, which grows with n) and RMAVE are timed
   interleaved (:func:`icml26_core.timing.compare_times`, one round per seed), and
   their distances compared.
3. Real regression data that ship in registry packages (scikit-learn's diabetes,
   statsmodels' randhie, pydataset's diamonds, mlxtend's autompg): the out-of-fold
   squared error, relative to Var(y), of a kNN regressor (k by inner CV) on the
   ``d = 2`` reduced covariates, the reducer fitted on the training folds only; items
   (rows) are paired across methods. Floors: the training-fold mean, and kNN on all
   standardized features.

Every claim is decided by :mod:`icml26_core.stats` through the core's claim builders.
SMAVE's constants were chosen on validation seeds (``benchmarks/validate_constants.py``,
offsets >= 7 * 10^6) that no verdict here reads. All methods run with single-threaded
BLAS and OpenMP so that wall times compare algorithms, not thread schedulers.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table
from icml26_core.timing import compare_times
from sklearn.model_selection import KFold
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from smave.baselines import MAVE, OPG, RMAVE
from smave.metrics import subspace_distance
from smave.selection import default_regressor
from smave.smave import SMAVE, TiedNeighborsWarning
from smave.synthetic import make_index_model

Factory = Callable[[int, int], object]

MATCH_MARGIN = 0.2
"""'Matches RMAVE' in subspace recovery: SMAVE's distance at most 20% larger (geometric
mean over settings and seeds), fixed before any test run: about the seed-to-seed
coefficient of variation of either method at these n."""
REAL_MARGIN = 0.05
"""'Competitive with RMAVE' on real data: SMAVE's relative MSE at most 5% above RMAVE's."""
SPEEDUP = 100.0
"""'Orders of magnitude lower runtime': at least 100 times faster."""
REAL_DATASETS = ("diabetes", "randhie", "diamonds", "autompg")


class StartOnly(SMAVE):
    """SMAVE stopped at once: its start (``init``) without a single step (a floor)."""

    def _fit_whitened(self, Z, y, rng, W):
        k, _, n_pool, h_floor, _ = self._sizes(Z)
        self._ties = [0, 0]
        B, self.init_, _ = self._start(Z, y, rng, W, k, n_pool, h_floor)
        del self._ties
        return B


METHODS: dict[str, Factory] = {
    "SMAVE": lambda d, seed: SMAVE(d, random_state=seed),
    "SMAVE-simplified": lambda d, seed: SMAVE(d, variant="simplified", random_state=seed),
    "start only": lambda d, seed: StartOnly(d, random_state=seed),
    "OPG": lambda d, seed: OPG(d),
    "MAVE": lambda d, seed: MAVE(d),
    "RMAVE": lambda d, seed: RMAVE(d),
}

COLORS = {
    "SMAVE": "tab:blue",
    "SMAVE-simplified": "tab:cyan",
    "start only": "tab:olive",
    "OPG": "tab:orange",
    "MAVE": "tab:brown",
    "RMAVE": "tab:red",
    "random subspace": "tab:gray",
    "no reduction": "tab:gray",
    "mean predictor": "black",
}


def _timed_fit(est, X, y) -> float:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TiedNeighborsWarning)
        est.fit(X, y)
    return time.perf_counter() - t0


def _random_distance(B0: np.ndarray, rng: np.random.Generator) -> float:
    Q, _ = np.linalg.qr(rng.standard_normal((B0.shape[1], B0.shape[0])))
    return subspace_distance(Q.T, B0)


# --------------------------------------------------------------------------- part 1
def _synthetic(ctx: RunContext, methods: list[str]) -> tuple[Table, dict]:
    ps = ctx.pick([20], [20, 50], [20, 50, 100])
    ns = ctx.pick([200], [500, 2000], [500, 2000, 10000])
    n_seeds = ctx.pick(2, 5, 10)
    cols = ["model", "p", "n", "seeds", "random subspace", *methods, "SMAVE / RMAVE"]
    table = Table(
        title=f"Synthetic subspace recovery: mean ||P_B - P_B0||_F over {n_seeds} fresh seeds "
        "(lower is better; 0 = exact, sqrt(2 d0) = orthogonal)",
        columns=cols,
        note="SMAVE / RMAVE: geometric mean of the per-seed distance ratio. 'random subspace' "
        "and 'start only' (SMAVE's start, no step) are the floors.",
    )
    dists: dict[str, list[float]] = {m: [] for m in [*methods, "random subspace"]}
    records = []
    grid = [(mo, p, n) for mo in ("single", "multi") for p in ps for n in ns]
    for gi, (model, p, n) in enumerate(ctx.progress(grid, "synthetic recovery")):
        d0 = 1 if model == "single" else 2
        cell: dict[str, list[float]] = {m: [] for m in dists}
        for s in range(n_seeds):
            rng = ctx.rng(1000 * gi + s)
            X, y, B0 = make_index_model(model, n, p, rng)
            cell["random subspace"].append(_random_distance(B0, rng))
            for m in methods:
                est = METHODS[m](d0, ctx.seed + s)
                secs = _timed_fit(est, X, y)
                dd = subspace_distance(est.components_, B0)
                cell[m].append(dd)
                records.append(
                    dict(model=model, p=p, n=n, seed=s, method=m, distance=dd, time_s=secs)
                )
        row = dict(model=model, p=p, n=n, seeds=n_seeds)
        for m, v in cell.items():
            row[m] = float(np.mean(v))
            dists[m].extend(v)
        ratio = np.asarray(cell["SMAVE"]) / np.asarray(cell["RMAVE"])
        row["SMAVE / RMAVE"] = float(np.exp(np.mean(np.log(ratio))))
        table.add_row(**row)
    return table, {"distances": dists, "records": records}


# --------------------------------------------------------------------------- part 2
def _cost(ctx: RunContext) -> tuple[Table, dict]:
    p = ctx.pick(10, 20, 20)
    ns = ctx.pick([200, 400], [1000, 2000, 4000], [1000, 2000, 5000, 10000, 20000])
    n_seeds = ctx.pick(2, 5, 10)
    ladder = ctx.pick((400,), (400, 800, 1600, 3200), (400, 800, 1600, 3200, 6400))
    table = Table(
        title=f"Cost at equal accuracy: single-index model, p={p}, {n_seeds} seeds per n; "
        "SMAVE and RMAVE timed interleaved",
        columns=[
            "n",
            "seeds",
            "SMAVE steps",
            "SMAVE s",
            "RMAVE s",
            "speed-up",
            "SMAVE dist",
            "RMAVE dist",
            "start only dist",
            "SMAVE / RMAVE dist",
            "reached",
            "steps to reach",
            "s to reach",
            "speed-up at reach",
        ],
        note="SMAVE steps/s/dist: its default budget (max_iter='auto'). At the largest n SMAVE "
        f"is also run with {', '.join(map(str, ladder))} steps, and 'to reach' is the "
        f"smallest budget whose distance is within {MATCH_MARGIN:.0%} of RMAVE's on that "
        "seed (median over the seeds that reached). speed-up: median(RMAVE s) / median(SMAVE "
        "s) over interleaved rounds (one round per seed, order alternating); 'start only' is "
        "the floor (SMAVE's start, no step).",
    )
    out: dict[str, dict] = {}
    warm = make_index_model("single", 200, p, ctx.rng(80_000))
    for i, n in enumerate(ctx.progress(ns, "cost vs n")):
        data = [
            make_index_model("single", n, p, ctx.rng(90_000 + 100 * i + s)) for s in range(n_seeds)
        ]
        budgets = ["auto", *(ladder if n == ns[-1] else ())]
        fits: dict[str, list] = {"SMAVE": [], "RMAVE": []}
        queue = {"SMAVE": [warm, *data], "RMAVE": [warm, *data]}

        def smave_round(queue=queue, fits=fits, budgets=budgets) -> None:
            X, y, B0 = queue["SMAVE"].pop(0)
            runs = []
            for T in budgets:
                est = SMAVE(1, max_iter=T, random_state=ctx.seed)
                secs = _timed_fit(est, X, y)
                runs.append((est.n_iter_, secs, subspace_distance(est.components_, B0)))
            fits["SMAVE"].append(runs)

        def rmave_round(queue=queue, fits=fits) -> None:
            X, y, B0 = queue["RMAVE"].pop(0)
            est = RMAVE(1).fit(X, y)
            fits["RMAVE"].append(subspace_distance(est.components_, B0))

        cmp = compare_times(
            smave_round, rmave_round, repeats=n_seeds, warmup=1, names=("SMAVE", "RMAVE")
        )
        runs, dr = fits["SMAVE"][1:], fits["RMAVE"][1:]
        t_smave = [r[0][1] for r in runs]
        ds = [r[0][2] for r in runs]
        reach = [
            next(((T, t) for T, t, dd in r if dd <= (1 + MATCH_MARGIN) * d_r), None)
            for r, d_r in zip(runs, dr, strict=True)
        ]
        d_start = [
            subspace_distance(StartOnly(1, random_state=ctx.seed).fit(X, y).components_, B0)
            for X, y, B0 in data
        ]
        ratio = np.asarray(ds) / np.asarray(dr)
        t_rmave = list(cmp.times_b)
        row = dict(
            n=n,
            seeds=n_seeds,
            **{
                "SMAVE steps": runs[0][0][0],
                "SMAVE s": float(np.median(t_smave)),
                "RMAVE s": float(np.median(t_rmave)),
                "speed-up": float(np.median(t_rmave) / np.median(t_smave)),
                "SMAVE dist": float(np.mean(ds)),
                "RMAVE dist": float(np.mean(dr)),
                "start only dist": float(np.mean(d_start)),
                "SMAVE / RMAVE dist": float(np.exp(np.mean(np.log(ratio)))),
                "reached": sum(r is not None for r in reach),
            },
        )
        got = [r for r in reach if r is not None]
        if got:
            row["steps to reach"] = float(np.median([T for T, _ in got]))
            row["s to reach"] = float(np.median([t for _, t in got]))
            row["speed-up at reach"] = float(np.median(t_rmave) / row["s to reach"])
        table.add_row(**row)
        out[str(n)] = dict(
            n=n,
            times_smave=t_smave,
            times_rmave=t_rmave,
            dist_smave=ds,
            dist_rmave=dr,
            dist_start=d_start,
            steps=runs[0][0][0],
            ladder=[list(map(list, r)) for r in runs],
            reach_steps=[None if r is None else r[0] for r in reach],
            reach_s=[None if r is None else r[1] for r in reach],
        )
    return table, {"p": p, "by_n": out}


def _slopes(cost: dict) -> Table:
    table = Table(
        title="Fitted slope of log(median time) against log(n) (1 = linear, 2 = quadratic)",
        columns=["method", "slope", "n range"],
    )
    rows = list(cost["by_n"].values())
    ns = np.array([r["n"] for r in rows], dtype=float)
    for m, key in (("SMAVE", "times_smave"), ("RMAVE", "times_rmave")):
        t = np.array([np.median(r[key]) for r in rows])
        slope = float(np.polyfit(np.log(ns), np.log(t), 1)[0]) if len(ns) >= 2 else None
        table.add_row(method=m, slope=slope, **{"n range": f"{int(ns[0])}-{int(ns[-1])}"})
    return table


# --------------------------------------------------------------------------- part 3
def _load_real(name: str, n_max: int, rng: np.random.Generator):
    from icml26_core.datasets import load_tabular

    X, y, meta = load_tabular(name)
    if X.shape[0] > n_max:
        idx = rng.choice(X.shape[0], n_max, replace=False)
        X, y = X[idx], y[idx]
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), meta


def _real(ctx: RunContext, methods: list[str]) -> tuple[Table, Table, dict, list[str]]:
    names = ctx.pick(("diabetes",), REAL_DATASETS)
    n_max = ctx.pick(200, 2000, 10000)
    folds = ctx.pick(3, 5, 5)
    d = 2
    floors = ["mean predictor", "no reduction"]
    err_table = Table(
        title=f"Real data: {folds}-fold out-of-fold squared error / Var(y) of kNN on the d={d} "
        "reduced covariates (lower is better), mean over rows",
        columns=["dataset", "n", "p", *floors, *methods],
        note=f"Data sets above {n_max} rows are subsampled to {n_max}. Floors: 'mean predictor' "
        "(the training-fold mean) and 'no reduction' (kNN on all standardized features); "
        "'start only' is SMAVE's start without a step.",
    )
    time_table = Table(
        title="Real data: mean fit time of the reducer per fold (s)",
        columns=["dataset", "n", "p", *methods, "RMAVE / SMAVE"],
    )
    per_item: dict[str, dict[str, list[float]]] = {}
    skipped = []
    for di, name in enumerate(ctx.progress(names, "real data")):
        try:
            X, y, _ = _load_real(name, n_max, ctx.rng(50_000 + di))
        except Exception as exc:  # a missing carrier package must not sink the run
            skipped.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        var = float(np.var(y))
        kf = KFold(folds, shuffle=True, random_state=ctx.seed)
        sq = {m: np.zeros(len(y)) for m in [*floors, *methods]}
        times: dict[str, list[float]] = {m: [] for m in methods}
        for tr, te in kf.split(X):
            sq["mean predictor"][te] = (y[te] - y[tr].mean()) ** 2 / var
            sc = StandardScaler().fit(X[tr])
            sq["no reduction"][te] = (
                _knn_sq(sc.transform(X[tr]), y[tr], sc.transform(X[te]), y[te]) / var
            )
            for m in methods:
                est = METHODS[m](d, ctx.seed)
                times[m].append(_timed_fit(est, X[tr], y[tr]))
                Ztr, Zte = est.transform(X[tr]), est.transform(X[te])
                sc2 = StandardScaler().fit(Ztr)
                sq[m][te] = _knn_sq(sc2.transform(Ztr), y[tr], sc2.transform(Zte), y[te]) / var
        per_item[name] = {m: v.tolist() for m, v in sq.items()}
        err_table.add_row(
            dataset=name,
            n=X.shape[0],
            p=X.shape[1],
            **{m: float(np.mean(v)) for m, v in sq.items()},
        )
        mt = {m: float(np.mean(v)) for m, v in times.items()}
        time_table.add_row(
            dataset=name,
            n=X.shape[0],
            p=X.shape[1],
            **mt,
            **{"RMAVE / SMAVE": mt["RMAVE"] / mt["SMAVE"]},
        )
    return err_table, time_table, per_item, skipped


def _knn_sq(Xtr, ytr, Xte, yte) -> np.ndarray:
    reg = default_regressor().fit(Xtr, ytr)
    return (reg.predict(Xte) - yte) ** 2


# --------------------------------------------------------------------------- figure
def _figure(ctx: RunContext, synth: Table, methods: list[str], cost: dict, err: Table) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    ax = axes[0]
    labels = [f"{r['model'][0]} p{r['p']} n{r['n']}" for r in synth.rows]
    shown = [m for m in ("SMAVE", "RMAVE", "OPG", "start only") if m in methods]
    width = 0.8 / len(shown)
    for i, m in enumerate(shown):
        ax.bar(
            np.arange(len(labels)) + i * width,
            [r[m] for r in synth.rows],
            width,
            label=m,
            color=COLORS[m],
        )
    ax.set_yscale("log")
    ax.set_xticks(
        np.arange(len(labels)) + 0.4 - width / 2, labels, rotation=45, ha="right", fontsize=7
    )
    ax.set_ylabel("mean ||P_B - P_B0||_F")
    ax.set_title("synthetic recovery (fresh seeds)")
    ax.legend(fontsize=8)
    ax = axes[1]
    rows = list(cost["by_n"].values())
    ns = [r["n"] for r in rows]
    for m, key in (("SMAVE", "times_smave"), ("RMAVE", "times_rmave")):
        label = "SMAVE, default budget" if m == "SMAVE" else m
        ax.loglog(ns, [np.median(r[key]) for r in rows], marker="o", label=label, color=COLORS[m])
    reach = [t for t in rows[-1].get("reach_s", []) if t is not None]
    if reach:
        ax.loglog(
            [ns[-1]],
            [np.median(reach)],
            marker="*",
            markersize=12,
            linestyle="none",
            color=COLORS["SMAVE"],
            label="SMAVE, budget reaching RMAVE's accuracy",
        )
    ax.set_xlabel("n")
    ax.set_ylabel("median fit time (s)")
    ax.set_title(f"fit time, single-index, p={cost['p']}")
    ax.legend(fontsize=8)
    ax = axes[2]
    names = [r["dataset"] for r in err.rows]
    cols = ["mean predictor", "no reduction", *[m for m in methods if m != "start only"]]
    width = 0.8 / len(cols)
    for i, m in enumerate(cols):
        ax.bar(
            np.arange(len(names)) + i * width,
            [r[m] for r in err.rows],
            width,
            label=m,
            color=COLORS[m],
        )
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
    ax.set_ylabel("out-of-fold MSE / Var(y)")
    ax.set_title("kNN on the d=2 reduced covariates")
    ax.legend(fontsize=7)
    fig.tight_layout()
    ctx.save_figure(fig, "smave")


# --------------------------------------------------------------------------- claims
def _claims(ctx: RunContext, synth: dict, cost: dict, per_item: dict) -> list[Claim]:
    dist = synth["distances"]
    claims = [
        Claim.non_inferior(
            "SMAVE matches or improves on RMAVE's synthetic subspace recovery at "
            "moderate-to-high ambient dimension",
            dist["SMAVE"],
            dist["RMAVE"],
            margin=MATCH_MARGIN,
            log_ratio=True,
            names=("SMAVE", "RMAVE"),
            metric="subspace distance, every setting with p >= 20 and every fresh seed paired",
            higher_is_better=False,
        )
    ]
    opg_parts, rmave_parts = [], []
    for name, sq in per_item.items():
        opg_parts.append(
            Claim.all_of(
                f"{name}: SMAVE improves over OPG, beyond the mean-predictor floor",
                [
                    Claim.superior(
                        f"{name}: SMAVE's error is lower than OPG's",
                        sq["SMAVE"],
                        sq["OPG"],
                        names=("SMAVE", "OPG"),
                        test="t",
                        metric="out-of-fold squared error / Var(y), paired over rows",
                        higher_is_better=False,
                    ),
                    Claim.superior(
                        f"{name}: SMAVE's error is lower than the mean predictor's",
                        sq["SMAVE"],
                        sq["mean predictor"],
                        names=("SMAVE", "mean predictor"),
                        test="t",
                        metric="out-of-fold squared error / Var(y), paired over rows",
                        higher_is_better=False,
                    ),
                ],
            )
        )
        rmave_parts.append(
            Claim.non_inferior(
                f"{name}: SMAVE is competitive with or better than RMAVE",
                sq["SMAVE"],
                sq["RMAVE"],
                margin=REAL_MARGIN * float(np.mean(sq["RMAVE"])),
                names=("SMAVE", "RMAVE"),
                test="t",
                higher_is_better=False,
                metric=f"out-of-fold squared error / Var(y), paired over rows; margin = "
                f"{REAL_MARGIN:.0%} of RMAVE's mean",
            )
        )
    n_real = len(ctx.pick(("diabetes",), REAL_DATASETS))
    missing = n_real - len(per_item)
    ran = Claim.check(
        f"all {n_real} real data sets ran",
        "every data set loaded and ran",
        {"data sets run": len(per_item), "data sets required": n_real},
        lambda v: v["data sets run"] == v["data sets required"],
    )
    claims.append(
        Claim.all_of(
            "On four real data sets SMAVE uniformly improves over OPG"
            + ("" if n_real == 4 else f" (smoke: {', '.join(per_item)} only)"),
            [*opg_parts, *([ran] if missing else [])],
            rule="on every real data set: SMAVE's out-of-fold error below OPG's and below the "
            "mean predictor's (paired t over rows); every data set ran",
        )
    )
    claims.append(
        Claim.all_of(
            "On the real data SMAVE is competitive with or outperforms RMAVE",
            [*rmave_parts, *([ran] if missing else [])],
            rule=f"on every real data set: SMAVE's out-of-fold error at most {REAL_MARGIN:.0%} "
            "above RMAVE's (non-inferiority, paired t over rows)",
        )
    )
    last = list(cost["by_n"].values())[-1]
    n_big = last["n"]
    reached = [t for t in last["reach_s"] if t is not None]
    # a seed that never reached gets the time of its largest budget: a lower bound on its
    # time to reach, so the speed-up can only be overstated, and the claim needs every
    # seed to reach anyway
    t_reach = [
        t if t is not None else r[-1][1]
        for t, r in zip(last["reach_s"], last["ladder"], strict=True)
    ]
    claims.append(
        Claim.all_of(
            "SMAVE reaches RMAVE's accuracy at orders of magnitude lower runtime",
            [
                Claim.check(
                    f"n={n_big}: SMAVE reaches RMAVE's accuracy on every seed",
                    f"on every seed, some budget of the ladder gives a distance within "
                    f"{MATCH_MARGIN:.0%} of RMAVE's",
                    {"seeds reached": len(reached), "seeds": len(last["reach_s"])},
                    lambda v: v["seeds reached"] == v["seeds"],
                ),
                Claim.faster(
                    f"n={n_big}: SMAVE at the budget that reaches RMAVE's accuracy is at least "
                    f"{SPEEDUP:.0f} times faster than RMAVE (a seed that never reached counts "
                    "with the time of its largest budget)",
                    t_reach,
                    last["times_rmave"],
                    at_least=SPEEDUP,
                    names=("SMAVE", "RMAVE"),
                    paired=True,
                ),
            ],
            rule=f"at the largest n run (n={n_big}): on every seed SMAVE reaches a distance within "
            f"{MATCH_MARGIN:.0%} of RMAVE's, and at that budget it is at least {SPEEDUP:.0f}x "
            "faster (interleaved rounds, ratio of medians)",
        )
    )
    return claims


def run(ctx: RunContext) -> Result:
    """Run the three parts at ``ctx.scale`` and decide the claims from the measurements."""
    methods = ctx.pick(
        ["SMAVE", "start only", "OPG", "RMAVE"],
        ["SMAVE", "SMAVE-simplified", "start only", "OPG", "RMAVE"],
        ["SMAVE", "SMAVE-simplified", "start only", "OPG", "MAVE", "RMAVE"],
    )
    with threadpool_limits(limits=1):
        synth_table, synth = _synthetic(ctx, methods)
        cost_table, cost = _cost(ctx)
        err, fit_times, per_item, skipped = _real(ctx, methods)
    slopes = _slopes(cost)
    _figure(ctx, synth_table, methods, cost, err)
    claims = _claims(ctx, synth, cost, per_item)
    notes = [
        "Wall times are measured with single-threaded BLAS and OpenMP (threadpoolctl) on "
        "this machine; SMAVE and RMAVE are timed interleaved in one process.",
        "SMAVE: Riemannian SGA, 32 centres per step, k <= 50 projected-space neighbours "
        "refreshed every 20 steps, tie-aware bandwidth floor, the better of a moment and a "
        "subsampled-OPG start, max_iter='auto' (grows with n), projectors of the last half "
        "averaged; OPG/MAVE: ambient nearest-neighbour kernel; RMAVE: dense projected "
        "Gaussian kernel, started from OPG, at most 30 iterations.",
        f"Margins, fixed before the runs: 'matches RMAVE' = distance at most "
        f"{MATCH_MARGIN:.0%} larger; 'competitive' on real data = error at most "
        f"{REAL_MARGIN:.0%} larger; 'orders of magnitude' = at least {SPEEDUP:.0f}x.",
    ]
    notes += [f"real data set skipped: {s}" for s in skipped]
    return Result(
        tables=[synth_table, cost_table, slopes, err, fit_times],
        claims=claims,
        notes=notes,
        data={"synthetic": synth["records"], "cost": cost},
    )


EXPERIMENT = Experiment(
    name="smave",
    title="SMAVE: sufficient dimension reduction by Riemannian stochastic gradient ascent of "
    "the MAVE criterion on the Stiefel manifold",
    claim="SMAVE matches RMAVE's subspace recovery at moderate-to-high dimension, beats OPG on "
    "four real data sets and reaches RMAVE's accuracy at orders of magnitude lower runtime.",
    run=run,
)
