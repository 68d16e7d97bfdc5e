"""The headline experiment of dream-gnn: `icml26 run dream-gnn`.

Node classification under label noise (uniform, pair, structure; 40% at default scale,
20/40/60% at full scale) on code-import graphs from the core (``stdlib_imports``,
``imports:scipy``, ``imports:sympy``, ``imports:statsmodels`` and ``imports:sklearn`` at
default scale; full scale adds torch), with Zachary's karate club as a sanity graph that
no claim reads. A two-layer GCN trained by DREAM (and its relabelling variant) against:
the same GCN with cross-entropy, with GCE, co-teaching with two GCNs, cleanlab's
``find_label_issues`` on cross-validated GCN probabilities followed by retraining on the
kept nodes, PyG's ``LabelPropagation`` and ``CorrectAndSmooth`` (on the CE GCN's
output), the majority-class floor, and DREAM with one anchor standard only (the
ablation). Every trained method gets the same model, the same initialization per seed,
the same epochs (100 at default scale, 200 at full) and the same checkpoint selection
(best accuracy on the *noisy* validation labels). No constant is tuned: DREAM's are the
issue's defaults (k = 10 + 10, alpha = 0.15, every 10; warm-up 50 at full scale, 30 at
default scale where the run has 100 epochs), GCE's q = 0.7 is its paper's, co-teaching's
schedule is Han et al.'s (T_k = 10, forget rate = the noise rate), cleanlab's filter its
default, C&S's layers and alphas PyG's example (autoscale on), the GCN's (64 hidden,
dropout 0.5, Adam 0.01, weight decay 5e-4) Kipf & Welling's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml26_core import Claim, Experiment, Result, RunContext, Table
from icml26_core.stats import bootstrap_band, paired_comparison

NOISES = ("uniform", "pair", "structure")
CLAIM_RATE = 0.4
FLOOR = "majority class (floor)"
BASELINES = (
    "CE",
    "GCE",
    "co-teaching",
    "cleanlab + CE",
    "LabelPropagation (PyG)",
    "C&S (PyG, on CE)",
)
TRAINED = (
    "CE",
    "GCE",
    "co-teaching",
    "cleanlab + CE",
    "DREAM",
    "DREAM + relabel",
    "DREAM, proximity only",
    "DREAM, topology only",
)
METHODS = (
    FLOOR,
    "LabelPropagation (PyG)",
    "C&S (PyG, on CE)",
    "CE",
    "GCE",
    "co-teaching",
    "cleanlab + CE",
    "DREAM",
    "DREAM + relabel",
    "DREAM, proximity only",
    "DREAM, topology only",
)


@dataclass(frozen=True)
class Config:
    """What one scale runs. ``graphs`` are counted by the claims; ``sanity`` ones only shown."""

    graphs: tuple[str, ...]
    sanity: tuple[str, ...]
    noises: tuple[str, ...]
    rates: tuple[float, ...]
    seeds: int
    epochs: int
    warmup: int
    k: int
    folds: int
    hidden: int = 64
    # karate (2 classes): structure noise cannot reach 40%, only 9 of its 25 labelled
    # nodes have a neighbour of the other class
    sanity_noises: tuple[str, ...] = ("uniform", "pair")


def config(scale: str) -> Config:
    """The :class:`Config` of ``scale`` (``"smoke"``, ``"default"`` or ``"full"``)."""
    if scale == "smoke":
        return Config(("imports:sklearn",), ("karate",), ("pair",), (0.4,), 1, 30, 10, 5, 2)
    if scale == "full":
        graphs = (
            "stdlib_imports",
            "imports:scipy",
            "imports:sklearn",
            "imports:sympy",
            "imports:statsmodels",
            "imports:torch",
        )
        return Config(graphs, ("karate",), NOISES, (0.2, 0.4, 0.6), 10, 200, 50, 10, 5)
    graphs = (
        "stdlib_imports",
        "imports:scipy",
        "imports:sympy",
        "imports:statsmodels",
        "imports:sklearn",
    )
    return Config(graphs, ("karate",), NOISES, (0.4,), 2, 100, 30, 10, 3)


def cell_win_fraction(
    dream: np.ndarray, baselines: np.ndarray, *, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Fraction of cells where DREAM's mean is >= every baseline's, with a 95% interval.

    Args:
        dream: float (cells, seeds) DREAM's accuracy.
        baselines: float (B, cells, seeds) the baselines' accuracy on the same items.
        n_boot: Bootstrap resamples (seeds resampled within each cell, paired across
            methods).
        seed: Seed of the bootstrap.

    Returns:
        ``(fraction, low, high)``: the observed fraction and the 2.5% and 97.5%
        percentiles of its bootstrap distribution.
    """
    d = np.asarray(dream, dtype=float)
    b = np.asarray(baselines, dtype=float)
    if d.ndim != 2 or b.ndim != 3 or b.shape[1:] != d.shape:
        raise ValueError(
            f"dream must be (cells, seeds), baselines (B, cells, seeds); got {d.shape}, {b.shape}"
        )

    def frac(dd: np.ndarray, bb: np.ndarray) -> np.ndarray:
        return np.mean(dd.mean(-1) >= bb.mean(-1).max(0) - 1e-12, axis=-1)

    obs = float(frac(d, b))
    rng = np.random.default_rng(seed)
    c, s = d.shape
    pick = rng.integers(0, s, size=(n_boot, c, s))
    rows = np.arange(c)[None, :, None]
    dd = d[rows, pick]  # (n_boot, c, s)
    bb = b[:, rows, pick]  # (B, n_boot, c, s)
    fr = np.mean(dd.mean(-1) >= bb.mean(-1).max(0) - 1e-12, axis=-1)
    return obs, float(np.quantile(fr, 0.025)), float(np.quantile(fr, 0.975))


