"""The headline experiment of flow-optimizer: `icml26 run flow-optimizer`.

One FlowOptimizer per problem family is trained (stage 1 flow matching, then stage 2
unrolled fine-tuning) on instances drawn with training seeds, and tested on instances
drawn with other seeds, at an equal number of objective evaluations against pycma's
CMA-ES, nevergrad's OnePlusOne, CMA and SPSA (their defaults, sequential), multi-start
Adam (same population size; a value-and-gradient call counts as one evaluation; its step
size picked on validation instances), the coordinate-wise LSTM learned optimizer of
Andrychowicz et al. (2016) (trained on the same families with the same number of
training steps and instances; its meta learning rate picked on the validation
instances), random search, and the floor "stop at once" (best of the starting
population). The stage-1-only field is the ablation of stage 2. The trained fields (and
the LSTMs) are then run unchanged at 10x the dimension.
The metric is the gap of the best value found to the known optimum (0 for the shifted
benchmark functions and the reachable arm targets; the LP optimum for the newsvendor;
pandapower's DC OPF cost for the dispatch, whose case30 fields are also run on case118).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from icml26_core import Claim, Experiment, Result, RunContext, Table, stats

from flow_optimizer.baselines import (
    LSTMOptimizer,
    cma_es,
    multistart_adam,
    nevergrad_minimize,
    random_search,
)
from flow_optimizer.optimizer import FlowOptimizer, OptResult
from flow_optimizer.problems import DCDispatch, Problem, family

FAMILIES = ["rastrigin", "ackley", "rosenbrock", "levy", "arm-ik", "newsvendor", "dispatch"]
BENCHMARKS = FAMILIES[:4]
GENERALIZE = ["rastrigin", "ackley", "rosenbrock", "levy", "arm-ik", "dispatch"]
DISPATCH_CASE, DISPATCH_BIG = "case30", "case118"  # trained and tested on case30; also run on 118
GAP_TARGET, VIOLATION_TARGET = 0.01, 1e-3  # claim 4: relative cost gap, mean violation (p.u.)
ADAM_LRS = (0.003, 0.01, 0.03, 0.1)  # in box widths; picked per family on validation seeds
LSTM_LRS = (1e-3, 3e-3, 1e-2, 3e-2)  # meta (Adam) learning rates, the same-size grid
GAP_FLOOR = 1e-9  # gaps below this count as equal (ties) in the log-ratio tests
TRAIN_SEED, VALIDATION_SEED, TEST_SEED = 1_000, 50_000, 100_000
FLOW = "FlowOptimizer"
STAGE1 = "FlowOptimizer, stage 1 only"
CMA = "CMA-ES (pycma)"
NG = {name: f"nevergrad {name}" for name in ("OnePlusOne", "CMA", "SPSA")}
ADAM = "multi-start Adam"
LSTM = "LSTM learned optimizer"
RANDOM = "random search"
FLOOR = "stop at once (floor)"
METHODS = [FLOW, STAGE1, CMA, *NG.values(), ADAM, LSTM, RANDOM, FLOOR]
BASELINES = [CMA, *NG.values(), ADAM, LSTM, RANDOM]
# at 10 d: nevergrad left out (its CPU cost; claim 2 reads CMA-ES and Adam only)
GEN_METHODS = [FLOW, STAGE1, CMA, ADAM, LSTM, RANDOM]


def _config(ctx: RunContext) -> dict[str, Any]:
    return ctx.pick(
        smoke={"N": 8, "K": 4, "d": 4, "n_test": 5, "n_gen": 3, "fm": 3, "ft": 3, "inst": 2},
        default={
            "N": 32,
            "K": 19,
            "d": 10,
            "n_test": 15,
            "n_gen": 8,
            "fm": 15,
            "ft": 20,
            "inst": 3,
        },
        full={
            "N": 64,
            "K": 49,
            "d": 50,
            "n_test": 100,
            "n_gen": 30,
            "fm": 300,
            "ft": 300,
            "inst": 8,
        },
    )


def _gap(problem: Problem, res: OptResult) -> float:
    """Gap of the returned point to the optimum, re-evaluated in float64."""
    with torch.no_grad():
        f = float(problem.f(torch.as_tensor(res.x, dtype=torch.float64)[None])[0])
    return max(f - float(problem.optimum), 0.0)


def _instances(name: str, dim: int, seed: int, n: int, *, big: bool = False) -> list[Problem]:
    """Draw ``n`` instances with seeds ``seed + i``, at ``dim`` (10 ``dim`` with ``big``).

    The dispatch has its case's own dimension (case30, or case118 with ``big``).
    """
    if name == "dispatch":
        grid = DCDispatch(DISPATCH_BIG if big else DISPATCH_CASE)
        return [grid.sample_instance(np.random.default_rng(seed + i)) for i in range(n)]
    fam = family(name)
    d = 10 * dim if big else dim
    return [fam.sample_instance(np.random.default_rng(seed + i), d) for i in range(n)]


def _pick_adam_lr(name: str, cfg: dict[str, Any], budget: int) -> float:
    val = _instances(name, cfg["d"], VALIDATION_SEED, 5)
    scores = {
        lr: float(
            np.median(
                [
                    np.log10(
                        _gap(p, multistart_adam(p, budget, n_starts=cfg["N"], lr=lr, seed=i))
                        + GAP_FLOOR
                    )
                    for i, p in enumerate(val)
                ]
            )
        )
        for lr in ADAM_LRS
    }
    return min(scores, key=scores.__getitem__)


def _train_lstm(
    name: str, sampler: Any, cfg: dict[str, Any], budget: int, seed: int, device: Any
) -> tuple[LSTMOptimizer, float, list[float]]:
    """Train one LSTM per meta learning rate; keep the best on the validation instances.

    Each gets the training budget of FlowOptimizer's two stages together (``fm + ft``
    steps of ``inst`` instances, a training seed); the kept one has the lowest median
    log gap on the 5 validation instances.
    """
    val = _instances(name, cfg["d"], VALIDATION_SEED, 5)
    best: tuple[float, LSTMOptimizer, float, list[float]] | None = None
    for lr in LSTM_LRS:
        torch.manual_seed(seed)
        lstm = LSTMOptimizer(n_candidates=cfg["N"], n_steps=cfg["K"], device=device)
        losses = lstm.fit(
            sampler,
            iterations=cfg["fm"] + cfg["ft"],
            instances_per_iteration=cfg["inst"],
            lr=lr,
            seed=seed,
        )
        score = float(
            np.median(
                [
                    np.log10(
                        _gap(p, lstm.minimize(p, budget, seed=VALIDATION_SEED + i)) + GAP_FLOOR
                    )
                    for i, p in enumerate(val)
                ]
            )
        )
        if best is None or score < best[0]:
            best = (score, lstm, lr, losses)
    assert best is not None
    return best[1], best[2], best[3]


def _run_all(
    problems: list[Problem],
    learned: dict[str, Any],
    cfg: dict[str, Any],
    budget: int,
    adam_lr: float,
    methods: list[str],
) -> tuple[dict[str, list[float]], dict[str, float], dict[str, list[np.ndarray]]]:
    """Gaps, mean seconds per run, and the returned points of every method."""
    gaps: dict[str, list[float]] = {m: [] for m in methods}
    points: dict[str, list[np.ndarray]] = {m: [] for m in methods}
    secs: dict[str, float] = {m: 0.0 for m in methods}
    for i, p in enumerate(problems):
        seed = TEST_SEED + i
        runs: dict[str, Any] = {
            FLOW: lambda p=p, s=seed: learned[FLOW].minimize(p, budget, seed=s),
            STAGE1: lambda p=p, s=seed: learned[STAGE1].minimize(p, budget, seed=s),
            CMA: lambda p=p, s=seed: cma_es(p, budget, seed=s),
            **{
                label: lambda p=p, s=seed, o=opt: nevergrad_minimize(p, budget, optimizer=o, seed=s)
                for opt, label in NG.items()
            },
            ADAM: lambda p=p, s=seed: multistart_adam(
                p, budget, n_starts=cfg["N"], lr=adam_lr, seed=s
            ),
            LSTM: lambda p=p, s=seed: learned[LSTM].minimize(p, budget, seed=s),
            RANDOM: lambda p=p, s=seed: random_search(p, budget, seed=s, batch=cfg["N"]),
        }
        for m in methods:
            if m == FLOOR:
                continue
            fn = runs[m]
            t0 = time.perf_counter()
            res = fn()
            secs[m] += time.perf_counter() - t0
            gaps[m].append(_gap(p, res))
            points[m].append(np.asarray(res.x, dtype=np.float64))
            if m == FLOW and FLOOR in methods:  # the same start, stopped before any step
                gaps[FLOOR].append(max(res.history[0] - float(p.optimum), 0.0))
    return gaps, {m: s / len(problems) for m, s in secs.items()}, points


def _dispatch_metrics(problems: list[Problem], xs: list[np.ndarray]) -> tuple[list[float], ...]:
    """Generation cost, relative cost gap to the DC OPF, and violation (p.u.) per instance."""
    cost, rel, viol = [], [], []
    for p, x in zip(problems, xs, strict=True):
        X = torch.as_tensor(x, dtype=torch.float64)[None]
        with torch.no_grad():
            c = float(p.cost(X)[0])  # type: ignore[attr-defined]
            v = float(p.violation(X)[0]) / p.model.base_mva  # type: ignore[attr-defined]
        cost.append(c)
        rel.append((c - float(p.optimum)) / abs(float(p.optimum)))
        viol.append(v)
    return cost, rel, viol


def _beats(statement: str, a: list[float], b: list[float], names: tuple[str, str]) -> Claim:
    return Claim.superior(
        statement,
        np.maximum(a, GAP_FLOOR),
        np.maximum(b, GAP_FLOOR),
        names=names,
        metric="gap to the optimum (ratio)",
        higher_is_better=False,
        log_ratio=True,
    )


def _median(x: list[float]) -> float:
    return float(np.median(x))


def run(ctx: RunContext) -> Result:
    """Train one field per family, test at d and at 10 d, decide the claims."""
    torch.set_num_threads(1)
    cfg = _config(ctx)
    N, K, d = cfg["N"], cfg["K"], cfg["d"]
    budget = N * (K + 1)
    main = Table(
        f"gap to the optimum at {budget} evaluations, d = {d} (arm: {d} links; newsvendor: "
        f"{d} products; dispatch: {DISPATCH_CASE}, 6 generators); median and 90th percentile "
        f"over {cfg['n_test']} test instances",
        ["family", "method", "median gap", "p90 gap", "n", "s / run"],
    )
    ratios = Table(
        "median gap of each baseline / FlowOptimizer's (> 1: FlowOptimizer better)",
        ["family", *[m for m in METHODS if m != FLOW]],
    )
    gen = Table(
        f"generalization: the same fields at 10x the dimension ({budget} evaluations), "
        f"median gap over {cfg['n_gen']} instances",
        ["family", "d", *GEN_METHODS, "n"],
    )
    train = Table(
        "training time per family (wall seconds, this run), Adam's validation-picked step "
        "and the LSTM's validation-picked meta learning rate",
        [
            "family",
            "stage 1 s",
            "stage 2 s",
            "stage 1 final loss",
            "stage 2 final loss",
            "Adam lr",
            "LSTM s (all lrs)",
            "LSTM lr",
        ],
    )
    all_gaps: dict[str, dict[str, list[float]]] = {}
    gen_gaps: dict[str, dict[str, list[float]]] = {}
    dispatch: dict[str, dict[str, tuple[list[float], ...]]] = {}
    dispatch_ref: list[float] = []
    for fi, name in enumerate(ctx.progress(FAMILIES, "families")):
        fam = family(name)

        def sampler(rng: np.random.Generator, fam: Any = fam, name: str = name) -> Problem:
            if name == "dispatch":  # the case's own dimension
                return fam.sample_instance(rng)
            return fam.sample_instance(rng, d)

        torch.manual_seed(ctx.seed + fi)
        flow = FlowOptimizer(n_candidates=N, n_steps=K, device=ctx.device)
        t0 = time.perf_counter()
        l1 = flow.fit_flow_matching(
            sampler,
            iterations=cfg["fm"],
            instances_per_iteration=cfg["inst"],
            seed=TRAIN_SEED * (fi + 1) + ctx.seed,
        )
        t1 = time.perf_counter()
        stage1 = FlowOptimizer(
            type(flow.field)(flow.field.hidden), n_candidates=N, n_steps=K, device=ctx.device
        )
        stage1.field.load_state_dict(flow.field.state_dict())
        l2 = flow.fine_tune(
            sampler,
            iterations=cfg["ft"],
            instances_per_iteration=cfg["inst"],
            seed=TRAIN_SEED * (fi + 1) + 500 + ctx.seed,
        )
        t2 = time.perf_counter()
        lr = _pick_adam_lr(name, cfg, budget)
        t3 = time.perf_counter()
        lstm, lstm_lr, _ = _train_lstm(
            name, sampler, cfg, budget, TRAIN_SEED * (fi + 1) + ctx.seed, ctx.device
        )
        t4 = time.perf_counter()
        train.add_row(
            **{
                "family": name,
                "stage 1 s": t1 - t0,
                "stage 2 s": t2 - t1,
                "stage 1 final loss": l1[-1],
                "stage 2 final loss": l2[-1],
                "Adam lr": lr,
                "LSTM s (all lrs)": t4 - t3,
                "LSTM lr": lstm_lr,
            }
        )
        learned = {FLOW: flow, STAGE1: stage1, LSTM: lstm}
        test = _instances(name, d, TEST_SEED, cfg["n_test"])
        gaps, secs, points = _run_all(test, learned, cfg, budget, lr, METHODS)
        all_gaps[name] = gaps
        if name == "dispatch":
            dispatch_ref = [float(p.optimum) for p in test]
            dispatch[DISPATCH_CASE] = {
                m: _dispatch_metrics(test, points[m]) for m in METHODS if m != FLOOR
            }
        for m in METHODS:
            main.add_row(
                **{
                    "family": name,
                    "method": m,
                    "median gap": _median(gaps[m]),
                    "p90 gap": float(np.quantile(gaps[m], 0.9)),
                    "n": len(gaps[m]),
                    "s / run": secs[m] if m != FLOOR else None,
                }
            )
        ref = max(_median(gaps[FLOW]), GAP_FLOOR)
        ratios.add_row(family=name, **{m: _median(gaps[m]) / ref for m in METHODS if m != FLOW})
        if name in GENERALIZE:
            big = _instances(name, d, TEST_SEED, cfg["n_gen"], big=True)
            g2, _, p2 = _run_all(big, learned, cfg, budget, lr, GEN_METHODS)
            gen_gaps[name] = g2
            label = f"{name} ({DISPATCH_BIG})" if name == "dispatch" else name
            gen.add_row(
                family=label, d=big[0].dim, n=len(big), **{m: _median(g2[m]) for m in GEN_METHODS}
            )
            if name == "dispatch":
                dispatch[DISPATCH_BIG] = {m: _dispatch_metrics(big, p2[m]) for m in GEN_METHODS}

    # claim 1: FlowOptimizer beats every baseline on >= 5 of the families
    per_family = [
        Claim.all_of(
            f"{name}: FlowOptimizer's gap is below every baseline's.",
            [
                _beats(
                    f"{name}: FlowOptimizer beats {b}.",
                    all_gaps[name][FLOW],
                    all_gaps[name][b],
                    ("FlowOptimizer", b),
                )
                for b in BASELINES
            ],
        )
        for name in FAMILIES
    ]
    need = 5

    def count_rule(v: dict[str, Any]) -> bool | None:
        holds = sum(x == "holds" for x in v.values())
        open_ = sum(x == "inconclusive" for x in v.values())
        if holds >= need:
            return True
        if holds + open_ < need:
            return False
        return None

    c1 = Claim.check(
        f"FlowOptimizer's final objective is below every baseline's (pycma CMA-ES, "
        f"nevergrad OnePlusOne/CMA/SPSA, multi-start Adam, the LSTM learned optimizer, "
        f"random search) at equal evaluations on at least {need} of the "
        f"{len(FAMILIES)} families (the paper: 5 of 7).",
        f"per family: paired one-sided Wilcoxon on log gap ratios over {cfg['n_test']} "
        f"test instances against each baseline, all {len(BASELINES)} must hold; holds if "
        f">= {need} "
        "families hold, does not hold if fewer than that can still hold",
        {name: p.verdict for name, p in zip(FAMILIES, per_family, strict=True)},
        count_rule,
    )
    c1 = Claim(c1.statement, c1.rule, c1.values, c1.verdict, None, tuple(per_family))
    c2 = Claim.all_of(
        f"Trained at d = {d}, at d = {10 * d} FlowOptimizer still beats CMA-ES and "
        "multi-start Adam on the four benchmark functions.",
        [
            _beats(
                f"{name}, d = {10 * d}: FlowOptimizer beats {b}.",
                gen_gaps[name][FLOW],
                gen_gaps[name][b],
                ("FlowOptimizer", b),
            )
            for name in BENCHMARKS
            for b in (CMA, ADAM)
        ],
    )
    c3 = Claim.all_of(
        "Stage 2 helps: the fine-tuned field beats the stage-1-only field on every family.",
        [
            _beats(
                f"{name}: fine-tuned beats stage 1 only.",
                all_gaps[name][FLOW],
                all_gaps[name][STAGE1],
                ("fine-tuned", "stage 1 only"),
            )
            for name in FAMILIES
        ],
    )
    disp = Table(
        f"DC dispatch: generation cost relative to pandapower's DC OPF (rundcopp) and "
        f"constraint violation (|balance| + line overloads, p.u. on {DISPATCH_CASE}'s base), "
        f"{DISPATCH_CASE} test instances and {DISPATCH_BIG} with the {DISPATCH_CASE}-trained "
        "models",
        [
            "case",
            "method",
            "median relative gap",
            "p90 relative gap",
            "mean violation (p.u.)",
            f"share with violation < {VIOLATION_TARGET:g}",
            "n",
        ],
    )
    for case, per in dispatch.items():
        for m, (_, rel, viol) in per.items():
            disp.add_row(
                case=case,
                method=m,
                **{
                    "median relative gap": _median(rel),
                    "p90 relative gap": float(np.quantile(rel, 0.9)),
                    "mean violation (p.u.)": float(np.mean(viol)),
                    f"share with violation < {VIOLATION_TARGET:g}": float(
                        np.mean(np.asarray(viol) < VIOLATION_TARGET)
                    ),
                    "n": len(rel),
                },
            )
    cost_f, _, viol_f = dispatch[DISPATCH_CASE][FLOW]
    v_lo, v_hi = stats.bootstrap_ci([np.asarray(viol_f)], np.mean)
    c4 = Claim.all_of(
        f"Dispatch ({DISPATCH_CASE}): FlowOptimizer's cost is within {GAP_TARGET:.0%} of "
        f"pandapower's DC-OPF cost, with mean violation below {VIOLATION_TARGET:g} p.u.",
        [
            Claim.non_inferior(
                f"{DISPATCH_CASE}: FlowOptimizer's generation cost is at most "
                f"{GAP_TARGET:.0%} above the DC-OPF cost.",
                cost_f,
                dispatch_ref,
                margin=GAP_TARGET,
                names=("FlowOptimizer", "DC OPF (rundcopp)"),
                metric="generation cost (ratio)",
                higher_is_better=False,
                log_ratio=True,
            ),
            Claim.check(
                f"{DISPATCH_CASE}: FlowOptimizer's mean constraint violation is below "
                f"{VIOLATION_TARGET:g} p.u.",
                f"mean over {len(viol_f)} test instances of |balance| + line overloads "
                f"(p.u.), BCa bootstrap 95% CI; holds if the CI lies below "
                f"{VIOLATION_TARGET:g}, does not hold if it lies above, else inconclusive",
                {
                    "mean violation (p.u.)": float(np.mean(viol_f)),
                    "CI low": v_lo,
                    "CI high": v_hi,
                    "n": len(viol_f),
                },
                lambda v: (
                    True
                    if v["CI high"] < VIOLATION_TARGET
                    else (False if v["CI low"] >= VIOLATION_TARGET else None)
                ),
            ),
        ],
    )
    return Result(
        tables=[main, ratios, gen, disp, train],
        claims=[c1, c2, c3, c4],
        notes=[
            f"N = {N} candidates, K = {K} Euler steps: {budget} evaluations per instance "
            "for every method (CMA-ES: its default population, whole generations within "
            "the budget; Adam: one value-and-gradient call = one evaluation).",
            f"Gaps are re-evaluated in float64 at the returned point; gaps below "
            f"{GAP_FLOOR:g} count as {GAP_FLOOR:g} in the tests.",
            "Training, validation (Adam's step) and test instances come from disjoint "
            "seeds; FlowOptimizer's own constants were fixed before the run, not tuned "
            "on test instances.",
            "nevergrad (1.0.12): OnePlusOne, CMA and SPSA with their defaults on "
            "ng.p.Array(init=x0, lower, upper) (initial step a sixth of the box width), x0 "
            "uniform as for pycma, one candidate per ask/tell; best evaluated point kept. "
            "Not run at 10 d (CPU).",
            f"LSTM learned optimizer (Andrychowicz et al., 2016): 2 x 20 coordinate-wise "
            f"LSTM on preprocessed gradients, {N} uniform starts, {cfg['fm'] + cfg['ft']} "
            f"meta steps of {cfg['inst']} training instances (FlowOptimizer: "
            f"{cfg['fm']} + {cfg['ft']}), loss the mean over the {K} unrolled steps of the "
            "log gap to the family's lower bound; meta learning rate picked from "
            f"{list(LSTM_LRS)} on the validation instances.",
            f"DC dispatch: every generator's MW in its box, cost + penalty x violation "
            f"(MW), penalty 10x the largest marginal cost in the box "
            f"({_instances('dispatch', d, TEST_SEED, 1)[0].penalty:g} per MW on "  # type: ignore[attr-defined]
            f"{DISPATCH_CASE}); loads scaled by U[0.85, 1.15] x U[0.9, 1.1] per load; "
            f"the gap of the first table includes the penalty; reference optimum "
            f"pandapower rundcopp (read for reporting only).",
        ],
        data={
            "gaps": all_gaps,
            "generalization": gen_gaps,
            "dispatch": {
                case: {
                    m: dict(zip(("cost", "relative gap", "violation"), v, strict=True))
                    for m, v in per.items()
                }
                for case, per in dispatch.items()
            },
            "config": cfg,
        },
    )


EXPERIMENT = Experiment(
    name="flow-optimizer",
    title="FlowOptimizer: deep unfolded, flow-based learned iterative optimization",
    claim="A learned population velocity field (flow matching, then unrolled fine-tuning) "
    "beats CMA-ES, multi-start Adam and random search at equal evaluations, and "
    "generalizes from d to 10 d.",
    run=run,
)
