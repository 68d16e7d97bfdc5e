"""The headline experiment of geometry-misalignment: `icml26 run geometry-misalignment`.

Part 1, controlled misalignment (wine, 178 x 13, whitened): source ``Z = X M`` with a
fixed random matrix M whose ``cond(M^T M) = kappa``, target ``Y = X A``, linear map
``T_W(z) = z W`` started at the same *intrinsic* distance from a solution for every
kappa (``W0 = M^-1 (A + E)``), objective the Sinkhorn divergence (blur 0.05). So the
problem in output space is the same for every kappa; only the parametrization's
misalignment changes. Iterations to ``S <= 1e-4 S(W0)`` for gradient descent
(step ``1 / lambda_max(G)``), Adam, the Wasserstein natural gradient and the
calibrated optimizer; final S at an equal budget.

The same grid on digits (PCA-16, whitened). Part 1 fits on training rows; the held-out
rows of the same problem (where the true map has risk 0) give the excess risk.

Part 2, domain adaptation (scikit-learn digits -> MNIST pooled to 8 x 8, PCA-16,
raw and standardized coordinates): affine and one-hidden-layer MLP maps trained on
S_eps, a logistic regression trained on the mapped source and scored on held-out
target digits; POT's EMD, Sinkhorn and Sinkhorn-Lpl1 transports and source-only as
baselines, the majority class as the floor.

Part 3, autompg split by origin (USA -> Japan/Europe, regression): the same maps, a
ridge regression on the mapped source, R^2 of mpg on held-out target cars.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import numpy as np
import torch
from icml26_core import Claim, Experiment, Result, RunContext, Table

from geometry_misalignment.optim import CalibratedOptimizer, WassersteinNaturalGradient
from geometry_misalignment.sinkhorn import sinkhorn_divergence

BLUR = 0.05
TOL = 1e-4  # relative tolerance: S <= TOL * S(W0)
FLOOR = 1e-12  # S <= FLOOR * S(W0) counts as solved (float64 noise below it)
GD_STEP = 1.0  # gradient descent step = GD_STEP / lambda_max(G): the 1/L step
WNG_LR = 1.0  # a full Gauss-Newton step in the Wasserstein metric
ADAM_LR = 0.03  # only the overhead timing's lr (a time measurement, no verdict reads S)
# Adam's lr (and the calibrated optimizer's base lr) is chosen per kappa (part 1) and per
# feature regime (part 2) from this grid, on validation seeds the verdicts never read,
# by the objective itself (final S): what a user without target labels would do.
LR_GRID = (1e-2, 3e-2, 1e-1, 3e-1, 1.0)
VAL_SEEDS = (1000, 1001)
THRESHOLD = 10.0  # the calibrated optimizer's kappa threshold (the default)
KAPPAS = (1.0, 1e2, 1e4, 1e6)
KAPPAS_GD = (1.0, 10.0, 100.0, 1e4, 1e6)  # GD at every kappa (10: one more point for the slope)
GD_CAP = 400  # GD's step cap: it needs ~3 kappa steps, so 1e4 and 1e6 are "not reached within 400"
_DEVICE = {"device": "cpu"}  # where the maps are fitted: set from ctx.device by run()
MLP_WIDTH = 32  # hidden width of the one-hidden-layer residual MLP map
MLP_DAMPING = 1e-4  # damping of the preconditioned steps on the MLP map (G is singular there)
EXTRA_SEEDS_RAW = 19  # part 2 at default: more seeds for the raw regime (the EMD claim reads it)
OVERHEAD_ROUNDS = 41  # interleaved timing rounds of the overhead claim at default


def _import_ot() -> Any:
    """POT without its jax, tensorflow and cupy backends (numpy arrays only here).

    POT imports every installed backend; jax alone costs seconds of CPU per process.
    """
    for key in ("JAX", "TENSORFLOW", "CUPY"):
        os.environ.setdefault(f"POT_BACKEND_DISABLE_{key}", "1")
    import ot

    return ot


def _wine_whitened() -> np.ndarray:
    """All 178 wine rows, centred and whitened (``X^T X / n = I``)."""
    from icml26_core.datasets import load_tabular

    X, _, _ = load_tabular("wine")
    X = X - X.mean(0)
    U, _, _ = np.linalg.svd(X, full_matrices=False)
    return U * math.sqrt(len(X))  # X^T X / n = I


def _split_whitened(name: str, n_train: int, n_test: int) -> tuple[np.ndarray, np.ndarray]:
    """Training and held-out rows of a dataset, whitened with the training rows' moments.

    ``wine`` (13 features) or ``digits`` (values / 16, PCA-16 fitted on the training
    rows); one fixed random split (seed 0), so every seed sees the same points and
    only the misalignment matrix and the target map change.
    """
    from icml26_core.datasets import load_tabular

    X, _, _ = load_tabular(name)
    X = np.asarray(X, dtype=np.float64)
    if name == "digits":
        X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(X))
    tr, te = X[perm[:n_train]], X[perm[n_train : n_train + n_test]]
    mu = tr.mean(0)
    tr, te = tr - mu, te - mu
    if name == "digits":
        _, _, Vt = np.linalg.svd(tr, full_matrices=False)
        tr, te = tr @ Vt[:16].T, te @ Vt[:16].T
    C = tr.T @ tr / len(tr)
    ev, Q = np.linalg.eigh(C)
    Wh = Q @ np.diag(ev**-0.5) @ Q.T
    return tr @ Wh, te @ Wh


def _factors(d: int, kappa: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    R, _ = np.linalg.qr(rng.standard_normal((d, d)))
    M = Q @ np.diag(kappa ** (-0.5 * np.linspace(0, 1, d))) @ R.T
    A = rng.standard_normal((d, d)) / math.sqrt(d)
    E = 0.5 * rng.standard_normal((d, d)) / math.sqrt(d)
    return M, A, E


def misaligned_problem(
    X: np.ndarray, kappa: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(Z, Y, W0)`` float64 for one kappa: ``Z^T Z / n`` has condition number kappa.

    ``Z = X M`` with ``cond(M^T M) = kappa`` (X whitened), target ``Y = X A``, start
    ``W0 = M^-1 (A + E)``; the solution ``W* = M^-1 A`` maps Z onto Y exactly.
    """
    M, A, E = _factors(X.shape[1], kappa, seed)
    W0 = np.linalg.solve(M, A + E)
    return torch.tensor(X @ M), torch.tensor(X @ A), torch.tensor(W0)