def weight_auc(weights: np.ndarray, clean: np.ndarray) -> float:
    """AUC of ``weights`` for telling clean (True) from noisy labelled nodes (ties 1/2)."""
    from scipy.stats import rankdata

    w = np.asarray(weights, dtype=float)
    c = np.asarray(clean, dtype=bool)
    n1, n0 = int(c.sum()), int((~c).sum())
    if n1 == 0 or n0 == 0:
        return float("nan")
    r = rankdata(w)
    return float((r[c].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    perm = rng.permutation(n)
    a, b = n // 2, (3 * n) // 4
    masks = [np.zeros(n, dtype=bool) for _ in range(3)]
    for m, part in zip(masks, (perm[:a], perm[a:b], perm[b:]), strict=True):
        m[part] = True
    return masks[0], masks[1], masks[2]


def _homophily(ei: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(y[ei[0]] == y[ei[1]]))


def run(ctx: RunContext) -> Result:
    """Measure the four claims at ``ctx.scale`` and decide them with the core's builders."""
    return run_config(ctx, config(ctx.scale))


def run_config(ctx: RunContext, cfg: Config) -> Result:
    """Run the experiment as ``cfg`` says (the tests run the full scale's path, tiny)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small graphs: one thread beats two on a shared 2-core machine
    try:
        return _run(ctx, cfg)
    finally:
        torch.set_num_threads(threads)


def _methods(
    cfg: Config,
    device: Any,
    data: Any,
    y: np.ndarray,
    masks: tuple,
    noisy: np.ndarray,
    seed: int,
    rate: float | None,
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Accuracy of every method on one (graph, split, noise) item, epoch times, extras.

    ``rate=None`` is the noise-free run (CE, DREAM and the floor only).
    """
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn.models import LabelPropagation

    from dream_gnn import (
        GCN,
        DREAMTrainer,
        cleanlab_filter,
        correct_and_smooth,
        coteaching,
        fit_classifier,
    )

    tm_np, vm_np, te_np = masks
    tm, vm = torch.from_numpy(tm_np), torch.from_numpy(vm_np)
    y_obs = torch.from_numpy(noisy)
    C = int(y.max()) + 1
    n_feat = data.x.shape[1]
    x, ei = data.x.to(device), data.edge_index.to(device)
    init = 10_000 + seed  # same initialization for every method of a seed
    made = [0]

    def make(offset: int = 0) -> Any:
        torch.manual_seed(init + offset)
        return GCN(n_feat, cfg.hidden, C).to(device)

    def fold_model() -> Any:
        made[0] += 1
        return make(100 * made[0])

    def logits_of(model: Any) -> Any:
        model.eval()
        with torch.no_grad():
            return model(x, ei)[0].cpu()

    def acc(logits: Any) -> float:
        return float((logits.argmax(1).numpy()[te_np] == y[te_np]).mean())

    def dream(kp: int, kt: int, relabel: bool = False) -> tuple[Any, Any]:
        model = make()
        tr = DREAMTrainer(model, kp, kt, warmup=cfg.warmup, every=10, relabel=relabel, seed=seed)
        tr.fit(data, tm, y_obs, cfg.epochs, val_mask=vm)
        return model, tr

    res: dict[str, float] = {}
    times: dict[str, float] = {}
    extra: dict[str, float] = {}
    res[FLOOR] = float((y[te_np] == np.bincount(noisy[tm_np], minlength=C).argmax()).mean())

    def timed(name: str, fn: Any) -> Any:
        t0 = time.perf_counter()
        out = fn()
        times[name] = (time.perf_counter() - t0) / cfg.epochs
        return out

    ce = timed(
        "CE", lambda: fit_classifier(make(), data, tm, y_obs, cfg.epochs, val_mask=vm, seed=seed)
    )
    ce_logits = logits_of(ce)
    res["CE"] = acc(ce_logits)
    model, tr = timed("DREAM", lambda: dream(cfg.k, cfg.k))
    res["DREAM"] = acc(logits_of(model))
    idx = tr.train_idx_.numpy()
    extra["auc"] = weight_auc(tr.reliability_.numpy(), noisy[idx] == y[idx])
    if rate is None:
        return res, times, extra
    lp = LabelPropagation(num_layers=50, alpha=0.9)
    with torch.no_grad():
        res["LabelPropagation (PyG)"] = acc(lp(y_obs, data.edge_index, mask=tm))
    cs = correct_and_smooth(F.softmax(ce_logits, 1), y_obs, tm, data.edge_index)
    res["C&S (PyG, on CE)"] = acc(cs)
    gce = timed(
        "GCE",
        lambda: fit_classifier(
            make(), data, tm, y_obs, cfg.epochs, loss="gce", val_mask=vm, seed=seed
        ),
    )
    res["GCE"] = acc(logits_of(gce))
    co = timed(
        "co-teaching",
        lambda: coteaching(
            make(),
            make(50_000),
            data,
            tm,
            y_obs,
            cfg.epochs,
            forget_rate=rate,
            val_mask=vm,
            seed=seed,
        ),
    )
    res["co-teaching"] = acc(logits_of(co))

    def clean_then_fit() -> tuple[Any, np.ndarray]:
        keep, _ = cleanlab_filter(
            fold_model, data, tm, y_obs, cfg.epochs, folds=cfg.folds, val_mask=vm, seed=seed
        )
        kept = torch.from_numpy(keep) if keep.any() else tm
        return fit_classifier(make(), data, kept, y_obs, cfg.epochs, val_mask=vm, seed=seed), keep

    cl, keep = timed("cleanlab + CE", clean_then_fit)
    res["cleanlab + CE"] = acc(logits_of(cl))
    flagged = tm_np & ~keep
    wrong = noisy != y
    extra["flagged fraction"] = float(flagged.sum() / tm_np.sum())
    extra["noise among flagged"] = float(wrong[flagged].mean()) if flagged.any() else float("nan")
    extra["noise among kept"] = float(wrong[keep].mean()) if keep.any() else float("nan")
    for name, kp, kt, rl in (
        ("DREAM + relabel", cfg.k, cfg.k, True),
        ("DREAM, proximity only", cfg.k, 0, False),
        ("DREAM, topology only", 0, cfg.k, False),
    ):
        model, _ = timed(name, lambda kp=kp, kt=kt, rl=rl: dream(kp, kt, rl))
        res[name] = acc(logits_of(model))
    return res, times, extra


def _run(ctx: RunContext, cfg: Config) -> Result:
    import torch
    from icml26_core.datasets import load_graph

    from dream_gnn import add_label_noise

    device = torch.device(ctx.device)
    info = Table(
        "graphs (code-import graphs, labels are subpackages; karate is a sanity case no "
        "claim reads)",
        ["graph", "nodes", "edges", "classes", "edge homophily", "package version", "counted"],
    )
    records: list[dict[str, Any]] = []
    epoch_times: dict[str, list[float]] = {m: [] for m in TRAINED}
    loaded: dict[str, Any] = {}
    jobs = [(g, s) for g in (*cfg.graphs, *cfg.sanity) for s in range(cfg.seeds)]
    for gname, s in ctx.progress(jobs, "graph x seed"):
        if gname not in loaded:
            g = load_graph(gname)
            loaded[gname] = g
            info.add_row(
                graph=gname,
                nodes=g.num_nodes,
                edges=g.num_edges,
                classes=len(g.label_names),
                **{
                    "edge homophily": _homophily(g.edge_index, g.y),
                    "package version": g.meta.get(
                        "package_version", "stdlib" if gname == "stdlib_imports" else "-"
                    ),
                },
                counted="yes" if gname in cfg.graphs else "no (sanity)",
            )
        g = loaded[gname]
        data = g.to_torch_geometric()
        if data.x is None:  # karate has no features: one-hot node ids
            data.x = torch.eye(g.num_nodes)
        y = g.y.astype(np.int64)
        seed = ctx.seed + s
        masks = _split(g.num_nodes, np.random.default_rng(seed))
        counted = gname in cfg.graphs
        res, _, _ = _methods(cfg, device, data, y, masks, y, seed, None)
        records.append(
            {"graph": gname, "counted": counted, "noise": "none", "rate": 0.0, "seed": seed, **res}
        )
        for rate in cfg.rates:
            for noise in cfg.noises if counted else cfg.sanity_noises:
                noisy = add_label_noise(
                    y, rate, noise, edge_index=g.edge_index, mask=masks[0] | masks[1], seed=seed
                )
                res, times, extra = _methods(cfg, device, data, y, masks, noisy, seed, rate)
                if counted:
                    for m, t in times.items():
                        epoch_times[m].append(t)
                records.append(
                    {
                        "graph": gname,
                        "counted": counted,
                        "noise": noise,
                        "rate": rate,
                        "seed": seed,
                        **res,
                        **extra,
                    }
                )

    def rows(
        graph: str | None = None,
        noise: str | None = None,
        rate: float = CLAIM_RATE,
        counted: bool = True,
    ) -> list[dict[str, Any]]:
        return [
            r
            for r in records
            if r["counted"] == counted
            and abs(r["rate"] - rate) < 1e-9
            and (graph is None or r["graph"] == graph)
            and (noise is None or r["noise"] == noise)
        ]

    pct = f"{round(CLAIM_RATE * 100)}%"
    acc_tab = Table(
        f"test accuracy on clean labels at {pct} noise (mean over seeds), and DREAM's weight "
        "AUC (clean vs noisy labelled nodes)",
        ["graph", "noise", *METHODS, "DREAM weight AUC", "n"],
    )
    cl_tab = Table(
        f"cleanlab's flagged labelled nodes at {pct} noise (mean over seeds): the share of "
        "wrong labels among the flagged and among the kept ones",
        [
            "graph",
            "noise",
            FLOOR,
            "flagged fraction",
            "noise among flagged",
            "noise among kept",
            "n",
        ],
    )
    cells = [(gn, nz) for gn in cfg.graphs for nz in cfg.noises]
    dream_cells, base_cells = [], []
    for gn, nz in cells:
        rs = rows(gn, nz)
        means = {m: float(np.mean([r[m] for r in rs])) for m in METHODS}
        acc_tab.add_row(
            graph=gn,
            noise=nz,
            **means,
            **{"DREAM weight AUC": float(np.mean([r["auc"] for r in rs]))},
            n=len(rs),
        )
        cl_tab.add_row(
            graph=gn,
            noise=nz,
            **{FLOOR: means[FLOOR]},
            **{
                k: float(np.nanmean([r[k] for r in rs]))
                for k in ("flagged fraction", "noise among flagged", "noise among kept")
            },
            n=len(rs),
        )
        dream_cells.append([r["DREAM"] for r in rs])
        base_cells.append([[r[b] for r in rs] for b in BASELINES])
    d_arr = np.asarray(dream_cells)  # (cells, seeds)
    b_arr = np.transpose(np.asarray(base_cells), (1, 0, 2))  # (B, cells, seeds)
    frac, lo, hi = cell_win_fraction(d_arr, b_arr, seed=ctx.seed)
    won = round(frac * len(cells))

    pooled = rows()
    a = np.asarray([r["DREAM"] for r in pooled])
    cmp_tab = Table(
        f"DREAM against each baseline at {pct} noise, paired over the (graph, noise, seed) "
        "items: mean accuracy difference DREAM - baseline (BCa 95% CI, one-sided Wilcoxon p), "
        "and the cells where DREAM's mean is >= the baseline's",
        ["baseline", "mean difference", "CI low", "CI high", "p", "n", "cells DREAM >="],
    )
    for b in (FLOOR, *BASELINES):
        ev = paired_comparison(a, np.asarray([r[b] for r in pooled]), names=("DREAM", b))
        ge = sum(
            np.mean([r["DREAM"] for r in rows(gn, nz)])
            >= np.mean([r[b] for r in rows(gn, nz)]) - 1e-12
            for gn, nz in cells
        )
        cmp_tab.add_row(
            baseline=b,
            **{"mean difference": ev.effect, "CI low": ev.ci_low, "CI high": ev.ci_high},
            p=ev.p_value,
            n=ev.n,
            **{"cells DREAM >=": f"{ge} of {len(cells)}"},
        )

    rate_tab = Table(
        "test accuracy by noise rate (mean over the counted graphs, noise types and seeds; "
        "the claims read 40%)",
        ["rate", *METHODS, "DREAM weight AUC", "n"],
    )
    for rate in cfg.rates:
        rs = rows(rate=rate)
        rate_tab.add_row(
            rate=rate,
            **{m: float(np.mean([r[m] for r in rs])) for m in METHODS},
            **{"DREAM weight AUC": float(np.mean([r["auc"] for r in rs]))},
            n=len(rs),
        )
    clean_tab = Table(
        "test accuracy without noise (mean over seeds)", ["graph", FLOOR, "CE", "DREAM", "n"]
    )
    clean_ce, clean_dream = [], []
    for gn in cfg.graphs:
        rs = rows(gn, "none", 0.0)
        clean_ce += [r["CE"] for r in rs]
        clean_dream += [r["DREAM"] for r in rs]
        clean_tab.add_row(
            graph=gn,
            **{m: float(np.mean([r[m] for r in rs])) for m in (FLOOR, "CE", "DREAM")},
            n=len(rs),
        )
    sanity_tab = Table(
        f"sanity graphs (not counted by any claim): test accuracy at {pct} noise (mean over seeds)",
        ["graph", "noise", *METHODS, "n"],
    )
    for gn in cfg.sanity:
        for nz in cfg.sanity_noises:
            rs = rows(gn, nz, counted=False)
            sanity_tab.add_row(
                graph=gn,
                noise=nz,
                **{m: float(np.mean([r[m] for r in rs])) for m in METHODS},
                n=len(rs),
            )
        rs = rows(gn, "none", 0.0, counted=False)
        sanity_tab.add_row(
            graph=gn,
            noise="none",
            **{m: float(np.mean([r[m] for r in rs])) if m in rs[0] else None for m in METHODS},
            n=len(rs),
        )
    time_tab = Table(
        "training time per epoch (median over counted runs, s; measured under the machine's "
        "load; co-teaching trains two GCNs, cleanlab + CE includes its cross-validation folds)",
        ["method", "s / epoch", "ratio to CE", "runs"],
    )
    ce_t = float(np.median(epoch_times["CE"]))
    for m in TRAINED:
        t = float(np.median(epoch_times[m]))
        time_tab.add_row(
            method=m, **{"s / epoch": t, "ratio to CE": t / ce_t}, runs=len(epoch_times[m])
        )

    n_items = len(pooled)
    claim1 = Claim.check(
        f"At {pct} label noise DREAM's mean accuracy is >= every baseline's in >= 2/3 of the "
        "(graph x noise type) cells.",
        f"the fraction of the {len(cells)} cells where DREAM's mean over seeds is >= each of "
        f"the {len(BASELINES)} baselines' ({', '.join(BASELINES)}); 95% interval by "
        "resampling the seeds within each cell (paired across methods, 2000 resamples); "
        "holds if the interval lies at or above 2/3, does not hold if it lies below, "
        "inconclusive otherwise (threshold from the issue)"
        + (
            "; with one seed per cell the resampled interval is a single point, so it is "
            "inconclusive"
            if cfg.seeds < 2
            else ""
        ),
        {"cells won": won, "cells": len(cells), "fraction": frac, "95% low": lo, "95% high": hi},
        lambda v: (
            None  # one seed: resampling within a cell cannot move it, no interval
            if cfg.seeds < 2
            else True
            if v["95% low"] >= 2 / 3 - 1e-9
            else (False if v["95% high"] < 2 / 3 - 1e-9 else None)
        ),
    )
    aucs = np.asarray([r["auc"] for r in pooled])
    ev = bootstrap_band(
        [aucs],
        lambda x, axis=-1: np.mean(x, axis=axis),
        low=0.8,
        effect_name="mean weight AUC",
        test=f"BCa bootstrap of the mean over {n_items} items",
    )
    claim2 = Claim.from_evidence(
        "DREAM's reliability weights separate clean from noisy labelled nodes (AUC >= 0.8).",
        "the whole 95% CI of the mean AUC of w_v (clean vs noisy labelled nodes, weights "
        f"at the last re-evaluation, {pct} noise) lies above 0.8 (our threshold, from the issue)",
        ev,
        {"auc": aucs.tolist()},
    )
    claim3 = Claim.all_of(
        "Both anchor standards matter: each single-standard ablation loses >= 1 point.",
        [
            Claim.superior(
                f"DREAM beats DREAM, {which} only by > 1 point",
                a,
                np.asarray([r[f"DREAM, {which} only"] for r in pooled]),
                names=("DREAM", f"{which} only"),
                metric=f"test accuracy at {pct} noise",
                min_effect=0.01,
            )
            for which in ("proximity", "topology")
        ],
    )
    claim4 = Claim.non_inferior(
        "On clean labels DREAM stays within 1 point of GCN with cross-entropy.",
        np.asarray(clean_dream),
        np.asarray(clean_ce),
        margin=0.01,
        names=("DREAM", "CE"),
        metric="test accuracy without noise (graph x seed items)",
    )
    return Result(
        tables=[info, acc_tab, cmp_tab, cl_tab, rate_tab, clean_tab, sanity_tab, time_tab],
        claims=[claim1, claim2, claim3, claim4],
        data={
            "records": records,
            "graph_versions": {
                n: g.meta.get("package_version", "stdlib" if n == "stdlib_imports" else "-")
                for n, g in loaded.items()
            },
            "config": {
                "graphs": list(cfg.graphs),
                "sanity": list(cfg.sanity),
                "noises": list(cfg.noises),
                "rates": list(cfg.rates),
                "epochs": cfg.epochs,
                "warmup": cfg.warmup,
                "every": 10,
                "k_proximity": cfg.k,
                "k_topology": cfg.k,
                "ppr_alpha": 0.15,
                "hidden": cfg.hidden,
                "seeds": cfg.seeds,
                "cleanlab_folds": cfg.folds,
                "coteaching": "forget rate = noise rate, T_k = 10, linear ramp",
                "split": "50/25/25 random per seed; noise on train and validation only",
            },
        },
        notes=[
            f"{cfg.seeds} seeds per (graph, noise type); claims 1-3 read the {n_items} "
            f"(graph, noise, seed) items at {pct} noise on the counted graphs, paired (same "
            "split, noise and initialization); karate is shown, never counted.",
            "No constant is tuned (DREAM: the issue's defaults; GCE q = 0.7; co-teaching: "
            "Han et al.'s schedule with the true noise rate; cleanlab: its default filter on "
            f"{cfg.folds}-fold out-of-fold GCN probabilities; C&S: PyG's example layers "
            "and alphas, autoscale; "
            "GCN as Kipf & Welling); every trained method restores its best epoch on the "
            "noisy validation labels.",
            "The graphs are code-import graphs, not the paper's six datasets across domains.",
        ],
    )


EXPERIMENT = Experiment(
    name="dream-gnn",
    title="DREAM: dual-standard semantic homogeneity with dynamic optimization for GNNs "
    "under label noise",
    claim="Reliability weights from proximity and topology anchors make a GNN more "
    "accurate under label noise than cross-entropy, GCE and label propagation.",
    run=run,
)
