"""Experiment ``bo-stopping``: acquisition x stopping-rule pairs by cost-adjusted simple regret.

Settings: BoTorch's Ackley, Levy and Rosenbrock (rescaled to best 0, median -1)
with a known cost that varies a hundredfold over the domain, and
hyperparameter optimization of scikit-learn's histogram gradient boosting on
real data sets (breast_cancer, digits from scikit-learn; fair from
statsmodels), where the cost is the measured training time of each
configuration (tabulated once on a Sobol grid, so all methods and seeds see
the same times). Each run uses one acquisition (PBGI, LogEIPC, or BoTorch's
cost-unaware LogEI) up to a budget; every stopping rule is monitored on the
same trajectory, and its cost-adjusted simple regret is read at its stopping
step (identical to running with that rule, since a rule only reads the past).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from icml26_core.device import torch_threads
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table

ACQ_LABELS = {"pbgi": "PBGI", "logeipc": "LogEIPC", "logei": "LogEI"}
RULE_KEYS = ("ours", "budget", "ei", "pi", "gap")
RULE_LABELS = {
    "ours": "ours",
    "budget": "budget",
    "ei": "EI<1%",
    "pi": "PI<1%",
    "gap": "UCB-LCB<1%",
}
OURS = [("pbgi", "ours"), ("logeipc", "ours")]


def _rules(budget: int) -> dict[str, Any]:
    from bo_stopping.stopping import (
        CostAwareStopping,
        ExpectedImprovementThreshold,
        FixedBudget,
        ProbabilityOfImprovementThreshold,
        RegretGapStopping,
    )

    rules = {
        "ours": CostAwareStopping(lmbda=1.0),
        "budget": FixedBudget(budget),
        "ei": ExpectedImprovementThreshold(0.01, relative=True),
        "pi": ProbabilityOfImprovementThreshold(0.01),
        "gap": RegretGapStopping(0.01, beta=4.0, relative=True),
    }
    for key, rule in rules.items():
        rule.name = key
    return rules


def run_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one (setting, seed, acquisition) BO trajectory, on one torch thread."""
    # GP fits on a dozen points thrash with several intra-op threads on 2 cores.
    with torch_threads(1):
        return _run_job(spec)


