"""POKE-SMC: sequential Monte Carlo over unmasking paths, twisted by POKE's lookahead.

Target. With a stochastic proposal ``q`` (sampled tokens and positions, see
:func:`~poke_smc.decoding.propose`) the search targets trajectories ``tau`` with
probability ``pi(tau) ∝ q(tau) exp(beta * PathLL(tau))``: the proposal tilted toward
high Path LL. At step ``t`` the intermediate target is twisted by the value ``V`` of the
partial state, ``pi_t ∝ q(tau_{<t}) exp(beta * (PathLL_{<t} + V(x_t)))``, so the
incremental weight of a particle moving from ``x_{t-1}`` to ``x_t`` is

    w_t = exp(beta * (dPathLL_t + V(x_t) - V(x_{t-1}))),

the proposal cancelling out, and the product telescopes to ``exp(beta * PathLL)`` at
the end (``V`` of a complete sequence is 0). ``V`` is POKE (:class:`~poke_smc.poke.PokeValue`),
the greedy estimate, or 0 (no lookahead). When the effective sample size of a prompt's
particles falls below ``ess_threshold * particles`` they are resampled (systematic
resampling) and their weights reset. The answer is the final particle with the highest
Path LL, the same selection rule as best-of-N.

Each step evaluates every particle once, batched, so POKE-SMC with ``N`` particles
costs ``N * steps`` NFE, like best-of-``N``; POKE itself reads the log-probabilities
already computed and adds no NFE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from icml26_core.validation import check_choice, check_float, check_int

from poke_smc.decoding import (
    DecodePlan,
    DecodeResult,
    _as_plan,
    _block_targets,
    _check_distinct,
    _check_score_temperature,
    _Paths,
    log_probs,
    propose,
)
from poke_smc.poke import greedy_value

__all__ = [
    "PokeSMC",
    "effective_sample_size",
    "multinomial_resample",
    "normalized_weights",
    "systematic_resample",
]


def normalized_weights(log_weights: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis: weights ``(..., N)`` summing to one (``-inf`` -> 0).

    Raises:
        ValueError: If a row is all ``-inf`` or holds NaN.
    """
    if torch.isnan(log_weights).any():
        raise ValueError("log_weights hold NaN")
    if (log_weights.max(-1).values == float("-inf")).any():
        raise ValueError("every log weight of a row is -inf: no particle has positive weight")
    return torch.softmax(log_weights, dim=-1)


def effective_sample_size(log_weights: torch.Tensor) -> torch.Tensor:
    """Kish's effective sample size ``1 / sum_i w_i^2`` of normalised weights, per row.

    Args:
        log_weights: float ``(..., N)`` unnormalised log weights.

    Returns:
        float ``(...)`` in ``[1, N]``.
    """
    w = normalized_weights(log_weights)
    return 1.0 / (w * w).sum(-1)


def _check_weights(weights: torch.Tensor) -> torch.Tensor:
    if weights.ndim != 2 or weights.shape[-1] < 1:
        raise ValueError(f"weights must have shape (B, N) with N >= 1, got {tuple(weights.shape)}")
    if torch.isnan(weights).any() or (weights < 0).any():
        raise ValueError("weights must be nonnegative and not NaN")
    total = weights.sum(-1, keepdim=True)
    if (total <= 0).any():
        raise ValueError("each row of weights needs a positive sum")
    return weights / total


