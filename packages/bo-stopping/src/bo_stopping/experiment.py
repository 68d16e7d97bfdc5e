"""Experiment ``bo-stopping``: acquisition x stopping-rule pairs by cost-adjusted simple regret.

The abstract's claim is about *varying* costs, so every pair is run at three cost
levels (one evaluation at median cost is worth 0.1 %, 1 % or 10 % of the gap between a
median and the best point) on three kinds of objective:

* **GP prior** (``gp-4d``, ``gp-4d-uniform``): functions drawn from a known GP prior on
  a 1024-point Sobol set, BO conditioning that same prior (no fitting): the
  well-specified setting of the paper's guarantee; heterogeneous and uniform costs.
* **Test functions** (``levy-4d``, ``ackley-4d``): BoTorch's, on a 1024-point Sobol set,
  rescaled to best 0 / median -1, a fitted GP as usual; heterogeneous known cost
  ``c0 * 10^(2 u_j - 1)`` (a hundredfold along one coordinate chosen by the seed).
* **Hyperparameter optimization on real data** (``hgb-breast_cancer``; ``hgb-fair``
  too at full scale): scikit-learn's histogram gradient boosting tabulated once on a
  128-point Sobol grid of 4 hyperparameters; the cost is the measured CPU time of each
  fit, priced so that the median configuration costs ``c0``, unknown to BO (a GP on
  log cost).

Acquisitions: PBGI, LogEIPC (cost-aware) and BoTorch's LogEI (cost-unaware). Stopping
rules, all monitored on the same trajectory and each scored at its own stopping step:
the cost-aware rule (ours), stop at once (the floor: the initial design only), fixed
budgets of 5, 10 and 15 evaluations, max EI below 1 % of the observed range, max PI
below 0.01, and the UCB-LCB regret gap below 1 % of the range. Seeds 0-9 decide the
claims; seeds 100 and 101 (validation; 100-102 at full scale) choose the strongest
competitor and the best fixed budget per cost level, and the verdicts never read them.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from icml26_core.device import torch_threads
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table

ACQ_LABELS = {"pbgi": "PBGI", "logeipc": "LogEIPC", "logei": "LogEI"}
MONITORED = ("ours", "ei", "pi", "gap")
BUDGETS = (5, 10, 15)
RULE_LABELS = {
    "ours": "ours",
    "ei": "EI<1%",
    "pi": "PI<0.01",
    "gap": "UCB-LCB<1%",
    **{f"b{k}": f"budget {k}" for k in BUDGETS},
}
FLOOR = ("-", "stop at once")
MARGIN = 0.05
"""Non-inferiority margin in objective units (5 % of the median-to-best gap), fixed
before the test seeds were run."""
VALIDATION_SEEDS = (100, 101, 102)
"""Seeds that only choose the competitor and the tuned budget (the first two by default)."""
REFIT_EVERY = 8
"""GP hyperparameters are re-estimated every 8 steps (steps 0 and 8 of 15, warm-started);
in between the GP is only conditioned on new data. The same for all pairs."""


# ---------------------------------------------------------------------------- jobs


def _rules(levels: tuple[float, ...] | None) -> list[Any]:
    from bo_stopping.stopping import (
        CostAwareStopping,
        ExpectedImprovementThreshold,
        ProbabilityOfImprovementThreshold,
        RegretGapStopping,
    )

    if levels is None:  # cost-aware acquisition run at its own level: lmbda = 1
        ours = [CostAwareStopping(1.0)]
        ours[0].name = "ours"
    else:  # LogEI run on the unit cost shape: the rule at level L is lmbda = L
        ours = []
        for level in levels:
            rule = CostAwareStopping(level)
            rule.name = f"ours@{level}"
            ours.append(rule)
    others = [
        ExpectedImprovementThreshold(0.01, relative=True),
        ProbabilityOfImprovementThreshold(0.01),
        RegretGapStopping(0.01, beta=4.0, relative=True),
    ]
    for rule, name in zip(others, ("ei", "pi", "gap"), strict=True):
        rule.name = name
    return ours + others


def _problem(spec: dict[str, Any]) -> Any:
    import torch

    from bo_stopping.problems import (
        DiscreteProblem,
        discretize,
        gp_prior_problem,
        synthetic_problem,
    )

    if spec["kind"] == "gp":
        return gp_prior_problem(spec["dim"], spec["seed"], spec["n_candidates"])
    if spec["kind"] == "fn":
        prob = synthetic_problem(spec["function"], spec["dim"], spec["seed"])
        return discretize(prob, spec["n_candidates"], spec["seed"])
    configs = torch.as_tensor(spec["configs"], dtype=torch.float64)
    bounds = torch.stack([torch.zeros(configs.shape[1]), torch.ones(configs.shape[1])])
    return DiscreteProblem(spec["setting"], configs, np.asarray(spec["values"]), bounds.double())


def run_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one (setting, seed, acquisition, cost level) trajectory, on one torch thread."""
    # GP fits on a dozen points thrash with several intra-op threads on 2 cores.
    with torch_threads(1):
        return _run_job(spec)


