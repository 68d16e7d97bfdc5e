"""Rollouts, POMO-REINFORCE training and preference-sweep solving."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_choice, check_float, check_int

from pmsa_moco.model import PMSAModel
from pmsa_moco.problem import (
    SCALARIZATIONS,
    MOTSPEnv,
    check_coords,
    check_prefs,
    scalarize,
    tour_costs,
)


def _check_model(model: Any) -> PMSAModel:
    if not isinstance(model, PMSAModel):
        raise TypeError(f"model must be a PMSAModel or NodeOnlyModel, got {type(model).__name__}")
    return model


def _as_device(device: Any) -> torch.device:
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"device must name a torch device ('cpu', 'cuda'), got {device!r}"
        ) from exc


def rollout(
    model: PMSAModel,
    coords: torch.Tensor,
    prefs: torch.Tensor,
    *,
    greedy: bool = True,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Build ``n`` tours per instance (POMO: rollout ``p`` starts at node ``p``).

    Args:
        model: The network.
        coords: ``(B, n, 2M)`` (array or tensor; moved to the model's dtype and device).
        prefs: ``(B, M)``, one preference per instance, on the simplex (``(M,)`` or
            ``(1, M)``: the same preference for every instance).
        greedy: Take the most likely node (else sample).
        generator: Random generator for sampling.

    Returns:
        ``tours`` ``(B, n, n)`` long (every row a permutation) and the summed
        log-probability of each tour ``(B, n)`` (the forced start excluded), on the
        model's device.

    Raises:
        TypeError: If ``model`` is not a :class:`PMSAModel` (or :class:`NodeOnlyModel`).
        ValueError: On bad ``coords`` or ``prefs`` (naming the argument), an M that is
            not the model's, or ``prefs`` without one row per instance.
    """
    param = next(_check_model(model).parameters())
    coords = check_coords(coords, n_obj=model.n_obj).to(dtype=param.dtype, device=param.device)
    prefs = check_prefs(prefs, model.n_obj).to(dtype=param.dtype, device=param.device)
    if prefs.shape[0] == 1:
        prefs = prefs.expand(coords.shape[0], -1)
    if prefs.shape[0] != coords.shape[0]:
        raise ValueError(
            f"prefs must have one row per instance, shape ({coords.shape[0]}, {model.n_obj}), "
            f"got {tuple(prefs.shape)}"
        )
    enc = model.encode(coords, prefs)
    env = MOTSPEnv(coords)
    logp = torch.zeros(env.batch, env.n_rollouts, dtype=coords.dtype, device=coords.device)
    while not env.done:
        lg = model.logits(enc, env.first, env.current, env.mask)
        lsm = torch.log_softmax(lg, dim=-1)
        if greedy:
            a = lsm.argmax(-1)
        else:
            probs = lsm.exp().view(-1, env.n_nodes)
            a = torch.multinomial(probs, 1, generator=generator).view(env.batch, env.n_rollouts)
        logp = logp + lsm.gather(-1, a.unsqueeze(-1)).squeeze(-1)
        env.step(a)
    return env.tours, logp


def pomo_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """POMO's shared baseline: ``A_p = R_p - mean_q R_q`` per instance (rows sum to 0).

    Args:
        rewards: ``(B, P)``.

    Returns:
        ``(B, P)``.
    """
    return rewards - rewards.mean(dim=1, keepdim=True)


