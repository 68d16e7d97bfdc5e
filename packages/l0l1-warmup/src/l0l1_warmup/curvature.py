"""Sharpness at checkpoints and the fitted (L0, L1) envelope ``K0 + K1 (f - f*)``.

- :func:`top_eigenvalue`: the top (algebraic) eigenvalue of the loss Hessian, or of the
  Adam-preconditioned Hessian ``D^-1/2 H D^-1/2`` (``D = sqrt(v_hat) + eps``), by power
  iteration on Hessian-vector products (double backward; the Hessian is never formed).
- :func:`snapshot`: what a checkpoint needs (parameters, and Adam's ``v_hat`` by name).
- :func:`fit_envelope`: least-squares line and the tight linear upper envelope of
  sharpness against loss gap.
- :func:`estimate_constants`: both at a list of checkpoints, and the suggested
  ``alpha = K1 / K0``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_float, check_int

__all__ = [
    "CurvatureFit",
    "EnvelopeFit",
    "Snapshot",
    "estimate_constants",
    "fit_envelope",
    "snapshot",
    "top_eigenvalue",
]


@dataclass(frozen=True)
class Snapshot:
    """A training checkpoint for :func:`estimate_constants`.

    Attributes:
        state: ``model.state_dict()`` copied (tensors detached and cloned).
        v_hat: Adam's bias-corrected second moment ``exp_avg_sq / (1 - beta2^t)`` by
            parameter name, or None (then only the plain sharpness is measured).
        eps: Adam's ``eps`` (the ``D = sqrt(v_hat) + eps`` of the preconditioner).
        step: Optimizer steps taken when the snapshot was made (for plots), or None.
    """

    state: dict[str, torch.Tensor]
    v_hat: dict[str, torch.Tensor] | None = None
    eps: float = 1e-8
    step: int | None = None


def snapshot(model: torch.nn.Module, optimizer: Any = None, *, step: int | None = None) -> Snapshot:
    """Copy ``model``'s parameters and, for Adam/AdamW, its bias-corrected ``v_hat``.

    Args:
        model: The model being trained.
        optimizer: Its ``torch.optim.Adam``/``AdamW`` (any optimizer whose state has
            ``exp_avg_sq`` and ``step`` and whose groups have ``betas``), or None.
            Parameters without state yet (before the first step) get no ``v_hat``: then
            the snapshot has none.
        step: Optional step count to keep with it.

    Returns:
        The :class:`Snapshot` (copies; training can go on).
    """
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    v_hat: dict[str, torch.Tensor] | None = None
    eps = 1e-8
    if optimizer is not None:
        names = {id(p): n for n, p in model.named_parameters()}
        v_hat = {}
        for group in optimizer.param_groups:
            beta2 = group.get("betas", (0.9, 0.999))[1]
            eps = float(group.get("eps", eps))
            for p in group["params"]:
                st = optimizer.state.get(p, {})
                if "exp_avg_sq" not in st or id(p) not in names:
                    continue
                t = float(st["step"])
                v_hat[names[id(p)]] = (st["exp_avg_sq"] / (1.0 - beta2**t)).detach().clone()
        trainable = {n for n, p in model.named_parameters() if p.requires_grad}
        if set(v_hat) != trainable:
            v_hat = None
    return Snapshot(state=state, v_hat=v_hat, eps=eps, step=step)


def _dot(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> torch.Tensor:
    return sum((x * y).sum() for x, y in zip(a, b, strict=True))  # type: ignore[return-value]


def top_eigenvalue(
    model: torch.nn.Module,
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
    batches: Iterable[Any],
    *,
    v_hat: Mapping[str, torch.Tensor] | None = None,
    eps: float = 1e-8,
    iters: int = 20,
    tol: float = 1e-3,
    seed: int = 0,
) -> tuple[float, int]:
    """Top eigenvalue of the Hessian of the mean loss over ``batches``, by power iteration.

    The operator is ``H`` (``v_hat=None``) or ``P H P`` with ``P = diag(1 / sqrt(sqrt(v_hat)
    + eps))`` (Adam's preconditioner ``D^-1/2 H D^-1/2``, whose top eigenvalue bounds the
    stable Adam step: ``lr < 2 / lambda``). Power iteration converges to the eigenvalue of
    largest magnitude; when that one is negative, a second run on ``A - lambda I`` finds
    the top algebraic one. Each iteration is one Hessian-vector product per batch.

    Args:
        model: The model at the point to measure (its parameters are used as they are;
            parameters with ``requires_grad=False`` are held fixed).
        loss_fn: ``loss_fn(model, batch) -> scalar tensor``, differentiable twice.
        batches: The batches whose mean loss defines ``f`` (the same ones at every
            checkpoint, so sharpness is comparable).
        v_hat: Adam's bias-corrected second moment by parameter name, or None.
        eps: Adam's ``eps``.
        iters: Most power iterations per run, >= 1.
        tol: Stop when the Rayleigh quotient changes by less than ``tol`` (relative).
        seed: Seed of the random start vector.

    Returns:
        ``(eigenvalue, hvps)``: the top eigenvalue (float, in loss units per unit
        parameter squared, or per preconditioned unit) and the number of
        Hessian-vector products spent (iterations x batches).

    Raises:
        ValueError: If ``batches`` is empty, ``v_hat`` misses a parameter, or a count is
            out of range.
    """
    iters = check_int("iters", iters, low=1)
    tol = check_float("tol", tol, low=0.0)
    eps = check_float("eps", eps, low=0.0)
    batches = list(batches)
    if not batches:
        raise ValueError("batches must hold at least one batch")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    params = [p for _, p in named]
    scale: list[torch.Tensor] | None = None
    if v_hat is not None:
        missing = [n for n, _ in named if n not in v_hat]
        if missing:
            raise ValueError(f"v_hat has no entry for parameter(s) {missing[:3]}")
        scale = [(v_hat[n].to(p.device, p.dtype).sqrt() + eps).rsqrt() for n, p in named]
    was_training = model.training
    model.eval()
    hvps = 0

    def apply(vec: list[torch.Tensor]) -> list[torch.Tensor]:
        nonlocal hvps
        u = vec if scale is None else [v * s for v, s in zip(vec, scale, strict=True)]
        out = [torch.zeros_like(p) for p in params]
        for batch in batches:
            loss = loss_fn(model, batch) / len(batches)
            grads = torch.autograd.grad(loss, params, create_graph=True)
            hv = torch.autograd.grad(_dot(grads, u), params)
            out = [o + h.detach() for o, h in zip(out, hv, strict=True)]
            hvps += 1
        return out if scale is None else [o * s for o, s in zip(out, scale, strict=True)]

    gen = torch.Generator().manual_seed(seed)

    def power(shift: float) -> float:
        vec = [torch.randn(p.shape, generator=gen).to(p.device, p.dtype) for p in params]
        norm = torch.sqrt(_dot(vec, vec))
        vec = [v / norm for v in vec]
        lam = math.nan
        for _ in range(iters):
            av = apply(vec)
            if shift:
                av = [a - shift * v for a, v in zip(av, vec, strict=True)]
            new = float(_dot(vec, av))
            norm = torch.sqrt(_dot(av, av))
            if float(norm) == 0.0:
                return new
            vec = [a / norm for a in av]
            if math.isfinite(lam) and abs(new - lam) <= tol * max(abs(new), 1e-12):
                lam = new
                break
            lam = new
        return lam

    try:
        lam = power(0.0)
        if lam < 0:
            lam = power(lam) + lam
    finally:
        model.train(was_training)
    return lam, hvps


@dataclass(frozen=True)
class EnvelopeFit:
    """A line ``sharpness ~ K0 + K1 * gap`` fitted two ways.

    Attributes:
        k0, k1: Least-squares intercept and slope.
        r2: Coefficient of determination of the least-squares line.
        env_k0, env_k1: The tight linear upper envelope: the line above every point
            with the least mean height above them (a supporting line of the upper convex
            hull at the mean gap).
        n: Number of points.
    """

    k0: float
    k1: float
    r2: float
    env_k0: float
    env_k1: float
    n: int

    @property
    def alpha(self) -> float:
        """Suggested ``alpha = env_k1 / env_k0`` of the tight envelope.

        0 (no warm-up) when ``env_k1 <= 0``: the curvature does not grow with the gap.
        NaN when ``env_k1 > 0`` but ``env_k0 <= 0``: the points do not identify a
        positive ``K0`` (e.g. they span too narrow a range of gaps), so no ``alpha``
        is suggested.
        """
        if self.env_k1 <= 0:
            return 0.0
        if self.env_k0 <= 0:
            return math.nan
        return self.env_k1 / self.env_k0


def fit_envelope(gap: Any, sharpness: Any) -> EnvelopeFit:
    """Least-squares line and tight linear upper envelope of ``sharpness`` on ``gap``.

    Args:
        gap: Loss gaps ``f - f*`` at the checkpoints, shape (n,), n >= 2, finite.
        sharpness: Top eigenvalues there, shape (n,), finite.

    Returns:
        The :class:`EnvelopeFit`.

    Raises:
        ValueError: On mismatched shapes, fewer than 2 points, non-finite values, or
            all gaps equal.
    """
    x = np.asarray(gap, dtype=float).ravel()
    y = np.asarray(sharpness, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"gap and sharpness must have the same length, got {x.size} and {y.size}")
    if x.size < 2:
        raise ValueError(f"need at least 2 points, got {x.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("gap and sharpness must be finite")
    if np.ptp(x) == 0:
        raise ValueError("gap must take at least two distinct values")
    k1, k0 = np.polyfit(x, y, 1)
    resid = y - (k0 + k1 * x)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / ss_tot if ss_tot > 0 else 1.0
    # Upper convex hull (monotone chain over points sorted by x, keeping the max y per x).
    order = np.lexsort((-y, x))
    hull: list[tuple[float, float]] = []
    for i in order:
        p = (float(x[i]), float(y[i]))
        if hull and p[0] == hull[-1][0]:
            continue  # same x, lower y (sorted by -y within x)
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) >= 0:
                hull.pop()  # hull[-1] lies on or below the chord: not on the upper hull
            else:
                break
        hull.append(p)
    xm = float(x.mean())
    env_k0, env_k1 = hull[0][1], 0.0
    for (x1, y1), (x2, y2) in pairwise(hull):
        if x1 <= xm <= x2:
            env_k1 = (y2 - y1) / (x2 - x1)
            env_k0 = y1 - env_k1 * x1
            break
    return EnvelopeFit(float(k0), float(k1), r2, float(env_k0), float(env_k1), int(x.size))


@dataclass(frozen=True)
class CurvatureFit:
    """What :func:`estimate_constants` measured at each checkpoint, and the fits.

    Attributes:
        loss: Mean loss over the batches at each checkpoint, shape (n,).
        gap: ``loss - f_star``, shape (n,).
        sharpness: Top Hessian eigenvalue at each checkpoint, shape (n,).
        precond_sharpness: Top eigenvalue of ``D^-1/2 H D^-1/2``, shape (n,), or None
            when the checkpoints carry no ``v_hat``.
        fit: :class:`EnvelopeFit` of ``sharpness`` on ``gap``.
        precond_fit: The same for ``precond_sharpness``, or None.
        hvps: Hessian-vector products spent in all.
        steps: Each checkpoint's step (None where unknown).
    """

    loss: np.ndarray
    gap: np.ndarray
    sharpness: np.ndarray
    precond_sharpness: np.ndarray | None
    fit: EnvelopeFit
    precond_fit: EnvelopeFit | None
    hvps: int
    steps: list[int | None] = field(default_factory=list)

    @property
    def alpha(self) -> float:
        """Suggested ``alpha`` (0: no warm-up; NaN: not identified, see ``EnvelopeFit``).

        From the preconditioned envelope when measured (Adam's step is bounded by that
        sharpness), else from the plain one.
        """
        return (self.precond_fit or self.fit).alpha


def estimate_constants(
    model: torch.nn.Module,
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
    batches: Iterable[Any],
    checkpoints: Iterable[Snapshot | Mapping[str, torch.Tensor]],
    *,
    f_star: float = 0.0,
    iters: int = 20,
    tol: float = 1e-3,
    seed: int = 0,
) -> CurvatureFit:
    """Sharpness against loss gap at ``checkpoints``, and the fitted ``K0 + K1 gap``.

    At each checkpoint the model is loaded, its mean loss over ``batches`` computed, and
    the top eigenvalue of the Hessian (and of the Adam-preconditioned Hessian, when the
    checkpoint is a :class:`Snapshot` with ``v_hat``) found by :func:`top_eigenvalue`.
    The model's own parameters are restored at the end.

    Args:
        model: The model whose checkpoints these are.
        loss_fn: ``loss_fn(model, batch) -> scalar tensor``.
        batches: Fixed batches defining ``f`` (keep them small: each power iteration
            costs one Hessian-vector product, about 2-3 training steps, per batch).
        checkpoints: Snapshots (from :func:`snapshot`) or plain ``state_dict`` s,
            at least 2.
        f_star: Loss floor.
        iters: Most power iterations per eigenvalue (see :func:`top_eigenvalue`).
        tol: Relative tolerance of the power iteration.
        seed: Seed of the start vectors (checkpoint ``i`` uses ``seed + i``).

    Returns:
        The :class:`CurvatureFit`; ``.alpha`` is the suggested ``alpha``.

    Raises:
        ValueError: If fewer than 2 checkpoints are given, or the losses are all equal.
    """
    f_star = check_float("f_star", f_star)
    batches = list(batches)
    snaps = [c if isinstance(c, Snapshot) else Snapshot(state=dict(c)) for c in checkpoints]
    if len(snaps) < 2:
        raise ValueError(f"checkpoints must hold at least 2 checkpoints, got {len(snaps)}")
    own = {k: v.detach().clone() for k, v in model.state_dict().items()}
    with_pre = all(s.v_hat is not None for s in snaps)
    losses, sharp, pre = [], [], []
    hvps = 0
    try:
        for i, snap in enumerate(snaps):
            model.load_state_dict(snap.state)
            with torch.no_grad():
                was = model.training
                model.eval()
                loss = sum(float(loss_fn(model, b)) for b in batches) / max(len(batches), 1)
                model.train(was)
            losses.append(loss)
            lam, k = top_eigenvalue(model, loss_fn, batches, iters=iters, tol=tol, seed=seed + i)
            sharp.append(lam)
            hvps += k
            if with_pre:
                lam, k = top_eigenvalue(
                    model,
                    loss_fn,
                    batches,
                    v_hat=snap.v_hat,
                    eps=snap.eps,
                    iters=iters,
                    tol=tol,
                    seed=seed + i,
                )
                pre.append(lam)
                hvps += k
    finally:
        model.load_state_dict(own)
    loss_a = np.asarray(losses)
    gap = loss_a - f_star
    sharp_a = np.asarray(sharp)
    pre_a = np.asarray(pre) if with_pre else None
    return CurvatureFit(
        loss=loss_a,
        gap=gap,
        sharpness=sharp_a,
        precond_sharpness=pre_a,
        fit=fit_envelope(gap, sharp_a),
        precond_fit=None if pre_a is None else fit_envelope(gap, pre_a),
        hvps=hvps,
        steps=[s.step for s in snaps],
    )
