"""The headline experiment of cocd: `icml26 run cocd`.

An MLP 64-32-10 (2,410 parameters) on scikit-learn's digits, trained by zeroth-order
methods at an equal number of loss queries (``k + 1 = 33`` per step for every method),
with first-order SGD and Adam at the same number of steps as references. Each method's
``lr`` is chosen from its own 5-point log grid on a validation seed that no verdict
reads; the verdicts read 5 other seeds (each seed fixes the initialisation, the batch
sequence and the methods' own random draws).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from icml26_core import Claim, Experiment, Result, RunContext, Table

K = 32  # block size / directions: k + 1 = 33 queries per step for every ZO method
H = 1e-2  # finite-difference step of the main comparison
VALIDATION_SEED = 1000
HIDDEN = 32


def _grid(lo: float, hi: float, n: int) -> list[float]:
    return [float(v) for v in np.logspace(lo, hi, n)]


# method -> (exponent range of its lr grid, kind). Grid centres from the prototype
# and the methods' scale (momentum 0.9 takes ~10x smaller steps); the validation seed picks.
METHODS: dict[str, tuple[tuple[float, float], str]] = {
    "CoCD": ((-2.5, -0.5), "zo"),
    "CoCD + momentum 0.9": ((-3.5, -1.5), "zo"),
    "CoCD normalized": ((-1.0, 1.0), "zo"),
    "CoCD, permuted order": ((-2.5, -0.5), "zo"),
    "BCCD": ((-1.0, 1.0), "zo"),
    "BCCD, permuted order": ((-1.0, 1.0), "zo"),
    "random coordinate": ((-1.0, 1.0), "zo"),
    "random subspace": ((-1.0, 1.0), "zo"),
    "SPSA (k directions)": ((-2.5, -0.5), "zo"),
    "SGD (first order)": ((-1.5, 0.5), "fo"),
    "Adam (first order)": ((-3.5, -1.5), "fo"),
}


def _data() -> dict[str, Any]:
    """Digits scaled to [0, 1], split 80/20 by a fixed permutation (stratified)."""
    from icml26_core.datasets import load_tabular

    X, y, _ = load_tabular("digits")
    X = X / 16.0
    rng = np.random.default_rng(12345)
    test = np.zeros(len(y), dtype=bool)
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        test[idx[: len(idx) // 5]] = True
    return {"Xtr": X[~test], "ytr": y[~test], "Xte": X[test], "yte": y[test]}


def _mlp(d_in: int, seed: int, dtype: Any) -> Any:
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d_in, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10)).to(dtype)


def _batched_mlp(d_in: int, xb: Any, yb: Any) -> Callable[[Any], Any]:
    """Loss of an MLP d_in-32-10 at each row of X (flat parameters, nn.Sequential order)."""
    import torch
    import torch.nn.functional as F

    n1 = HIDDEN * d_in
    n2 = n1 + HIDDEN
    n3 = n2 + 10 * HIDDEN

    def f(X: torch.Tensor) -> torch.Tensor:
        m = X.shape[0]
        W1 = X[:, :n1].view(m, HIDDEN, d_in)
        hid = torch.relu(torch.matmul(xb, W1.transpose(1, 2)) + X[:, n1:n2, None].transpose(1, 2))
        W2 = X[:, n2:n3].view(m, 10, HIDDEN)
        out = torch.matmul(hid, W2.transpose(1, 2)) + X[:, n3:, None].transpose(1, 2)
        losses = F.cross_entropy(out.reshape(-1, 10), yb.repeat(m), reduction="none")
        return losses.view(m, -1).mean(dim=1)

    return f


def _make(name: str, params: Any, lr: float, seed: int, h: float) -> Any:
    import torch

    import cocd

    if name == "CoCD":
        return cocd.CoCD(params, lr=lr, block_size=K, fd_step=h)
    if name == "CoCD + momentum 0.9":
        return cocd.CoCD(params, lr=lr, block_size=K, fd_step=h, momentum=0.9)
    if name == "CoCD normalized":
        return cocd.CoCD(params, lr=lr, block_size=K, fd_step=h, normalize=True)
    if name == "CoCD, permuted order":
        return cocd.CoCD(params, lr=lr, block_size=K, fd_step=h, order="permuted", seed=seed)
    if name == "BCCD":
        return cocd.BCCD(params, lr=lr, block_size=K, fd_step=h)
    if name == "BCCD, permuted order":
        return cocd.BCCD(params, lr=lr, block_size=K, fd_step=h, order="permuted", seed=seed)
    if name == "random coordinate":
        return cocd.RandomCoordinate(params, lr=lr, block_size=K, fd_step=h, seed=seed)
    if name == "random subspace":
        return cocd.RandomSubspace(params, lr=lr, n_directions=K, fd_step=h, seed=seed)
    if name == "SPSA (k directions)":
        return cocd.SPSA(params, lr=lr, n_directions=K, fd_step=h, seed=seed)
    if name == "SGD (first order)":
        return torch.optim.SGD(params, lr=lr)
    if name == "Adam (first order)":
        return torch.optim.Adam(params, lr=lr)
    raise KeyError(name)


def _train(
    name: str,
    lr: float,
    seed: int,
    data: dict[str, Any],
    *,
    queries: int,
    batch: int,
    h: float = H,
    dtype: str = "float32",
    n_points: int = 12,
    device: str = "cpu",
) -> dict[str, Any]:
    """One run; returns final train loss, test accuracy, the curve and (CoCD) smoothness."""
    import torch
    import torch.nn.functional as F

    dt = getattr(torch, dtype)
    Xtr = torch.as_tensor(data["Xtr"], dtype=dt, device=device)
    ytr = torch.as_tensor(data["ytr"], device=device)
    Xte = torch.as_tensor(data["Xte"], dtype=dt, device=device)
    yte = torch.as_tensor(data["yte"], device=device)
    model = _mlp(Xtr.shape[1], seed, dt).to(device)
    params = list(model.parameters())
    opt = _make(name, params, lr, seed, h)
    first_order = METHODS[name][1] == "fo"
    steps = queries // (K + 1)
    gen = torch.Generator().manual_seed(seed)
    marks = set(np.unique(np.linspace(0, steps, n_points).astype(int)).tolist())

    def train_loss() -> float:
        with torch.no_grad():
            return float(F.cross_entropy(model(Xtr), ytr))

    curve: list[tuple[int, float]] = []
    init = train_loss()
    smooth: list[float] = []
    snap: tuple[Any, Any] | None = None
    n_blocks = getattr(opt, "n_blocks", None) if name.startswith("CoCD") else None
    diverged = False
    t0 = time.perf_counter()
    for t in range(steps + 1):
        if t in marks:
            curve.append((t * (K + 1), train_loss()))
        if t == steps:
            break
        idx = torch.randint(0, len(ytr), (batch,), generator=gen).to(device)
        xb, yb = Xtr[idx], ytr[idx]
        if first_order:
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
        else:
            try:
                opt.step(batched_closure=_batched_mlp(Xtr.shape[1], xb, yb))
            except ValueError:
                diverged = True
                break
        if n_blocks and (t + 1) % n_blocks == 0:
            # local smoothness along the run: change of the (full, swept) estimate g per
            # unit move of x between consecutive sweep ends (from sweep 1 on)
            g = torch.cat([opt.state[p]["g"].reshape(-1) for p in params]).double()
            x = torch.cat([p.detach().reshape(-1) for p in params]).double()
            if snap is not None:
                dx = float((x - snap[1]).norm())
                if dx > 0:
                    smooth.append(float((g - snap[0]).norm()) / dx)
            snap = (g, x)
    wall = time.perf_counter() - t0
    final = train_loss()
    if diverged or not math.isfinite(final) or final > 1e3:
        diverged = True
        final = init  # a diverged run is worth no more than stopping at once
        acc = float("nan")
    else:
        with torch.no_grad():
            acc = float((model(Xte).argmax(1) == yte).double().mean())
    queries_used = getattr(opt, "queries", None)
    return {
        "final": final,
        "init": init,
        "acc": acc,
        "curve": curve,
        "smooth": float(np.median(smooth)) if smooth else float("nan"),
        "diverged": diverged,
        "steps": steps,
        "queries": queries_used,
        "wall": wall,
    }


def _count_queries(d_in: int, steps: int = 3) -> dict[str, Any]:
    """Closure calls per CoCD step (Python-loop closure) on an MLP d_in-32-10."""
    import torch
    import torch.nn.functional as F

    import cocd

    model = _mlp(d_in, 0, torch.float32)
    xb = torch.rand(64, d_in)
    yb = torch.randint(0, 10, (64,))
    calls = {"n": 0}

    def closure() -> float:
        calls["n"] += 1
        return float(F.cross_entropy(model(xb), yb))

    opt = cocd.CoCD(model.parameters(), lr=1e-3, block_size=K)
    per_step = []
    for _ in range(steps):
        before = calls["n"]
        opt.step(closure)
        per_step.append(calls["n"] - before)
    return {"d": opt.dim, "per_step": per_step, "counted": opt.queries}


def run(ctx: RunContext) -> Result:
    """Tune on the validation seed, measure on the test seeds, decide the four claims.

    Runs torch on one thread (restored afterwards): the models are tiny, and on a
    shared 2-core machine two threads made each step 20x slower.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(ctx)
    finally:
        torch.set_num_threads(threads)


