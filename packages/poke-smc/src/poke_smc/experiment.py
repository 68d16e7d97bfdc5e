"""Experiment ``poke-smc``: Path LL, POKE and POKE-SMC against decoding-time scaling baselines.

On each task (sudoku 9x9, multi-digit addition, Shakespeare word infilling, all scored
by exact answers) a small masked diffusion transformer is trained with the MDLM/LLaDA
recipe (cached), then:

1. **Proposal, on validation items.** The sampling temperature shared by every
   sampling method (best-of-N, majority vote and the SMC variants) is chosen from
   :data:`TEMPERATURES` by best-of-N's accuracy on validation items drawn apart from
   the test items; the verdicts never read those items.
2. **Path LL vs accuracy.** Several trajectories per test item (random order and
   confidence order, tokens at temperature 1): is the one with the highest Path LL
   right more often than a random one of them? Spearman's rho is shown beside it.
3. **POKE.** Fitted to rollouts of the proposal on fresh items and measured on the
   rollouts of other items: its squared error in predicting the future Path LL,
   against the greedy estimate (its untrained starting point) and the mean predictor.
4. **Strategies at matched NFE.** Floors (random order, everything in one step),
   greedy remasking (confidence, margin, entropy; confidence with fewer steps),
   best-of-N by Path LL and majority vote over the same N samples, POKE-SMC, and SMC
   without lookahead and with the greedy lookahead, all with N x steps NFE.

Every comparison is paired over test items (exact answer, 0/1) and pooled over the
tasks; each claim is decided by the core's builders (:mod:`icml26_core.stats`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from icml26_core import stats
from icml26_core.device import torch_device, torch_threads
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table

from poke_smc.decoding import BestOfN, ScoreRemasking, decode, infill, majority_vote
from poke_smc.model import MaskedDiffusionTransformer, model_device
from poke_smc.poke import Rollouts, collect_rollouts, fit_poke
from poke_smc.smc import PokeSMC
from poke_smc.tasks import AdditionTask, EvalSet, ShakespeareInfill, SudokuTask, Task
from poke_smc.training import train_masked_diffusion

TEMPERATURES = (0.3, 0.6, 1.0)
"""Grid of the proposal temperature (tokens and order), chosen per task on validation
items by best-of-N's accuracy; the same proposal then serves every sampling method."""

SUDOKU_BLANKS = 24
"""Empty cells of the default-scale sudokus, chosen on validation puzzles (see
``benchmarks/learning_curves.py``: of 24 to 36, the only count with exact answers); the
model does not depend on it (it is trained on randomly masked solved grids)."""

WORD_LETTERS = 3
"""Letters of the default-scale masked words, chosen on validation windows (of 2 to 4, the
most exact answers); the model does not depend on it (it is trained on randomly masked
windows)."""

POKE_HOLDOUT = 0.25
"""Share of the POKE inputs whose rollouts are held out to measure its predictions."""

SMC = "POKE-SMC"
BON = "best-of-N (Path LL)"
VOTE = "majority vote"
CONF = "confidence"
NO_LOOK = "SMC, no lookahead"
GREEDY_LOOK = "SMC, greedy lookahead"
RANDOM_FLOOR = "floor: random order"
ONE_STEP = "floor: one step"


@dataclass(frozen=True)
class TaskConfig:
    """How one task is trained and evaluated at one scale."""

    task: Task
    train_steps: int
    batch_size: int
    d_model: int
    n_layers: int
    n_eval: int  # test items
    n_val: int  # validation items (proposal temperature)
    particles: tuple[int, ...]
    poke_items: int
    trajectories: int  # per test item, for the Path LL claim
    lr: float = 3e-3