def _run_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one (setting, seed, acquisition) BO trajectory and score every rule on it."""
    import torch

    from bo_stopping.loop import run_bo
    from bo_stopping.problems import synthetic_problem

    budget = spec["budget"]
    rules = _rules(budget)
    common = {
        "acquisition": spec["acq"],
        "monitor": list(rules.values()),
        "max_evaluations": budget,
        "seed": spec["seed"],
        "optimum": 0.0,
        "num_restarts": spec["num_restarts"],
        "raw_samples": spec["raw_samples"],
    }
    if spec["kind"] == "synthetic":
        prob = synthetic_problem(spec["function"], spec["dim"], spec["seed"], c0=spec["c0"])
        res = run_bo(prob.objective, prob.bounds, prob.cost, **common)
    else:
        configs = torch.as_tensor(spec["configs"], dtype=torch.float64)
        values, costs = spec["objective"], spec["costs"]
        index = {tuple(row.tolist()): i for i, row in enumerate(configs)}

        def lookup(x: torch.Tensor) -> tuple[float, float]:
            i = index[tuple(x.tolist())]
            return float(values[i]), float(costs[i])

        bounds = torch.stack([torch.zeros(configs.shape[1]), torch.ones(configs.shape[1])])
        res = run_bo(lookup, bounds, "observed", candidates=configs, **common)
    regret = res.regret
    return {
        "setting": spec["setting"],
        "seed": spec["seed"],
        "acq": spec["acq"],
        "regret": regret.tolist(),
        "cumulative_cost": res.cumulative_cost.tolist(),
        "stop": {key: res.stop_step(key) for key in rules},
    }


def _run_all(ctx: RunContext, specs: list[dict[str, Any]], n_jobs: int) -> list[dict[str, Any]]:
    if n_jobs <= 1:
        return list(ctx.progress((run_job(s) for s in specs), "BO runs", total=len(specs)))
    from joblib import Parallel, delayed

    gen = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
        delayed(run_job)(s) for s in specs
    )
    return list(ctx.progress(gen, "BO runs", total=len(specs)))


def _score(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for run in runs:
        r0 = run["regret"][0]
        for key, step in run["stop"].items():
            rows.append(
                {
                    "setting": run["setting"],
                    "seed": run["seed"],
                    "acq": run["acq"],
                    "rule": key,
                    "regret": run["regret"][step],
                    "relative": run["regret"][step] / r0,
                    "evaluations": step,
                    "cost": run["cumulative_cost"][step] - run["cumulative_cost"][0],
                }
            )
    return rows


def _figure(ctx: RunContext, runs: list[dict[str, Any]], scored: list[dict[str, Any]], settings):
    import matplotlib.pyplot as plt

    n = len(settings)
    cols = min(3, n)
    rows_n = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.2 * cols, 3.4 * rows_n), squeeze=False)
    colors = {"pbgi": "C0", "logeipc": "C1", "logei": "C2"}
    markers = {"ours": "*", "budget": "s", "ei": "^", "pi": "v", "gap": "D"}
    for ax, setting in zip(axes.flat, settings, strict=False):
        for acq in ACQ_LABELS:
            traj = [r for r in runs if r["setting"] == setting and r["acq"] == acq]
            if not traj:
                continue
            length = min(len(r["regret"]) for r in traj)
            reg = np.mean([r["regret"][:length] for r in traj], axis=0)
            cost = np.mean([r["cumulative_cost"][:length] for r in traj], axis=0)
            cost = cost - cost[0]
            ax.plot(cost, reg, color=colors[acq], lw=1.2, label=ACQ_LABELS[acq])
            for key in RULE_KEYS:
                pts = [s for s in scored if s["setting"] == setting and s["acq"] == acq]
                pts = [s for s in pts if s["rule"] == key]
                ax.scatter(
                    np.mean([p["cost"] for p in pts]),
                    np.mean([p["regret"] for p in pts]),
                    color=colors[acq],
                    marker=markers[key],
                    s=110 if key == "ours" else 35,
                    edgecolor="k",
                    linewidth=0.5,
                    zorder=3,
                )
        ax.set_title(setting, fontsize=9)
        ax.set_xlabel("cumulative cost after initial design")
        ax.set_ylabel("cost-adjusted simple regret")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    handles = [plt.Line2D([], [], color=c, label=ACQ_LABELS[a]) for a, c in colors.items()]
    handles += [
        plt.Line2D([], [], color="gray", marker=m, ls="", label=RULE_LABELS[k])
        for k, m in markers.items()
    ]
    fig.suptitle("Mean regret vs cost (lines) and where each stopping rule stops (markers)")
    fig.tight_layout()
    fig.legend(handles=handles, loc="upper center", ncol=8, fontsize=8, bbox_to_anchor=(0.5, 0.0))
    ctx.save_figure(fig, "regret_vs_cost")


def run(ctx: RunContext) -> Result:
    """Run the comparison at ``ctx.scale`` and decide the claims from the measurements."""
    from threadpoolctl import threadpool_limits

    from bo_stopping.problems import hpo_table

    functions = ctx.pick(["ackley"], ["ackley", "levy", "rosenbrock"])
    dims = ctx.pick([2], [4], [4, 8])
    n_seeds = ctx.pick(1, 3, 10)
    budget = ctx.pick(3, 20, 60)
    c0 = 0.02
    restarts, raw = ctx.pick((1, 16), (2, 64), (8, 512))
    datasets = ctx.pick(["breast_cancer"], ["breast_cancer", "digits", "fair"])
    n_configs = ctx.pick(12, 48, 128)
    hpo_budget = ctx.pick(3, 20, 60)
    acqs = list(ACQ_LABELS)
    seeds = [ctx.seed + s for s in range(n_seeds)]

    specs: list[dict[str, Any]] = []
    settings: list[str] = []
    for fn in functions:
        for dim in dims:
            name = f"{fn}-{dim}d"
            settings.append(name)
            for seed in seeds:
                for acq in acqs:
                    specs.append(
                        {"kind": "synthetic", "setting": name, "function": fn, "dim": dim,
                         "seed": seed, "acq": acq, "c0": c0, "budget": budget,
                         "num_restarts": restarts, "raw_samples": raw}
                    )  # fmt: skip
    tables_info = []
    for ds in datasets:
        with threadpool_limits(1):  # one thread: training times proportional to work
            tab = hpo_table(ds, n_configs, progress=ctx.progress)
        name = tab.name
        settings.append(name)
        tables_info.append(
            {"setting": name, "best_score": float(tab.scores.max()),
             "median_score": float(np.median(tab.scores)),
             "median_time_s": float(np.median(tab.times)),
             "time_ratio_max_min": float(tab.times.max() / tab.times.min())}
        )  # fmt: skip
        n_init = 2 * (tab.configs.shape[1] + 1)
        b = min(hpo_budget, n_configs - n_init)
        for seed in seeds:
            for acq in acqs:
                specs.append(
                    {"kind": "hpo", "setting": name, "configs": tab.configs,
                     "objective": tab.objective, "costs": tab.costs(c0), "seed": seed,
                     "acq": acq, "budget": b, "num_restarts": restarts, "raw_samples": raw}
                )  # fmt: skip

    n_jobs = 1 if ctx.scale == "smoke" else min(2, os.cpu_count() or 1)
    runs = _run_all(ctx, specs, n_jobs)
    scored = _score(runs)

    pairs = [(a, r) for a in acqs for r in RULE_KEYS]

    def stats(setting: str | None, acq: str, rule: str, field: str) -> np.ndarray:
        return np.array(
            [
                s[field]
                for s in scored
                if (setting is None or s["setting"] == setting)
                and s["acq"] == acq
                and s["rule"] == rule
            ]
        )

    # per setting: mean regret of each pair, rank, and whether ours matches the best other
    mean = {
        (st, a, r): float(stats(st, a, r, "regret").mean()) for st in settings for a, r in pairs
    }
    se = {
        (st, a, r): float(stats(st, a, r, "regret").std(ddof=1) / np.sqrt(n_seeds))
        if n_seeds > 1
        else 0.0
        for st in settings
        for a, r in pairs
    }
    ranks: dict[tuple[str, str], list[float]] = {p: [] for p in pairs}
    wins = dict.fromkeys(pairs, 0)
    per_setting = Table(
        title="Per setting: best pair vs ours (mean cost-adjusted regret over seeds)",
        columns=["setting", "best pair", "regret", "ours", "ours regret",
                 "best other", "other regret", "matched"],
        note=("ours = the better of PBGI+ours and LogEIPC+ours; matched = its mean <= the best "
              "other pair's mean + the larger standard error of the two."),
    )  # fmt: skip
    matched = {}
    for st in settings:
        order = sorted(pairs, key=lambda p: mean[(st, *p)])
        for i, p in enumerate(order):
            ranks[p].append(i + 1)
        wins[order[0]] += 1
        ours = min(OURS, key=lambda p: mean[(st, *p)])
        other = min((p for p in pairs if p not in OURS), key=lambda p: mean[(st, *p)])
        tol = max(se[(st, *ours)], se[(st, *other)])
        matched[st] = mean[(st, *ours)] <= mean[(st, *other)] + tol

        def label(p: tuple[str, str]) -> str:
            return f"{ACQ_LABELS[p[0]]}+{RULE_LABELS[p[1]]}"

        per_setting.add_row(
            **{"setting": st, "best pair": label(order[0]), "regret": mean[(st, *order[0])],
               "ours": label(ours), "ours regret": mean[(st, *ours)],
               "best other": label(other), "other regret": mean[(st, *other)],
               "matched": bool(matched[st])}
        )  # fmt: skip

    summary = Table(
        title=(
            f"Acquisition x stopping rule over {len(settings)} settings x {n_seeds} seeds "
            f"(cost level c0 = {c0})"
        ),
        columns=["acquisition", "stopping", "R/R0", "std", "rank", "wins", "evals", "cost"],
        note=("R/R0: cost-adjusted simple regret at the stopping step over its value after the "
              "initial design (< 1: the evaluations paid for themselves), mean and std over "
              f"settings and seeds; rank: mean rank among {len(pairs)} pairs per setting (1 = "
              "best); wins: settings where best; evals, cost: evaluations made and cost paid "
              "after the initial design. Rules: ours = stop when max EI/cost <= 1; budget = "
              "run to the budget; EI<1% / UCB-LCB<1%: max EI / regret gap below 1% of the "
              "observed range; PI<1%: max probability of improvement below 0.01."),
    )  # fmt: skip
    for a, r in pairs:
        rel = stats(None, a, r, "relative")
        summary.add_row(
            **{"acquisition": ACQ_LABELS[a], "stopping": RULE_LABELS[r],
               "R/R0": float(rel.mean()), "std": float(rel.std()),
               "rank": float(np.mean(ranks[(a, r)])), "wins": wins[(a, r)],
               "evals": float(stats(None, a, r, "evaluations").mean()),
               "cost": float(stats(None, a, r, "cost").mean())}
        )  # fmt: skip

    hpo_table_out = Table(
        title="HPO search spaces (histogram gradient boosting, measured once on a Sobol grid)",
        columns=["setting", "best score", "median score", "median time s", "max/min time"],
    )
    for info in tables_info:
        hpo_table_out.add_row(
            **{"setting": info["setting"], "best score": info["best_score"],
               "median score": info["median_score"], "median time s": info["median_time_s"],
               "max/min time": info["time_ratio_max_min"]}
        )  # fmt: skip

    frac = float(np.mean([matched[s] for s in settings]))
    claim1 = Claim.check(
        statement=(
            "PBGI or LogEIPC with the cost-aware stopping rule matches or outperforms every other "
            "acquisition/stopping pair in cost-adjusted simple regret in most settings."
        ),
        rule=(
            "In more than half of the settings, the better of PBGI+ours and LogEIPC+ours has mean "
            "regret <= the best other pair's mean + the larger standard error of the two."
        ),
        values={
            "fraction of settings matched": frac,
            "settings": len(settings),
            **{f"matched {s}": bool(matched[s]) for s in settings},
        },
        predicate=lambda v: v["fraction of settings matched"] > 0.5,
    )
    fixed = {a: stats(None, a, "budget", "relative").mean() for a in ("pbgi", "logeipc")}
    ours_rel = {a: stats(None, a, "ours", "relative").mean() for a in ("pbgi", "logeipc")}
    claim2 = Claim.check(
        statement=(
            "The cost-aware rule reduces cost-adjusted regret relative to running the same "
            "cost-aware acquisition to a fixed budget."
        ),
        rule="mean regret/regret-at-start of ours < fixed budget's, for both PBGI and LogEIPC",
        values={
            "PBGI ours": ours_rel["pbgi"],
            "PBGI fixed budget": fixed["pbgi"],
            "LogEIPC ours": ours_rel["logeipc"],
            "LogEIPC fixed budget": fixed["logeipc"],
        },
        predicate=lambda v: (
            v["PBGI ours"] < v["PBGI fixed budget"]
            and v["LogEIPC ours"] < v["LogEIPC fixed budget"]
        ),
    )
    _figure(ctx, runs, scored, settings)
    notes = [
        f"Synthetic: {', '.join(functions)} in d = {dims}, budget {budget} evaluations after a "
        f"Sobol design of 2(d+1); HPO: {n_configs} configurations per data set, budget "
        f"{hpo_budget}; {n_seeds} seeds; optimize_acqf with {restarts} restarts, "
        f"{raw} raw samples.",
        "Costs in objective units (objective rescaled to best 0, median -1); the median "
        f"evaluation costs c0 = {c0}. HPO costs are measured training times, priced the same way; "
        "they vary with machine load.",
        "Each rule is scored on the same trajectories (monitored, not acting): a rule's decision "
        "only depends on the past, so this equals running the acquisition with that rule.",
    ]
    return Result(
        tables=[summary, per_setting, hpo_table_out],
        claims=[claim1, claim2],
        notes=notes,
        data={"scored": scored, "runs": runs, "settings": settings},
    )


EXPERIMENT = Experiment(
    name="bo-stopping",
    title="Cost-aware stopping for Bayesian optimization (PBGI / LogEIPC + Gittins stopping rule)",
    claim=(
        "PBGI or LogEIPC paired with the cost-aware stopping rule matches or beats other "
        "acquisition/stopping pairs in cost-adjusted simple regret."
    ),
    run=run,
)