def _run(ctx: RunContext) -> Result:
    from icml26_core import stats

    queries = ctx.pick(smoke=33 * 20, default=33 * 450, full=33 * 1800)
    batch = ctx.pick(smoke=64, default=64, full=256)
    n_grid = ctx.pick(smoke=2, default=5, full=5)
    test_seeds = list(range(ctx.pick(smoke=2, default=5, full=10)))
    data = _data()
    kw = dict(queries=queries, batch=batch, device=ctx.device)
    names = list(METHODS)

    # 1. lr per method on the validation seed
    grid_table = Table(
        f"validation seed {VALIDATION_SEED}: final train loss per lr (the grid each method gets)",
        ["method", *[f"lr {i + 1}" for i in range(n_grid)], "chosen lr", "at grid edge"],
        note="cells: lr = final train loss; 'div' = diverged (counted as the initial loss)",
    )
    chosen: dict[str, float] = {}
    jobs = [(m, lr) for m in names for lr in _grid(*METHODS[m][0], n_grid)]
    val: dict[str, list[tuple[float, dict[str, Any]]]] = {m: [] for m in names}
    for m, lr in ctx.progress(jobs, "lr grid (validation seed)"):
        val[m].append((lr, _train(m, lr, VALIDATION_SEED, data, **kw)))
    for m in names:
        runs = val[m]
        best = min(range(len(runs)), key=lambda i: runs[i][1]["final"])
        chosen[m] = runs[best][0]
        cells = {
            f"lr {i + 1}": f"{lr:.3g} = " + ("div" if r["diverged"] else f"{r['final']:.3f}")
            for i, (lr, r) in enumerate(runs)
        }
        edge = best in (0, len(runs) - 1)
        grid_table.add_row(**{"method": m, **cells, "chosen lr": chosen[m], "at grid edge": edge})

    # 2. the test seeds at the chosen lr
    res: dict[str, list[dict[str, Any]]] = {m: [] for m in names}
    jobs2 = [(m, s) for s in test_seeds for m in names]
    for m, s in ctx.progress(jobs2, "test seeds"):
        res[m].append(_train(m, chosen[m], s, data, **kw))

    # 3. smoothing: CoCD at its chosen lr, fd_step 1e-1 vs 1e-4, float64 (no round-off)
    smooth_runs: dict[float, list[dict[str, Any]]] = {1e-1: [], 1e-4: []}
    jobs3 = [(hh, s) for s in test_seeds for hh in smooth_runs]
    for hh, s in ctx.progress(jobs3, "fd_step 1e-1 vs 1e-4"):
        smooth_runs[hh].append(_train("CoCD", chosen["CoCD"], s, data, h=hh, dtype="float64", **kw))

    # 4. queries per step at d = 2,410 and d = 25,450 (MLP 784-32-10, MNIST's input size)
    counts = {d_in: _count_queries(d_in) for d_in in (64, 784)}

    n = len(test_seeds)
    steps = queries // (K + 1)
    main = Table(
        f"MLP 64-32-10 on digits (d = 2,410): {queries:,} loss queries per ZO run "
        f"({steps} steps of {K + 1}), batch {batch}, over {n} test seeds",
        [
            "method",
            "lr",
            "final train loss",
            "sd over seeds",
            "test accuracy",
            "diverged",
            "loss queries",
            "wall s / run",
            "n",
        ],
        note="first-order rows: same number of steps, one gradient per step (not queries); "
        "floors: the initial loss (stop at once) and the class-prior cross-entropy",
    )
    init = [r["init"] for r in res["CoCD"]]
    prior = np.bincount(data["ytr"], minlength=10) / len(data["ytr"])
    for m in names:
        fin = [r["final"] for r in res[m]]
        main.add_row(
            **{
                "method": m,
                "lr": chosen[m],
                "final train loss": float(np.mean(fin)),
                "sd over seeds": float(np.std(fin, ddof=1)),
                "test accuracy": float(np.nanmean([r["acc"] for r in res[m]]))
                if not all(r["diverged"] for r in res[m])
                else None,
                "diverged": sum(r["diverged"] for r in res[m]),
                "loss queries": res[m][0]["queries"],
                "wall s / run": float(np.mean([r["wall"] for r in res[m]])),
                "n": n,
            }
        )
    main.add_row(
        **{
            "method": "floor: no step (initial loss)",
            "final train loss": float(np.mean(init)),
            "sd over seeds": float(np.std(init, ddof=1)),
            "test accuracy": 0.1,
            "n": n,
        }
    )
    main.add_row(
        **{
            "method": "floor: class prior (mean predictor)",
            "final train loss": float(-(prior * np.log(prior)).sum()),
            "test accuracy": 0.1,
            "n": 1,
        }
    )
    sm_table = Table(
        f"CoCD fd_step (float64, lr {chosen['CoCD']:.3g}, {n} test seeds)",
        ["fd_step", "final train loss", "median local smoothness ||dg||/||dx||", "n"],
    )
    for hh, runs in smooth_runs.items():
        sm_table.add_row(
            **{
                "fd_step": hh,
                "final train loss": float(np.mean([r["final"] for r in runs])),
                "median local smoothness ||dg||/||dx||": float(
                    np.mean([r["smooth"] for r in runs])
                ),
                "n": len(runs),
            }
        )

    fin = {m: [r["final"] for r in res[m]] for m in names}
    c1 = Claim.superior(
        "At equal queries, CoCD's final train loss is lower than BCCD's (each at its "
        "validation-chosen lr from a 5-point grid).",
        fin["CoCD"],
        fin["BCCD"],
        names=("CoCD", "BCCD"),
        metric="final train loss",
        higher_is_better=False,
    )

    c5 = Claim.superior(
        "Ablation (ours): in one fixed random permutation order for both, CoCD's final "
        "train loss is lower than BCCD's.",
        fin["CoCD, permuted order"],
        fin["BCCD, permuted order"],
        names=("CoCD permuted", "BCCD permuted"),
        metric="final train loss",
        higher_is_better=False,
    )

    def sd_ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.std(a, axis=axis, ddof=1) / np.std(b, axis=axis, ddof=1)

    parts = []
    for other in ("SPSA (k directions)", "random subspace"):
        ev = stats.bootstrap_band(
            [np.asarray(fin["CoCD"]), np.asarray(fin[other])],
            sd_ratio,
            high=0.5,
            effect_name=f"sd(CoCD) / sd({other})",
            test="ratio of sample sds over test seeds, BCa bootstrap (unpaired)",
            paired=False,
        )
        parts.append(
            Claim.from_evidence(
                f"CoCD's final-loss spread over seeds is at most half of {other}'s.",
                "sd ratio <= 0.5 (our threshold, from the issue): holds if its whole CI lies "
                "below 0.5, does not hold if it lies wholly above",
                ev,
                {"CoCD": fin["CoCD"], other: fin[other]},
            )
        )
    c2 = Claim.all_of(
        "Stability: CoCD's final-loss spread over seeds is at most half that of the "
        "randomized ZO methods (SPSA, random subspace).",
        parts,
    )
    c3 = Claim.check(
        "O(1) queries per step: CoCD's measured loss calls per step are k + 1, whatever d.",
        f"every measured step makes exactly k + 1 = {K + 1} closure calls at d = "
        f"{counts[64]['d']:,} and d = {counts[784]['d']:,}",
        {f"calls per step at d = {c['d']}": c["per_step"] for c in counts.values()},
        lambda v: all(x == K + 1 for c in v.values() for x in c),
    )
    big, small = smooth_runs[1e-1], smooth_runs[1e-4]
    c4 = Claim.all_of(
        "Smoothing: a larger finite-difference step (1e-1 vs 1e-4) gives a final loss no "
        "worse and a lower local smoothness along the run.",
        [
            Claim.non_inferior(
                "fd_step 1e-1's final train loss is no worse than fd_step 1e-4's.",
                [r["final"] for r in big],
                [r["final"] for r in small],
                margin=0.02,
                names=("h=1e-1", "h=1e-4"),
                metric="final train loss",
                higher_is_better=False,
            ),
            Claim.superior(
                "fd_step 1e-1 sees a lower local smoothness ||g(x+) - g(x)|| / ||x+ - x||.",
                [r["smooth"] for r in big],
                [r["smooth"] for r in small],
                names=("h=1e-1", "h=1e-4"),
                metric="median local smoothness",
                higher_is_better=False,
            ),
        ],
    )

    figures = []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.2))
        for m in names:
            c = np.array([[q for q, _ in r["curve"]] for r in res[m]], dtype=float)
            v = np.array([[y for _, y in r["curve"]] for r in res[m]], dtype=float)
            style = "--" if METHODS[m][1] == "fo" else "-"
            ax.plot(c.mean(0), v.mean(0), style, label=m)
        ax.axhline(float(np.mean(init)), color="grey", lw=0.8, label="initial loss")
        ax.set_xlabel("loss queries (first order: steps x 33)")
        ax.set_ylabel("train loss (full train set)")
        ax.set_yscale("log")
        ax.set_title(f"digits MLP, mean over {n} test seeds")
        ax.legend(fontsize=7)
        figures.append(ctx.save_figure(fig, "loss_vs_queries"))
    except ImportError:  # pragma: no cover - plot extra not installed
        pass

    return Result(
        tables=[main, grid_table, sm_table],
        claims=[c1, c2, c3, c4, c5],
        figures=figures,
        notes=[
            f"Each ZO step costs k + 1 = {K + 1} loss queries on one batch of {batch}; "
            "queries are counted by the optimizers.",
            "'CoCD normalized' is exactly CoCD at lr / n_blocks (n_blocks = 76); it gets "
            "BCCD's lr grid, so it is the CoCD variant at BCCD's step-size scale.",
            "Smoothness: ||g_s - g_{s-1}|| / ||x_s - x_{s-1}|| between consecutive sweep ends "
            "(g: CoCD's full estimate), median over the run.",
        ],
        data={
            "chosen_lr": chosen,
            "final": fin,
            "curves": {m: [r["curve"] for r in res[m]] for m in names},
            "validation": {m: [(lr, r["final"]) for lr, r in val[m]] for m in names},
            "smooth": {
                str(hh): [(r["final"], r["smooth"]) for r in runs]
                for hh, runs in smooth_runs.items()
            },
            "queries_per_step": counts,
        },
    )


EXPERIMENT = Experiment(
    name="cocd",
    title="Coherent Coordinate Descent: deterministic, budget-aware zeroth-order optimization",
    claim="At equal loss queries, CoCD reaches a lower train loss than block cyclic CD, "
    "with a smaller spread over seeds than randomized ZO methods.",
    run=run,
)