def _run_job(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    from bo_stopping.loop import fit_gp, run_bo
    from bo_stopping.problems import _CoordinateCost, _UniformCost

    prob = _problem(spec)
    level = spec["level"] if spec["acq"] != "logei" else 1.0
    rules = _rules(None if spec["acq"] != "logei" else tuple(spec["levels"]))
    kw: dict[str, Any] = {
        "acquisition": spec["acq"],
        "monitor": rules,
        "max_evaluations": spec["budget"],
        "seed": spec["seed"],
        "candidates": prob.candidates,
        "optimum": 0.0,
        "fit_model": prob.fit_model or fit_gp,
        "refit_every": REFIT_EVERY,
    }
    if spec["kind"] == "hpo":
        values, shape = prob.values, np.asarray(spec["cost_shape"])
        index = {tuple(row.tolist()): i for i, row in enumerate(prob.candidates)}

        def objective(x: torch.Tensor) -> tuple[float, float]:
            i = index[tuple(x.tolist())]
            return float(values[i]), float(level * shape[i])

        res = run_bo(objective, prob.bounds, "observed", **kw)
    else:
        d = prob.candidates.shape[1]
        if spec["cost"] == "uniform":
            cost = _UniformCost(level)
        else:
            j = int(np.random.default_rng(spec["seed"]).integers(d))
            cost = _CoordinateCost(prob.bounds, j, level)
        res = run_bo(prob.lookup(), prob.bounds, cost, **kw)
    return {
        "setting": spec["setting"],
        "seed": spec["seed"],
        "acq": spec["acq"],
        "level": spec["level"],
        "run_level": level,
        "best": res.best.tolist(),
        "cum": res.cumulative_cost.tolist(),
        "stops": {r.name: res.stop_step(r.name) for r in rules},
    }


def _run_all(ctx: RunContext, specs: list[dict[str, Any]], n_jobs: int) -> list[dict[str, Any]]:
    if n_jobs <= 1:
        return list(ctx.progress((run_job(s) for s in specs), "BO runs", total=len(specs)))
    from joblib import Parallel, delayed

    gen = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
        delayed(run_job)(s) for s in specs
    )
    return list(ctx.progress(gen, "BO runs", total=len(specs)))


# ------------------------------------------------------------------------- scoring


