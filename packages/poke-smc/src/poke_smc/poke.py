"""POKE: a value estimator of the expected future Path LL of a partial trajectory.

At a partial state ``x_t`` the Path LL still to come, ``sum_{s >= t} sum_{i revealed at
s} log p(x_i | x_s)``, depends on the order the remaining tokens will be revealed in and
on how the model's confidence rises as context fills in. The *greedy estimate*
``sum_{i masked} log max_v p(x_i = v | x_t)`` ignores both. POKE learns the rest.

Our design (the abstract leaves it open): POKE reads only the log-probabilities the
decoder has already computed for ``x_t``, so a lookahead costs no extra network
evaluation. For every masked position it forms features (log of the top probability,
normalised entropy, top-2 margin, the fraction still masked), embeds them with a small
MLP, sums over the masked positions (a Deep Sets network: any length, any order) and
maps the sum to a correction added to the greedy estimate. It is fitted by least
squares to the realised future Path LL of rollouts of the decoder's own proposal
(:func:`collect_rollouts`, :func:`fit_poke`), so at initialisation it *is* the greedy
estimate and training can only move it toward the rollouts' values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from icml26_core.validation import check_choice, check_float, check_int
from torch import nn

from poke_smc.decoding import SCORES, _check_steps, _unmask, position_scores
from poke_smc.model import model_device

__all__ = [
    "N_FEATURES",
    "PokeFit",
    "PokeValue",
    "Rollouts",
    "collect_rollouts",
    "fit_poke",
    "greedy_value",
    "value_features",
]

N_FEATURES = 4
_LOGP_FLOOR = -30.0


def greedy_value(logp: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """The greedy estimate of the future Path LL: ``sum_{i masked} log max_v p_i(v)``.

    Args:
        logp: float ``(B, L, V)`` log-probabilities at the current state.
        masked: bool ``(B, L)`` positions still masked.

    Returns:
        float ``(B,)`` (nats, <= 0).
    """
    top = logp.max(-1).values.clamp_min(_LOGP_FLOOR)
    return torch.where(masked, top, 0.0).sum(-1)


def value_features(logp: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Per-position features ``(B, L, 4)`` POKE reads, from log-probabilities ``(B, L, V)``.

    Log of the top probability (floored at -30), entropy divided by ``log V``, the top-1
    minus top-2 probability, and the fraction of the row still masked.
    """
    lp1 = logp.max(-1).values.clamp_min(_LOGP_FLOOR)
    margin = position_scores(logp, lp1, "margin")
    ent = -position_scores(logp, lp1, "entropy") / math.log(max(2, logp.shape[-1]))
    frac = masked.float().mean(-1, keepdim=True).expand_as(lp1)
    return torch.stack([lp1, ent, margin, frac], dim=-1)


