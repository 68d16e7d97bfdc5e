"""Experiment ``smave``: subspace recovery, real-data prediction error and runtime.

Three parts, each against OPG and RMAVE (Xia et al., 2002) written in this package:

1. Synthetic subspace recovery: single- and multi-index models
   (:func:`smave.synthetic.make_index_model`) over a grid of ambient dimensions p and
   sample sizes n, ``||P_B - P_B0||_F`` over seeds (mean and standard deviation).
2. Real regression data that ship in registry packages (scikit-learn's diabetes,
   statsmodels' randhie, pydataset's diamonds, mlxtend's autompg): the 5-fold
   cross-validated mean squared error, relative to Var(y), of a kNN regressor (k by
   inner CV) on the ``d = 2`` reduced covariates; the reducer is fitted on each
   training fold only.
3. Fit time against n on the single-index model (log-log, fitted slopes).

All methods run with single-threaded BLAS and OpenMP so that wall times compare algorithms, not
thread schedulers.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table
from sklearn.model_selection import KFold
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from smave.baselines import MAVE, OPG, RMAVE
from smave.metrics import subspace_distance
from smave.selection import default_regressor
from smave.smave import SMAVE
from smave.synthetic import make_index_model

Factory = Callable[[int, int], object]

METHODS: dict[str, Factory] = {
    "SMAVE": lambda d, seed: SMAVE(d, random_state=seed),
    "SMAVE-simplified": lambda d, seed: SMAVE(d, variant="simplified", random_state=seed),
    "OPG": lambda d, seed: OPG(d),
    "MAVE": lambda d, seed: MAVE(d),
    "RMAVE": lambda d, seed: RMAVE(d),
}

REAL_DATASETS = ("diabetes", "randhie", "diamonds", "autompg")

COLORS = {
    "SMAVE": "tab:blue",
    "SMAVE-simplified": "tab:cyan",
    "OPG": "tab:orange",
    "MAVE": "tab:brown",
    "RMAVE": "tab:red",
    "no reduction": "tab:gray",
}


def _timed_fit(est, X, y) -> float:
    t0 = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t0


def _synthetic(ctx: RunContext, methods: list[str]) -> tuple[Table, list[dict]]:
    ps = ctx.pick([8], [10, 20, 50], [10, 20, 50, 100])
    ns = ctx.pick([400], [500, 2000], [500, 2000, 10000])
    n_seeds = ctx.pick(1, 3, 10)
    columns = ["model", "p", "n"]
    for m in methods:
        columns += [m, f"{m} sd"]
    table = Table(
        title=f"Subspace distance ||P_B - P_B0||_F (mean and sd over {n_seeds} seeds; lower "
        "is better; 0 = exact, sqrt(2 d0) = orthogonal)",
        columns=columns,
    )
    records = []
    grid = [(mo, p, n) for mo in ("single", "multi") for p in ps for n in ns]
    for gi, (model, p, n) in enumerate(ctx.progress(grid, "synthetic recovery")):
        d0 = 1 if model == "single" else 2
        dist = {m: [] for m in methods}
        for s in range(n_seeds):
            X, y, B0 = make_index_model(model, n, p, ctx.rng(1000 * gi + s))
            for m in methods:
                est = METHODS[m](d0, ctx.seed + s)
                secs = _timed_fit(est, X, y)
                dd = subspace_distance(est.components_, B0)
                dist[m].append(dd)
                records.append(
                    dict(model=model, p=p, n=n, seed=s, method=m, distance=dd, time_s=secs)
                )
        row = dict(model=model, p=p, n=n)
        for m in methods:
            row[m] = float(np.mean(dist[m]))
            row[f"{m} sd"] = float(np.std(dist[m]))
        table.add_row(**row)
    return table, records


def _load_real(name: str, n_max: int, rng: np.random.Generator):
    from icml26_core.datasets import load_tabular

    X, y, meta = load_tabular(name)
    if X.shape[0] > n_max:
        idx = rng.choice(X.shape[0], n_max, replace=False)
        X, y = X[idx], y[idx]
    return X, np.asarray(y, dtype=np.float64), meta


def _real(ctx: RunContext, methods: list[str]) -> tuple[Table, Table, list[dict], list[str]]:
    names = ctx.pick(("diabetes",), REAL_DATASETS)
    n_max = ctx.pick(300, 2000, 10000)
    folds = ctx.pick(3, 5, 5)
    d = 2
    cols = ["dataset", "n", "p", "no reduction", *methods]
    err_table = Table(
        title=f"Real data: {folds}-fold CV mean squared error / Var(y) of kNN on the d={d} "
        "reduced covariates (lower is better)",
        columns=cols,
        note=f"Data sets above {n_max} rows are subsampled to {n_max}; 'no reduction' is kNN "
        "on all standardized features.",
    )
    time_table = Table(
        title="Real data: mean fit time of the reducer per fold (s)",
        columns=["dataset", "n", "p", *methods],
    )
    records, skipped = [], []
    for di, name in enumerate(ctx.progress(names, "real data")):
        try:
            X, y, _ = _load_real(name, n_max, ctx.rng(50_000 + di))
        except Exception as exc:  # a missing carrier package must not sink the run
            skipped.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        var = float(np.var(y))
        kf = KFold(folds, shuffle=True, random_state=ctx.seed)
        errs = {m: [] for m in ["no reduction", *methods]}
        times = {m: [] for m in methods}
        for tr, te in kf.split(X):
            sc = StandardScaler().fit(X[tr])
            errs["no reduction"].append(
                _knn_error(sc.transform(X[tr]), y[tr], sc.transform(X[te]), y[te]) / var
            )
            for m in methods:
                est = METHODS[m](d, ctx.seed)
                times[m].append(_timed_fit(est, X[tr], y[tr]))
                Ztr, Zte = est.transform(X[tr]), est.transform(X[te])
                sc2 = StandardScaler().fit(Ztr)
                errs[m].append(
                    _knn_error(sc2.transform(Ztr), y[tr], sc2.transform(Zte), y[te]) / var
                )
        row = dict(dataset=name, n=X.shape[0], p=X.shape[1])
        row.update({m: float(np.mean(v)) for m, v in errs.items()})
        err_table.add_row(**row)
        time_table.add_row(
            dataset=name,
            n=X.shape[0],
            p=X.shape[1],
            **{m: float(np.mean(times[m])) for m in methods},
        )
        for m, v in errs.items():
            records.append(dict(dataset=name, method=m, rel_mse=v, time_s=times.get(m)))
    return err_table, time_table, records, skipped


def _knn_error(Xtr, ytr, Xte, yte) -> float:
    reg = default_regressor().fit(Xtr, ytr)
    return float(np.mean((reg.predict(Xte) - yte) ** 2))


def _runtime(ctx: RunContext) -> tuple[Table, Table, dict]:
    p = ctx.pick(10, 20, 50)
    ns = ctx.pick(
        [300, 600], [500, 1000, 2000, 5000, 10000], [1000, 2000, 5000, 10000, 20000, 50000]
    )
    rmave_max = ctx.pick(600, 10000, 20000)
    methods = ["SMAVE", "OPG", "RMAVE"]
    table = Table(
        title=f"Fit time (s) against n, single-index model, p={p} and subspace distance "
        "to the truth",
        columns=["n"]
        + [f"{m} s" for m in methods]
        + [f"{m} dist" for m in methods]
        + ["RMAVE / SMAVE"],
    )
    times = {m: [] for m in methods}
    used_n = {m: [] for m in methods}
    for i, n in enumerate(ctx.progress(ns, "runtime vs n")):
        X, y, B0 = make_index_model("single", n, p, ctx.rng(90_000 + i))
        row = dict(n=n)
        for m in methods:
            if m == "RMAVE" and n > rmave_max:
                continue
            est = METHODS[m](1, ctx.seed)
            secs = _timed_fit(est, X, y)
            times[m].append(secs)
            used_n[m].append(n)
            row[f"{m} s"] = secs
            row[f"{m} dist"] = subspace_distance(est.components_, B0)
        if "RMAVE s" in row:
            row["RMAVE / SMAVE"] = row["RMAVE s"] / row["SMAVE s"]
        table.add_row(**row)
    slopes = Table(
        title="Fitted slope of log(time) against log(n) (1 = linear, 2 = quadratic)",
        columns=["method", "slope", "n range"],
    )
    for m in methods:
        if len(used_n[m]) >= 2:
            slope = float(np.polyfit(np.log(used_n[m]), np.log(times[m]), 1)[0])
            slopes.add_row(method=m, slope=slope, **{"n range": f"{used_n[m][0]}-{used_n[m][-1]}"})
    return table, slopes, {"n": used_n, "time_s": times, "p": p}


def _figure(ctx: RunContext, synth: Table, methods: list[str], runtime: dict, err: Table) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    ax = axes[0]
    rows = [r for r in synth.rows if r["model"] == "multi"] or synth.rows
    n_big = max(r["n"] for r in rows)
    rows = [r for r in rows if r["n"] == n_big]
    ps = [r["p"] for r in rows]
    for m in methods:
        ax.errorbar(
            ps,
            [r[m] for r in rows],
            yerr=[r[f"{m} sd"] for r in rows],
            marker="o",
            capsize=3,
            label=m,
            color=COLORS[m],
        )
    ax.set_xscale("log")
    ax.set_xticks(ps, [str(p) for p in ps])
    ax.minorticks_off()
    ax.set_xlabel("ambient dimension p")
    ax.set_ylabel("||P_B - P_B0||_F")
    ax.set_title(f"{rows[0]['model']}-index model, n={n_big}")
    ax.legend(fontsize=8)
    ax = axes[1]
    for m, ns in runtime["n"].items():
        t = runtime["time_s"][m]
        slope = np.polyfit(np.log(ns), np.log(t), 1)[0] if len(ns) >= 2 else float("nan")
        ax.loglog(ns, t, marker="o", label=f"{m} (slope {slope:.2f})", color=COLORS[m])
    ax.set_xlabel("n")
    ax.set_ylabel("fit time (s)")
    ax.set_title(f"fit time, single-index, p={runtime['p']}")
    ax.legend(fontsize=8)
    ax = axes[2]
    names = [r["dataset"] for r in err.rows]
    cols = ["no reduction", *methods]
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
    ax.set_ylabel("CV MSE / Var(y)")
    ax.set_title("kNN on the d=2 reduced covariates")
    ax.legend(fontsize=8)
    fig.tight_layout()
    ctx.save_figure(fig, "smave")


def run(ctx: RunContext) -> Result:
    """Run the three parts at ``ctx.scale`` and decide the claims from the measurements."""
    methods = ctx.pick(
        ["SMAVE", "SMAVE-simplified", "OPG", "RMAVE"],
        ["SMAVE", "SMAVE-simplified", "OPG", "RMAVE"],
        ["SMAVE", "SMAVE-simplified", "OPG", "MAVE", "RMAVE"],
    )
    with threadpool_limits(limits=1):
        synth, synth_records = _synthetic(ctx, methods)
        err, fit_times, real_records, skipped = _real(ctx, methods)
        rt, slopes, runtime = _runtime(ctx)
    _figure(ctx, synth, methods, runtime, err)

    p_hi = sorted({r["p"] for r in synth.rows})
    p_hi = [p for p in p_hi if p >= min(20, max(p_hi))]
    pairs = {
        f"{r['model']} p={r['p']} n={r['n']}": (r["SMAVE"], r["RMAVE"])
        for r in synth.rows
        if r["p"] in p_hi
    }
    claims = [
        Claim.check(
            "SMAVE matches or improves RMAVE's synthetic subspace recovery at moderate-to-high "
            "ambient dimension",
            f"in every setting with p >= {min(p_hi)}: mean distance(SMAVE) <= 1.1 x mean "
            "distance(RMAVE) + 0.01",
            {"SMAVE, RMAVE mean distance": pairs},
            lambda v: all(s <= 1.1 * r + 0.01 for s, r in v["SMAVE, RMAVE mean distance"].values()),
        )
    ]
    real = {r["dataset"]: (r["SMAVE"], r["OPG"], r["RMAVE"]) for r in err.rows}
    claims.append(
        Claim.check(
            "On four real data sets SMAVE uniformly improves over OPG",
            "on every real data set run: CV relative MSE(SMAVE) < CV relative MSE(OPG), "
            "and all four data sets ran",
            {
                "SMAVE, OPG, RMAVE relative MSE": real,
                "n datasets": len(real),
                "n required": len(ctx.pick(("diabetes",), REAL_DATASETS)),
            },
            lambda v: (
                v["n datasets"] == v["n required"]
                and all(s < o for s, o, _ in v["SMAVE, OPG, RMAVE relative MSE"].values())
            ),
        )
    )
    claims.append(
        Claim.check(
            "On the real data SMAVE is competitive with or outperforms RMAVE",
            "on every real data set run: CV relative MSE(SMAVE) <= 1.05 x CV relative MSE(RMAVE)",
            {"SMAVE, OPG, RMAVE relative MSE": real},
            lambda v: (
                len(v["SMAVE, OPG, RMAVE relative MSE"]) > 0
                and all(s <= 1.05 * r for s, _, r in v["SMAVE, OPG, RMAVE relative MSE"].values())
            ),
        )
    )
    both = [r for r in rt.rows if r.get("RMAVE / SMAVE") is not None]
    last = both[-1]
    claims.append(
        Claim.check(
            "SMAVE is orders of magnitude faster than RMAVE at large n",
            f"at the largest n where both ran (n={last['n']}): time(RMAVE) / time(SMAVE) >= 100",
            {
                "n": last["n"],
                "RMAVE s": last["RMAVE s"],
                "SMAVE s": last["SMAVE s"],
                "ratio": last["RMAVE / SMAVE"],
            },
            lambda v: v["ratio"] >= 100,
        )
    )
    notes = [
        "Wall times are measured with single-threaded BLAS and OpenMP (threadpoolctl) on "
        "this machine.",
        "SMAVE: 200 Riemannian SGA steps of 32 centres with k <= 50 projected-space "
        "neighbours refreshed every 20 steps, projectors of the last half averaged; "
        "OPG/MAVE: ambient nearest-neighbour kernel; RMAVE: dense projected Gaussian kernel, "
        "started from OPG, at most 30 iterations.",
    ]
    notes += [f"real data set skipped: {s}" for s in skipped]
    return Result(
        tables=[synth, err, fit_times, rt, slopes],
        claims=claims,
        notes=notes,
        data={"synthetic": synth_records, "real": real_records, "runtime": runtime},
    )


EXPERIMENT = Experiment(
    name="smave",
    title="SMAVE: sufficient dimension reduction by Riemannian stochastic gradient ascent of "
    "the MAVE criterion on the Stiefel manifold",
    claim="SMAVE matches RMAVE's subspace recovery at moderate-to-high dimension, beats OPG on "
    "four real data sets and is orders of magnitude faster than RMAVE at large n.",
    run=run,
)