def _score(runs: list[dict[str, Any]], levels: tuple[float, ...], uniform: set[str]) -> dict:
    """Regret and stopping step of every pair: ``{(level, setting, seed): {pair: (R, k)}}``."""
    out: dict[tuple[float, str, int], dict[tuple[str, str], tuple[float, int]]] = {}
    for run in runs:
        best, cum = np.asarray(run["best"]), np.asarray(run["cum"])
        last = len(best) - 1
        for level in levels if run["acq"] == "logei" else (run["level"],):
            regret = -best + (level / run["run_level"]) * cum
            steps = {
                "ours": run["stops"]["ours" if run["acq"] != "logei" else f"ours@{level}"],
                **{r: run["stops"][r] for r in ("ei", "pi", "gap")},
                **{f"b{k}": min(k, last) for k in BUDGETS},
            }
            cell = out.setdefault((level, run["setting"], run["seed"]), {})
            for rule, k in steps.items():
                cell[(run["acq"], rule)] = (float(regret[k]), int(k))
                if run["acq"] == "logei" and run["setting"] in uniform:
                    # uniform cost: LogEIPC = LogEI - log c0, the same trajectory and rules
                    cell[("logeipc", rule)] = (float(regret[k]), int(k))
            cell[FLOOR] = (float(regret[0]), 0)
    return out


def _pairs() -> list[tuple[str, str]]:
    rules = ["ours", *(f"b{k}" for k in BUDGETS), "ei", "pi", "gap"]
    return [FLOOR] + [(a, r) for a in ACQ_LABELS for r in rules]


def _label(pair: tuple[str, str]) -> str:
    return pair[1] if pair == FLOOR else f"{ACQ_LABELS[pair[0]]} + {RULE_LABELS[pair[1]]}"


def _samples(scores, level, seeds, settings, pair, field: int = 0) -> np.ndarray:
    return np.array(
        [scores[(level, st, s)][pair][field] for st in settings for s in seeds], dtype=float
    )


