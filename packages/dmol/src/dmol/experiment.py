"""The headline experiment of dmol: `icml26 run dmol`.

Three tasks, each with the same blocks trained by backpropagation (BP) and by DMoL:

- graphs (over-smoothing): a plain deep GCN on the core's ``stdlib_imports`` graph
  (732 modules, 13 classes), 20% labelled nodes, test accuracy per depth;
- images: MNIST-5k (4000 train / 1000 test), a CNN of 8 residual blocks;
- diffusion: DDPM noise prediction on sklearn's 8x8 digits, a residual MLP denoiser of
  8 blocks; held-out denoising loss after equal steps.

Every task runs on 5 seeds (splits) at default scale; the claims are decided by the
core's builders, paired over seeds.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from icml26_core import Claim, Experiment, Result, RunContext, Table
from icml26_core.stats import paired_comparison
from torch import nn

from dmol.models import (
    TimeMLPBlock,
    cnn_net,
    gcn_net,
    normalized_adjacency,
    resnet18_net,
    time_embedding,
    unet_denoiser,
)
from dmol.net import DMoLNet, zero_head_
from dmol.train import BPTrainer, DMoLTrainer

# Sizes per scale. "full" is the GPU scale (ResNet-18-like nets, GCN depth 64, a
# U-Net DDPM); tests run its code path with tiny sizes by patching this dict.
CONFIG: dict[str, dict[str, Any]] = {
    "smoke": {
        "graph": {"depths": (2, 4), "epochs": 5, "splits": 2, "dim": 64},
        "image": {
            "arch": "cnn",
            "n": (400, 100),
            "epochs": 1,
            "seeds": 2,
            "width": 8,
            "pool": 7,
            "batch": 64,
            "lr": 3e-3,
        },
        "diffusion": {"arch": "mlp", "steps": 20, "seeds": 2, "width": 64},
    },
    "default": {
        # depth 16 and 32 (the claim's depths) at hidden 64; 50 epochs (not the issue's
        # 200) so that the run stays under 10 min of CPU
        "graph": {"depths": (2, 16, 32), "epochs": 50, "splits": 5, "dim": 64},
        # the image net was chosen on a validation split (split seed 9000, torch seed 7000;
        # benchmarks/image_validation.txt): 8 channels at 7x7, flattened 7x7 heads, batch
        # 64, 2 epochs (126 steps), Adam lr 3e-3; the old 3 epochs at batch 256 with
        # globally pooled heads stayed near chance
        "image": {
            "arch": "cnn",
            "n": (4000, 1000),
            "epochs": 2,
            "seeds": 5,
            "width": 8,
            "pool": 7,
            "batch": 64,
            "lr": 3e-3,
        },
        "diffusion": {"arch": "mlp", "steps": 300, "seeds": 5, "width": 64},
    },
    "full": {
        "graph": {"depths": (2, 8, 16, 32, 64), "epochs": 200, "splits": 10, "dim": 64},
        "image": {"arch": "resnet18", "n": (4000, 1000), "epochs": 30, "seeds": 10, "width": 64},
        "diffusion": {"arch": "unet", "steps": 10000, "seeds": 10, "width": 32},
    },
}
DEEP = 16  # claim 1 is decided at every depth >= this one
GROW_TOL = 1e-6  # the objective may change by at most this much when a block is added
MONOTONE_TOL = 0.01  # ours: a relative rise of the trained objective above 1% counts as a rise


def _adam(lr: float, weight_decay: float = 0.0):
    return lambda params: torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)


def _max_rel_rise(objectives: list[float]) -> float:
    """Largest ``(L_l - L_{l-1}) / L_{l-1}`` over consecutive depths (negative: decreasing)."""
    obj = np.asarray(objectives, dtype=float)
    return float(np.max((obj[1:] - obj[:-1]) / np.maximum(obj[:-1], 1e-12)))


# --------------------------------------------------------------------------- graphs
GRAPH_METHODS = ("BP", "DMoL", "BP + PairNorm (PyG)", "GCNII (PyG)")


def _graph_task(ctx: RunContext, dev: torch.device) -> dict[str, Any]:
    from icml26_core.datasets import load_graph

    cfg = CONFIG[ctx.scale]["graph"]
    g = load_graph("stdlib_imports")
    x_dense = torch.tensor(g.x, dtype=torch.float32, device=dev)
    x = x_dense.to_sparse()  # 5% non-zero
    y = torch.tensor(g.y, dtype=torch.long, device=dev)
    adj = normalized_adjacency(
        torch.tensor(g.edge_index, dtype=torch.long, device=dev), g.num_nodes
    )
    n, classes = g.num_nodes, int(g.y.max()) + 1
    depths, epochs, splits, dim = cfg["depths"], cfg["epochs"], cfg["splits"], cfg["dim"]
    deep = [d for d in depths if d >= DEEP] or [max(depths)]
    acc: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[float]] = {}
    floor: list[float] = []
    rises: list[float] = []
    jobs = [
        (s, d, m)
        for s in range(splits)
        for d in depths
        for m in cfg.get("methods", GRAPH_METHODS)
        if m in ("BP", "DMoL") or d in deep
    ]
    for s, depth, method in ctx.progress(jobs, "graphs: GCN on stdlib_imports"):
        perm = np.random.default_rng(1000 + s).permutation(n)
        tr = torch.tensor(perm[: int(0.2 * n)], device=dev)
        te = torch.tensor(perm[int(0.2 * n) :], device=dev)
        if depth == depths[0] and method == GRAPH_METHODS[0]:
            majority = int(torch.bincount(y[tr], minlength=classes).argmax())
            floor.append(float((y[te] == majority).float().mean()))
        torch.manual_seed(100 * s + depth)
        opt = _adam(0.01, 5e-4)
        t0 = time.process_time()
        if method.startswith("GCNII"):
            from dmol.peers import GCNII  # torch_geometric, imported only when used

            # the peer: torch_geometric's GCN2Conv, end-to-end BP, same optimizer and epochs
            model = GCNII(x.shape[1], dim, classes, depth).to(dev)
            optimizer = opt(model.parameters())
            ei, ew = adj.indices(), adj.values()
            for _ in range(epochs):
                model.train()
                optimizer.zero_grad(set_to_none=True)
                F.cross_entropy(model(x_dense, ei, ew)[tr], y[tr]).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                pred = model(x_dense, ei, ew).argmax(1)
        else:
            net = gcn_net(x.shape[1], dim, classes, depth, pairnorm="PairNorm" in method).to(dev)
            if "PairNorm" in method:
                from dmol.peers import use_pyg_pairnorm

                use_pyg_pairnorm(net)  # torch_geometric.nn.PairNorm after each propagation

            def loss(z: torch.Tensor, t: torch.Tensor, tr: torch.Tensor = tr) -> torch.Tensor:
                return F.cross_entropy(z[tr], t[tr])

            trainer = DMoLTrainer(net, loss, opt) if method == "DMoL" else BPTrainer(net, loss, opt)
            for _ in range(epochs):
                trainer.step(x, y, adj)
            pred = trainer.predict(x, adj).argmax(1)
            if method == "DMoL":
                rises.append(_max_rel_rise(trainer.objectives(x, y, adj).tolist()))
        cpu.setdefault((method, depth), []).append((time.process_time() - t0) / epochs)
        acc.setdefault((method, depth), []).append(float((pred[te] == y[te]).float().mean()))
    return {
        "acc": acc,
        "cpu": cpu,
        "floor": floor,
        "rises": rises,
        "depths": depths,
        "deep": deep,
        "epochs": epochs,
        "splits": splits,
        "dim": dim,
    }


# --------------------------------------------------------------------------- images
def _batches(n: int, batch: int, gen: torch.Generator) -> list[torch.Tensor]:
    return list(torch.randperm(n, generator=gen).split(batch))


def _image_net(cfg: dict[str, Any], belief: str) -> DMoLNet:
    if cfg["arch"] == "resnet18":  # full scale: 8 basic blocks, 64..512 channels
        return resnet18_net(1, 10, width=cfg["width"], belief=belief)
    return cnn_net(1, cfg["width"], 10, 8, pool=cfg.get("pool", 1), belief=belief)


def _image_task(ctx: RunContext, dev: torch.device) -> dict[str, Any]:
    from icml26_core.datasets import load_mnist

    cfg = CONFIG[ctx.scale]["image"]
    X, Y = load_mnist()
    X = X.reshape(-1, 1, 28, 28)
    (n_train, n_test), epochs, seeds = cfg["n"], cfg["epochs"], cfg["seeds"]
    depth, start = 8, 4
    batch, lr = cfg.get("batch", 256), cfg.get("lr", 1e-3)
    split_seed = cfg.get("split_seed", 2000)  # validation runs use other splits and seeds
    # dynamic depth 4 -> 6 -> 8 (two blocks at a time, before the steps at 1/3 and 2/3
    # of training); if both fall on one step (a tiny run), add them up: it ends at depth 8
    total = epochs * -(-n_train // batch)
    grow_at: dict[int, int] = {}
    for at in (total // 3, (2 * total) // 3):
        grow_at[at] = grow_at.get(at, 0) + 2
    methods = cfg.get(
        "methods",
        ("BP", "BP + deep supervision", "DGL (greedy local)", "DMoL", "DMoL grown 4 -> 8"),
    )
    acc: dict[str, list[float]] = {m: [] for m in methods}
    cpu: dict[str, list[float]] = {m: [] for m in methods}
    per_depth: list[list[float]] = []
    rises: list[float] = []
    events: list[dict[str, float]] = []  # every depth change: depth and objective around it
    truncated: list[float] = []
    jobs = [(s, m) for s in range(seeds) for m in methods]
    for s, method in ctx.progress(jobs, f"images: MNIST-5k {cfg['arch']} of {depth} blocks"):
        perm = np.random.default_rng(split_seed + s).permutation(len(X))
        xtr = torch.tensor(X[perm[:n_train]], device=dev)
        ytr = torch.tensor(Y[perm[:n_train]], device=dev)
        xte = torch.tensor(X[perm[n_train : n_train + n_test]], device=dev)
        yte = torch.tensor(Y[perm[n_train : n_train + n_test]], device=dev)
        mu, sd = xtr.mean(), xtr.std()
        xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
        torch.manual_seed(split_seed - 2000 + s)
        net = _image_net(cfg, "independent" if method.startswith("DGL") else "additive").to(dev)
        spare: list[tuple[nn.Module, nn.Module]] = []
        if method.startswith("DMoL grown"):  # start at depth 4; blocks 5..8 are added later
            spare = list(zip(net.blocks[start:], net.heads[start:], strict=True))
            net.truncate(start)
        opt = _adam(lr)
        if method.startswith("BP"):
            mode = "deep_supervision" if "deep" in method else "final"
            trainer: Any = BPTrainer(net, F.cross_entropy, opt, mode=mode)
        else:
            trainer = DMoLTrainer(net, F.cross_entropy, opt)
        probe, probe_y = xtr[:1000], ytr[:1000]
        gen = torch.Generator().manual_seed(split_seed - 2000 + s)
        t0, steps = time.process_time(), 0
        for _ in range(epochs):
            for idx in _batches(n_train, batch, gen):
                for _ in range(grow_at.get(steps, 0) if spare else 0):
                    before = float(trainer.objectives(probe, probe_y)[-1])
                    block, head = spare.pop(0)
                    net.grow(block, head)  # its head is zeroed: the belief does not move
                    after = float(trainer.objectives(probe, probe_y)[-1])
                    events.append(
                        {"change": net.depth, "seed": s, "before": before, "after": after}
                    )
                trainer.step(xtr[idx], ytr[idx])
                steps += 1
        cpu[method].append((time.process_time() - t0) / steps)
        pred = trainer.predict(xte).argmax(1)
        acc[method].append(float((pred == yte).float().mean()))
        if method == "DMoL":
            net.eval()  # BatchNorm: test-time statistics
            with torch.no_grad():
                zs = net(xte, all_depths=True)
            per_depth.append([float((z.argmax(1) == yte).float().mean()) for z in zs])
            rises.append(_max_rel_rise(trainer.objectives(xtr, ytr).tolist()))
        if method.startswith("DMoL grown"):
            before = float(trainer.objectives(probe, probe_y)[-1])
            net.truncate(start)  # cut back: the prediction is now z_4
            after = float(trainer.objectives(probe, probe_y)[-1])
            events.append({"change": -start, "seed": s, "before": before, "after": after})
            truncated.append(float((trainer.predict(xte).argmax(1) == yte).float().mean()))
    return {
        "acc": acc,
        "cpu": cpu,
        "per_depth": per_depth,
        "rises": rises,
        "events": events,
        "truncated": truncated,
        "epochs": epochs,
        "seeds": seeds,
        "methods": methods,
        "n_train": n_train,
        "n_test": n_test,
        "arch": cfg["arch"],
        "width": cfg["width"],
        "pool": cfg.get("pool", 1),
        "batch": batch,
        "lr": lr,
    }


# --------------------------------------------------------------------------- diffusion
def _denoiser(cfg: dict[str, Any], depth: int, time_dim: int) -> DMoLNet:
    if cfg["arch"] == "unet":  # full scale: a stack of time-conditioned mini U-Nets
        return unet_denoiser(depth, cfg["width"], time_dim)
    dim = cfg["width"]
    blocks = [TimeMLPBlock(dim, time_dim, in_dim=64 if i == 0 else None) for i in range(depth)]
    heads = [zero_head_(nn.Linear(dim, 64)) for _ in range(depth)]
    return DMoLNet(blocks, heads)


def _diffusion_task(ctx: RunContext, dev: torch.device) -> dict[str, Any]:
    from icml26_core.datasets import load_tabular

    cfg = CONFIG[ctx.scale]["diffusion"]
    X, _, _ = load_tabular("digits")
    X = torch.tensor(X / 8.0 - 1.0, dtype=torch.float32)  # pixels 0..16 -> [-1, 1]
    if cfg["arch"] == "unet":
        X = X.reshape(-1, 1, 8, 8)
    T, depth, time_dim, batch = 100, 8, 32, 128
    betas = torch.linspace(1e-4, 0.05, T)
    abar = torch.cumprod(1.0 - betas, 0).to(dev)
    steps, seeds = cfg["steps"], cfg["seeds"]
    methods = ("BP", "DMoL")
    loss_by: dict[str, list[float]] = {m: [] for m in methods}
    cpu: dict[str, list[float]] = {m: [] for m in methods}
    floor: list[float] = []
    rises: list[float] = []

    def noisy(
        x0: torch.Tensor, gen: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        t = torch.randint(0, T, (len(x0),), generator=gen).to(dev)
        eps = torch.randn(x0.shape, generator=gen).to(dev)
        a = abar[t].reshape(-1, *([1] * (x0.ndim - 1)))
        return a.sqrt() * x0 + (1 - a).sqrt() * eps, time_embedding(t.cpu(), time_dim).to(dev), eps

    for s, method in ctx.progress(
        [(s, m) for s in range(seeds) for m in methods], "diffusion: DDPM on digits"
    ):
        perm = np.random.default_rng(3000 + s).permutation(len(X))
        xtr, xte = X[perm[:1500]].to(dev), X[perm[1500:]].to(dev)
        # the held-out set: 4 fixed (t, noise) draws per test image, the same for both methods
        reps = (4,) + (1,) * (xte.ndim - 1)
        hold = noisy(xte.repeat(*reps), torch.Generator().manual_seed(10_000 + s))
        if method == methods[0]:
            floor.append(float(hold[2].pow(2).mean()))  # predicting zero noise
        torch.manual_seed(s)
        net = _denoiser(cfg, depth, time_dim).to(dev)
        opt = _adam(1e-3)
        trainer: Any = (
            BPTrainer(net, F.mse_loss, opt) if method == "BP" else DMoLTrainer(net, F.mse_loss, opt)
        )
        gen = torch.Generator().manual_seed(s)
        t0 = time.process_time()
        for _ in range(steps):
            idx = torch.randint(0, len(xtr), (batch,), generator=gen).to(dev)
            xt, temb, eps = noisy(xtr[idx], gen)
            trainer.step(xt, eps, temb)
        cpu[method].append((time.process_time() - t0) / steps)
        loss_by[method].append(float(F.mse_loss(trainer.predict(hold[0], hold[1]), hold[2])))
        if method == "DMoL":
            tr_set = noisy(xtr, torch.Generator().manual_seed(20_000 + s))
            rises.append(
                _max_rel_rise(trainer.objectives(tr_set[0], tr_set[2], tr_set[1]).tolist())
            )
    return {
        "loss": loss_by,
        "cpu": cpu,
        "floor": floor,
        "rises": rises,
        "steps": steps,
        "seeds": seeds,
        "arch": cfg["arch"],
    }


# --------------------------------------------------------------------------- run
def _mean(v: list[float]) -> float:
    return float(np.mean(v)) if v else float("nan")


def run(ctx: RunContext) -> Result:
    """Measure the claims at ``ctx.scale`` and decide them with the core's builders."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small models: one thread beats two on a shared 2-core machine
    try:
        dev = torch.device(ctx.device)
        graph = _graph_task(ctx, dev)
        image = _image_task(ctx, dev)
        diff = _diffusion_task(ctx, dev)
    finally:
        torch.set_num_threads(threads)
    tables, claims = [], []

    # graphs
    gt = Table(
        f"graphs: GCN test accuracy on stdlib_imports (20% labelled, hidden {graph['dim']}, "
        f"{graph['epochs']} epochs, mean over splits)",
        ["method", "depth", "test accuracy", "min", "CPU ms / epoch", "n"],
    )
    gt.add_row(
        method="majority class (floor)",
        depth=0,
        **{
            "test accuracy": _mean(graph["floor"]),
            "min": min(graph["floor"]),
            "CPU ms / epoch": 0.0,
            "n": len(graph["floor"]),
        },
    )
    for (method, depth), v in sorted(graph["acc"].items(), key=lambda kv: (kv[0][1], kv[0][0])):
        gt.add_row(
            method=method,
            depth=depth,
            **{
                "test accuracy": _mean(v),
                "min": min(v),
                "CPU ms / epoch": 1e3 * _mean(graph["cpu"][(method, depth)]),
                "n": len(v),
            },
        )
    tables.append(gt)
    deep_depths = graph["deep"]
    # the peers, in claim 1's context (reported, not a claim: the claim is DMoL vs BP)
    pt = Table(
        "graphs: DMoL minus each method at the deep depths (test accuracy, paired over "
        "splits; Wilcoxon one-sided p that DMoL is better, BCa 95% CI)",
        ["depth", "DMoL minus", "mean difference", "CI low", "CI high", "p", "n"],
    )
    for d in deep_depths:
        for m in GRAPH_METHODS:
            if m == "DMoL" or (m, d) not in graph["acc"]:
                continue
            ev = paired_comparison(graph["acc"][("DMoL", d)], graph["acc"][(m, d)])
            pt.add_row(
                depth=d,
                **{
                    "DMoL minus": m,
                    "mean difference": ev.effect,
                    "CI low": ev.ci_low,
                    "CI high": ev.ci_high,
                    "p": float("nan") if ev.p_value is None else ev.p_value,
                    "n": ev.n,
                },
            )
    tables.append(pt)
    parts = [
        Claim.superior(
            f"At depth {d}, DMoL's GCN test accuracy exceeds BP's by at least 10 points.",
            graph["acc"][("DMoL", d)],
            graph["acc"][("BP", d)],
            names=("DMoL", "BP"),
            metric=f"test accuracy at depth {d}",
            min_effect=0.10,
        )
        for d in deep_depths
    ]
    claims.append(
        parts[0]
        if len(parts) == 1
        else Claim.all_of(
            "DMoL mitigates over-smoothing: at every deep depth it beats BP by >= 10 points.", parts
        )
    )

    # images
    p = image["pool"]
    head_kind = "globally pooled" if p == 1 else f"flattened {p}x{p}"
    it = Table(
        f"images: MNIST-5k test accuracy ({image['n_train']}/{image['n_test']}, "
        f"{'ResNet-18-like' if image['arch'] == 'resnet18' else 'CNN'} of 8 residual blocks, "
        f"{image['width']} channels, {head_kind} heads, {image['epochs']} epochs, "
        f"batch {image['batch']}, Adam lr {image['lr']:g}, "
        "mean over seeds)",
        ["method", "test accuracy", "min", "CPU ms / step", "n"],
    )
    it.add_row(
        method="chance (floor)",
        **{"test accuracy": 0.1, "min": 0.1, "CPU ms / step": 0.0, "n": image["seeds"]},
    )
    for m in image["methods"]:
        it.add_row(
            method=m,
            **{
                "test accuracy": _mean(image["acc"][m]),
                "min": min(image["acc"][m]),
                "CPU ms / step": 1e3 * _mean(image["cpu"][m]),
                "n": len(image["acc"][m]),
            },
        )
    it.add_row(
        method="DMoL grown 4 -> 8, then cut to 4",
        **{
            "test accuracy": _mean(image["truncated"]),
            "min": min(image["truncated"]),
            "CPU ms / step": float("nan"),
            "n": len(image["truncated"]),
        },
    )
    tables.append(it)
    pd = np.asarray(image["per_depth"])
    dt = Table(
        "images: DMoL test accuracy by exit depth (mean over seeds)",
        ["exit depth", "test accuracy", "n"],
    )
    for d in range(pd.shape[1]):
        dt.add_row(
            **{"exit depth": d + 1, "test accuracy": float(pd[:, d].mean()), "n": pd.shape[0]}
        )
    tables.append(dt)
    claims.append(
        Claim.non_inferior(
            "Images: DMoL matches or beats BP (accuracy at least BP's minus 1 point).",
            image["acc"]["DMoL"],
            image["acc"]["BP"],
            margin=0.01,
            names=("DMoL", "BP"),
            metric="MNIST-5k test accuracy",
        )
    )

    # diffusion
    ft = Table(
        f"diffusion: held-out DDPM noise-prediction MSE on digits 8x8 ({diff['steps']} "
        "steps, mean over seeds)",
        ["method", "held-out MSE", "max", "CPU ms / step", "n"],
    )
    ft.add_row(
        method="predict zero noise (floor)",
        **{
            "held-out MSE": _mean(diff["floor"]),
            "max": max(diff["floor"]),
            "CPU ms / step": 0.0,
            "n": len(diff["floor"]),
        },
    )
    for m in ("BP", "DMoL"):
        ft.add_row(
            method=m,
            **{
                "held-out MSE": _mean(diff["loss"][m]),
                "max": max(diff["loss"][m]),
                "CPU ms / step": 1e3 * _mean(diff["cpu"][m]),
                "n": len(diff["loss"][m]),
            },
        )
    tables.append(ft)
    reduction = 1.0 - _mean(diff["loss"]["DMoL"]) / _mean(diff["loss"]["BP"])
    claims.append(
        Claim.superior(
            f"Diffusion: DMoL's final held-out denoising loss is lower than BP's "
            f"(measured relative reduction {100 * reduction:.1f}%; the paper reports > 35%).",
            diff["loss"]["DMoL"],
            diff["loss"]["BP"],
            names=("DMoL", "BP"),
            metric="held-out noise-prediction MSE",
            higher_is_better=False,
        )
    )

    # monotonicity
    rises = {"graphs": graph["rises"], "images": image["rises"], "diffusion": diff["rises"]}
    worst = max(max(v) for v in rises.values())
    grows = [e for e in image["events"] if e["change"] > 0]
    jump = max(abs(e["after"] - e["before"]) for e in grows)
    et = Table(
        "dynamic depth (images, DMoL grown 4 -> 6 -> 8 then cut to 4): local objective of the "
        "last depth on 1000 training images, right before and after each change",
        ["change", "objective before", "objective after", "max |after - before|", "n"],
    )
    for change in sorted({e["change"] for e in image["events"]}, key=lambda c: (c < 0, c)):
        ev_c = [e for e in image["events"] if e["change"] == change]
        et.add_row(
            change=f"grow to depth {change}" if change > 0 else f"cut to depth {-change}",
            **{
                "objective before": _mean([e["before"] for e in ev_c]),
                "objective after": _mean([e["after"] for e in ev_c]),
                "max |after - before|": max(abs(e["after"] - e["before"]) for e in ev_c),
                "n": len(ev_c),
            },
        )
    tables.append(et)
    claims.append(
        Claim.all_of(
            "Monotone in depth: trained local objectives do not increase with depth, and growing "
            "the network never changes the objective at the moment of growth.",
            [
                Claim.check(
                    "The trained local objectives are non-increasing in depth "
                    "(every task, every seed).",
                    "max over tasks, seeds and depths of (L_l - L_(l-1)) / L_(l-1), "
                    "on the training data "
                    f"in eval mode, <= {MONOTONE_TOL} (our tolerance)",
                    {
                        "max relative rise": worst,
                        **{f"max rise, {k}": max(v) for k, v in rises.items()},
                    },
                    lambda v: v["max relative rise"] <= MONOTONE_TOL,
                ),
                Claim.check(
                    "Growing the network leaves the objective unchanged at the moment of growth.",
                    f"max |L_after - L_before| over every growth event <= {GROW_TOL} "
                    "(zero-initialised heads: holds by construction unless the "
                    "implementation is wrong)",
                    {"max jump": jump, "growth events": len(grows)},
                    lambda v: v["max jump"] <= GROW_TOL,
                ),
            ],
        )
    )
    notes = [
        "Constants (lr, widths, epochs) are the issue's or common defaults, not tuned on "
        "the test data; the image net (flattened heads, batch 64, 2 epochs, lr 3e-3) was "
        "chosen on a validation split that claim 2 does not read.",
        "All methods of a task share the blocks and the optimizer; BP + PairNorm "
        "(torch_geometric.nn.PairNorm after each propagation) and GCNII "
        "(torch_geometric.nn.GCN2Conv, alpha 0.1, theta 0.5) are the reference "
        "library's over-smoothing remedies, trained end to end for the same epochs; DGL "
        "is DMoL without belief refinement (the ablation).",
    ]
    data = {
        "graph_acc": {f"{m}@{d}": v for (m, d), v in graph["acc"].items()},
        "image_acc": image["acc"],
        "image_per_depth": image["per_depth"],
        "diffusion_loss": diff["loss"],
        "rises": rises,
        "depth_changes": image["events"],
    }
    return Result(tables=tables, claims=claims, notes=notes, data=data)


EXPERIMENT = Experiment(
    name="dmol",
    title="DMoL: depth-progressive monotonic learning vs backpropagation",
    claim=(
        "DMoL's local belief objectives, refined block by block without gradients across blocks, "
        "match or beat BP, mitigate over-smoothing in deep GCNs, and lower the diffusion loss."
    ),
    run=run,
)