def _configs(ctx: RunContext) -> list[TaskConfig]:
    s9 = SudokuTask(9, blanks=ctx.pick(12, SUDOKU_BLANKS, 45))
    add = AdditionTask(ctx.pick(3, 4, 8))
    words = ShakespeareInfill(window=64, span=ctx.pick(4, WORD_LETTERS, 4), whole_words=True)
    return [
        TaskConfig(s9, *ctx.pick((20, 8), (2500, 32), (8000, 128)),
                   d_model=ctx.pick(32, 64, 256), n_layers=ctx.pick(2, 3, 6),
                   n_eval=ctx.pick(6, 64, 500), n_val=ctx.pick(4, 32, 200),
                   particles=ctx.pick((2,), (2, 4), (2, 4, 8, 16)),
                   poke_items=ctx.pick(8, 64, 512), trajectories=ctx.pick(2, 8, 16)),
        TaskConfig(add, *ctx.pick((60, 32), (1200, 64), (5000, 128)),
                   d_model=64, n_layers=3, n_eval=ctx.pick(12, 600, 2000),
                   n_val=ctx.pick(8, 100, 500),
                   particles=ctx.pick((2,), (2, 4, 8), (2, 4, 8, 16)),
                   poke_items=ctx.pick(16, 128, 1024), trajectories=ctx.pick(4, 8, 16)),
        TaskConfig(words, *ctx.pick((40, 16), (2000, 32), (8000, 128)),
                   d_model=ctx.pick(64, 64, 256), n_layers=ctx.pick(2, 3, 6),
                   n_eval=ctx.pick(12, 400, 2000), n_val=ctx.pick(8, 100, 500),
                   particles=ctx.pick((2,), (2, 4, 8), (2, 4, 8, 16)),
                   poke_items=ctx.pick(16, 128, 512), trajectories=ctx.pick(4, 8, 16)),
    ]  # fmt: skip


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _model(cfg: TaskConfig, ctx: RunContext) -> tuple[MaskedDiffusionTransformer, dict]:
    """Train the task's model, or load it from the cache when this exact run was done."""
    from icml26_core.lm import checkpoint_dir, load_checkpoint, save_checkpoint

    task = cfg.task
    torch.manual_seed(ctx.seed)  # the same initial weights whatever ran before
    model = MaskedDiffusionTransformer(
        task.vocab_size, task.seq_len, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=4
    ).to(torch_device(ctx.device))
    key = _slug(
        f"poke-smc {task.name} {task.seq_len} d{cfg.d_model} l{cfg.n_layers} "
        f"s{cfg.train_steps} b{cfg.batch_size} lr{cfg.lr} seed{ctx.seed} v3"
    )
    folder = checkpoint_dir(key)
    try:
        info = load_checkpoint(folder, model=model)
        model.eval()
        return model, {**info["extra"], "cached": True}
    except FileNotFoundError:
        pass
    rng = ctx.rng(100)
    hist = train_masked_diffusion(
        model,
        lambda _step: task.train_batch(cfg.batch_size, rng),
        cfg.train_steps,
        lr=cfg.lr,
        warmup=min(100, cfg.train_steps // 10),
        seed=ctx.seed,
        progress=lambda it, desc: ctx.progress(it, f"{task.name}: {desc}"),
    )
    extra = {"final_loss": hist.final_loss(), "train_seconds": hist.seconds}
    save_checkpoint(folder, model=model, step=hist.steps, extra=extra)
    return model, {**extra, "cached": False}


def _run(
    model: Any, items: EvalSet, steps: int, strategy: Any, seed: int, width: int = 1
) -> tuple[dict[str, Any], float]:
    """Decode an evaluation set with one strategy, in chunks; returns (arrays, seconds).

    The arrays: ``tokens (N, L)``, ``path_ll (N,)``, and for several candidates
    ``candidates (N, C, L)`` and ``candidate_path_ll (N, C)``.
    """
    gen = torch.Generator().manual_seed(seed)
    device = model_device(model)
    chunk = max(1, 24576 // (width * items.inputs.shape[1]))
    parts: dict[str, list[np.ndarray]] = {}
    nfe = 0
    t0 = time.perf_counter()
    for lo in range(0, len(items), chunk):
        x = torch.as_tensor(items.inputs[lo : lo + chunk], device=device)
        if items.prompt_len is not None:
            p = items.prompt_len
            res = decode(model, x[:, :p], x.shape[1] - p, steps, strategy, generator=gen)
        else:
            res = infill(model, x, steps, strategy, generator=gen)
        nfe = res.nfe
        for key in ("tokens", "path_ll", "candidates", "candidate_path_ll"):
            value = getattr(res, key)
            if value is not None:
                parts.setdefault(key, []).append(value.cpu().numpy())
    out: dict[str, Any] = {k: np.concatenate(v) for k, v in parts.items()}
    out["nfe"] = nfe
    return out, time.perf_counter() - t0


def _spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    from scipy.stats import spearmanr

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    r = spearmanr(x, y)
    return float(r.statistic), float(r.pvalue)


def _repeat(items: EvalSet, m: int) -> EvalSet:
    return EvalSet(np.repeat(items.inputs, m, 0), np.repeat(items.targets, m, 0), items.prompt_len)


def _exact(task: Task, cands: np.ndarray, items: EvalSet) -> np.ndarray:
    """Exactness ``(N, C)`` of candidates ``(N, C, L)``."""
    n, m, _ = cands.shape
    return task.correct(cands.reshape(n * m, -1), _repeat(items, m)).reshape(n, m)


def _path_ll_selection(cfg: TaskConfig, model: Any, items: EvalSet, ctx: RunContext) -> dict:
    """Path LL of sampled trajectories vs their exactness, per item and pooled."""
    task, k = cfg.task, items.masks_per_item
    half = max(1, cfg.trajectories // 2)
    plls, oks = [], []
    for i, score in enumerate(("random", "confidence")):
        res, _ = _run(model, items, k, BestOfN(half, score=score, temperature=1.0),
                      ctx.seed + 10 + i, width=half)  # fmt: skip
        plls.append(res["candidate_path_ll"])
        oks.append(_exact(task, res["candidates"], items).astype(float))
    pll, ok = np.concatenate(plls, 1), np.concatenate(oks, 1)
    chosen = ok[np.arange(len(ok)), pll.argmax(1)]
    rho, p = _spearman(pll.ravel(), ok.ravel())
    within = [_spearman(pll[i], ok[i])[0] for i in range(len(pll))]
    within = [w for w in within if np.isfinite(w)]
    q = np.quantile(pll.ravel(), [0.25, 0.75])
    row = {
        "task": task.name,
        "items": len(items),
        "trajectories": int(pll.size),
        "exact, random pick": float(ok.mean()),
        "exact, highest Path LL": float(chosen.mean()),
        "spearman rho": rho,
        "p-value": p,
        "within-item rho": float(np.mean(within)) if within else float("nan"),
        "items with mixed outcomes": len(within),
        "exact, top quartile Path LL": float(ok.ravel()[pll.ravel() >= q[1]].mean()),
        "exact, bottom quartile Path LL": float(ok.ravel()[pll.ravel() <= q[0]].mean()),
    }
    return {"row": row, "chosen": chosen.tolist(), "mean": ok.mean(1).tolist()}


def _poke(cfg: TaskConfig, model: Any, temperature: float, k: int, ctx: RunContext) -> dict:
    """Fit POKE on rollouts of some inputs and measure it on the rollouts of others."""
    task = cfg.task
    inputs = torch.as_tensor(task.eval_set(cfg.poke_items, ctx.rng(300)).inputs)
    rollouts = collect_rollouts(
        model,
        inputs.to(model_device(model)),
        k,
        rollouts_per_input=4,
        temperature=temperature,
        generator=torch.Generator().manual_seed(ctx.seed + 300),
    )
    fit_part, held = rollouts.split(POKE_HOLDOUT, torch.Generator().manual_seed(ctx.seed + 301))
    value, fit = fit_poke(fit_part, validation=held, epochs=ctx.pick(3, 20, 60), seed=ctx.seed)
    poke_pred = value.predict(held)
    mean_pred = _mean_by_masked(fit_part, held)
    err = {
        "POKE": (poke_pred - held.target) ** 2,
        "greedy estimate": (held.greedy - held.target) ** 2,
        "mean predictor": (mean_pred - held.target) ** 2,
    }
    groups = held.groups.numpy()
    ids = np.unique(groups)
    per_input = {
        name: [float(e.numpy()[groups == g].mean()) for g in ids] for name, e in err.items()
    }
    var = float(held.target.var(unbiased=False))
    rows = [
        {
            "task": task.name,
            "predictor": name,
            "states (fit / held out)": f"{len(fit_part)} / {len(held)}",
            "held-out inputs": len(ids),
            "R2": 1.0 - float(e.mean()) / var if var > 0 else float("nan"),
            "RMSE": float(e.mean().sqrt()),
        }
        for name, e in err.items()
    ]
    return {"value": value.to(model_device(model)), "rows": rows, "per_input": per_input,
            "fit": {"r2_poke": fit.r2_poke, "r2_greedy": fit.r2_greedy}}  # fmt: skip


def _mean_by_masked(fit_part: Rollouts, held: Rollouts) -> torch.Tensor:
    """The mean predictor: the fitted states' mean future Path LL at the same masked count."""
    n_fit, n_held = fit_part.masked.sum(-1), held.masked.sum(-1)
    overall = fit_part.target.mean()
    out = torch.full_like(held.target, float(overall))
    for c in torch.unique(n_held).tolist():
        same = n_fit == c
        if same.any():
            out[n_held == c] = fit_part.target[same].mean()
    return out


def _choose_temperature(cfg: TaskConfig, model: Any, ctx: RunContext) -> tuple[float, list[dict]]:
    """The proposal temperature with the best best-of-N accuracy on validation items."""
    items = cfg.task.eval_set(cfg.n_val, ctx.rng(250))
    k, n = items.masks_per_item, max(cfg.particles)
    rows = []
    for i, temp in enumerate(TEMPERATURES):
        res, _ = _run(model, items, k, BestOfN(n, temperature=temp), ctx.seed + 500 + i, n)
        acc = float(cfg.task.correct(res["tokens"], items).mean())
        rows.append({"task": cfg.task.name, "temperature": temp, "validation items": len(items),
                     "particles": n, "best-of-N accuracy": acc})  # fmt: skip
    best = max(rows, key=lambda r: r["best-of-N accuracy"])  # ties: the lowest temperature
    for r in rows:
        r["chosen"] = r is best
    return float(best["temperature"]), rows


def _strategies(cfg: TaskConfig, k: int, temp: float, value: Any) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = [
        (RANDOM_FLOOR, ScoreRemasking("random"), k),
        (ONE_STEP, ScoreRemasking("confidence"), 1),
        (CONF, ScoreRemasking("confidence"), k),
        ("margin", ScoreRemasking("margin"), k),
        ("entropy", ScoreRemasking("entropy"), k),
    ]
    for frac in (2, 4):
        if 1 < k // frac < k:
            out.append((CONF, ScoreRemasking("confidence"), k // frac))
    for n in cfg.particles:
        out.append((BON, BestOfN(n, temperature=temp), k))
        out.append((SMC, PokeSMC(n, value=value, temperature=temp), k))
    n = max(cfg.particles)
    out.append((NO_LOOK, PokeSMC(n, value=None, temperature=temp), k))
    out.append((GREEDY_LOOK, PokeSMC(n, value="greedy", temperature=temp), k))
    return out


def _task(cfg: TaskConfig, ctx: RunContext) -> dict:
    task = cfg.task
    t0 = time.perf_counter()
    model, train_info = _model(cfg, ctx)
    verb = "loaded" if train_info["cached"] else "trained"
    ctx.log(f"{task.name}: model {verb} in {time.perf_counter() - t0:.0f} s")
    items = task.eval_set(cfg.n_eval, ctx.rng(200))
    k = items.masks_per_item

    t0 = time.perf_counter()
    temp, tuning = _choose_temperature(cfg, model, ctx)
    selection = _path_ll_selection(cfg, model, items, ctx)
    poke = _poke(cfg, model, temp, k, ctx)
    ctx.log(
        f"{task.name}: temperature {temp}, Path LL and POKE in {time.perf_counter() - t0:.0f} s"
    )

    t0 = time.perf_counter()
    rows: list[dict] = []
    exact: dict[str, list[bool]] = {}  # per test item, for the paired claims
    top = max(cfg.particles)
    strategies = _strategies(cfg, k, temp, poke["value"])
    for i, (name, strat, steps) in enumerate(ctx.progress(strategies, f"{task.name}: decoding")):
        n_cand = getattr(strat, "particles", getattr(strat, "n", 1))
        res, secs = _run(model, items, steps, strat, ctx.seed + 1000 + i, n_cand)
        picks = [(name, res["tokens"])]
        if name == BON:  # majority vote over the same samples: same NFE, no extra cost
            cand, pll = (
                torch.as_tensor(res["candidates"]),
                torch.as_tensor(res["candidate_path_ll"]),
            )
            idx = majority_vote(cand, pll).numpy()
            picks.append((VOTE, res["candidates"][np.arange(len(idx)), idx]))
        for label, out in picks:
            ok = task.correct(out, items)
            if steps == k and (n_cand == top or label in (CONF, RANDOM_FLOOR)):
                exact.setdefault(label, ok.tolist())
            rows.append({
                "task": task.name, "method": label, "particles": n_cand, "steps": steps,
                "NFE": res["nfe"], "n": len(items), "accuracy": float(ok.mean()),
                "token accuracy": float(task.char_accuracy(out, items).mean()),
                "ms / item": 1000 * secs / len(items),
            })  # fmt: skip
    ctx.log(f"{task.name}: {len(strategies)} strategies in {time.perf_counter() - t0:.0f} s")
    return {
        "name": task.name,
        "answer tokens": k,
        "items": len(items),
        "particles": list(cfg.particles),
        "temperature": temp,
        "train": train_info,
        "tuning": tuning,
        "selection": selection,
        "poke": {k_: v for k_, v in poke.items() if k_ != "value"},
        "rows": rows,
        "exact": exact,
    }


def _task_in_process(index: int, scale: str, device: str, seed: int, out_dir: str) -> dict:
    """Task ``index`` of :func:`_configs` in a worker process, with one torch thread."""
    ctx = RunContext(scale=scale, device=device, seed=seed, out_dir=out_dir)
    with torch_threads(1):
        return _task(_configs(ctx)[index], ctx)


def _pooled(results: list[dict], method: str) -> np.ndarray:
    return np.concatenate([np.asarray(r["exact"][method], dtype=float) for r in results])


def _figure(ctx: RunContext, results: list[dict]) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.6), squeeze=False)
    for ax, res in zip(axes[0], results, strict=True):
        rows, k = res["rows"], res["answer tokens"]
        greedy = [(r["NFE"], r["accuracy"]) for r in rows if r["method"] == CONF]
        ax.plot(*zip(*sorted(greedy), strict=True), "o-", label=CONF, ms=5)
        at_k = [a for nfe, a in greedy if nfe == k]
        for method, style, size in ((BON, "s--", 8), (VOTE, "^:", 7), (SMC, "D-", 5)):
            pts = sorted((r["NFE"], r["accuracy"]) for r in rows if r["method"] == method)
            ax.plot(*zip(*[(k, at_k[0]), *pts], strict=True), style, label=method, ms=size)
        for method, mark in ((NO_LOOK, "x"), (GREEDY_LOOK, "+"), (RANDOM_FLOOR, "v")):
            pts = [(r["NFE"], r["accuracy"]) for r in rows if r["method"] == method]
            ax.plot(*zip(*pts, strict=True), mark, label=method, ms=9, mew=2)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{res['name']} (n = {res['items']})")
        ax.set_xlabel("NFE per item")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("exact accuracy")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Accuracy vs compute (the sampling curves start from greedy confidence)")
    fig.tight_layout()
    ctx.save_figure(fig, "accuracy_vs_nfe")


def _evidence_rows(results: list[dict]) -> list[dict]:
    """POKE-SMC against each baseline, per task and pooled (sign test over items)."""
    out = []
    groups = [(r["name"], [r]) for r in results] + [("all tasks", results)]
    for other in (BON, VOTE, CONF, NO_LOOK, GREEDY_LOOK, RANDOM_FLOOR):
        for label, rs in groups:
            ev = stats.paired_comparison(
                _pooled(rs, SMC), _pooled(rs, other), test="sign", names=(SMC, other)
            )
            out.append({
                "task": label, "POKE-SMC vs": other, "n": ev.n,
                "accuracy gain": ev.effect, "CI low": ev.ci_low, "CI high": ev.ci_high,
                "p": ev.p_value, "verdict": ev.verdict,
            })  # fmt: skip
    return out


def _claims(results: list[dict]) -> list[Claim]:
    names = ", ".join(r["name"] for r in results)
    select = Claim.all_of(
        "Path LL correlates with downstream accuracy and enables principled selection of "
        "unmasking paths.",
        [
            Claim.superior(
                f"{r['name']}: among an item's sampled trajectories, the one with the highest "
                "Path LL is exact more often than a random one.",
                r["selection"]["chosen"], r["selection"]["mean"],
                names=("highest Path LL", "random pick"),
                metric="exact answer of the chosen trajectory (0/1; random pick: the mean)",
            )
            for r in results
        ],
        rule="on every task, paired over test items, the trajectory of highest Path LL "
        "among 8 sampled ones (4 in random order, 4 in confidence order, temperature 1) "
        "beats a random one of them (Wilcoxon signed-rank)",
    )  # fmt: skip
    poke_parts = []
    for r in results:
        per = r["poke"]["per_input"]
        for other in ("greedy estimate", "mean predictor"):
            poke_parts.append(Claim.superior(
                f"{r['name']}: POKE predicts the future Path LL better than the {other}.",
                per["POKE"], per[other], names=("POKE", other), higher_is_better=False,
                metric="mean squared error per held-out input (nats^2)",
            ))  # fmt: skip
    poke = Claim.all_of(
        "POKE, a value estimator, predicts the expected future Path LL of a partial "
        "decoding trajectory.",
        poke_parts,
        rule="on every task, paired over held-out inputs (rollouts of inputs POKE was not "
        "fitted on), POKE's squared error is below the greedy estimate's (POKE's untrained "
        "starting point) and the mean predictor's (the mean future Path LL at the same "
        "masked count)",
    )
    smc = _pooled(results, SMC)

    def vs(other: str, statement: str) -> Claim:
        return Claim.superior(
            statement, smc, _pooled(results, other), names=(SMC, other), test="sign",
            metric=f"exact answer per test item (0/1), pooled over {names}",
        )  # fmt: skip

    headline = Claim.all_of(
        "POKE-SMC improves accuracy over strong decoding-time scaling baselines at "
        "comparable inference overhead (the paper: 2-3 points on average).",
        [
            vs(BON, "POKE-SMC beats best-of-N selected by Path LL at equal NFE."),
            vs(VOTE, "POKE-SMC beats majority vote at equal NFE."),
            vs(CONF, "POKE-SMC beats greedy confidence remasking (LLaDA's default)."),
        ],
        rule="at the largest particle count N of each task, paired over the test items of "
        f"all tasks ({names}): POKE-SMC beats best-of-N by Path LL and majority vote over "
        "the same proposal at N x steps NFE, and greedy confidence decoding at steps NFE "
        "(sign test = exact McNemar)",
    )
    lookahead = vs(
        NO_LOOK,
        "POKE's lookahead improves SMC: POKE-SMC beats SMC without lookahead (weights by "
        "the Path LL so far) at equal particles and proposal.",
    )
    greedy = vs(
        GREEDY_LOOK,
        "POKE's learned value beats the greedy estimate as SMC's lookahead at equal "
        "particles and proposal.",
    )
    return [select, poke, headline, lookahead, greedy]


def run(ctx: RunContext) -> Result:
    """Run the experiment at ``ctx.scale``; see the module docstring."""
    cfgs = _configs(ctx)
    if ctx.scale == "default" and torch_device(ctx.device).type == "cpu":
        # The tasks are independent: one process each, one torch thread each (two threads
        # in one process collapse, spin-waiting, when the machine is shared). Every task
        # seeds its own streams, so the numbers are those of a sequential run.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(len(cfgs), mp_context=spawn) as pool:
            args = (ctx.scale, ctx.device, ctx.seed, str(ctx.out_dir))
            futures = [pool.submit(_task_in_process, i, *args) for i in range(len(cfgs))]
            results = [f.result() for f in futures]
    else:
        threads = 1 if torch_device(ctx.device).type == "cpu" else None
        with torch_threads(threads):
            results = [_task(cfg, ctx) for cfg in cfgs]

    def table(title: str, rows: list[dict], note: str) -> Table:
        return Table(title=title, columns=list(rows[0]), rows=rows, note=note)

    tables = [
        table(
            "Proposal temperature, chosen on validation items by best-of-N's accuracy",
            [row for r in results for row in r["tuning"]],
            "validation items are drawn with another seed than the test items; the chosen "
            "proposal (tokens and order at that temperature) serves best-of-N, majority vote "
            "and every SMC variant.",
        ),
        table(
            "Path LL vs exactness over sampled trajectories (4 random-order and 4 "
            "confidence-order per item, temperature 1)",
            [r["selection"]["row"] for r in results],
            "highest Path LL: the exactness of each item's trajectory of highest Path LL; "
            "random pick: the mean over its trajectories; rho: Spearman's rank correlation "
            "pooled over trajectories; within-item rho: mean over items with mixed outcomes.",
        ),
        table(
            "POKE: predicting the future Path LL of partial trajectories, on the rollouts "
            "of held-out inputs",
            [row for r in results for row in r["poke"]["rows"]],
            "greedy estimate: sum over masked positions of log max p (POKE before training); "
            "mean predictor: the fitted states' mean future Path LL at the same masked "
            "count (the trivial floor); nats.",
        ),
        table(
            "Unmasking strategies on the test items; the sampling methods share one "
            "proposal and select by Path LL (majority vote: the commonest answer)",
            [row for r in results for row in r["rows"]],
            "NFE: network evaluations per item (steps x particles); n: test items; accuracy: "
            "exact answers; majority vote reuses best-of-N's samples, so its ms / item is "
            "best-of-N's; floors: random unmasking order, and every token in one step.",
        ),
        table(
            "POKE-SMC (largest N) against each baseline, paired over test items",
            _evidence_rows(results),
            "accuracy gain: mean difference in exactness with its 95% BCa bootstrap interval; "
            "p: one-sided sign test (exact McNemar).",
        ),
    ]
    _figure(ctx, results)
    notes = [
        f"{r['name']}: model {'loaded from cache' if r['train']['cached'] else 'trained'}, "
        f"final training loss {r['train']['final_loss']:.3f}, {r['items']} test items of "
        f"{r['answer tokens']} answer tokens, particles {r['particles']}, proposal "
        f"temperature {r['temperature']} (chosen on validation items)" for r in results
    ]  # fmt: skip
    return Result(
        tables=tables,
        claims=_claims(results),
        notes=notes,
        data={"tasks": results, "temperatures": list(TEMPERATURES)},
    )


EXPERIMENT = Experiment(
    name="poke-smc",
    title="POKE-SMC: Path LL, a lookahead value estimator and SMC over unmasking paths of "
    "masked diffusion LMs",
    claim="Path LL correlates with accuracy, POKE predicts the future Path LL, and POKE-SMC "
    "beats best-of-N, majority vote and SMC without lookahead at comparable NFE.",
    run=run,
)