def held_out_problem(
    X_test: np.ndarray, kappa: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(Z_test, Y_test)``: held-out rows pushed through the same ``M`` and ``A``."""
    M, A, _ = _factors(X_test.shape[1], kappa, seed)
    return torch.tensor(X_test @ M), torch.tensor(X_test @ A)


def _fit_map(
    method: str,
    Z: torch.Tensor,
    Y: torch.Tensor,
    W0: torch.Tensor,
    b0: torch.Tensor | None,
    steps: int,
    *,
    adam_lr: float,
    tol: float = TOL,
    stop_at_tol: bool = False,
    mlp: int = 0,
    snapshot: int | None = None,
) -> dict[str, Any]:
    """Run one optimizer on ``S(T(Z), Y)``; the loss curve and iterations to tolerance.

    With ``snapshot = B`` the run also keeps the map and its relative S after B steps
    (``snap_rel``, ``snap_W``) and stops at the tolerance only after B steps: one run
    gives both the iterations to tolerance and the equal-budget result.

    ``T(z) = z W + b`` (``b`` absent when ``b0`` is None); with ``mlp = h > 0`` the map is
    ``z W + b + tanh(z U + c) V``, a one-hidden-layer residual MLP of width h whose
    nonlinear branch starts small (``U, V`` random with std ``1/sqrt(d)`` and ``1e-2``), so
    every map starts at about ``(W0, b0)``.
    """
    dev = torch.device(_DEVICE["device"])
    Z, Y, W0 = Z.to(dev), Y.to(dev), W0.to(dev)
    b0 = None if b0 is None else b0.to(dev)
    W = W0.clone().requires_grad_(True)
    params = [W] if b0 is None else [W, b0.clone().requires_grad_(True)]
    d = Z.shape[1]
    if mlp:
        g = torch.Generator().manual_seed(7)
        kw: dict[str, Any] = {"dtype": Z.dtype}
        U = (torch.randn(d, mlp, generator=g, **kw) / math.sqrt(d)).to(Z.device)
        V = (1e-2 * torch.randn(mlp, Y.shape[1], generator=g, **kw)).to(Z.device)
        c = torch.zeros(mlp, **kw).to(Z.device)
        params += [t.requires_grad_(True) for t in (U, c, V)]

    def forward() -> torch.Tensor:
        out = Z @ W
        if b0 is not None:
            out = out + params[1]
        if mlp:
            out = out + torch.tanh(Z @ params[-3] + params[-2]) @ params[-1]
        return out

    opt: Any
    if method == "gd":
        # the 1/L step: L = lambda_max(G) for G = Sigma_z (x) I (Sinkhorn's particle curvature ~1)
        zz = Z if b0 is None else torch.cat([Z, Z.new_ones(len(Z), 1)], 1)
        lmax = float(torch.linalg.eigvalsh(zz.T @ zz / len(Z)).max())
        opt = torch.optim.SGD(params, lr=GD_STEP / lmax)
    elif method == "adam":
        opt = torch.optim.Adam(params, lr=adam_lr)
    elif method == "wng":
        opt = WassersteinNaturalGradient(params, lr=WNG_LR, damping=MLP_DAMPING if mlp else 1e-8)
    elif method == "calibrated":
        opt = CalibratedOptimizer(
            params,
            threshold=THRESHOLD,
            every=10,
            lr=adam_lr,
            damping=MLP_DAMPING if mlp else 1e-8,
        )
    else:  # pragma: no cover - internal
        raise ValueError(method)
    losses: list[float] = []
    snap: tuple[float, torch.Tensor] | None = None
    t0 = time.process_time()
    for _ in range(steps + 1):
        if method in ("wng", "calibrated"):

            def closure() -> tuple[torch.Tensor, torch.Tensor]:
                out = forward()
                return sinkhorn_divergence(out, Y, BLUR), out

            if len(losses) == steps:
                with torch.no_grad():
                    losses.append(float(sinkhorn_divergence(forward(), Y, BLUR)))
                break
            losses.append(float(opt.step(closure)))
        else:
            opt.zero_grad()
            loss = sinkhorn_divergence(forward(), Y, BLUR)
            losses.append(float(loss.detach()))
            if snapshot is not None and len(losses) == snapshot + 1:
                snap = (losses[-1], W.detach().cpu().clone())
            if len(losses) == steps + 1:
                break
            loss.backward()
            opt.step()
        s0 = losses[0]
        if not math.isfinite(losses[-1]):
            break
        past_snapshot = snapshot is None or len(losses) > snapshot
        if losses[-1] <= FLOOR * s0 or (stop_at_tol and past_snapshot and losses[-1] <= tol * s0):
            break
    s0 = losses[0]
    hit = [i for i, v in enumerate(losses) if v <= tol * s0]
    final = losses[-1] if len(losses) == steps + 1 else min(losses[-1], FLOOR * s0)
    if not math.isfinite(final):
        final = math.inf
    with torch.no_grad():
        mapped = forward().detach()
    if snapshot is not None and snap is None:  # stopped at the floor (or non-finite) before B
        snap = (final, W.detach().cpu().clone())
    return {
        "iters": hit[0] if hit else None,
        "losses": losses,
        "snap_rel": None if snap is None else max(snap[0] / s0, FLOOR),
        "snap_W": None if snap is None else snap[1],
        "final_rel": max(final / s0, FLOOR),
        "final_S": final,
        "cpu_s": time.process_time() - t0,
        "W": W.detach().cpu(),
        "b": None if b0 is None else params[1].detach().cpu(),
        "params": [t.detach().cpu() for t in params],
        "mapped": mapped.cpu(),
        "kappa_est": getattr(opt, "kappa", None),
        "n_pre": getattr(opt, "n_preconditioned", None),
        "n_steps": getattr(opt, "n_steps", None),
    }


GAP = 0.01  # parts 2-3: "to tolerance" = within 1% of the best decrease of S on the sample


def _iters_to_gap(curves: dict[str, list[float]], families: dict[str, str]) -> dict[str, Any]:
    """Iterations until ``S <= S* + GAP (S0 - S*)``, per method, on one sample.

    ``S*`` is the lowest S that any map of the same family (``families[key]``: affine or
    MLP) reached on this sample and regime, ``S0`` the start's S (the same for every method
    of a family); None where a method never gets there within its steps.
    """
    out: dict[str, Any] = {}
    for fam in set(families.values()):
        keys = [k for k in curves if families[k] == fam]
        best = min(min(curves[k]) for k in keys)
        for k in keys:
            c = curves[k]
            target = best + GAP * (c[0] - best)
            hit = [i for i, v in enumerate(c) if v <= target]
            out[k] = hit[0] if hit else None
    return out


def _iters_cell(v: list[Any], steps: int) -> str:
    got = [x for x in v if x is not None]
    if not v:
        return "-"
    if not got:
        return f"not reached within {steps} (0/{len(v)})"
    return f"{np.median(got):g} ({len(got)}/{len(v)})"


def _apply(r: dict[str, Any], Z: torch.Tensor, mlp: int) -> torch.Tensor:
    """The fitted map of :func:`_fit_map` applied to new points ``Z``."""
    p = r["params"]
    out = Z @ p[0]
    if r["b"] is not None:
        out = out + p[1]
    if mlp:
        out = out + torch.tanh(Z @ p[-3] + p[-2]) @ p[-1]
    return out


def _tune_lr(
    method: str,
    problems: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]],
    steps: int,
    grid: tuple[float, ...],
    mlp: int = 0,
) -> tuple[float, dict[float, float]]:
    """The grid lr with the lowest mean log final S over validation problems.

    Ties go to the smallest lr. Where the calibrated optimizer took only preconditioned
    steps on every validation problem at the smallest lr, the base lr never entered its
    trajectory, so every lr gives the same S and the rest of the grid is not run (the
    smallest lr is chosen, as the tie rule would). Returns the chosen lr and, per lr
    run, the mean log10 of the final relative S.
    """
    scores: dict[float, float] = {}
    for lr in sorted(grid):
        logs, only_pre = [], True
        for Z, Y, W0, b0 in problems:
            r = _fit_map(method, Z, Y, W0, b0, steps, adam_lr=lr, mlp=mlp)
            logs.append(math.log10(r["final_rel"]) if r["final_rel"] > 0 else -math.inf)
            only_pre = only_pre and r["n_pre"] == r["n_steps"]
        scores[lr] = float(np.mean(logs)) if all(np.isfinite(logs)) else math.inf
        if method == "calibrated" and only_pre:
            break
    return min(scores, key=lambda lr: (scores[lr], lr)), scores


def _part1(
    ctx: RunContext, seeds: list[int], out: dict[str, Any], dataset: str = "wine"
) -> list[Table]:
    """Controlled misalignment on one dataset: iterations to tolerance and equal budget.

    On the held-out rows of the same problem the true map ``W* = M^-1 A`` has risk 0, so
    the held-out S of a map after the budget is its excess risk.
    """
    n_train, n_test = {
        "wine": (120, 58),
        "digits": ctx.pick(smoke=(100, 100), default=(120, 120), full=(1200, 597)),
    }[dataset]
    X, X_test = _split_whitened(dataset, n_train, n_test)
    budget_gd = ctx.pick(smoke=40, default=GD_CAP)  # smoke: kappa = 4 needs about 12
    budget = ctx.pick(smoke=5, default=100)  # equal budget for GD / Adam / calibrated
    kappas_gd = ctx.pick(smoke=(1.0, 4.0, 1e4), default=KAPPAS_GD)
    kappas = ctx.pick(smoke=(1.0, 1e4), default=KAPPAS)
    all_k = sorted(set(kappas) | set(kappas_gd))
    methods = ("gd", "adam", "wng", "calibrated")
    rec: dict[str, dict[float, list[Any]]] = {m: {k: [] for k in all_k} for m in methods}
    finals: dict[str, dict[float, list[float]]] = {m: {k: [] for k in kappas} for m in methods}
    excess: dict[str, dict[float, list[float]]] = {m: {k: [] for k in kappas} for m in methods}
    cpu: dict[str, dict[float, list[float]]] = {m: {k: [] for k in all_k} for m in methods}
    grid = ctx.pick(smoke=(1e-2, 1e-1), default=LR_GRID)
    # one validation problem per kappa at default (the lr grids were two thirds of the run)
    val_seeds = ctx.pick(smoke=VAL_SEEDS[:1], default=VAL_SEEDS[:1], full=VAL_SEEDS)
    lr_of: dict[str, dict[float, float]] = {"adam": {}, "calibrated": {}}
    for kappa in ctx.progress(kappas, f"part 1 ({dataset}): lr on validation seeds, per kappa"):
        val = [(*misaligned_problem(X, kappa, v), None) for v in val_seeds]
        for m in ("adam", "calibrated"):
            lr_of[m][kappa], _ = _tune_lr(m, val, budget, grid)
    jobs = [(s, k) for s in seeds for k in all_k]
    for seed, kappa in ctx.progress(jobs, f"part 1 ({dataset}): kappa x seed"):
        Z, Y, W0 = misaligned_problem(X, kappa, seed)
        Zt, Yt = held_out_problem(X_test, kappa, seed)
        with torch.no_grad():
            s0_test = float(sinkhorn_divergence(Zt @ W0, Yt, BLUR))

        kept: dict[str, dict[str, Any]] = {}
        r = _fit_map("wng", Z, Y, W0, None, 50, adam_lr=ADAM_LR)  # lr unused by WNG
        rec["wng"][kappa].append(r["iters"])
        cpu["wng"][kappa].append(r["cpu_s"])
        kept["wng"] = r
        if kappa in kappas_gd:
            # one GD run: iterations to tolerance (capped) and, at the kappas of the
            # equal-budget table, the map after `budget` steps (the same trajectory's prefix)
            r = _fit_map(
                "gd",
                Z,
                Y,
                W0,
                None,
                budget_gd,
                adam_lr=ADAM_LR,
                stop_at_tol=True,
                snapshot=budget if kappa in kappas else None,
            )
            rec["gd"][kappa].append(r["iters"])
            cpu["gd"][kappa].append(r["cpu_s"])
            if kappa in kappas:
                kept["gd"] = {**r, "final_rel": r["snap_rel"], "W": r["snap_W"]}
        if kappa in kappas:
            for m in ("adam", "calibrated"):
                r = _fit_map(m, Z, Y, W0, None, budget, adam_lr=lr_of[m][kappa])
                rec[m][kappa].append(r["iters"])
                cpu[m][kappa].append(r["cpu_s"])
                kept[m] = r
            for m, r in kept.items():
                finals[m][kappa].append(r["final_rel"])
                with torch.no_grad():
                    s_test = float(sinkhorn_divergence(Zt @ r["W"], Yt, BLUR))
                excess[m][kappa].append(max(s_test / s0_test, FLOOR))
    out[f"part1_{dataset}"] = {
        "iters": rec,
        "final_rel": finals,
        "excess_rel": excess,
        "cpu_s": cpu,
        "kappas": list(kappas),
        "budget": budget,
        "budget_gd": budget_gd,
        "n_train": n_train,
        "n_test": n_test,
        "lr": {m: {f"{k:g}": v for k, v in d.items()} for m, d in lr_of.items()},
        "lr_grid": list(grid),
        "val_seeds": list(val_seeds),
    }
    t1 = Table(
        f"part 1 ({dataset}, {n_train} points in d = {X.shape[1]}, linear map, Sinkhorn blur "
        f"{BLUR}): iterations to S <= {TOL:g} S(W0), median over seeds (n seeds reaching it / n)",
        [
            "kappa",
            "stop at once (floor)",
            "GD (1/L step)",
            "Adam",
            "WNG (ours)",
            "calibrated (ours)",
            "GD CPU s",
            "Adam CPU s",
            "WNG CPU s",
            "calibrated CPU s",
        ],
        note=(
            f"'-' = not run; 'not reached within N (0/n)' = no seed reached it within the "
            f"method's step cap N (GD {budget_gd}, Adam/calibrated {budget}, WNG 50 steps); "
            "CPU s = mean process CPU seconds of one run as counted here (one thread; GD "
            f"until the tolerance or its cap, Adam and calibrated {budget} steps, WNG until "
            f"S <= {FLOOR:g} S(W0) or 50 steps; the floor takes no time); "
            f"Adam's lr per kappa chosen on "
            f"validation seeds {list(val_seeds)} from {list(grid)}: "
            + ", ".join(f"{k:g}: {lr_of['adam'][k]:g}" for k in kappas)
            + "; the calibrated optimizer's base lr likewise: "
            + ", ".join(f"{k:g}: {lr_of['calibrated'][k]:g}" for k in kappas)
        ),
    )
    for k in all_k:
        row: dict[str, Any] = {"kappa": f"{k:g}", "stop at once (floor)": f"never (0/{len(seeds)})"}
        for m, col in (
            ("gd", "GD (1/L step)"),
            ("adam", "Adam"),
            ("wng", "WNG (ours)"),
            ("calibrated", "calibrated (ours)"),
        ):
            v = rec[m][k]
            if not v:
                row[col] = "-"
                continue
            got = [x for x in v if x is not None]
            cap = {"gd": budget_gd, "wng": 50}.get(m, budget)
            if len(got) == len(v):
                med = f"{np.median(got):g}"
            elif not got:
                med = f"not reached within {cap}"
            else:  # some seeds reached it: the median of those, and how many
                med = f"{np.median(got):g} (of those reaching it within {cap})"
            row[col] = f"{med} ({len(got)}/{len(v)})"
        for m, col in (
            ("gd", "GD CPU s"),
            ("adam", "Adam CPU s"),
            ("wng", "WNG CPU s"),
            ("calibrated", "calibrated CPU s"),
        ):
            row[col] = float(np.mean(cpu[m][k])) if cpu[m][k] else "-"
        t1.add_row(**row)

    def gmean(v: list[float]) -> float:
        return float(np.exp(np.mean(np.log(v))))

    cols = ["GD (1/L step)", "Adam", "WNG (ours)", "calibrated (ours)"]
    t2 = Table(
        f"part 1 ({dataset}): S / S(W0) after an equal budget of {budget} steps (training "
        f"points) and held-out excess risk S_test / S_test(W0) ({n_test} held-out points; "
        f"the true map has risk 0), geometric mean over {len(seeds)} seeds (floored at {FLOOR:g})",
        ["kappa", "stop at once (floor)"]
        + [f"{c} train" for c in cols]
        + [f"{c} held-out" for c in cols]
        + ["n"],
    )
    for k in kappas:
        row = {"kappa": f"{k:g}", "stop at once (floor)": 1.0, "n": len(finals["adam"][k])}
        for m, c in zip(("gd", "adam", "wng", "calibrated"), cols, strict=True):
            row[f"{c} train"] = gmean(finals[m][k])
            row[f"{c} held-out"] = gmean(excess[m][k])
        t2.add_row(**row)
    return [t1, t2]


def _mnist8() -> tuple[np.ndarray, np.ndarray]:
    from icml26_core.datasets import load_mnist

    X, y = load_mnist()
    img = X.reshape(-1, 28, 28)[:, 2:26, 2:26].reshape(-1, 8, 3, 8, 3).mean(axis=(2, 4))
    return img.reshape(-1, 64).astype(np.float64), y


def _digits() -> tuple[np.ndarray, np.ndarray]:
    from icml26_core.datasets import load_tabular

    X, y, _ = load_tabular("digits")
    return X / 16.0, y


def _score(
    Xs: np.ndarray, ys: np.ndarray, Xt: np.ndarray, yt: np.ndarray, max_iter: int = 2000
) -> float:
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(max_iter=max_iter, C=1.0).fit(Xs, ys)
    return float(clf.score(Xt, yt))


def _part2(ctx: RunContext, seeds: list[int], out: dict[str, Any]) -> list[Table]:
    from sklearn.decomposition import PCA

    ot = _import_ot()

    Xs_all, ys_all = _digits()
    Xt_all, yt_all = _mnist8()
    n = ctx.pick(smoke=50, default=150, full=1000)
    n_test = ctx.pick(smoke=200, default=1000, full=3000)
    steps = ctx.pick(smoke=3, default=40, full=200)
    fit_iter = ctx.pick(smoke=100, default=2000)  # logistic-regression iterations

    def _accuracy(xs_: np.ndarray, ys_: np.ndarray, xt_: np.ndarray, yt_: np.ndarray) -> float:
        return _score(xs_, ys_, xt_, yt_, fit_iter)

    methods = (
        "majority class (floor)",
        "source only",
        "POT EMD",
        "POT Sinkhorn",
        "POT Sinkhorn-Lpl1",
        "Adam map",
        "WNG map (ours)",
        "calibrated map (ours)",
        "Adam MLP map",
        "WNG MLP map (ours)",
        "calibrated MLP map (ours)",
    )
    # smoke: the raw regime only (the one the claim reads), to stay under 30 s of CPU
    regimes = ctx.pick(smoke=("raw",), default=("raw", "standardized"))
    acc: dict[str, dict[str, list[float]]] = {r: {m: [] for m in methods} for r in regimes}
    s_final: dict[str, dict[str, list[float]]] = {r: {} for r in regimes}
    kappa: dict[str, list[float]] = {r: [] for r in regimes}
    cpu: dict[str, dict[str, list[float]]] = {r: {} for r in regimes}
    iters: dict[str, dict[str, list[Any]]] = {r: {} for r in regimes}
    curves: dict[str, list[float]] = {}
    fam: dict[str, str] = {}

    def _sample(seed: int) -> dict[str, Any]:
        rng = np.random.default_rng(10_000 + seed)
        i_s = rng.choice(len(Xs_all), n, replace=False)
        perm = rng.permutation(len(Xt_all))
        i_t, i_test = perm[:n], perm[n : n + n_test]
        pca = PCA(16, random_state=0).fit(np.vstack([Xs_all[i_s], Xt_all[i_t]]))
        Ps, Pt, Ptest = (
            pca.transform(Xs_all[i_s]),
            pca.transform(Xt_all[i_t]),
            pca.transform(Xt_all[i_test]),
        )
        feats = {}
        for regime in regimes:
            if regime == "standardized":
                pooled = np.vstack([Ps, Pt])
                mu, sd = pooled.mean(0), pooled.std(0)
                feats[regime] = ((Ps - mu) / sd, (Pt - mu) / sd, (Ptest - mu) / sd)
            else:
                feats[regime] = (Ps, Pt, Ptest)
        return {"ys": ys_all[i_s], "yt": yt_all[i_test], "feats": feats}

    W0, b0 = torch.eye(16, dtype=torch.float64), torch.zeros(16, dtype=torch.float64)
    grid = ctx.pick(smoke=(1e-2, 3e-2), default=LR_GRID)
    # one validation sample at default (the lr grids were a third of these parts' CPU)
    val_seeds = ctx.pick(smoke=VAL_SEEDS[:1], default=VAL_SEEDS[:1], full=VAL_SEEDS)
    val_samples = [_sample(v) for v in val_seeds]
    lr_of: dict[str, dict[str, float]] = {"adam": {}, "calibrated": {}, "adam_mlp": {}}
    lr_of["calibrated_mlp"] = {}
    for regime in ctx.progress(regimes, "part 2: map lr on validation seeds, per regime"):
        val = [
            (torch.tensor(v["feats"][regime][0]), torch.tensor(v["feats"][regime][1]), W0, b0)
            for v in val_samples
        ]
        for m in ("adam", "calibrated"):
            lr_of[m][regime], _ = _tune_lr(m, val, steps, grid)
            lr_of[f"{m}_mlp"][regime], _ = _tune_lr(m, val, steps, grid, mlp=MLP_WIDTH)
    # the claim reads the raw regime: at default it gets EXTRA_SEEDS_RAW more seeds
    # (the standardized regime, which no claim reads, keeps the common seeds)
    n_extra = ctx.pick(smoke=0, default=EXTRA_SEEDS_RAW, full=0)
    extra = [max(seeds) + 1 + i for i in range(n_extra)] if seeds else []
    for seed in ctx.progress(list(seeds) + extra, "part 2: digits -> MNIST, seeds"):
        sample = _sample(seed)
        ys, yt = sample["ys"], sample["yt"]
        for regime in regimes if seed in seeds else tuple(r for r in regimes if r == "raw"):
            xs, xt, xtest = sample["feats"][regime]
            a = acc[regime]
            a["majority class (floor)"].append(float(np.mean(yt == np.bincount(ys).argmax())))
            a["source only"].append(_accuracy(xs, ys, xtest, yt))
            emd = ot.da.EMDTransport().fit(Xs=xs, Xt=xt)
            a["POT EMD"].append(_accuracy(emd.transform(Xs=xs), ys, xtest, yt))
            sk = ot.da.SinkhornTransport(reg_e=0.1, norm="max", max_iter=2000).fit(Xs=xs, Xt=xt)
            a["POT Sinkhorn"].append(_accuracy(sk.transform(Xs=xs), ys, xtest, yt))
            lp = ot.da.SinkhornLpl1Transport(reg_e=0.1, reg_cl=0.1, norm="max", max_iter=20)
            lp.fit(Xs=xs, ys=ys, Xt=xt)
            a["POT Sinkhorn-Lpl1"].append(_accuracy(lp.transform(Xs=xs), ys, xtest, yt))
            Z, Y = torch.tensor(xs), torch.tensor(xt)
            aug = torch.cat([Z, torch.ones(n, 1, dtype=Z.dtype)], 1)
            ev = torch.linalg.eigvalsh(aug.T @ aug / n)
            kappa[regime].append(float(ev.max() / ev.min()))
            for m, key, h in (
                ("adam", "Adam map", 0),
                ("wng", "WNG map (ours)", 0),
                ("calibrated", "calibrated map (ours)", 0),
                ("adam", "Adam MLP map", MLP_WIDTH),
                ("wng", "WNG MLP map (ours)", MLP_WIDTH),
                ("calibrated", "calibrated MLP map (ours)", MLP_WIDTH),
            ):
                tag = m + ("_mlp" if h else "")
                lr = lr_of[tag][regime] if tag in lr_of else ADAM_LR  # WNG: lr unused
                r = _fit_map(m, Z, Y, W0, b0, steps, adam_lr=lr, mlp=h)
                a[key].append(_accuracy(r["mapped"].numpy(), ys, xtest, yt))
                s_final[regime].setdefault(key, []).append(r["final_S"])
                cpu[regime].setdefault(key, []).append(r["cpu_s"])
                curves[key], fam[key] = r["losses"], ("MLP" if h else "affine")
            for key, it in _iters_to_gap(curves, fam).items():
                iters[regime].setdefault(key, []).append(it)
    out["part2"] = {
        "accuracy": acc,
        "final_S": s_final,
        "kappa": kappa,
        "cpu_s": cpu,
        "iters_to_gap": iters,
        "n": n,
        "seeds": list(seeds),
        "seeds_raw": list(seeds) + extra,
        "steps": steps,
        "lr": lr_of,
        "lr_grid": list(grid),
        "val_seeds": list(val_seeds),
    }
    tables = []
    for regime in regimes:
        t = Table(
            f"part 2 ({regime} PCA-16 features, n = {n} source / {n} target, {steps} map steps, "
            f"kappa(G) median {np.median(kappa[regime]):.3g}): target accuracy on {n_test} "
            f"held-out MNIST digits; tolerance: S <= S* + {GAP:g} (S0 - S*), S* the lowest S "
            "any map of the same family reached on that sample ('not reached' if no sample "
            "gets there within the steps)",
            [
                "method",
                "iterations to tolerance",
                "final S_eps",
                "target accuracy",
                "map CPU s",
                "n",
            ],
            note=(
                f"map lr chosen on validation seeds {list(val_seeds)} by final S_eps from "
                f"{list(grid)}: Adam {lr_of['adam'][regime]:g}, calibrated "
                f"{lr_of['calibrated'][regime]:g}, Adam MLP {lr_of['adam_mlp'][regime]:g}, "
                f"calibrated MLP {lr_of['calibrated_mlp'][regime]:g} (WNG: a full "
                "Gauss-Newton step, lr 1, solved exactly for the affine maps (272 entries) "
                f"and by CG for the MLP maps; MLP maps: width {MLP_WIDTH}, tanh, damping "
                f"{MLP_DAMPING:g}); POT Sinkhorn reg_e 0.1, Lpl1 reg_cl 0.1 (uses the "
                f"source labels); iterations to tolerance: first step with S <= S* + {GAP:g} "
                "(S0 - S*), S* the lowest S any map of the same family (affine or MLP) reached "
                "on that sample, median over the samples reaching it (k/n); seeds "
                f"{list(seeds) + extra if regime == 'raw' else list(seeds)}"
            ),
        )
        for m in methods:
            t.add_row(
                method=m,
                **{
                    "iterations to tolerance": _iters_cell(iters[regime][m], steps)
                    if m in iters[regime]
                    else "-"
                },
                **{"target accuracy": float(np.mean(acc[regime][m]))},
                **{
                    "final S_eps": float(np.mean(s_final[regime][m]))
                    if m in s_final[regime]
                    else None
                },
                **{"map CPU s": float(np.mean(cpu[regime][m])) if m in cpu[regime] else None},
                n=len(acc[regime][m]),
            )
        tables.append(t)
    return tables


def _r2(Xs: np.ndarray, ys: np.ndarray, Xt: np.ndarray, yt: np.ndarray) -> float:
    from sklearn.linear_model import Ridge

    return float(Ridge(alpha=1.0).fit(Xs, ys).score(Xt, yt))


def _part3(ctx: RunContext, seeds: list[int], out: dict[str, Any]) -> list[Table]:
    """The autompg task split by origin: USA (source, labelled) -> Japan and Europe (target).

    Features: the six numeric columns (origin dropped); per seed a random half of the
    147 target cars is the unlabelled target sample the maps match, the other half
    scores a ridge regression (alpha 1) trained on the mapped source (R^2 of mpg).
    """
    from icml26_core.datasets import load_tabular

    ot = _import_ot()
    X, y, _ = load_tabular("autompg")
    src, tgt = X[:, 6] == 1, X[:, 6] != 1
    Xs_all, ys_all, Xt_all, yt_all = X[src, :6], y[src], X[tgt, :6], y[tgt]
    steps = ctx.pick(smoke=3, default=40, full=200)
    regimes = ctx.pick(smoke=("standardized",), default=("raw", "standardized"))
    methods = (
        "mean predictor (floor)",
        "source only",
        "POT EMD",
        "POT Sinkhorn",
        "Adam map",
        "WNG map (ours)",
        "calibrated map (ours)",
        "Adam MLP map",
        "WNG MLP map (ours)",
        "calibrated MLP map (ours)",
    )
    r2: dict[str, dict[str, list[float]]] = {r: {m: [] for m in methods} for r in regimes}
    s_final: dict[str, dict[str, list[float]]] = {r: {} for r in regimes}
    kappa: dict[str, list[float]] = {r: [] for r in regimes}
    cpu: dict[str, dict[str, list[float]]] = {r: {} for r in regimes}
    iters: dict[str, dict[str, list[Any]]] = {r: {} for r in regimes}
    curves: dict[str, list[float]] = {}
    fam: dict[str, str] = {}
    # no claim reads part 3: 3 seeds at default (of the run's 5) to save CPU
    seeds = seeds[: ctx.pick(smoke=len(seeds), default=3, full=len(seeds))]
    d = Xs_all.shape[1]
    W0, b0 = torch.eye(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)

    def _sample(seed: int) -> dict[str, Any]:
        perm = np.random.default_rng(20_000 + seed).permutation(len(Xt_all))
        half = len(perm) // 2
        i_t, i_test = perm[:half], perm[half:]
        feats = {}
        for regime in regimes:
            xs, xt, xtest = Xs_all, Xt_all[i_t], Xt_all[i_test]
            if regime == "standardized":
                pooled = np.vstack([xs, xt])
                mu, sd = pooled.mean(0), pooled.std(0)
                xs, xt, xtest = (xs - mu) / sd, (xt - mu) / sd, (xtest - mu) / sd
            feats[regime] = (xs, xt, xtest)
        return {"yt": yt_all[i_test], "feats": feats}

    grid = ctx.pick(smoke=(1e-2, 1e-1), default=LR_GRID)
    # one validation sample at default (the lr grids were a third of these parts' CPU)
    val_seeds = ctx.pick(smoke=VAL_SEEDS[:1], default=VAL_SEEDS[:1], full=VAL_SEEDS)
    val_samples = [_sample(v) for v in val_seeds]
    lr_of: dict[str, dict[str, float]] = {
        k: {} for k in ("adam", "calibrated", "adam_mlp", "calibrated_mlp")
    }
    for regime in ctx.progress(regimes, "part 3: map lr on validation seeds, per regime"):
        val = [
            (torch.tensor(v["feats"][regime][0]), torch.tensor(v["feats"][regime][1]), W0, b0)
            for v in val_samples
        ]
        for m in ("adam", "calibrated"):
            lr_of[m][regime], _ = _tune_lr(m, val, steps, grid)
            lr_of[f"{m}_mlp"][regime], _ = _tune_lr(m, val, steps, grid, mlp=MLP_WIDTH)
    for seed in ctx.progress(seeds, "part 3: autompg USA -> Japan/Europe, seeds"):
        sample = _sample(seed)
        yt = sample["yt"]
        for regime in regimes:
            xs, xt, xtest = sample["feats"][regime]
            a = r2[regime]
            a["mean predictor (floor)"].append(
                float(1 - np.sum((yt - ys_all.mean()) ** 2) / np.sum((yt - yt.mean()) ** 2))
            )
            a["source only"].append(_r2(xs, ys_all, xtest, yt))
            emd = ot.da.EMDTransport().fit(Xs=xs, Xt=xt)
            a["POT EMD"].append(_r2(emd.transform(Xs=xs), ys_all, xtest, yt))
            sk = ot.da.SinkhornTransport(reg_e=0.1, norm="max", max_iter=2000).fit(Xs=xs, Xt=xt)
            a["POT Sinkhorn"].append(_r2(sk.transform(Xs=xs), ys_all, xtest, yt))
            Z, Y = torch.tensor(xs), torch.tensor(xt)
            aug = torch.cat([Z, torch.ones(len(Z), 1, dtype=Z.dtype)], 1)
            ev = torch.linalg.eigvalsh(aug.T @ aug / len(Z))
            kappa[regime].append(float(ev.max() / ev.min()))
            for m, key, h in (
                ("adam", "Adam map", 0),
                ("wng", "WNG map (ours)", 0),
                ("calibrated", "calibrated map (ours)", 0),
                ("adam", "Adam MLP map", MLP_WIDTH),
                ("wng", "WNG MLP map (ours)", MLP_WIDTH),
                ("calibrated", "calibrated MLP map (ours)", MLP_WIDTH),
            ):
                tag = m + ("_mlp" if h else "")
                lr = lr_of[tag][regime] if tag in lr_of else ADAM_LR  # WNG: lr unused
                r = _fit_map(m, Z, Y, W0, b0, steps, adam_lr=lr, mlp=h)
                mapped = r["mapped"].numpy()
                a[key].append(
                    _r2(mapped, ys_all, xtest, yt) if np.isfinite(mapped).all() else math.nan
                )
                s_final[regime].setdefault(key, []).append(r["final_S"])
                cpu[regime].setdefault(key, []).append(r["cpu_s"])
                curves[key], fam[key] = r["losses"], ("MLP" if h else "affine")
            for key, it in _iters_to_gap(curves, fam).items():
                iters[regime].setdefault(key, []).append(it)
    out["part3"] = {
        "r2": r2,
        "final_S": s_final,
        "kappa": kappa,
        "cpu_s": cpu,
        "iters_to_gap": iters,
        "seeds": list(seeds),
        "steps": steps,
        "lr": lr_of,
        "lr_grid": list(grid),
        "val_seeds": list(val_seeds),
    }
    tables = []
    for regime in regimes:
        t = Table(
            f"part 3 (autompg, {regime} features, {len(Xs_all)} USA cars -> "
            f"{len(Xt_all) // 2} Japan/Europe cars matched, {len(Xt_all) - len(Xt_all) // 2} "
            f"scored; {steps} map steps, kappa(G) median {np.median(kappa[regime]):.3g}): "
            f"target R^2 of mpg; tolerance: S <= S* + {GAP:g} (S0 - S*), S* the lowest S any "
            "map of the same family reached on that sample",
            ["method", "iterations to tolerance", "final S_eps", "target R^2", "map CPU s", "n"],
            note=(
                f"map lr chosen on validation seeds {list(val_seeds)} by final S_eps from "
                f"{list(grid)}: Adam {lr_of['adam'][regime]:g}, calibrated "
                f"{lr_of['calibrated'][regime]:g}, Adam MLP {lr_of['adam_mlp'][regime]:g}, "
                f"calibrated MLP {lr_of['calibrated_mlp'][regime]:g}; ridge alpha 1; the "
                "mean predictor predicts the source mean; Lpl1 (a class-label regularizer) "
                f"does not apply to regression; iterations to tolerance as in part 2 (S <= S* "
                f"+ {GAP:g} (S0 - S*)); seeds {list(seeds)}"
            ),
        )
        for m in methods:
            vals = [v for v in r2[regime][m] if math.isfinite(v)]
            t.add_row(
                method=m,
                **{
                    "iterations to tolerance": _iters_cell(iters[regime][m], steps)
                    if m in iters[regime]
                    else "-"
                },
                **{"target R^2": float(np.mean(vals)) if vals else None},
                **{
                    "final S_eps": float(np.mean(s_final[regime][m]))
                    if m in s_final[regime]
                    else None
                },
                **{"map CPU s": float(np.mean(cpu[regime][m])) if m in cpu[regime] else None},
                n=len(vals),
            )
        tables.append(t)
    return tables


def _overhead(ctx: RunContext) -> tuple[dict[str, list[float]], int]:
    """Adam, calibrated and the no-update floor: wall time of one run at kappa = 1 (wine).

    The three run interleaved in one process after a warm-up of each, the order rotating
    every round (as :func:`icml26_core.timing.compare_times` does for two), so all three
    share each round's machine load; the rounds pair the times. Returns the seconds per
    run of each (one per round) and the steps per run.
    """
    from icml26_core.timing import Timer

    X = _wine_whitened()
    Z, Y, W0 = misaligned_problem(X, 1.0, 0)
    steps = ctx.pick(smoke=3, default=10)

    def runner(method: str) -> Any:
        def fn() -> None:
            _fit_map(method, Z, Y, W0, None, steps, adam_lr=ADAM_LR, tol=0.0)

        return fn

    def floor() -> None:
        """The trivial floor: the same loss and gradient evaluations, no update at all."""
        W = W0.clone().requires_grad_(True)
        for i in range(steps + 1):
            loss = sinkhorn_divergence(Z @ W, Y, BLUR)
            if i < steps:
                W.grad = None
                loss.backward()

    fns = {"calibrated": runner("calibrated"), "adam": runner("adam"), "floor": floor}
    names = list(fns)
    for name in names:  # warm-up, untimed
        fns[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(ctx.pick(smoke=2, default=OVERHEAD_ROUNDS)):
        for name in names[i % 3 :] + names[: i % 3]:
            with Timer(ctx.device) as t:
                fns[name]()
            times[name].append(t.elapsed)
    return times, steps


WORKERS = 2  # processes for the four independent parts: one per CPU core (each pays the imports)


def _part(job: str, ctx: RunContext, seeds: list[int]) -> tuple[list[Table], dict[str, Any]]:
    """One independent part of the experiment: its tables and its data."""
    torch.set_num_threads(1)
    _DEVICE["device"] = str(ctx.device)
    data: dict[str, Any] = {}
    if job in ("wine", "digits"):
        tables = _part1(ctx, seeds, data, job)
    elif job == "mnist":
        tables = _part2(ctx, seeds, data)
    else:
        tables = _part3(ctx, seeds, data)
    return tables, data


def _part_worker(
    job: str, spec: tuple[str, str, int], seeds: list[int]
) -> tuple[list[Table], dict[str, Any]]:
    """:func:`_part` in a worker process (a fresh, quiet run context)."""
    scale, device, seed = spec
    return _part(job, RunContext(scale=scale, device=device, seed=seed), seeds)


def run(ctx: RunContext) -> Result:
    """Measure the claims at ``ctx.scale`` and decide them with the core's builders."""
    torch.set_num_threads(1)
    _DEVICE["device"] = str(ctx.device)
    seeds = list(range(ctx.pick(smoke=2, default=5, full=10)))
    data: dict[str, Any] = {"seeds": seeds, "device": str(ctx.device)}
    tables: list[Table] = []
    # smoke leaves out the digits grid (same code as wine's; a slow test runs it)
    jobs = ctx.pick(
        smoke=("wine", "mnist", "autompg"), default=("wine", "digits", "mnist", "autompg")
    )
    if ctx.scale == "smoke":  # one process: a pool's start-up would cost more than it saves
        parts = [_part(job, ctx, seeds) for job in jobs]
    else:  # the four parts are independent: worker processes use both cores
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        spec = (ctx.scale, str(ctx.device), ctx.seed)
        with ProcessPoolExecutor(max_workers=WORKERS, mp_context=mp.get_context("spawn")) as ex:
            futures = [ex.submit(_part_worker, job, spec, seeds) for job in jobs]
            parts = [f.result() for f in ctx.progress(futures, "parts 1-3 (worker processes)")]
    for part_tables, part_data in parts:
        tables += part_tables
        data.update(part_data)
    timing, overhead_steps = _overhead(ctx)
    p1 = data["part1_wine"]
    gd_iters = p1["iters"]["gd"]
    # the slope is fitted where every seed reached the tolerance within the cap; the kappas
    # where none did give a lower bound (counted at the cap), reported in the rule line
    kappas_gd = [k for k in sorted(gd_iters) if gd_iters[k] and None not in gd_iters[k]]
    censored = [k for k in sorted(gd_iters) if gd_iters[k] and None in gd_iters[k]]

    def pairs(method: str, ks: list[float]) -> tuple[list[float], list[float]]:
        xs, ys = [], []
        for k in ks:
            for v in p1["iters"][method][k]:
                xs.append(k)
                ys.append(math.nan if v is None else max(v, 1))
        return xs, ys

    x_gd, y_gd = pairs("gd", kappas_gd)
    x_w, y_w = pairs("wng", sorted(p1["iters"]["wng"]))
    bound_txt = ""
    if censored:
        from icml26_core.stats import loglog_slope

        x_all = x_gd + [k for k in censored for _ in gd_iters[k]]
        y_all = y_gd + [
            float(p1["budget_gd"] if v is None else max(v, 1))
            for k in censored
            for v in gd_iters[k]
        ]
        lb = loglog_slope(x_all, y_all, expected=1.0, tol=0.3, alternative="greater")
        bound_txt = (
            f" (fitted on kappa {', '.join(f'{k:g}' for k in kappas_gd)}, where every seed "
            f"reaches it within {p1['budget_gd']} steps; at kappa "
            f"{', '.join(f'{k:g}' for k in censored)} GD does not reach it within "
            f"{p1['budget_gd']} (reached by "
            f"{sum(v is not None for k in censored for v in gd_iters[k])}/"
            f"{sum(len(gd_iters[k]) for k in censored)} runs); counted at the cap, a lower "
            f"bound on the slope over all {len(kappas_gd) + len(censored)} kappas is "
            f"{lb.effect:.3g} [{lb.ci_low:.3g}, {lb.ci_high:.3g}], n = {len(x_all)}, not a "
            "verdict)"
        )
    c_gd = Claim.slope(
        "Euclidean first-order methods slow down in proportion to misalignment.",
        x_gd,
        y_gd,
        expected=1.0,
        tol=0.3,
        alternative="greater",
        metric=f"GD (1/L step) iterations to S <= {TOL:g} S0 vs kappa (wine){bound_txt}",
    )
    c_w = Claim.slope(
        "Geometry-aware preconditioned steps converge independently of misalignment.",
        x_w,
        y_w,
        expected=0.0,
        tol=0.2,
        alternative="less",
        metric=f"WNG iterations to S <= {TOL:g} S0 vs kappa in 1..1e6 (wine)",
    )
    fin = p1["final_rel"]
    high = tuple(k for k in p1["kappas"] if k >= 1e4)
    low = tuple(k for k in p1["kappas"] if k <= 1e2)

    def gain(ks: tuple[float, ...]) -> list[float]:
        return [
            float(np.mean([math.log10(fin["adam"][k][i] / fin["calibrated"][k][i]) for k in ks]))
            for i in range(len(seeds))
        ]

    def log_s(m: str, ks: tuple[float, ...]) -> list[float]:
        return [float(np.mean([math.log10(fin[m][k][i]) for k in ks])) for i in range(len(seeds))]

    low_metric = (
        f"log10(S / S(W0)) after {p1['budget']} steps at kappa "
        + ", ".join(f"{k:g}" for k in low)
        + " (mean over the kappas, per seed; 1 point = 1 decade)"
    )
    c_gain = Claim.all_of(
        "Improvements of the calibrated optimizer over Adam concentrate in "
        "high-misalignment regimes; at low misalignment it is within 1 point of Adam.",
        [
            Claim.superior(
                "The calibrated optimizer's gain over Adam at an equal budget is larger at "
                "high misalignment than at low.",
                gain(high),
                gain(low),
                names=(
                    "gain at kappa " + ", ".join(f"{k:g}" for k in high),
                    "gain at kappa " + ", ".join(f"{k:g}" for k in low),
                ),
                metric=(
                    f"log10(S_Adam / S_calibrated) after {p1['budget']} steps, "
                    "mean over the kappas, per seed"
                ),
            ),
            # "Within 1 point" both ways (the issue: the gain is concentrated at high
            # misalignment, so at low kappa it is small): calibrated is neither worse nor
            # better than Adam by more than one decade of S.
            Claim.non_inferior(
                "At low misalignment the calibrated optimizer is not worse than Adam by "
                "more than 1 point (one decade of S).",
                log_s("calibrated", low),
                log_s("adam", low),
                margin=1.0,
                higher_is_better=False,
                names=("calibrated", "Adam"),
                metric=low_metric,
            ),
            Claim.non_inferior(
                "At low misalignment the calibrated optimizer's gain over Adam is at most "
                "1 point (one decade of S): Adam is not worse by more than 1 point.",
                log_s("adam", low),
                log_s("calibrated", low),
                margin=1.0,
                higher_is_better=False,
                names=("Adam", "calibrated"),
                metric=low_metric,
            ),
        ],
    )
    exc = p1["excess_rel"]

    def log_excess(m: str, ks: tuple[float, ...]) -> list[float]:
        return [float(np.mean([math.log10(exc[m][k][i]) for k in ks])) for i in range(len(seeds))]

    hi_txt = ", ".join(f"{k:g}" for k in high)
    lo_txt = ", ".join(f"{k:g}" for k in low)
    c_risk = Claim.all_of(
        "Under a finite budget, misalignment induces an excess risk for Euclidean methods "
        "that geometry-aware steps avoid.",
        [
            Claim.superior(
                "GD's held-out excess risk after the budget is higher at high misalignment.",
                log_excess("gd", high),
                log_excess("gd", low),
                names=(f"GD at kappa {hi_txt}", f"GD at kappa {lo_txt}"),
                metric=(
                    f"log10 held-out excess risk S_test / S_test(W0) after {p1['budget']} GD "
                    "steps, mean over the kappas, per seed"
                ),
            ),
            Claim.superior(
                "At high misalignment the preconditioned map's held-out excess risk is lower "
                "than GD's at the same budget.",
                log_excess("wng", high),
                log_excess("gd", high),
                higher_is_better=False,
                names=(f"WNG at kappa {hi_txt}", f"GD at kappa {hi_txt}"),
                metric=(
                    f"log10 held-out excess risk after {p1['budget']} steps (WNG: at most 50), "
                    "mean over the kappas, per seed"
                ),
            ),
        ],
    )
    c_time = Claim.faster(
        "The calibration has negligible overhead when misalignment is low.",
        timing["calibrated"],
        timing["adam"],
        at_least=1 / 1.2,
        names=("calibrated", "Adam"),
        paired=True,
    )
    acc = data["part2"]["accuracy"]["raw"]
    c_da = Claim.non_inferior(
        "Distribution matching with the calibrated optimizer adapts digits -> MNIST "
        "at least as well as POT's EMD transport.",
        acc["calibrated map (ours)"],
        acc["POT EMD"],
        margin=0.02,
        names=("calibrated map", "POT EMD"),
        metric="target accuracy (raw features)",
    )
    t_time = Table(
        f"overhead at kappa = 1 (wine, {overhead_steps} steps, interleaved rounds): wall "
        "seconds of one run",
        ["method", "median s", "x Adam", "n"],
        note=(
            "the three run interleaved, the order rotating every round; x Adam = the "
            "method's median / Adam's median; the floor evaluates the same losses and "
            "gradients and updates nothing"
        ),
    )
    adam_med = float(np.median(timing["adam"]))
    for key, label in (
        ("floor", "no update (floor)"),
        ("adam", "Adam"),
        ("calibrated", "calibrated"),
    ):
        med = float(np.median(timing[key]))
        t_time.add_row(
            method=label, **{"median s": med, "x Adam": med / adam_med}, n=len(timing[key])
        )
    tables.append(t_time)
    data["timing"] = {k: list(v) for k, v in timing.items()}
    return Result(tables=tables, claims=[c_gd, c_w, c_gain, c_risk, c_time, c_da], data=data)


EXPERIMENT = Experiment(
    name="geometry-misalignment",
    title=(
        "geometry-misalignment: Euclidean vs geometry-aware optimization of Sinkhorn "
        "distribution matching"
    ),
    claim=(
        "Euclidean first-order methods slow down in proportion to misalignment; "
        "preconditioned ones do not, and calibrated preconditioning helps where "
        "misalignment is high at negligible cost."
    ),
    run=run,
)
