"""The headline experiment of dream-gnn: `icml26 run dream-gnn`.

Node classification under 40% label noise (uniform, pair, structure) on code-import
graphs from the core (``stdlib_imports`` and ``imports:sklearn``; full scale adds four): a
two-layer GCN trained by DREAM against the same GCN with cross-entropy and with GCE,
PyG's LabelPropagation on the noisy labels, the majority-class floor, and DREAM with
one anchor standard only (the ablation). Every trained method gets the same model, the
same initialization per seed, the same epochs (100 at default scale, 200 at full) and
the same checkpoint selection (best accuracy on the *noisy* validation labels). No
constant is tuned: DREAM's are the issue's defaults (k = 10 + 10, alpha = 0.15, every
10; warm-up 50 at full scale, 30 at default scale where the run has 100 epochs), GCE's
q = 0.7 is its paper's, the GCN's (64 hidden, dropout 0.5, Adam 0.01, weight decay
5e-4) Kipf & Welling's.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from icml26_core import Claim, Experiment, Result, RunContext, Table
from icml26_core.stats import bootstrap_band

NOISES = ("uniform", "pair", "structure")
RATE = 0.4
TRAINED = ("CE", "GCE", "DREAM", "DREAM, proximity only", "DREAM, topology only")
METHODS = ("majority class (floor)", "LabelPropagation (PyG)", *TRAINED)


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
    import torch

    graphs = ctx.pick(
        smoke=["stdlib_imports"],
        default=["stdlib_imports", "imports:sklearn"],
        full=[
            "stdlib_imports",
            "imports:scipy",
            "imports:sklearn",
            "imports:sympy",
            "imports:statsmodels",
            "imports:torch",
        ],
    )
    noises = ctx.pick(smoke=["pair"], default=list(NOISES))
    n_seeds = ctx.pick(smoke=1, default=3, full=10)
    epochs = ctx.pick(smoke=30, default=100, full=200)
    warmup = ctx.pick(smoke=10, default=30, full=50)
    k = ctx.pick(smoke=5, default=10)
    hidden = 64
    device = torch.device(ctx.device)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small graphs: one thread beats two on a shared 2-core machine
    try:
        return _run(ctx, graphs, noises, n_seeds, epochs, warmup, k, hidden, device)
    finally:
        torch.set_num_threads(threads)


def _run(ctx, graphs, noises, n_seeds, epochs, warmup, k, hidden, device) -> Result:
    import torch
    from icml26_core.datasets import load_graph
    from torch_geometric.nn.models import LabelPropagation

    from dream_gnn import GCN, DREAMTrainer, add_label_noise, fit_classifier

    info = Table(
        "graphs (code-import graphs; labels are subpackages)",
        ["graph", "nodes", "edges", "classes", "edge homophily", "package version"],
    )
    acc_tab = Table(
        f"test accuracy on clean labels at {int(RATE * 100)}% noise (mean over seeds), "
        "and DREAM's weight AUC (clean vs noisy labelled nodes)",
        ["graph", "noise", *METHODS, "DREAM weight AUC", "n"],
    )
    clean_tab = Table(
        "test accuracy without noise (mean over seeds)", ["graph", "CE", "DREAM", "n"]
    )
    time_tab = Table(
        "training time per epoch (median over runs, s; measured under the machine's load)",
        ["method", "s / epoch", "ratio to CE", "runs"],
    )
    acc: dict[str, list[float]] = {m: [] for m in METHODS}
    aucs: list[float] = []
    clean_acc: dict[str, list[float]] = {"CE": [], "DREAM": []}
    epoch_times: dict[str, list[float]] = {m: [] for m in TRAINED}
    cells: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []

    def train(method: str, data, tm, vm, y_obs, seed: int, n_feat: int, C: int):
        torch.manual_seed(10_000 + seed)  # same initialization for every method of a seed
        model = GCN(n_feat, hidden, C).to(device)
        t0 = time.perf_counter()
        extra: dict[str, Any] = {}
        if method in ("CE", "GCE"):
            fit_classifier(
                model, data, tm, y_obs, epochs, loss=method.lower(), val_mask=vm, seed=seed
            )
            pred = None
        else:
            kp = 0 if method.endswith("topology only") else k
            kt = 0 if method.endswith("proximity only") else k
            tr = DREAMTrainer(model, kp, kt, warmup=warmup, every=10, seed=seed)
            tr.fit(data, tm, y_obs, epochs, val_mask=vm)
            extra["trainer"] = tr
        model.eval()
        with torch.no_grad():
            pred = model(data.x.to(device), data.edge_index.to(device))[0].argmax(1).cpu()
        return pred.numpy(), (time.perf_counter() - t0) / epochs, extra

    jobs = [(g, s) for g in graphs for s in range(n_seeds)]
    per_cell: dict[tuple[str, str], dict[str, list[float]]] = {}
    loaded: dict[str, Any] = {}
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
                    "package version": g.meta.get("package_version", "stdlib"),
                },
            )
        g = loaded[gname]
        data = g.to_torch_geometric()
        y = g.y.astype(np.int64)
        C = int(y.max()) + 1
        seed = ctx.seed + s
        rng = np.random.default_rng(seed)
        tm_np, vm_np, te_np = _split(g.num_nodes, rng)
        tm, vm = torch.from_numpy(tm_np), torch.from_numpy(vm_np)
        n_feat = data.x.shape[1]
        # without noise: CE and DREAM (claim 4)
        for m in ("CE", "DREAM"):
            pred, _, _ = train(m, data, tm, vm, torch.from_numpy(y), seed, n_feat, C)
            clean_acc[m].append(float((pred[te_np] == y[te_np]).mean()))
        for noise in noises:
            noisy = add_label_noise(
                y, RATE, noise, edge_index=g.edge_index, mask=tm_np | vm_np, seed=seed
            )
            y_obs = torch.from_numpy(noisy)
            cell = per_cell.setdefault((gname, noise), {m: [] for m in METHODS} | {"auc": []})
            maj = np.bincount(noisy[tm_np], minlength=C).argmax()
            res = {"majority class (floor)": float((y[te_np] == maj).mean())}
            lp = LabelPropagation(num_layers=50, alpha=0.9)
            with torch.no_grad():
                out = lp(y_obs, data.edge_index, mask=tm)
            res["LabelPropagation (PyG)"] = float((out.argmax(1).numpy()[te_np] == y[te_np]).mean())
            auc = float("nan")
            for m in TRAINED:
                pred, t_ep, extra = train(m, data, tm, vm, y_obs, seed, n_feat, C)
                res[m] = float((pred[te_np] == y[te_np]).mean())
                epoch_times[m].append(t_ep)
                if m == "DREAM":
                    tr = extra["trainer"]
                    idx = tr.train_idx_.numpy()
                    auc = weight_auc(tr.reliability_.numpy(), noisy[idx] == y[idx])
            for m in METHODS:
                acc[m].append(res[m])
                cell[m].append(res[m])
            aucs.append(auc)
            cell["auc"].append(auc)
            records.append({"graph": gname, "noise": noise, "seed": seed, "auc": auc, **res})
        clean_records = {m: clean_acc[m][-1] for m in clean_acc}
        records.append({"graph": gname, "noise": "none", "seed": seed, **clean_records})

    baselines = ("CE", "GCE", "LabelPropagation (PyG)")
    wins = 0
    for (gname, noise), cell in per_cell.items():
        means = {m: float(np.mean(cell[m])) for m in METHODS}
        won = all(means["DREAM"] >= means[b] for b in baselines)
        wins += int(won)
        cells.append({"graph": gname, "noise": noise, "dream_best": won, **means})
        acc_tab.add_row(
            graph=gname,
            noise=noise,
            **means,
            **{"DREAM weight AUC": float(np.mean(cell["auc"]))},
            n=len(cell["DREAM"]),
        )
    for gname in graphs:
        rows = [r for r in records if r["graph"] == gname and r["noise"] == "none"]
        clean_tab.add_row(
            graph=gname,
            CE=float(np.mean([r["CE"] for r in rows])),
            DREAM=float(np.mean([r["DREAM"] for r in rows])),
            n=len(rows),
        )
    ce_t = float(np.median(epoch_times["CE"]))
    for m in TRAINED:
        t = float(np.median(epoch_times[m]))
        time_tab.add_row(
            method=m, **{"s / epoch": t, "ratio to CE": t / ce_t}, runs=len(epoch_times[m])
        )

    n_items = len(acc["DREAM"])
    a = np.asarray(acc["DREAM"])
    claim1 = Claim.all_of(
        f"At {int(RATE * 100)}% label noise DREAM is more accurate than every baseline "
        "(GCN with CE, GCN with GCE, LabelPropagation).",
        [
            Claim.superior(
                f"DREAM beats {b}",
                a,
                np.asarray(acc[b]),
                names=("DREAM", b),
                metric="test accuracy (graph x noise x seed items)",
            )
            for b in baselines
        ],
        rule=(
            f"paired over the {n_items} (graph, noise type, seed) items, DREAM's accuracy "
            f"beats each baseline's (one-sided Wilcoxon, alpha 0.05); DREAM has the best "
            f"mean in {wins} of {len(cells)} cells (the issue's 2/3-of-cells reading)"
        ),
    )
    ev = bootstrap_band(
        [np.asarray(aucs)],
        lambda x, axis=-1: np.mean(x, axis=axis),
        low=0.8,
        effect_name="mean weight AUC",
        test=f"BCa bootstrap of the mean over {n_items} items",
    )
    claim2 = Claim.from_evidence(
        "DREAM's reliability weights separate clean from noisy labelled nodes (AUC >= 0.8).",
        "the whole 95% CI of the mean AUC of w_v (clean vs noisy labelled nodes, weights "
        "at the last re-evaluation) lies above 0.8 (our threshold, from the issue)",
        ev,
        {"auc": aucs},
    )
    claim3 = Claim.all_of(
        "Both anchor standards matter: each single-standard ablation loses >= 1 point.",
        [
            Claim.superior(
                f"DREAM beats DREAM, {which} only by > 1 point",
                a,
                np.asarray(acc[f"DREAM, {which} only"]),
                names=("DREAM", f"{which} only"),
                metric="test accuracy",
                min_effect=0.01,
            )
            for which in ("proximity", "topology")
        ],
    )
    claim4 = Claim.non_inferior(
        "On clean labels DREAM stays within 1 point of GCN with cross-entropy.",
        np.asarray(clean_acc["DREAM"]),
        np.asarray(clean_acc["CE"]),
        margin=0.01,
        names=("DREAM", "CE"),
        metric="test accuracy without noise (graph x seed items)",
    )
    return Result(
        tables=[info, acc_tab, clean_tab, time_tab],
        claims=[claim1, claim2, claim3, claim4],
        data={
            "records": records,
            "cells": cells,
            "graph_versions": {
                n: g.meta.get("package_version", "stdlib") for n, g in loaded.items()
            },
            "config": {
                "rate": RATE,
                "epochs": epochs,
                "warmup": warmup,
                "every": 10,
                "k_proximity": k,
                "k_topology": k,
                "ppr_alpha": 0.15,
                "hidden": hidden,
                "seeds": n_seeds,
                "split": "50/25/25 random per seed; noise on train and validation only",
            },
        },
        notes=[
            f"{n_seeds} seeds per (graph, noise type); claims pool the {n_items} "
            "(graph, noise, seed) items, paired (same split, noise and initialization).",
            "No constant is tuned (DREAM: the issue's defaults; GCE q = 0.7; GCN as Kipf & "
            "Welling); every trained method restores its best epoch on the noisy "
            "validation labels.",
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