def systematic_resample(
    weights: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Systematic resampling: ancestor indices ``(B, N)`` for weights ``(B, N)``.

    One uniform ``u ~ U[0, 1/N)`` per row and the points ``u + j/N``, ``j = 0..N-1``,
    looked up in the weights' cumulative sum (Kitagawa 1996; Douc, Cappé & Moulines 2005).
    Unbiased: particle ``i`` gets ``N w_i`` offspring in expectation, and the count is
    within 1 of ``N w_i``.

    Args:
        weights: float ``(B, N)``, nonnegative, rows not all zero (normalised here).
        generator: Random source.

    Returns:
        int64 ``(B, N)``, sorted within each row.

    Raises:
        ValueError: On negative, NaN or all-zero weights, or a wrong shape.
    """
    w = _check_weights(weights)
    batch, n = w.shape
    dev = generator.device if generator is not None else w.device
    u = torch.rand(batch, 1, generator=generator, device=dev, dtype=w.dtype).to(w.device)
    points = (u + torch.arange(n, device=w.device, dtype=w.dtype)) / n
    cdf = w.cumsum(-1)
    cdf[:, -1] = 1.0  # rounding must not leave a point past the end
    return torch.searchsorted(cdf, points, right=True).clamp_max(n - 1)


def multinomial_resample(
    weights: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Multinomial resampling: ``N`` i.i.d. draws from each row of weights ``(B, N)``.

    Raises:
        ValueError: On negative, NaN or all-zero weights, or a wrong shape.
    """
    w = _check_weights(weights)
    dev = generator.device if generator is not None else w.device
    idx = torch.multinomial(w.to(dev), w.shape[1], replacement=True, generator=generator)
    return idx.to(w.device).sort(-1).values


_RESAMPLERS = {"systematic": systematic_resample, "multinomial": multinomial_resample}


@dataclass(frozen=True)
class PokeSMC:
    """Sequential Monte Carlo over unmasking paths with a lookahead value (POKE-SMC).

    Every particle extends its path by the stochastic proposal ``q`` (tokens sampled
    at ``temperature``, positions by Gumbel-top-k at ``position_temperature``, see
    :func:`~poke_smc.decoding.propose`); the weights make the particles target
    ``pi(tau) ∝ q(tau) exp(beta * PathLL(tau))`` (module docstring). The final weights
    are returned (:attr:`~poke_smc.decoding.DecodeResult.log_weights`), and the answer
    is the final particle with the highest Path LL.

    Args:
        particles: Particles per input sequence (>= 1).
        value: The lookahead ``V(x_t)``: a :class:`~poke_smc.poke.PokeValue` (or any
            callable ``(logp (B, L, V), masked (B, L)) -> (B,)``), ``"greedy"`` for the
            greedy estimate, or None for no lookahead (weights by Path LL so far only).
            ``V`` of a complete sequence is taken as 0.
        beta: Inverse temperature of the Path LL tilt (> 0).
        ess_threshold: Resample a prompt's particles when their ESS falls below
            ``ess_threshold * particles``; in ``[0, 1]`` (0: never, 1: every step).
        temperature: Proposal temperature of the tokens, >= 0 (0: argmax).
        position_temperature: Proposal temperature of the order, >= 0; None: the same as
            ``temperature``.
        score: Position score of the proposal (one of :data:`~poke_smc.decoding.SCORES`).
        resampling: ``"systematic"`` or ``"multinomial"``.

    With ``particles=1``, ``value=None`` and both temperatures 0 it is exactly greedy
    decoding with ``score`` (resampling one particle is the identity). An earlier
    version had a ``greedy_first`` slot that proposed greedily; its paths do not come
    from ``q``, so the weights were wrong for them, and it was removed.

    Raises:
        ValueError: On out-of-range arguments, or ``particles > 1`` with both
            temperatures 0 (identical particles).
        TypeError: On arguments of the wrong type.
    """

    particles: int = 8
    value: Any = None
    beta: float = 1.0
    ess_threshold: float = 0.5
    temperature: float = 1.0
    position_temperature: float | None = None
    score: str = "confidence"
    resampling: str = "systematic"

    def __post_init__(self) -> None:
        check_int("particles", self.particles, low=1)
        check_float("beta", self.beta, low=0.0, low_inclusive=False)
        check_float("ess_threshold", self.ess_threshold, low=0.0, high=1.0)
        check_choice("resampling", self.resampling, tuple(_RESAMPLERS))
        if not (self.value is None or self.value == "greedy" or callable(self.value)):
            raise ValueError(
                f"value must be a PokeValue / callable, 'greedy' or None, got {self.value!r}"
            )
        _check_score_temperature(self.score, self.temperature, self.position_temperature)
        _check_distinct(self.particles, "particles", self.temperature, self.position_temperature)

    def _lookahead(self, logp: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
        if self.value is None:
            return torch.zeros(logp.shape[0], device=logp.device)
        if isinstance(self.value, str):
            v = greedy_value(logp, masked)
        else:
            net = self.value
            if isinstance(net, torch.nn.Module):
                p = next(net.parameters(), None)
                if p is not None and p.device != logp.device:
                    raise ValueError(
                        f"value is on {p.device} but the model on {logp.device}; move it with .to()"
                    )
            with torch.no_grad():
                v = net(logp, masked).float()
        return torch.where(masked.any(-1), v, 0.0)  # V of a complete sequence is 0

    def run(
        self,
        model: Any,
        tokens: torch.Tensor,
        plan: DecodePlan | int,
        generator: torch.Generator | None = None,
    ) -> DecodeResult:
        """Decode ``tokens (B, L)`` with ``particles`` particles each; NFE ``particles * steps``."""
        batch, n = tokens.shape[0], self.particles
        plan = _as_plan(plan, tokens).repeat(n)
        am = plan.attention_mask
        paths = _Paths.start(tokens.repeat_interleave(n, 0), int(model.mask_token_id), am)
        log_w = torch.zeros(batch, n, dtype=torch.float32, device=tokens.device)
        v_prev = delta = torch.zeros_like(paths.path_ll)
        resamples = torch.zeros(batch, dtype=torch.long, device=tokens.device)
        offsets = (torch.arange(batch, device=tokens.device) * n)[:, None]
        resample = _RESAMPLERS[self.resampling]
        calls = 0
        for t, lo, hi, left in plan.iterate():
            if not bool(_block_targets(paths.masked, lo, hi, left)[0].any()):
                continue  # EOS filled the rest of this block in every particle
            logp = log_probs(model, paths.x, am)
            v = self._lookahead(logp, paths.masked)
            if calls > 0:
                # w_t = exp(beta (dPathLL + V(x_t) - V(x_{t-1}))): the proposal cancels
                log_w = log_w + self.beta * (delta + v - v_prev).view(batch, n)
                need = effective_sample_size(log_w) < self.ess_threshold * n
                if n > 1 and bool(need.any()):
                    anc = torch.arange(n, device=tokens.device).expand(batch, n).clone()
                    anc[need] = resample(normalized_weights(log_w[need]), generator)
                    flat = (anc + offsets).flatten()
                    paths, logp, v = paths.take(flat), logp[flat], v[flat]
                    log_w = torch.where(need[:, None], 0.0, log_w)
                    resamples += need.long()
            calls += 1
            cand, k = _block_targets(paths.masked, lo, hi, left)
            new, reveal, lp = propose(
                logp,
                cand,
                k,
                score=self.score,
                temperature=self.temperature,
                position_temperature=self.position_temperature,
                generator=generator,
            )
            delta = paths.reveal(new, reveal, lp, t) + paths.fill_after_eos(logp, t, plan)
            v_prev = v
        # the last increment, to the complete sequence (V = 0): weights ∝ exp(beta PathLL)
        log_w = log_w + self.beta * (delta - v_prev).view(batch, n)
        return paths.select(batch, n, calls, resamples=resamples, log_weights=log_w)