def train(
    model: PMSAModel,
    n_nodes: int,
    n_obj: int,
    steps: int,
    batch_size: int = 64,
    *,
    lr: float = 1e-3,
    scalarization: str = "tchebycheff",
    seed: int = 0,
    device: str | torch.device = "cpu",
    callback: Callable[[int, dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """Train with REINFORCE and the POMO shared baseline on random uniform instances.

    Each step draws ``batch_size`` instances uniform in ``[0, 1]^{2M}`` and one
    preference per instance from Dirichlet(1) (normalized exponentials); ``n_nodes`` sampled
    rollouts per instance, one from each start node; reward = minus the scalarized
    cost; loss = ``-mean(A * log p)``; Adam. Instances and preferences depend only on
    ``seed`` (not on the model), so two models trained with the same seed see the same
    data.

    Args:
        model: The network (trained in place; its ``n_obj`` must match).
        n_nodes: Cities per training instance, >= 3.
        n_obj: Objectives M.
        steps: Gradient steps, >= 0.
        batch_size: Instances per step.
        lr: Adam learning rate.
        scalarization: ``"tchebycheff"`` (default, ideal point 0) or ``"weighted_sum"``.
        seed: Seed of the data stream and the sampling.
        device: Device to train on.
        callback: Called as ``callback(step, record)`` after each step.

    Returns:
        The history: one dict per step with ``loss``, ``cost`` (mean scalarized cost of
        the sampled tours) and ``time_s`` (wall seconds since the start).

    Raises:
        TypeError: If ``model`` is not a :class:`PMSAModel` (or :class:`NodeOnlyModel`).
        ValueError: On bad sizes, ``n_obj`` not the model's, or an unknown ``device``.
    """
    _check_model(model)
    n_nodes = check_int("n_nodes", n_nodes, low=3)
    n_obj = check_int("n_obj", n_obj, low=1)
    steps = check_int("steps", steps, low=0)
    batch_size = check_int("batch_size", batch_size, low=1)
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    check_choice("scalarization", scalarization, SCALARIZATIONS)
    if n_obj != model.n_obj:
        raise ValueError(f"n_obj = {n_obj} does not match the model's n_obj = {model.n_obj}")
    device = _as_device(device)
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    data_gen = torch.Generator().manual_seed(int(seed))
    sample_gen = torch.Generator(device=device).manual_seed(int(seed) + 1)
    history: list[dict[str, float]] = []
    t0 = time.perf_counter()
    for step in range(steps):
        coords = torch.rand(batch_size, n_nodes, 2 * n_obj, generator=data_gen).to(device)
        # Dirichlet(1) = normalized exponentials, drawn from our own generator
        ex = -torch.log(torch.rand(batch_size, n_obj, generator=data_gen).clamp_min(1e-12))
        prefs = (ex / ex.sum(-1, keepdim=True)).to(device)
        tours, logp = rollout(model, coords, prefs, greedy=False, generator=sample_gen)
        cost = scalarize(tour_costs(coords, tours), prefs.unsqueeze(1), scalarization)
        adv = pomo_advantages(-cost.detach())
        loss = -(adv * logp).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        rec = {
            "loss": float(loss.detach()),
            "cost": float(cost.mean()),
            "time_s": time.perf_counter() - t0,
        }
        history.append(rec)
        if callback is not None:
            callback(step, rec)
    model.eval()
    return history


@torch.no_grad()
def solve(
    model: PMSAModel,
    coords: Any,
    prefs: Any,
    *,
    scalarization: str = "tchebycheff",
    chunk: int = 512,
    device: str | torch.device | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One tour per (instance, preference): POMO greedy from every start, best kept.

    Args:
        model: A trained network.
        coords: ``(B, n, 2M)`` (or ``(n, 2M)``), finite, n >= 3.
        prefs: ``(P, M)`` preferences on the simplex (nonnegative, rows sum to 1).
        scalarization: The subproblem each preference defines (as in training).
        chunk: (instance, preference) pairs encoded at once (memory: ``chunk * n^2 *
            d_edge`` floats for PMSA).
        device: Device (default: the model's).

    Returns:
        ``tours`` ``(B, P, n)`` int64 and ``objectives`` ``(B, P, M)`` float64 (numpy).

    Raises:
        TypeError: If ``model`` is not a :class:`PMSAModel` (or :class:`NodeOnlyModel`).
        ValueError: On bad ``coords`` or ``prefs`` (naming the argument), an M that
            is not the model's, or an unknown ``device``.
    """
    x = check_coords(coords, n_obj=_check_model(model).n_obj)
    lam = check_prefs(prefs, model.n_obj)
    check_choice("scalarization", scalarization, SCALARIZATIONS)
    chunk = check_int("chunk", chunk, low=1)
    device = next(model.parameters()).device if device is None else _as_device(device)
    model.eval()
    dtype = next(model.parameters()).dtype
    x = x.to(device=device, dtype=dtype)
    lam = lam.to(device=device, dtype=dtype)
    b, n, _ = x.shape
    p = lam.shape[0]
    flat_x = x.unsqueeze(1).expand(b, p, n, x.shape[-1]).reshape(b * p, n, -1)
    flat_l = lam.unsqueeze(0).expand(b, p, -1).reshape(b * p, -1)
    tours_out, obj_out = [], []
    for s in range(0, b * p, chunk):
        cx, cl = flat_x[s : s + chunk], flat_l[s : s + chunk]
        tours, _ = rollout(model, cx, cl, greedy=True)
        obj = tour_costs(cx, tours)  # (c, n, M)
        best = scalarize(obj, cl.unsqueeze(1), scalarization).argmin(1)
        ar = torch.arange(len(cx), device=device)
        tours_out.append(tours[ar, best])
        obj_out.append(obj[ar, best])
    tours_all = torch.cat(tours_out).view(b, p, n).cpu().numpy()
    obj_all = torch.cat(obj_out).view(b, p, -1).double().cpu().numpy()
    return tours_all, obj_all
