"""LK losses: training objectives that target the speculative-decoding acceptance rate.

For a draft distribution ``q`` and a target distribution ``p`` at one position,
speculative sampling accepts the draft's token with probability

    alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q).

Everything here is computed in log space: ``log alpha = logsumexp_x min(log p, log q)``
is finite for any finite logits (no ``log 0`` as alpha -> 0) and ``1 - alpha`` is
formed from it, so neither end of [0, 1] produces NaN. Inputs of any float dtype
(bfloat16 included) are upcast to float32 for the reduction, as torch's own
cross-entropy does under autocast; the loss is returned in float32 (float64 for
float64 inputs).

The target can be given three ways (all ``(batch, seq, ...)``):

- logits ``(batch, seq, vocab)``;
- log-probabilities ``(batch, seq, vocab)`` (``log_softmax`` of log-probabilities is
  the identity, so the same code path is exact for both; ``-inf`` entries are allowed);
- top-k ``(indices, values)``, each ``(batch, seq, k)``: the target restricted to
  its k most likely tokens and renormalised (values are logits or log-probs). With
  ``k = vocab`` this is the full target exactly; with smaller k it saves memory when
  target logits are cached, at the cost of ignoring the target's tail.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

__all__ = [
    "LK_KINDS",
    "LKLoss",
    "acceptance_rate",
    "kl_weight_schedule",
    "lk_loss",
    "log_acceptance",
]

LK_KINDS = ("kl", "tv", "log_alpha", "hybrid")
_REDUCTIONS = ("mean", "sum", "none")

Target = torch.Tensor | tuple[torch.Tensor, torch.Tensor] | Sequence[torch.Tensor]


def _check_logits(name: str, x: Any) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got dtype {x.dtype}")
    if x.ndim != 3:
        raise ValueError(f"{name} must have shape (batch, seq, vocab), got {tuple(x.shape)}")
    if x.shape[-1] < 1:
        raise ValueError(f"{name} has an empty vocabulary dimension: {tuple(x.shape)}")
    # One reduction checks all: a row's max is NaN if it holds a NaN, +inf if it holds
    # +inf, and -inf if every entry is -inf (no distribution).
    row_max = x.detach().amax(-1)
    if not bool(torch.isfinite(row_max).all()):
        if bool(torch.isneginf(row_max).any()) and not bool(torch.isnan(row_max).any()):
            if not bool(torch.isposinf(row_max).any()):
                raise ValueError(f"{name} has a position where every entry is -inf")
        raise ValueError(f"{name} contains NaN or +inf")
    return x


def _check_temperature(temperature: Any, *, allow_zero: bool = False) -> float:
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise TypeError(f"temperature must be a float, got {type(temperature).__name__}")
    t = float(temperature)
    if not math.isfinite(t) or t < 0 or (t == 0 and not allow_zero):
        expected = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"temperature must be finite and {expected}, got {temperature!r}")
    return t


def _upcast(x: torch.Tensor) -> torch.Tensor:
    """float16/bfloat16 -> float32; float32 and float64 stay as they are."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _draft_logq(draft_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    draft_logits = _check_logits("draft_logits", draft_logits)
    logits = _upcast(draft_logits)
    return F.log_softmax(logits if temperature == 1 else logits / temperature, dim=-1)