class PokeValue(nn.Module):
    """POKE's value network: greedy estimate plus a learned Deep Sets correction.

    ``V(x_t) = greedy_value(logp, masked) + rho(sum_{i masked} phi(f_i), frac_masked)``
    with ``f_i = value_features(...)``, and ``V = 0`` for a complete sequence (no masked
    position: no Path LL is left to come). The last layer starts at zero, so an
    untrained POKE equals the greedy estimate.

    Args:
        hidden: Width of ``phi`` and ``rho``.

    Shapes:
        ``forward(logp, masked)``: float ``(B, L, V)``, bool ``(B, L)`` -> float ``(B,)``.
    """

    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        check_int("hidden", hidden, low=1)
        self.hidden = hidden
        self.phi = nn.Sequential(
            nn.Linear(N_FEATURES, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU()
        )
        self.rho = nn.Sequential(nn.Linear(hidden + 1, hidden), nn.GELU(), nn.Linear(hidden, 1))
        nn.init.zeros_(self.rho[-1].weight)
        nn.init.zeros_(self.rho[-1].bias)

    def correction(self, features: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
        """The learned part ``(B,)`` from features ``(B, L, 4)`` and the mask ``(B, L)``."""
        pooled = (self.phi(features) * masked[..., None].float()).sum(1)
        frac = masked.float().mean(-1, keepdim=True)
        return self.rho(torch.cat([pooled, frac], dim=-1)).squeeze(-1)

    def predict(self, rollouts: Rollouts) -> torch.Tensor:
        """Predicted future Path LL ``(S,)`` of the recorded states of ``rollouts``."""
        with torch.no_grad():
            v = rollouts.greedy + self.correction(rollouts.features, rollouts.masked)
        return torch.where(rollouts.masked.any(-1), v, 0.0)

    def forward(self, logp: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
        """Predicted future Path LL ``(B,)`` of the states whose log-probabilities are given."""
        feats = value_features(logp, masked)
        v = greedy_value(logp, masked) + self.correction(feats, masked)
        return torch.where(masked.any(-1), v, 0.0)


@dataclass
class Rollouts:
    """States visited by rollouts, with the Path LL that followed each.

    Attributes:
        features: float ``(S, L, 4)`` :func:`value_features` of each recorded state.
        masked: bool ``(S, L)`` its masked positions.
        greedy: float ``(S,)`` :func:`greedy_value` of the state.
        target: float ``(S,)`` the realised future Path LL from the state to the end.
        groups: int64 ``(S,)`` the input each state's rollout started from (states of one
            input are correlated, so :meth:`split` keeps them together); None: each
            state is its own group.
    """

    features: torch.Tensor
    masked: torch.Tensor
    greedy: torch.Tensor
    target: torch.Tensor
    groups: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.target.shape[0])

    def split(self, fraction: float, generator: torch.Generator) -> tuple[Rollouts, Rollouts]:
        """Random split of the groups (inputs) into ``(1 - fraction, fraction)`` parts.

        States of one input land on the same side, so the held-out part measures
        prediction on inputs never fitted on.
        """
        groups = self.groups if self.groups is not None else torch.arange(len(self))
        ids, inverse = torch.unique(groups, return_inverse=True)
        if len(ids) < 2:
            raise ValueError("rollouts need states from at least 2 inputs to be split")
        perm = torch.randperm(len(ids), generator=generator)
        n_out = min(len(ids) - 1, max(1, round(fraction * len(ids))))
        held = torch.zeros(len(ids), dtype=torch.bool)
        held[perm[len(ids) - n_out :]] = True
        out = held[inverse]
        return self.take(~out), self.take(out)

    def take(self, idx: torch.Tensor) -> Rollouts:
        """The states at ``idx`` (indices or a bool mask)."""
        g = None if self.groups is None else self.groups[idx]
        return Rollouts(self.features[idx], self.masked[idx], self.greedy[idx], self.target[idx], g)


def collect_rollouts(
    model: Any,
    inputs: torch.Tensor,
    steps: int,
    *,
    rollouts_per_input: int = 4,
    score: str = "confidence",
    temperature: float = 1.0,
    position_temperature: float | None = None,
    states_per_rollout: int | None = 8,
    batch_size: int = 256,
    generator: torch.Generator | None = None,
    progress: Callable[[Iterable[Any], str], Iterable[Any]] | None = None,
) -> Rollouts:
    """Run the decoder's proposal from ``inputs`` and record (state, future Path LL) pairs.

    Args:
        model: The masked diffusion LM.
        inputs: int64 ``(N, L)`` sequences with masks (e.g. training puzzles or prompts
            followed by masks); each row needs at least ``steps`` masks.
        steps: Decoding steps of every rollout (as used at inference).
        rollouts_per_input: Trajectories sampled from each input.
        score: Position score of the proposal.
        temperature: Token temperature of the proposal.
        position_temperature: Order temperature of the proposal (None: ``temperature``).
        states_per_rollout: States kept per trajectory, at random steps (all if None).
        batch_size: Trajectories decoded at once.
        generator: Random source (CPU).
        progress: Optional ``progress(iterable, description)`` wrapper (a progress bar).

    Returns:
        :class:`Rollouts` on the CPU.

    Raises:
        ValueError: On non-positive counts, an unknown score, rows without a mask, or
            ``steps`` above the fewest masks in a row.
    """
    check_int("rollouts_per_input", rollouts_per_input, low=1)
    check_int("batch_size", batch_size, low=1)
    check_choice("score", score, SCORES)
    check_float("temperature", temperature, low=0.0)
    if states_per_rollout is not None:
        check_int("states_per_rollout", states_per_rollout, low=1)
    if inputs.ndim != 2:
        raise ValueError(f"inputs must have shape (N, L), got {tuple(inputs.shape)}")
    n_masked = (inputs == int(model.mask_token_id)).sum(-1)
    if inputs.shape[0] == 0 or int(n_masked.min()) == 0:
        raise ValueError("inputs must be a non-empty batch whose every row holds a mask token")
    _check_steps(steps, int(n_masked.min()), "the fewest masked positions in a row")
    device = model_device(model)
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    xs = inputs.to(device).repeat_interleave(rollouts_per_input, 0)
    group_of = torch.arange(inputs.shape[0]).repeat_interleave(rollouts_per_input)
    chunks = list(zip(torch.split(xs, batch_size), torch.split(group_of, batch_size), strict=True))
    out: dict[str, list[torch.Tensor]] = {"f": [], "m": [], "g": [], "y": [], "i": []}
    it = progress(chunks, "POKE rollouts") if progress is not None else chunks
    for chunk, chunk_groups in it:
        keep = torch.ones(chunk.shape[0], steps, dtype=torch.bool)
        if states_per_rollout is not None and states_per_rollout < steps:
            r = torch.rand(chunk.shape[0], steps, generator=gen)
            keep = r.argsort(-1).argsort(-1) < states_per_rollout
        seen: list[tuple[torch.Tensor, ...]] = []

        def hook(
            t: int,
            logp: torch.Tensor,
            masked: torch.Tensor,
            pll: torch.Tensor,
            keep: torch.Tensor = keep,
            seen: list = seen,
        ) -> None:
            rows = keep[:, t].to(logp.device)
            if rows.any():
                lp, m = logp[rows], masked[rows]
                f, g = value_features(lp, m), greedy_value(lp, m)
                seen.append((rows.cpu(), f.cpu(), m.cpu(), g.cpu(), pll[rows].cpu()))

        with torch.no_grad():
            res, _ = _unmask(
                model,
                chunk,
                steps,
                score=score,
                temperature=temperature,
                position_temperature=position_temperature,
                generator=gen,
                on_step=hook,
            )
        final = res.path_ll.cpu()
        for rows, feats, m, g, before in seen:
            out["f"].append(feats)
            out["m"].append(m)
            out["g"].append(g)
            out["y"].append(final[rows] - before)
            out["i"].append(chunk_groups[rows])
    cat = {k: torch.cat(v) for k, v in out.items()}
    return Rollouts(cat["f"], cat["m"], cat["g"], cat["y"], cat["i"])


@dataclass
class PokeFit:
    """What :func:`fit_poke` measured on the held-out rollouts.

    Attributes:
        r2_poke: Coefficient of determination of POKE's prediction of the future Path LL.
        r2_greedy: The same for the greedy estimate (POKE before training).
        mse_poke: Mean squared error of POKE (nats^2).
        mse_greedy: Mean squared error of the greedy estimate.
        train_states: States fitted on.
        val_states: States held out.
        losses: Training loss per epoch.
    """

    r2_poke: float
    r2_greedy: float
    mse_poke: float
    mse_greedy: float
    train_states: int
    val_states: int
    losses: list[float] = field(default_factory=list)


def _r2(pred: torch.Tensor, y: torch.Tensor) -> float:
    var = float(((y - y.mean()) ** 2).mean())
    return 1.0 - float(((pred - y) ** 2).mean()) / var if var > 0 else float("nan")


def fit_poke(
    rollouts: Rollouts,
    *,
    value: PokeValue | None = None,
    epochs: int = 30,
    lr: float = 3e-3,
    batch_size: int = 512,
    val_fraction: float = 0.2,
    validation: Rollouts | None = None,
    seed: int = 0,
) -> tuple[PokeValue, PokeFit]:
    """Fit POKE to rollouts by least squares on the residual of the greedy estimate.

    Args:
        rollouts: From :func:`collect_rollouts`.
        value: Network to train (a new ``PokeValue()`` if None); trained in place.
        epochs: Passes over the training states (Adam, cosine-decayed LR).
        lr: Peak learning rate.
        batch_size: States per gradient step.
        val_fraction: Share of the inputs whose states are held out to measure the fit
            (ignored when ``validation`` is given).
        validation: Rollouts of other inputs to measure the fit on; then every state of
            ``rollouts`` is fitted on.
        seed: Seed of the split and the shuffling.

    Returns:
        ``(value, fit)``: the trained network (CPU, eval mode) and held-out metrics.

    Raises:
        ValueError: With fewer than 10 states or bad hyperparameters.
    """
    if len(rollouts) < 10:
        raise ValueError(f"rollouts must hold at least 10 states, got {len(rollouts)}")
    check_float("val_fraction", val_fraction, low=0.0, high=1.0, low_inclusive=False,
                high_inclusive=False)  # fmt: skip
    check_int("epochs", epochs, low=1)
    check_int("batch_size", batch_size, low=1)
    check_float("lr", lr, low=0.0, low_inclusive=False)
    gen = torch.Generator().manual_seed(seed)
    if validation is None:
        train, val = rollouts.split(val_fraction, gen)
    else:
        if len(validation) < 1:
            raise ValueError("validation must hold at least one state")
        train, val = rollouts, validation
    net = value if value is not None else PokeValue()
    net = net.cpu().train()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    n_batches = math.ceil(len(train) / batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * n_batches)
    # the residual's scale varies by task; dividing by its spread keeps Adam's step sensible
    resid = train.target - train.greedy
    scale = float(resid.std()) if len(train) > 1 and float(resid.std()) > 0 else 1.0
    losses = []
    for _ in range(epochs):
        perm = torch.randperm(len(train), generator=gen)
        total = 0.0
        for idx in torch.split(perm, batch_size):
            pred = net.correction(train.features[idx], train.masked[idx])
            loss = ((pred - resid[idx]) / scale).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / len(train))
    net.eval()
    with torch.no_grad():
        pred = val.greedy + net.correction(val.features, val.masked)
    fit = PokeFit(
        r2_poke=_r2(pred, val.target),
        r2_greedy=_r2(val.greedy, val.target),
        mse_poke=float(((pred - val.target) ** 2).mean()),
        mse_greedy=float(((val.greedy - val.target) ** 2).mean()),
        train_states=len(train),
        val_states=len(val),
        losses=losses,
    )
    return net, fit
