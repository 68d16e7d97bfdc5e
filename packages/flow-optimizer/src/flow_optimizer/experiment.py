"""The headline experiment of flow-optimizer: `icml26 run flow-optimizer`.

One FlowOptimizer per problem family is trained (stage 1 flow matching, then stage 2
unrolled fine-tuning) on instances drawn with training seeds, and tested on instances
drawn with other seeds, at an equal number of objective evaluations against pycma's
CMA-ES, multi-start Adam (same population size; a value-and-gradient call counts as
one evaluation; its step size picked on validation instances), random search, and the
floor "stop at once" (best of the starting population). The stage-1-only field is the
ablation of stage 2. The trained fields are then run unchanged at 10x the dimension.
The metric is the gap of the best value found to the known optimum (0 for the shifted
benchmark functions and the reachable arm targets; the LP optimum for the newsvendor).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from icml26_core import Claim, Experiment, Result, RunContext, Table

from flow_optimizer.baselines import cma_es, multistart_adam, random_search
from flow_optimizer.optimizer import FlowOptimizer, OptResult
from flow_optimizer.problems import Problem, family

FAMILIES = ["rastrigin", "ackley", "rosenbrock", "levy", "arm-ik", "newsvendor"]
BENCHMARKS = FAMILIES[:4]
GENERALIZE = ["rastrigin", "ackley", "rosenbrock", "levy", "arm-ik"]
ADAM_LRS = (0.003, 0.01, 0.03, 0.1)  # in box widths; picked per family on validation seeds
GAP_FLOOR = 1e-9  # gaps below this count as equal (ties) in the log-ratio tests
TRAIN_SEED, VALIDATION_SEED, TEST_SEED = 1_000, 50_000, 100_000
FLOW = "FlowOptimizer"
STAGE1 = "FlowOptimizer, stage 1 only"
CMA = "CMA-ES (pycma)"
ADAM = "multi-start Adam"
RANDOM = "random search"
FLOOR = "stop at once (floor)"
METHODS = [FLOW, STAGE1, CMA, ADAM, RANDOM, FLOOR]
BASELINES = [CMA, ADAM, RANDOM]


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


def _instances(name: str, dim: int, seed: int, n: int) -> list[Problem]:
    fam = family(name)
    return [fam.sample_instance(np.random.default_rng(seed + i), dim) for i in range(n)]


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


def _run_all(
    problems: list[Problem],
    flows: dict[str, FlowOptimizer],
    cfg: dict[str, Any],
    budget: int,
    adam_lr: float,
) -> tuple[dict[str, list[float]], dict[str, float]]:
    gaps: dict[str, list[float]] = {m: [] for m in METHODS}
    secs: dict[str, float] = {m: 0.0 for m in METHODS}
    for i, p in enumerate(problems):
        seed = TEST_SEED + i
        runs = {
            FLOW: lambda p=p, s=seed: flows[FLOW].minimize(p, budget, seed=s),
            STAGE1: lambda p=p, s=seed: flows[STAGE1].minimize(p, budget, seed=s),
            CMA: lambda p=p, s=seed: cma_es(p, budget, seed=s),
            ADAM: lambda p=p, s=seed: multistart_adam(
                p, budget, n_starts=cfg["N"], lr=adam_lr, seed=s
            ),
            RANDOM: lambda p=p, s=seed: random_search(p, budget, seed=s, batch=cfg["N"]),
        }
        for m, fn in runs.items():
            t0 = time.perf_counter()
            res = fn()
            secs[m] += time.perf_counter() - t0
            gaps[m].append(_gap(p, res))
            if m == FLOW:  # the same starting population, stopped before the first step
                gaps[FLOOR].append(max(res.history[0] - float(p.optimum), 0.0))
    return gaps, {m: s / len(problems) for m, s in secs.items()}


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
        f"{d} products); median and 90th percentile over {cfg['n_test']} test instances",
        ["family", "method", "median gap", "p90 gap", "n", "s / run"],
    )
    ratios = Table(
        "median gap of each baseline / FlowOptimizer's (> 1: FlowOptimizer better)",
        ["family", *[m for m in METHODS if m != FLOW]],
    )
    gen = Table(
        f"generalization: the same fields at 10x the dimension ({budget} evaluations), "
        f"median gap over {cfg['n_gen']} instances",
        ["family", "d", *METHODS[:5], "n"],
    )
    train = Table(
        "training time per family (wall seconds, this run) and Adam's validation-picked step",
        ["family", "stage 1 s", "stage 2 s", "stage 1 final loss", "stage 2 final loss", "Adam lr"],
    )
    all_gaps: dict[str, dict[str, list[float]]] = {}
    gen_gaps: dict[str, dict[str, list[float]]] = {}
    for fi, name in enumerate(ctx.progress(FAMILIES, "families")):
        fam = family(name)

        def sampler(rng: np.random.Generator, fam: Any = fam) -> Problem:
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
        train.add_row(
            **{
                "family": name,
                "stage 1 s": t1 - t0,
                "stage 2 s": t2 - t1,
                "stage 1 final loss": l1[-1],
                "stage 2 final loss": l2[-1],
                "Adam lr": lr,
            }
        )
        flows = {FLOW: flow, STAGE1: stage1}
        test = _instances(name, d, TEST_SEED, cfg["n_test"])
        gaps, secs = _run_all(test, flows, cfg, budget, lr)
        all_gaps[name] = gaps
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
            big = _instances(name, 10 * d, TEST_SEED, cfg["n_gen"])
            g2, _ = _run_all(big, flows, cfg, budget, lr)
            gen_gaps[name] = g2
            gen.add_row(
                family=name, d=10 * d, n=len(big), **{m: _median(g2[m]) for m in METHODS[:5]}
            )

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
        f"FlowOptimizer's final objective is below every baseline's (CMA-ES, multi-start "
        f"Adam, random search) at equal evaluations on at least {need} of the "
        f"{len(FAMILIES)} families built (the paper: 5 of 7; dispatch not built yet).",
        f"per family: paired one-sided Wilcoxon on log gap ratios over {cfg['n_test']} "
        f"test instances against each baseline, all three must hold; holds if >= {need} "
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
    return Result(
        tables=[main, ratios, gen, train],
        claims=[c1, c2, c3],
        notes=[
            f"N = {N} candidates, K = {K} Euler steps: {budget} evaluations per instance "
            "for every method (CMA-ES: its default population, whole generations within "
            "the budget; Adam: one value-and-gradient call = one evaluation).",
            f"Gaps are re-evaluated in float64 at the returned point; gaps below "
            f"{GAP_FLOOR:g} count as {GAP_FLOOR:g} in the tests.",
            "Training, validation (Adam's step) and test instances come from disjoint "
            "seeds; FlowOptimizer's own constants were fixed before the run, not tuned "
            "on test instances.",
            "Not built yet: DC dispatch on pandapower grids (claim 4), the LSTM "
            "learned-optimizer baseline, nevergrad baselines.",
        ],
        data={"gaps": all_gaps, "generalization": gen_gaps, "config": cfg},
    )


EXPERIMENT = Experiment(
    name="flow-optimizer",
    title="FlowOptimizer: deep unfolded, flow-based learned iterative optimization",
    claim="A learned population velocity field (flow matching, then unrolled fine-tuning) "
    "beats CMA-ES, multi-start Adam and random search at equal evaluations, and "
    "generalizes from d to 10 d.",
    run=run,
)