def _target_pair(
    target: Target, draft_logq: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Target log-probs and the draft's log-probs on the same support, (B, S, k)."""
    if isinstance(target, torch.Tensor):
        target = _check_logits("target_logits", target)
        if target.shape != draft_logq.shape:
            raise ValueError(
                "target_logits must have the shape of draft_logits "
                f"{tuple(draft_logq.shape)}, got {tuple(target.shape)}"
            )
        return F.log_softmax(_upcast(target).to(draft_logq.dtype) / temperature, dim=-1), draft_logq
    if not isinstance(target, tuple | list) or len(target) != 2:
        raise TypeError(
            "target_logits must be a tensor (batch, seq, vocab) or a top-k pair "
            f"(indices, values), got {type(target).__name__}"
        )
    indices, values = target
    if not isinstance(indices, torch.Tensor) or indices.is_floating_point():
        raise TypeError("top-k indices must be an integer tensor (batch, seq, k)")
    values = _check_logits("top-k values", values)
    if indices.shape != values.shape or indices.shape[:2] != draft_logq.shape[:2]:
        raise ValueError(
            "top-k indices and values must both have shape (batch, seq, k) with "
            f"(batch, seq) = {tuple(draft_logq.shape[:2])}, got {tuple(indices.shape)} "
            f"and {tuple(values.shape)}"
        )
    vocab = draft_logq.shape[-1]
    if indices.shape[-1] > vocab or (
        indices.numel() and (indices.min() < 0 or indices.max() >= vocab)
    ):
        raise ValueError(f"top-k indices must lie in [0, {vocab}) with k <= {vocab}")
    logp = F.log_softmax(_upcast(values).to(draft_logq.dtype) / temperature, dim=-1)
    return logp, draft_logq.gather(-1, indices.long())


def log_acceptance(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """``log sum_x min(p(x), q(x))`` over the last dimension, in log space.

    Args:
        logp: Target log-probabilities (..., k).
        logq: Draft log-probabilities on the same support (..., k).

    Returns:
        ``log alpha`` with the leading shape; finite whenever some x has both
        probabilities positive, ``-inf`` only when the supports are disjoint.
    """
    return torch.logsumexp(torch.minimum(logp, logq), dim=-1)


def _reduce(values: torch.Tensor, mask: torch.Tensor | None, reduction: str) -> torch.Tensor:
    if mask is None:
        if reduction == "mean":
            return values.mean()
        return values.sum() if reduction == "sum" else values
    weights = mask.to(values.dtype)
    if reduction == "none":
        return values * weights
    # where() instead of a product so that a masked inf/NaN never leaks into the sum.
    total = torch.where(mask, values, torch.zeros_like(values)).sum()
    return total / weights.sum() if reduction == "mean" else total


def _check_mask(mask: Any, shape: torch.Size) -> torch.Tensor | None:
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"mask must be a bool tensor (batch, seq) or None, got {type(mask).__name__}"
        )
    if mask.shape != shape:
        raise ValueError(
            f"mask must have shape (batch, seq) = {tuple(shape)}, got {tuple(mask.shape)}"
        )
    mask = mask.bool()
    if not mask.any():
        raise ValueError("mask selects no position (all False); nothing to average")
    return mask


def lk_loss(
    draft_logits: torch.Tensor,
    target_logits: Target,
    *,
    kind: str = "log_alpha",
    reduction: str = "mean",
    mask: torch.Tensor | None = None,
    temperature: float = 1.0,
    kl_weight: float | torch.Tensor = 0.5,
) -> torch.Tensor:
    r"""Acceptance-rate loss of a draft model against a target model.

    With ``q = softmax(draft_logits / T)``, ``p = softmax(target / T)`` and
    ``alpha = sum_x min(p, q)`` per position:

    - ``"tv"``: ``1 - alpha`` (= total variation; its gradient is the gradient of
      the acceptance rate itself, but it vanishes where alpha is near 0);
    - ``"log_alpha"``: ``-log alpha`` (the default; gradient ``grad alpha / alpha``,
      so positions the draft gets badly wrong weigh more, and it is unbounded as
      alpha -> 0, like cross-entropy);
    - ``"hybrid"``: ``w * KL(p || q) + (1 - w) * (-log alpha)`` with ``w = kl_weight``
      (e.g. from :func:`kl_weight_schedule`): KL gives a dense gradient on every
      token early in training, the LK term takes over later;
    - ``"kl"``: forward ``KL(p || q)``, the standard objective (for comparisons;
      on a top-k target it is the KL of the renormalised top-k target).

    All kinds are minimised exactly at ``q = p``.

    Args:
        draft_logits: Draft logits (batch, seq, vocab), any float dtype; the gradient
            flows into them.
        target_logits: Target logits or log-probs (batch, seq, vocab), or a top-k pair
            ``(indices (batch, seq, k) int, values (batch, seq, k) float)``. Treated as
            a constant (detached).
        kind: One of :data:`LK_KINDS`.
        reduction: ``"mean"`` over (unmasked) positions, ``"sum"``, or ``"none"`` for
            the per-position loss (batch, seq) (masked positions set to 0).
        mask: Optional bool (batch, seq): True where the loss counts (e.g. not padding).
        temperature: Softmax temperature T > 0 applied to both models.
        kl_weight: The KL weight w in [0, 1] of ``"hybrid"`` (float or 0-d tensor).

    Returns:
        float32 tensor (float64 for float64 draft logits): a scalar, or (batch, seq)
        with ``reduction="none"``.

    Raises:
        TypeError: If an input is not a tensor of the right kind.
        ValueError: On mismatched shapes or vocabulary sizes, NaN/+inf logits, an
            all-False mask, an unknown ``kind``/``reduction``, a temperature <= 0 or a
            ``kl_weight`` outside [0, 1].

    References:
        LK losses (ICML 2026): draft training objectives that target the acceptance
        rate of speculative decoding. Leviathan, Kalman & Matias (2023), "Fast
        inference from transformers via speculative decoding" (alpha = 1 - TV).

    Example:
        >>> import torch
        >>> from lk_losses import lk_loss
        >>> draft = torch.randn(2, 5, 11, requires_grad=True)
        >>> target = torch.randn(2, 5, 11)
        >>> loss = lk_loss(draft, target, kind="log_alpha")
        >>> loss.backward()
        >>> bool(loss >= 0)
        True
    """
    if kind not in LK_KINDS:
        raise ValueError(f"kind must be one of {LK_KINDS}, got {kind!r}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    t = _check_temperature(temperature)
    logq_full = _draft_logq(draft_logits, t)
    mask = _check_mask(mask, logq_full.shape[:2])
    if isinstance(target_logits, torch.Tensor):
        target_logits = target_logits.detach()
    elif isinstance(target_logits, tuple | list) and len(target_logits) == 2:
        target_logits = (target_logits[0], target_logits[1].detach())
    logp, logq = _target_pair(target_logits, logq_full, t)

    w = torch.as_tensor(kl_weight, dtype=logp.dtype, device=logp.device)
    if kind == "hybrid" and (w.ndim != 0 or not bool((w >= 0) & (w <= 1))):
        raise ValueError(f"kl_weight must be a scalar in [0, 1], got {kl_weight!r}")
    if isinstance(target_logits, torch.Tensor):
        # Full target: one fused autograd node with a closed-form backward (as cheap as KL).
        logits = _upcast(draft_logits)
        per_pos = _FusedLK.apply(logits, logp, t, kind, float(w))
    else:
        per_pos = _lk_autograd(logp, logq, kind, w)
    return _reduce(per_pos, mask, reduction)


def _kl_terms(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    # p * log p is 0 where p is 0: clamping log p = -inf to the lowest finite value
    # keeps 0 * (-inf) = NaN out at the cost of one pass.
    finite_logp = logp.clamp_min(torch.finfo(logp.dtype).min)
    return (logp.exp() * (finite_logp - logq)).sum(-1)


def _lk_autograd(
    logp: torch.Tensor, logq: torch.Tensor, kind: str, w: torch.Tensor
) -> torch.Tensor:
    """Per-position loss by plain autograd (used for top-k targets)."""
    if kind == "kl":
        return _kl_terms(logp, logq)
    log_alpha = log_acceptance(logp, logq)
    if kind == "tv":
        # 1 - alpha = -expm1(log alpha): exact near alpha = 1, no cancellation.
        return -torch.expm1(log_alpha)
    if kind == "log_alpha":
        return -log_alpha
    return w * _kl_terms(logp, logq) - (1 - w) * log_alpha


class _FusedLK(torch.autograd.Function):
    """Per-position LK/KL loss of draft logits against full target log-probs.

    With ``ind = [q < p]`` and ``r = q * ind / alpha`` (formed as
    ``exp(log q - log alpha)``, so it stays finite as alpha -> 0), the gradient of
    ``log alpha`` with respect to the tempered logits is ``r - q * sum(r)``; that of
    ``KL(p || q)`` is ``q - p``. Ties ``q = p`` take the subgradient 0 of the min.
    """

    @staticmethod
    def forward(ctx, logits, logp, temperature, kind, w):
        logq = F.log_softmax(logits if temperature == 1 else logits / temperature, dim=-1)
        log_alpha = log_acceptance(logp, logq)
        if kind == "kl":
            out = _kl_terms(logp, logq)
        elif kind == "tv":
            out = -torch.expm1(log_alpha)
        elif kind == "log_alpha":
            out = -log_alpha
        else:
            out = w * _kl_terms(logp, logq) - (1 - w) * log_alpha
        ctx.save_for_backward(logq, logp, log_alpha)
        ctx.temperature, ctx.kind, ctx.w = temperature, kind, w
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        logq, logp, log_alpha = ctx.saved_tensors
        kind, w = ctx.kind, ctx.w
        q = logq.exp()
        if kind == "kl":
            grad = q - logp.exp()
        else:
            r = torch.where(logq < logp, (logq - log_alpha[..., None]).exp(), 0.0)
            d_log_alpha = r - q * r.sum(-1, keepdim=True)
            if kind == "tv":
                grad = d_log_alpha * (-log_alpha.exp())[..., None]
            elif kind == "log_alpha":
                grad = -d_log_alpha
            else:
                grad = w * (q - logp.exp()) - (1 - w) * d_log_alpha
        scale = (
            grad_out[..., None] if ctx.temperature == 1 else grad_out[..., None] / ctx.temperature
        )
        return grad * scale, None, None, None, None


@torch.no_grad()
def acceptance_rate(
    draft_logits: torch.Tensor,
    target_logits: Target,
    *,
    temperature: float = 1.0,
    mask: torch.Tensor | None = None,
    reduction: str = "none",
) -> torch.Tensor:
    """Per-position acceptance probability of speculative sampling.

    At temperature T > 0 this is ``alpha = sum_x min(p, q)`` with ``p, q`` the
    tempered softmaxes; at T = 0 (greedy decoding) it is ``1[argmax q = argmax p]``.

    Args:
        draft_logits: (batch, seq, vocab).
        target_logits: Target logits / log-probs (batch, seq, vocab) or a top-k pair
            ``(indices, values)``; at T = 0 the top-1 of the pair is the target's
            greedy token, so k = 1 suffices.
        temperature: T >= 0.
        mask: Optional bool (batch, seq) of positions that count.
        reduction: ``"none"`` (batch, seq), ``"mean"`` or ``"sum"`` over positions.

    Returns:
        float32 tensor of acceptance probabilities in [0, 1] (no gradient).

    Raises:
        TypeError, ValueError: As :func:`lk_loss`.

    Example:
        >>> import torch
        >>> logits = torch.randn(1, 4, 7)
        >>> acceptance_rate(logits, logits).allclose(torch.ones(1, 4))
        True
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    t = _check_temperature(temperature, allow_zero=True)
    if t == 0:
        draft_logits = _check_logits("draft_logits", draft_logits)
        if isinstance(target_logits, torch.Tensor):
            target_logits = _check_logits("target_logits", target_logits)
            if target_logits.shape != draft_logits.shape:
                raise ValueError(
                    "target_logits must have the shape of draft_logits "
                    f"{tuple(draft_logits.shape)}, got {tuple(target_logits.shape)}"
                )
            target_top = target_logits.argmax(-1)
        else:
            logq = F.log_softmax(_upcast(draft_logits), -1)
            logp, _ = _target_pair(target_logits, logq, 1.0)
            target_top = target_logits[0].gather(-1, logp.argmax(-1, keepdim=True))[..., 0]
        alpha = (draft_logits.argmax(-1) == target_top).float()
    else:
        logp, logq = _target_pair(target_logits, _draft_logq(draft_logits, t), t)
        alpha = log_acceptance(logp, logq).exp().clamp(0.0, 1.0)
    mask = _check_mask(mask, alpha.shape)
    return _reduce(alpha, mask, reduction)


def kl_weight_schedule(
    step: int, total_steps: int, *, start: float = 1.0, end: float = 0.0, warm: float = 0.5
) -> float:
    """KL weight of the ``"hybrid"`` loss: ``start`` for the first part, then cosine to ``end``.

    Args:
        step: Current optimizer step (0-based).
        total_steps: Steps of the whole run.
        start: Weight at the beginning (1.0 = pure KL).
        end: Weight at the end (0.0 = pure ``-log alpha``).
        warm: Fraction of the run over which the weight decays from ``start`` to
            ``end`` by a half cosine (0 = switch at once).

    Returns:
        The weight in [min(start, end), max(start, end)].

    Raises:
        ValueError: If a weight is outside [0, 1], ``warm`` outside [0, 1], or
            ``total_steps`` < 1.

    Example:
        >>> kl_weight_schedule(0, 100), kl_weight_schedule(100, 100)
        (1.0, 0.0)
    """
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps!r}")
    for name, value in (("start", start), ("end", end), ("warm", warm)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    horizon = warm * total_steps
    if horizon <= 0:
        return float(end)
    progress = min(1.0, max(0.0, step / horizon))
    return float(end + (start - end) * 0.5 * (1 + math.cos(math.pi * progress)))


class LKLoss(torch.nn.Module):
    """``nn.Module`` wrapper of :func:`lk_loss`, with the hybrid's KL-weight schedule.

    Args:
        kind: One of :data:`LK_KINDS`.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        temperature: Softmax temperature > 0.
        kl_weight: Constant KL weight of ``"hybrid"``; ignored when ``total_steps`` is
            given.
        total_steps: If set, the hybrid weight follows :func:`kl_weight_schedule`
            over this many calls of :meth:`step` (from 1 to 0 over the first half).

    Example:
        >>> import torch
        >>> criterion = LKLoss("hybrid", total_steps=100)
        >>> loss = criterion(torch.randn(2, 3, 5), torch.randn(2, 3, 5))
        >>> criterion.step()
    """

    def __init__(
        self,
        kind: str = "log_alpha",
        *,
        reduction: str = "mean",
        temperature: float = 1.0,
        kl_weight: float = 0.5,
        total_steps: int | None = None,
    ) -> None:
        super().__init__()
        if kind not in LK_KINDS:
            raise ValueError(f"kind must be one of {LK_KINDS}, got {kind!r}")
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.kind = kind
        self.reduction = reduction
        self.temperature = _check_temperature(temperature)
        if not 0.0 <= kl_weight <= 1.0:
            raise ValueError(f"kl_weight must be in [0, 1], got {kl_weight!r}")
        self.kl_weight = float(kl_weight)
        self.total_steps = total_steps
        self.steps_done = 0

    @property
    def current_kl_weight(self) -> float:
        """The KL weight the next call uses."""
        if self.total_steps is None:
            return self.kl_weight
        return kl_weight_schedule(self.steps_done, self.total_steps)

    def step(self) -> None:
        """Advance the KL-weight schedule by one optimizer step."""
        self.steps_done += 1

    def forward(
        self, draft_logits: torch.Tensor, target_logits: Target, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Loss of ``draft_logits`` against ``target_logits`` (see :func:`lk_loss`)."""
        return lk_loss(
            draft_logits,
            target_logits,
            kind=self.kind,
            reduction=self.reduction,
            mask=mask,
            temperature=self.temperature,
            kl_weight=self.current_kl_weight,
        )

    def extra_repr(self) -> str:
        """The module's settings, shown by ``repr``."""
        return f"kind={self.kind!r}, reduction={self.reduction!r}, temperature={self.temperature}"