def _mean_ci(x: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    if x.size < 2:
        return float(x.mean()), math.nan
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(half)


# ---------------------------------------------------------------------------- run


def _settings(ctx: RunContext) -> list[dict[str, Any]]:
    gp = [
        {"setting": "gp-4d", "kind": "gp", "dim": 4, "cost": "heterogeneous"},
        {"setting": "gp-4d-uniform", "kind": "gp", "dim": 4, "cost": "uniform"},
    ]
    fns = [
        {"setting": f"{f}-4d", "kind": "fn", "function": f, "dim": 4, "cost": "heterogeneous"}
        for f in ctx.pick([], ["levy", "ackley"], ["levy", "ackley", "rosenbrock"])
    ]
    hpo = [
        {"setting": f"hgb-{ds}", "kind": "hpo", "dataset": ds, "cost": "measured"}
        for ds in ctx.pick(["breast_cancer"], ["breast_cancer"], ["breast_cancer", "fair"])
    ]
    return ctx.pick(gp[:1], gp) + fns + hpo


def run(ctx: RunContext) -> Result:
    """Run the comparison at ``ctx.scale`` and decide the claims from the measurements."""
    from threadpoolctl import threadpool_limits

    from bo_stopping.problems import hpo_table

    levels: tuple[float, ...] = ctx.pick((0.1,), (0.001, 0.01, 0.1))
    test_seeds = [ctx.seed + s for s in range(ctx.pick(1, 10, 20))]
    val_seeds = list(ctx.pick(VALIDATION_SEEDS[:1], VALIDATION_SEEDS[:2], VALIDATION_SEEDS))
    budget = ctx.pick(3, max(BUDGETS))
    n_candidates = ctx.pick(256, 1024)
    n_configs = ctx.pick(24, 128)
    settings = _settings(ctx)
    uniform = {s["setting"] for s in settings if s["cost"] == "uniform"}

    hpo_rows = []
    specs: list[dict[str, Any]] = []
    for st in settings:
        base = {**st, "budget": budget, "n_candidates": n_candidates, "levels": list(levels)}
        if st["kind"] == "hpo":
            with threadpool_limits(1):  # one thread: CPU time proportional to work
                tab = hpo_table(st["dataset"], n_configs, progress=ctx.progress)
            base.update(
                configs=tab.configs, values=tab.objective, cost_shape=tab.costs(1.0).tolist()
            )
            hpo_rows.append(
                {"setting": tab.name, "configurations": n_configs,
                 "best score": float(tab.scores.max()),
                 "median score": float(np.median(tab.scores)),
                 "median CPU s": float(np.median(tab.times)),
                 "max/min time": float(tab.times.max() / tab.times.min())}
            )  # fmt: skip
        for seed in val_seeds + test_seeds:
            specs.append({**base, "seed": seed, "acq": "logei", "level": None})
            for level in levels:
                specs.append({**base, "seed": seed, "acq": "pbgi", "level": level})
                if st["cost"] != "uniform":
                    specs.append({**base, "seed": seed, "acq": "logeipc", "level": level})
    # longest jobs first keeps both workers busy to the end
    specs.sort(key=lambda s: (s["kind"] != "hpo", s["kind"] == "gp"))
    n_jobs = 1 if ctx.scale == "smoke" else min(2, os.cpu_count() or 1)
    runs = _run_all(ctx, specs, n_jobs)
    names = [s["setting"] for s in settings]
    scores = _score(runs, levels, uniform)
    pairs = _pairs()
    ours = {a: (a, "ours") for a in ("pbgi", "logeipc")}

    # ---- choices made on the validation seeds only
    strongest: dict[float, tuple[str, str]] = {}
    best_budget: dict[tuple[float, str], tuple[str, str]] = {}
    for level in levels:
        val_mean = {p: _samples(scores, level, val_seeds, names, p).mean() for p in pairs}
        strongest[level] = min((p for p in pairs if p not in ours.values()), key=val_mean.get)
        for a in ours:
            cands = [FLOOR] + [(a, f"b{k}") for k in BUDGETS]
            best_budget[(level, a)] = min(cands, key=val_mean.get)

    # ---- tables (test seeds)
    n_items = len(names) * len(test_seeds)
    tables = []
    for level in levels:
        t = Table(
            f"Cost level c0 = {level}: cost-adjusted simple regret over {len(names)} settings "
            f"x {len(test_seeds)} test seeds (n = {n_items} per pair)",
            ["pair", "regret", "95% CI +-", "evaluations", "vs stop at once", "n"],
            note=(
                "regret: mean of f* - best + total cost (initial design included) at the "
                "rule's stopping step, in units of the median-to-best gap; 95% CI +-: half "
                "width of the t interval of the mean; evaluations: mean number after the "
                "initial design; vs stop at once: mean paired difference (negative = better "
                "than the floor). Strongest other pair on the validation seeds: "
                f"{_label(strongest[level])}."
            ),
        )
        floor = _samples(scores, level, test_seeds, names, FLOOR)
        for p in pairs:
            r = _samples(scores, level, test_seeds, names, p)
            m, half = _mean_ci(r)
            t.add_row(
                **{"pair": _label(p), "regret": m, "95% CI +-": half,
                   "evaluations": float(_samples(scores, level, test_seeds, names, p, 1).mean()),
                   "vs stop at once": float((r - floor).mean()), "n": int(r.size)}
            )  # fmt: skip
        tables.append(t)

    by_setting = Table(
        "Per setting (test seeds): mean regret of the floor, ours, and the strongest other "
        "pair (chosen on validation seeds)",
        ["c0", "setting", "stop at once", "PBGI + ours", "LogEIPC + ours", "strongest other",
         "its regret", "n"],
    )  # fmt: skip
    for level in levels:
        for st in names:

            def m(p: tuple[str, str], st: str = st, level: float = level) -> float:
                return float(_samples(scores, level, test_seeds, [st], p).mean())

            by_setting.add_row(
                **{"c0": level, "setting": st, "stop at once": m(FLOOR),
                   "PBGI + ours": m(ours["pbgi"]), "LogEIPC + ours": m(ours["logeipc"]),
                   "strongest other": _label(strongest[level]),
                   "its regret": m(strongest[level]), "n": len(test_seeds)}
            )  # fmt: skip
    tables.append(by_setting)
    if hpo_rows:
        hpo_out = Table(
            "HPO search spaces (histogram gradient boosting, each configuration fitted once)",
            list(hpo_rows[0]),
            note="Costs: the fit's CPU time on one thread, priced so that the median "
            "configuration costs c0.",
        )
        for row in hpo_rows:
            hpo_out.add_row(**row)
        tables.append(hpo_out)

    # ---- claims (test seeds only)
    def sample(level: float, p: tuple[str, str]) -> np.ndarray:
        return _samples(scores, level, test_seeds, names, p)

    metric = "cost-adjusted simple regret"
    claims = []
    for a in ("pbgi", "logeipc"):
        parts = [
            Claim.non_inferior(
                f"c0 = {level}: {_label(ours[a])} matches or beats {_label(strongest[level])}",
                sample(level, ours[a]),
                sample(level, strongest[level]),
                margin=MARGIN,
                names=(_label(ours[a]), _label(strongest[level])),
                metric=metric,
                higher_is_better=False,
            )
            for level in levels
        ]
        claims.append(
            Claim.all_of(
                f"Paired with {ACQ_LABELS[a]}, the cost-aware stopping rule matches or "
                "outperforms the other acquisition/stopping pairs in cost-adjusted simple "
                "regret at every cost level (against the strongest other pair per level, "
                f"chosen on validation seeds; margin {MARGIN})",
                parts,
            )
        )
    adapt = [
        Claim.non_inferior(
            f"c0 = {level}: {_label(ours[a])} matches {_label(best_budget[(level, a)])}",
            sample(level, ours[a]),
            sample(level, best_budget[(level, a)]),
            margin=MARGIN,
            names=(_label(ours[a]), _label(best_budget[(level, a)])),
            metric=metric,
            higher_is_better=False,
        )
        for a in ("pbgi", "logeipc")
        for level in levels
    ]
    claims.append(
        Claim.all_of(
            "The rule adapts to the cost level without tuning: with PBGI and with LogEIPC it "
            "matches the fixed budget (0, 5, 10 or 15 evaluations) tuned for each cost level "
            f"on validation seeds (margin {MARGIN})",
            adapt,
        )
    )
    low = min(levels)
    claims.append(
        Claim.all_of(
            f"Where evaluations are cheap (c0 = {low}), BO with the cost-aware rule beats the "
            "floor of stopping right after the initial design, with PBGI and with LogEIPC",
            [
                Claim.superior(
                    f"c0 = {low}: {_label(ours[a])} beats stopping at once",
                    sample(low, ours[a]),
                    sample(low, FLOOR),
                    names=(_label(ours[a]), "stop at once"),
                    metric=metric,
                    higher_is_better=False,
                )
                for a in ("pbgi", "logeipc")
            ],
        )
    )
    claims.append(
        Claim.all_of(
            "The cost-aware rule lowers the cost-adjusted regret of the same cost-aware "
            f"acquisition run to the full budget ({max(BUDGETS)} evaluations), over all "
            "cost levels",
            [
                Claim.superior(
                    f"{_label(ours[a])} beats {_label((a, f'b{max(BUDGETS)}'))}, all levels",
                    np.concatenate([sample(lv, ours[a]) for lv in levels]),
                    np.concatenate([sample(lv, (a, f"b{max(BUDGETS)}")) for lv in levels]),
                    names=(_label(ours[a]), _label((a, f"b{max(BUDGETS)}"))),
                    metric=metric,
                    higher_is_better=False,
                )
                for a in ("pbgi", "logeipc")
            ],
        )
    )
    _figure(ctx, scores, levels, test_seeds, names, runs)
    notes = [
        f"Settings: {', '.join(names)}; cost levels c0 = {list(levels)}; test seeds "
        f"{test_seeds[0]}-{test_seeds[-1]} (n = {n_items} items per level and pair), "
        f"validation seeds {val_seeds}; budget {budget} evaluations after a random initial "
        f"design of 2(d+1) = 10 candidates; {n_candidates} Sobol candidates per synthetic "
        f"setting, {n_configs} HPO configurations; acquisitions maximized by enumeration; "
        f"fitted GPs re-estimate their hyperparameters every {REFIT_EVERY} steps "
        "(warm-started) and are only conditioned in between, for every pair alike.",
        "Costs are in objective units: objectives rescaled to best 0 / median -1 (GP draws: "
        "prior standard deviation 0.32, median-to-best gap about 1), and the median "
        "evaluation costs c0. LogEI is cost-unaware: one trajectory per seed, scored at "
        "every level. With uniform costs LogEIPC = LogEI - log c0, so it is that trajectory.",
        "Every rule is monitored on the same trajectory and scored at its own stopping "
        "step (a rule only reads the past, so this equals running with it).",
    ]
    data = {
        "settings": names,
        "levels": list(levels),
        "test_seeds": test_seeds,
        "validation_seeds": val_seeds,
        "strongest_other": {str(k): _label(v) for k, v in strongest.items()},
        "best_budget": {f"{k[0]}/{k[1]}": _label(v) for k, v in best_budget.items()},
        "runs": runs,
    }
    return Result(tables=tables, claims=claims, notes=notes, data=data)


def _figure(ctx, scores, levels, seeds, names, runs) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(levels), figsize=(4.3 * len(levels), 3.6), squeeze=False)
    colors = {"pbgi": "C0", "logeipc": "C1", "logei": "C2"}
    markers = {"ours": "*", "ei": "^", "pi": "v", "gap": "D"}
    for ax, level in zip(axes[0], levels, strict=True):
        for a, color in colors.items():
            curves = []
            for r in runs:
                if r["acq"] != a or r["seed"] not in seeds or r["setting"] not in names:
                    continue
                if a != "logei" and r["level"] != level:
                    continue
                best, cum = np.asarray(r["best"]), np.asarray(r["cum"])
                curves.append(-best + (level / r["run_level"]) * cum)
            if not curves:
                continue
            length = min(len(c) for c in curves)
            ax.plot(np.mean([c[:length] for c in curves], axis=0), color=color, lw=1.3,
                    label=ACQ_LABELS[a])  # fmt: skip
            for rule, mk in markers.items():
                k = _samples(scores, level, seeds, names, (a, rule), 1).mean()
                reg = _samples(scores, level, seeds, names, (a, rule)).mean()
                ax.scatter(k, reg, color=color, marker=mk, s=120 if rule == "ours" else 40,
                           edgecolor="k", linewidth=0.5, zorder=3)  # fmt: skip
        ax.axhline(_samples(scores, level, seeds, names, FLOOR).mean(), color="k", ls=":",
                   lw=1, label="stop at once")  # fmt: skip
        ax.set_title(f"c0 = {level}", fontsize=10)
        ax.set_xlabel("evaluations after the initial design")
        ax.set_ylabel("mean cost-adjusted regret")
    handles, _labels = axes[0][0].get_legend_handles_labels()
    handles += [plt.Line2D([], [], color="gray", marker=m, ls="", label=RULE_LABELS[k])
                for k, m in markers.items()]  # fmt: skip
    fig.legend(handles=handles, loc="upper center", ncol=8, fontsize=8,
               bbox_to_anchor=(0.5, 0.0))  # fmt: skip
    fig.suptitle("Mean regret along the trajectories (lines) and where each rule stops")
    fig.tight_layout()
    ctx.save_figure(fig, "regret_vs_cost")


EXPERIMENT = Experiment(
    name="bo-stopping",
    title="Cost-aware stopping for Bayesian optimization (PBGI / LogEIPC + Gittins stopping rule)",
    claim=(
        "PBGI or LogEIPC paired with the cost-aware stopping rule matches or beats other "
        "acquisition/stopping pairs in cost-adjusted simple regret, across cost levels."
    ),
    run=run,
)
