"""Batched orthogonal Procrustes: time per iteration at scale, and quality (experiment part 2).

``B`` independent problems ``min ||X_i A_i - B_i||_F^2`` over square orthogonal
``X_i`` (synthetic, as in the paper's scale benchmark), with ``B_i = Q_i A_i + noise``.
A square orthogonal matrix cannot change the sign of its determinant along a
continuous path, so every method (POGO, Landing, the retractions of geoopt, torch's
parametrization) stays in the component of ``O(k)`` it starts in; the optimum is
taken in that component (Kabsch: ``U diag(1, ..., 1, s) V^T`` from the SVD of
``B A^T``, ``s`` fixing the determinant's sign), not over all of ``O(k)``.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
from icml26_core.device import synchronize, torch_device

from pogo_optim.stiefel import orthogonality_error, random_stiefel


def problem(batch: int, k: int, seed: int, device: str = "cpu"):
    """``(a, b, x0, x_star)``: data ``(B, k, 2k)``, start and optimum ``(B, k, k)``."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(batch, k, 2 * k, generator=g) / math.sqrt(2 * k)
    q = random_stiefel(batch, k, k, generator=g)
    b = q @ a + 0.1 * torch.randn(batch, k, 2 * k, generator=g) / math.sqrt(2 * k)
    x0 = random_stiefel(batch, k, k, generator=g)
    u, _, vh = np.linalg.svd((b @ a.mT).double().numpy())
    sign = np.sign(np.linalg.det(x0.double().numpy())) * np.sign(
        np.linalg.det(u) * np.linalg.det(vh)
    )
    u[..., :, -1] *= sign[:, None]  # the optimum in the start's component of O(k)
    x_star = torch.from_numpy(u @ vh).float()
    dev = torch_device(device)
    return a.to(dev), b.to(dev), x0.to(dev), x_star.to(dev)


def loss_of(a: torch.Tensor, b: torch.Tensor):
    """The summed Procrustes loss ``0.5 sum_i ||X_i A_i - B_i||^2`` of a ``(B, k, k)`` X."""

    def loss_fn(w: torch.Tensor) -> torch.Tensor:
        return 0.5 * (w @ a - b).square().sum()

    return loss_fn


def per_problem_loss(w, a, b):
    return 0.5 * (w @ a - b).square().sum(dim=(-2, -1))


def time_per_iteration(specs, batches, k, reps, device, seed, progress=None):
    """Median seconds of one iteration (forward, backward, step) per method and batch size.

    Rounds are interleaved (every method once per round, the order alternating), so
    machine load hits them alike; the first round is a warm-up.
    """
    table = {}
    items = batches if progress is None else progress(batches)
    for batch in items:
        a, b, x0, _ = problem(batch, k, seed + batch, device)
        loss_fn = loss_of(a, b)
        runners = {s.name: s.build(x0, s.lrs[len(s.lrs) // 2]) for s in specs}
        samples = {name: [] for name in runners}
        names = list(runners)
        for r in range(reps + 1):
            for name in names if r % 2 else names[::-1]:
                synchronize(device)
                t0 = time.perf_counter()
                runners[name].step(loss_fn)
                synchronize(device)
                if r > 0:
                    samples[name].append(time.perf_counter() - t0)
        for name, s in samples.items():
            table[(name, batch)] = float(np.median(s))
    return table


def _relative_gap(w, a, b, f_star, f0):
    u, _, vh = torch.linalg.svd(w.double())  # nearest orthogonal point (Landing)
    q = (u @ vh).to(a.dtype)
    return (per_problem_loss(q, a, b) - f_star) / (f0 - f_star)


def _train(spec, lr, a, b, x0, steps, device):
    runner = spec.build(x0, lr)
    loss_fn = loss_of(a, b)
    worst, elapsed = 0.0, 0.0
    for _ in range(steps):
        synchronize(device)
        t0 = time.perf_counter()
        runner.step(loss_fn)
        synchronize(device)
        elapsed += time.perf_counter() - t0
        worst = max(worst, float(orthogonality_error(runner.weight()).max()))
    return runner.weight(), worst, elapsed


def quality(specs, batch, k, steps, *, val_seed, test_seed, device, progress=None):
    """Each method's learning rate chosen on validation problems, then its test gap.

    Returns:
        ``{name: {"lr", "gap", "gap_sem", "max_orth", "max_orth_all_runs", "ms_per_step",
        "val_gaps"}}``,
        with ``gap`` the mean relative gap ``(f(X) - f*) / (f(X0) - f*)`` over the
        test problems and ``gap_sem`` its standard error.
    """
    val = problem(batch, k, val_seed, device)
    test = problem(batch, k, test_seed, device)
    out = {}
    items = specs if progress is None else progress(specs)
    for spec in items:
        a, b, x0, x_star = val
        f_star, f0 = per_problem_loss(x_star, a, b), per_problem_loss(x0, a, b)
        val_gaps, val_orth = {}, 0.0
        for lr in spec.lrs:
            w, worst, _ = _train(spec, lr, a, b, x0, steps, device)
            val_orth = max(val_orth, worst)
            g = float(_relative_gap(w, a, b, f_star, f0).mean())
            val_gaps[lr] = g if math.isfinite(g) else math.inf
        lr = min(val_gaps, key=val_gaps.get)
        a, b, x0, x_star = test
        f_star, f0 = per_problem_loss(x_star, a, b), per_problem_loss(x0, a, b)
        w, worst, elapsed = _train(spec, lr, a, b, x0, steps, device)
        rel = _relative_gap(w, a, b, f_star, f0)
        out[spec.name] = {
            "lr": lr,
            "lr_at_grid_edge": lr in (spec.lrs[0], spec.lrs[-1]) and len(spec.lrs) > 2,
            "gap": float(rel.mean()),
            "gap_sem": float(rel.std() / math.sqrt(len(rel))),
            "max_orth": worst,
            "max_orth_all_runs": max(worst, val_orth),
            "ms_per_step": 1e3 * elapsed / steps,
            "val_gaps": {f"{k_:g}": v for k_, v in val_gaps.items()},
        }
    return out
