"""LK losses: training objectives that target the speculative-decoding acceptance rate.

For a draft distribution ``q`` and a target distribution ``p`` at one position,
speculative sampling accepts the draft's token with probability

    alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q).

Everything here is computed in log space: ``log alpha = logsumexp_x min(log p, log q)``
is finite for any finite logits (no ``log 0`` as alpha -> 0) and ``1 - alpha`` is
formed from it, so neither end of [0, 1] produces NaN. Inputs of any float dtype
(bfloat16 included) are upcast to float32 chunk by chunk, as torch's own
cross-entropy does under autocast; the loss is float32 (float64 for float64 inputs).

Inputs have any leading shape ``(*, vocab)``: ``(batch, seq, vocab)`` from a causal
LM, ``(tokens, vocab)`` after packing, or a single ``(vocab,)`` row. The target can be
given three ways:

- logits ``(*, vocab)`` (normalised here);
- log-probabilities ``(*, vocab)`` (``log_softmax`` of log-probabilities is the
  identity, so the same path is exact for both; ``-inf`` entries are allowed);
- top-k ``(indices, values)``, each ``(*, k)``: the target on its k most likely tokens.

With ``renormalize_target=False`` a target tensor or top-k pair holds the *full*
target's log-probabilities on a subset of the vocabulary (its top-k, or a reduced
draft vocabulary) and their mass is kept as given: the acceptance rate is then the
sum over the subset only, the exact acceptance rate of a draft that proposes only
tokens of the subset, and a lower bound of the acceptance rate otherwise (the draft
may still match part of the missing mass). The KL term uses the subset renormalised,
the standard distillation target on a truncated vocabulary.

The full-vocabulary path is one fused autograd node, computed in chunks of rows so
that every pass over a chunk stays in cache, with a closed-form backward; it costs
about what ``F.kl_div`` with both log-softmaxes costs (see ``benchmarks/``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from icml26_core.validation import check_choice, check_float, check_int

__all__ = [
    "LK_KINDS",
    "LKLoss",
    "acceptance_rate",
    "kl_weight_schedule",
    "lk_loss",
    "log_acceptance",
]

LK_KINDS = ("kl", "tv", "log_alpha", "hybrid")
"""The loss kinds: ``"kl"`` (the baseline), and the LK losses ``"tv"``, ``"log_alpha"``
and ``"hybrid"``."""

_REDUCTIONS = ("mean", "sum", "none")
# Log-probabilities of a partial target may sum to a little more than 1 after a cast to
# float16 or bfloat16 (3 significant digits): tolerate that much.
_PARTIAL_TOL = 1e-2
# Rows whose log alpha is below this take the backward in log space (q / alpha would
# overflow float32 in linear space).
_LOG_ALPHA_FLOOR = -60.0

Target = torch.Tensor | tuple[torch.Tensor, torch.Tensor] | Sequence[torch.Tensor]


def _check_tensor(name: str, x: Any) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got dtype {x.dtype}")
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"{name} must have shape (*, vocab) with vocab >= 1, got {tuple(x.shape)}")
    return x


def _check_normalizers(name: str, lse: torch.Tensor) -> None:
    """Raise if a row's logsumexp shows a NaN, a +inf, or an all -inf row.

    The normalizer is computed anyway, so this costs one reduction over (rows,)
    instead of a pass over the whole tensor.
    """
    if bool(torch.isfinite(lse).all()):
        return
    if bool(torch.isnan(lse).any()) or bool(torch.isposinf(lse).any()):
        raise ValueError(f"{name} contains NaN or +inf")
    raise ValueError(f"{name} has a position where every entry is -inf")


def _check_partial(name: str, lse: torch.Tensor) -> None:
    worst = float(lse.max()) if lse.numel() else -math.inf
    if worst > _PARTIAL_TOL:
        raise ValueError(
            f"{name}: with renormalize_target=False the values must be log-probabilities of "
            f"the full target (their probabilities sum to at most 1), but one position sums "
            f"to {math.exp(worst):.4g}; pass logits with renormalize_target=True"
        )


def _check_temperature(temperature: Any, *, allow_zero: bool = False) -> float:
    return check_float("temperature", temperature, low=0.0, low_inclusive=allow_zero, finite=True)


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    """float16/bfloat16 -> float32; float32 and float64 stay as they are."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def log_acceptance(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """``log sum_x min(p(x), q(x))`` over the last dimension, in log space.

    Args:
        logp: Target log-probabilities (*, k).
        logq: Draft log-probabilities on the same support (*, k).

    Returns:
        ``log alpha`` with the leading shape; finite whenever some x has both
        probabilities positive, ``-inf`` only when the supports are disjoint.

    Example:
        >>> import torch
        >>> p = torch.tensor([0.5, 0.5]).log()
        >>> q = torch.tensor([0.9, 0.1]).log()
        >>> round(float(log_acceptance(p, q).exp()), 4)
        0.6
    """
    return torch.logsumexp(torch.minimum(logp, logq), dim=-1)


def _reduce(values: torch.Tensor, mask: torch.Tensor | None, reduction: str) -> torch.Tensor:
    if mask is None:
        if reduction == "mean":
            return values.mean()
        return values.sum() if reduction == "sum" else values
    if reduction == "none":
        return torch.where(mask, values, torch.zeros_like(values))
    # where() instead of a product so that a masked inf/NaN never leaks into the sum.
    total = torch.where(mask, values, torch.zeros_like(values)).sum()
    return total / mask.sum().to(values.dtype) if reduction == "mean" else total


def _check_mask(mask: Any, shape: torch.Size) -> torch.Tensor | None:
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"mask must be a bool tensor of shape {tuple(shape)} or None, got {type(mask).__name__}"
        )
    if mask.shape != shape:
        raise ValueError(
            f"mask must have the leading shape of draft_logits {tuple(shape)}, "
            f"got {tuple(mask.shape)}"
        )
    mask = mask.bool()
    if not bool(mask.any()):
        raise ValueError("mask selects no position (all False); nothing to average")
    return mask


def _default_chunk(vocab: int) -> int:
    # About 2^16 floats (256 KB) per chunk and tensor: the few passes over a chunk then
    # run in cache; at least 1 row, and at least 64 rows for small vocabularies, where
    # the per-operation overhead would dominate.
    return max(1, min(64, (1 << 18) // max(1, vocab)), (1 << 16) // max(1, vocab))


# ---------------------------------------------------------------------------
# The fused path: full-vocabulary target tensors.
# ---------------------------------------------------------------------------


def _chunk_stats(
    zc: torch.Tensor, tc: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tempered logits of a chunk and their row logsumexps."""
    if temperature != 1.0:
        zc = zc / temperature
        tc = tc / temperature
    lz = torch.logsumexp(zc, dim=-1, keepdim=True)
    lt = torch.logsumexp(tc, dim=-1, keepdim=True)
    return zc, tc, lz, lt


def _kl_rows(logp: torch.Tensor, logq: torch.Tensor, p: torch.Tensor | None = None) -> torch.Tensor:
    p = logp.exp() if p is None else p
    kl = torch.linalg.vecdot(p, logp - logq)
    bad = torch.isnan(kl)
    if bool(bad.any()):
        # p * log p is 0 where p is 0 (a -inf target log-prob): redo those rows safely.
        lp, lq, pp = logp[bad], logq[bad], p[bad]
        kl[bad] = torch.where(pp > 0, pp * (lp - lq), torch.zeros_like(pp)).sum(-1)
    return kl


def _log_alpha_rows(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    # Both are log-probabilities (<= 0), so exp(min) cannot overflow and needs no max
    # shift; only rows where every term underflows (alpha < ~1e-38) take logsumexp.
    la = torch.minimum(logp, logq).exp_().sum(-1).log_()
    low = la < _LOG_ALPHA_FLOOR
    if bool(low.any()):
        la[low] = log_acceptance(logp[low], logq[low])
    return la


def _diagnose(z: torch.Tensor, t: torch.Tensor, bad: torch.Tensor, renormalize: bool) -> None:
    """Raise the error that explains non-finite losses in rows ``bad`` (or return)."""
    rows = bad.nonzero()[:, 0]
    _check_normalizers("draft_logits", torch.logsumexp(z[rows].to(_compute_dtype(z)), -1))
    _check_normalizers("target_logits", torch.logsumexp(t[rows].to(_compute_dtype(z)), -1))


class _FusedLK(torch.autograd.Function):
    """Per-row LK/KL loss of draft logits (N, V) against a full target (N, V).

    Forward and backward run over chunks of rows, so the few passes over a chunk stay
    in cache. Saved for backward: the two log-softmaxes (as autograd saves them for
    ``F.kl_div``) and ``log alpha`` per row. With ``A = {x : q(x) < p(x)}``, the
    gradient of ``alpha`` with respect to the tempered logits is ``q 1_A - q Q_A``
    (``Q_A = sum_A q``), that of ``log alpha`` is that divided by alpha, and that of
    ``KL(p || q)`` is ``q - p``. Ties ``q = p`` take the subgradient 0 of the min.
    """

    @staticmethod
    def forward(ctx, z, t, kind, w, temperature, renormalize, chunk):
        n, _ = z.shape
        dtype = _compute_dtype(z)
        out = torch.empty(n, dtype=dtype, device=z.device)
        log_alpha = torch.zeros(n, dtype=dtype, device=z.device)
        logq_all = torch.empty(z.shape, dtype=dtype, device=z.device)
        logp_all = torch.empty(z.shape, dtype=dtype, device=z.device)
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            zc, tc = z[s:e].to(dtype), t[s:e].to(dtype)
            if temperature != 1.0:
                zc, tc = zc / temperature, tc / temperature
            logq = torch.log_softmax(zc, -1, out=logq_all[s:e])
            logp = torch.log_softmax(tc, -1, out=logp_all[s:e])
            if not renormalize:
                _check_partial("target_logits", torch.logsumexp(tc, -1))
            if kind != "kl":
                la = _log_alpha_rows(logp if renormalize else tc, logq)
                log_alpha[s:e] = la
            if kind == "kl":
                out[s:e] = _kl_rows(logp, logq)
            elif kind == "tv":
                out[s:e] = -torch.expm1(la)
            elif kind == "log_alpha":
                out[s:e] = -la
            else:
                out[s:e] = w * _kl_rows(logp, logq) - (1 - w) * la
        bad = ~torch.isfinite(out)
        if bool(bad.any()):
            _diagnose(z, t, bad, renormalize)
        ctx.save_for_backward(logq_all, logp_all, log_alpha, None if renormalize else t)
        ctx.conf = (kind, w, temperature, renormalize, chunk, z.dtype)
        log_alpha_out = log_alpha.clone()
        ctx.mark_non_differentiable(log_alpha_out)
        return out, log_alpha_out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out, _grad_log_alpha):
        logq_all, logp_all, log_alpha, t = ctx.saved_tensors
        kind, w, temperature, renormalize, chunk, z_dtype = ctx.conf
        n, _ = logq_all.shape
        dtype = logq_all.dtype
        grad = torch.empty(logq_all.shape, dtype=z_dtype, device=logq_all.device)
        scale = grad_out.to(dtype) / temperature
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            logq, logp = logq_all[s:e], logp_all[s:e]
            q = logq.exp()
            row = scale[s:e, None]
            if kind == "kl":
                g = q.sub_(logp.exp())
            else:
                la = log_alpha[s:e, None]
                logpa = logp if renormalize else t[s:e].to(dtype)
                inside = logq < logpa
                r = q * inside  # q 1_A
                d_alpha = torch.addcmul(r, q, r.sum(-1, keepdim=True), value=-1.0)
                if kind == "tv":
                    g = d_alpha.neg_()
                else:
                    d_la = d_alpha.mul_((-la).exp())
                    tiny = la[:, 0] < _LOG_ALPHA_FLOOR
                    if bool(tiny.any()):
                        # alpha below e^-60: q / alpha loses q to underflow in linear
                        # space, so those rows take r = exp(log q - log alpha) instead
                        lq, lt = logq[tiny], la[tiny]
                        rt = torch.where(inside[tiny], (lq - lt).exp(), 0.0)
                        d_la[tiny] = rt - lq.exp() * rt.sum(-1, keepdim=True)
                    if kind == "log_alpha":
                        g = d_la.neg_()
                    else:
                        g = q.sub_(logp.exp()).mul_(w).sub_(d_la.mul_(1 - w))
            grad[s:e] = g.mul_(row)
        return grad, None, None, None, None, None, None


# ---------------------------------------------------------------------------
# The top-k path: autograd on (N, k) after one log-softmax of the draft.
# ---------------------------------------------------------------------------


def _topk_pair(
    target: Sequence[torch.Tensor], z: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(target, tuple | list) or len(target) != 2:
        raise TypeError(
            "target_logits must be a tensor (*, vocab) or a top-k pair (indices, values), "
            f"got {type(target).__name__}"
        )
    indices, values = target
    if not isinstance(indices, torch.Tensor) or indices.is_floating_point():
        raise TypeError("top-k indices must be an integer tensor (*, k)")
    values = _check_tensor("top-k values", values)
    lead = z.shape[:-1]
    if indices.shape != values.shape or indices.shape[:-1] != lead:
        raise ValueError(
            f"top-k indices and values must both have shape (*, k) with * = {tuple(lead)}, "
            f"got {tuple(indices.shape)} and {tuple(values.shape)}"
        )
    vocab = z.shape[-1]
    if indices.shape[-1] > vocab or (
        indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= vocab)
    ):
        raise ValueError(f"top-k indices must lie in [0, {vocab}) with k <= {vocab}")
    return indices, values


def _topk_terms(
    z: torch.Tensor,
    indices: torch.Tensor,
    values: torch.Tensor,
    temperature: float,
    renormalize: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logp renormalised, logp for alpha, logq) on the top-k support, all (*, k)."""
    dtype = _compute_dtype(z)
    zc = z.to(dtype)
    lz = torch.logsumexp(zc / temperature if temperature != 1 else zc, dim=-1, keepdim=True)
    _check_normalizers("draft_logits", lz.detach())
    zk = zc.gather(-1, indices.long())
    logq = (zk / temperature if temperature != 1 else zk) - lz
    v = values.detach().to(dtype)
    v = v / temperature if temperature != 1 else v
    lv = torch.logsumexp(v, dim=-1, keepdim=True)
    _check_normalizers("top-k values", lv)
    if not renormalize:
        _check_partial("top-k values", lv)
    logp = v - lv
    return logp, (logp if renormalize else v), logq


def _topk_rows(
    logp: torch.Tensor, logp_a: torch.Tensor, logq: torch.Tensor, kind: str, w: float
) -> tuple[torch.Tensor, torch.Tensor | None]:
    if kind == "kl":
        return _kl_rows(logp, logq), None
    la = log_acceptance(logp_a, logq)
    if kind == "tv":
        # 1 - alpha = -expm1(log alpha): exact near alpha = 1, no cancellation.
        return -torch.expm1(la), la.detach()
    if kind == "log_alpha":
        return -la, la.detach()
    return w * _kl_rows(logp, logq) - (1 - w) * la, la.detach()


def _check_kl_weight(kl_weight: Any) -> float:
    if isinstance(kl_weight, torch.Tensor):
        if kl_weight.numel() != 1:
            raise ValueError(
                f"kl_weight must be a scalar in [0, 1], got shape {tuple(kl_weight.shape)}"
            )
        kl_weight = float(kl_weight)
    return check_float("kl_weight", kl_weight, low=0.0, high=1.0)


def lk_loss(
    draft_logits: torch.Tensor,
    target_logits: Target,
    *,
    kind: str = "log_alpha",
    reduction: str = "mean",
    mask: torch.Tensor | None = None,
    temperature: float = 1.0,
    kl_weight: float | torch.Tensor = 0.5,
    renormalize_target: bool = True,
    chunk_size: int | None = None,
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
      (:class:`LKLoss` adapts it during training): KL gives a dense gradient on every
      token, the LK term aims at the acceptance rate;
    - ``"kl"``: forward ``KL(p || q)``, the standard objective (for comparisons;
      on a top-k or partial target it is the KL of the renormalised subset).

    All kinds are minimised exactly at ``q = p``.

    Args:
        draft_logits: Draft logits (*, vocab), any float dtype; the gradient flows
            into them.
        target_logits: Target logits or log-probs (*, vocab), or a top-k pair
            ``(indices (*, k) int, values (*, k) float)``. Treated as a constant.
        kind: One of :data:`LK_KINDS`.
        reduction: ``"mean"`` over (unmasked) positions, ``"sum"``, or ``"none"`` for
            the per-position loss of shape ``*`` (masked positions set to 0).
        mask: Optional bool tensor of shape ``*``: True where the loss counts.
        temperature: Softmax temperature T > 0 applied to both models.
        kl_weight: The KL weight w in [0, 1] of ``"hybrid"`` (float or 1-element tensor).
        renormalize_target: True (default): the target values are logits and are
            normalised over the given entries. False: they are log-probabilities of the
            full target on a subset of its vocabulary, kept as given (see the module
            docstring); needs ``temperature=1``.
        chunk_size: Rows per chunk of the fused full-vocabulary path (default: about
            65536 floats per chunk).

    Returns:
        float32 tensor (float64 for float64 draft logits): a scalar, or shape ``*``
        with ``reduction="none"``.

    Raises:
        TypeError: If an input is not a tensor of the right kind.
        ValueError: On mismatched shapes or vocabulary sizes, NaN/+inf logits, a row of
            only -inf, an all-False mask, an unknown ``kind``/``reduction``, a
            temperature <= 0, a ``kl_weight`` outside [0, 1], or partial log-probs that
            sum to more than 1.

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
    loss, _ = _lk_loss_and_log_alpha(
        draft_logits,
        target_logits,
        kind=kind,
        reduction=reduction,
        mask=mask,
        temperature=temperature,
        kl_weight=kl_weight,
        renormalize_target=renormalize_target,
        chunk_size=chunk_size,
    )
    return loss


def _lk_loss_and_log_alpha(
    draft_logits: Any,
    target_logits: Any,
    *,
    kind: str,
    reduction: str,
    mask: Any,
    temperature: Any,
    kl_weight: Any,
    renormalize_target: Any,
    chunk_size: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`lk_loss` and, for the LK kinds, the per-position ``log alpha`` (detached)."""
    check_choice("kind", kind, LK_KINDS)
    check_choice("reduction", reduction, _REDUCTIONS)
    t = _check_temperature(temperature)
    draft_logits = _check_tensor("draft_logits", draft_logits)
    if not isinstance(renormalize_target, bool):
        raise TypeError(f"renormalize_target must be a bool, got {renormalize_target!r}")
    if not renormalize_target and t != 1.0:
        raise ValueError(
            "renormalize_target=False needs temperature=1 (log-probabilities of a subset "
            f"cannot be re-tempered without the full vocabulary), got {temperature!r}"
        )
    w = _check_kl_weight(kl_weight) if kind == "hybrid" else 0.0
    lead, vocab = draft_logits.shape[:-1], draft_logits.shape[-1]
    mask = _check_mask(mask, lead)
    if isinstance(target_logits, torch.Tensor):
        target = _check_tensor("target_logits", target_logits).detach()
        if target.shape != draft_logits.shape:
            raise ValueError(
                "target_logits must have the shape of draft_logits "
                f"{tuple(draft_logits.shape)}, got {tuple(target.shape)}"
            )
        if target.device != draft_logits.device:
            raise ValueError(
                f"target_logits is on {target.device} but draft_logits on {draft_logits.device}"
            )
        chunk = (
            _default_chunk(vocab)
            if chunk_size is None
            else check_int("chunk_size", chunk_size, low=1)
        )
        z2 = draft_logits.reshape(-1, vocab)
        t2 = target.reshape(-1, vocab)
        per_pos, la = _FusedLK.apply(z2, t2, kind, w, t, renormalize_target, chunk)
        per_pos, log_alpha = per_pos.reshape(lead), (None if kind == "kl" else la.reshape(lead))
    else:
        indices, values = _topk_pair(target_logits, draft_logits)
        logp, logp_a, logq = _topk_terms(draft_logits, indices, values, t, renormalize_target)
        per_pos, log_alpha = _topk_rows(logp, logp_a, logq, kind, w)
    return _reduce(per_pos, mask, reduction), log_alpha


@torch.no_grad()
def acceptance_rate(
    draft_logits: torch.Tensor,
    target_logits: Target,
    *,
    temperature: float = 1.0,
    mask: torch.Tensor | None = None,
    reduction: str = "none",
    renormalize_target: bool = True,
) -> torch.Tensor:
    """Per-position acceptance probability of speculative sampling.

    At temperature T > 0 this is ``alpha = sum_x min(p, q)`` with ``p, q`` the
    tempered softmaxes; at T = 0 (greedy decoding) it is ``1[argmax q = argmax p]``.

    Args:
        draft_logits: (*, vocab).
        target_logits: Target logits / log-probs (*, vocab) or a top-k pair
            ``(indices, values)``; at T = 0 the top-1 of the pair is the target's
            greedy token, so k = 1 suffices.
        temperature: T >= 0.
        mask: Optional bool tensor of shape ``*`` of positions that count.
        reduction: ``"none"`` (shape ``*``), ``"mean"`` or ``"sum"`` over positions.
        renormalize_target: As in :func:`lk_loss`. With False the result is the sum
            over the given subset, a lower bound of the full acceptance rate (exact when
            the draft puts no mass outside the subset). At T = 0 the target's greedy
            token is taken to be the best of the given entries.

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
    check_choice("reduction", reduction, _REDUCTIONS)
    t = _check_temperature(temperature, allow_zero=True)
    draft_logits = _check_tensor("draft_logits", draft_logits)
    lead, vocab = draft_logits.shape[:-1], draft_logits.shape[-1]
    if not renormalize_target and t not in (0.0, 1.0):
        raise ValueError(f"renormalize_target=False needs temperature 0 or 1, got {temperature!r}")
    dtype = _compute_dtype(draft_logits)
    if isinstance(target_logits, torch.Tensor):
        target = _check_tensor("target_logits", target_logits)
        if target.shape != draft_logits.shape:
            raise ValueError(
                "target_logits must have the shape of draft_logits "
                f"{tuple(draft_logits.shape)}, got {tuple(target.shape)}"
            )
        z2, t2 = draft_logits.reshape(-1, vocab), target.reshape(-1, vocab)
        chunk = _default_chunk(vocab)
        out = torch.empty(z2.shape[0], dtype=torch.float32, device=z2.device)
        lse_z = torch.empty(z2.shape[0], dtype=dtype, device=z2.device)
        lse_t = torch.empty_like(lse_z)
        for s in range(0, z2.shape[0], chunk):
            e = min(z2.shape[0], s + chunk)
            zc, tc = z2[s:e].to(dtype), t2[s:e].to(dtype)
            lse_z[s:e] = torch.logsumexp(zc, -1)
            lse_t[s:e] = torch.logsumexp(tc, -1)
            if t == 0:
                out[s:e] = (zc.argmax(-1) == tc.argmax(-1)).float()
                continue
            zc, tc, lz, lt = _chunk_stats(zc, tc, t)
            logp = tc - lt if renormalize_target else tc
            out[s:e] = log_acceptance(logp, zc - lz).exp().clamp(0.0, 1.0)
        _check_normalizers("draft_logits", lse_z)
        _check_normalizers("target_logits", lse_t)
        if not renormalize_target:
            _check_partial("target_logits", lse_t)
        alpha = out.reshape(lead)
    else:
        indices, values = _topk_pair(target_logits, draft_logits)
        if t == 0:
            lz = torch.logsumexp(draft_logits.to(dtype), -1)
            _check_normalizers("draft_logits", lz)
            top = indices.gather(-1, values.argmax(-1, keepdim=True))[..., 0]
            alpha = (draft_logits.argmax(-1) == top).float()
        else:
            _, logp_a, logq = _topk_terms(draft_logits, indices, values, t, renormalize_target)
            alpha = log_acceptance(logp_a, logq).exp().clamp(0.0, 1.0).float()
    mask = _check_mask(mask, alpha.shape)
    return _reduce(alpha, mask, reduction)


def kl_weight_schedule(
    step: int, total_steps: int, *, start: float = 1.0, end: float = 0.0, warm: float = 0.5
) -> float:
    """KL weight of the ``"hybrid"`` loss on a fixed schedule: a half cosine, start to end.

    Args:
        step: Current optimizer step (0-based).
        total_steps: Steps of the whole run.
        start: Weight at the beginning (1.0 = pure KL).
        end: Weight at the end (0.0 = pure ``-log alpha``).
        warm: Fraction of the run over which the weight decays from ``start`` to
            ``end`` (0 = switch at once).

    Returns:
        The weight in [min(start, end), max(start, end)].

    Raises:
        ValueError: If a weight is outside [0, 1], ``warm`` outside [0, 1], or
            ``total_steps`` < 1.

    Example:
        >>> kl_weight_schedule(0, 100), kl_weight_schedule(100, 100)
        (1.0, 0.0)
    """
    total_steps = check_int("total_steps", total_steps, low=1)
    for name, value in (("start", start), ("end", end), ("warm", warm)):
        check_float(name, value, low=0.0, high=1.0)
    horizon = warm * total_steps
    if horizon <= 0:
        return float(end)
    progress = min(1.0, max(0.0, step / horizon))
    return float(end + (start - end) * 0.5 * (1 + math.cos(math.pi * progress)))


class LKLoss(torch.nn.Module):
    """``nn.Module`` wrapper of :func:`lk_loss`, with the hybrid's KL weight and its state.

    The KL weight ``w`` of ``kind="hybrid"`` is, by default, **adaptive**: the
    rejection rate of the draft, ``w = 1 - alpha_bar``, where ``alpha_bar`` is an
    exponential moving average of the batches' mean acceptance rate (the first batch
    sets it). While the draft is far from the target, KL's dense gradient does most
    of the work; as the acceptance rate grows, the loss moves to ``-log alpha``. Call
    :meth:`step` after each optimizer step: it folds the last batch's acceptance rate
    into the average (like a learning-rate scheduler's ``step``). The average and the
    step count are buffers, so they are in ``state_dict`` and follow ``.to(device)``.

    Args:
        kind: One of :data:`LK_KINDS`.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        temperature: Softmax temperature > 0.
        kl_weight: For ``"hybrid"``: ``"adaptive"`` (default), or a constant in [0, 1].
        total_steps: If set (and ``kl_weight`` is ``"adaptive"``), the weight follows
            the fixed schedule :func:`kl_weight_schedule` over this many steps instead.
        momentum: Weight of the old average in the moving average, in [0, 1).
        renormalize_target: As in :func:`lk_loss`.

    Raises:
        ValueError: On an unknown ``kind``/``reduction`` or an out-of-range argument.

    Example:
        >>> import torch
        >>> criterion = LKLoss("hybrid")
        >>> draft = torch.zeros(2, 3, 5, requires_grad=True)
        >>> loss = criterion(draft, torch.randn(2, 3, 5))
        >>> loss.backward()
        >>> criterion.step()
        >>> 0.0 <= criterion.current_kl_weight <= 1.0
        True
        >>> sorted(criterion.state_dict())
        ['alpha_ema', 'steps_done']
    """

    def __init__(
        self,
        kind: str = "log_alpha",
        *,
        reduction: str = "mean",
        temperature: float = 1.0,
        kl_weight: float | str = "adaptive",
        total_steps: int | None = None,
        momentum: float = 0.9,
        renormalize_target: bool = True,
    ) -> None:
        super().__init__()
        self.kind = check_choice("kind", kind, LK_KINDS)
        self.reduction = check_choice("reduction", reduction, _REDUCTIONS)
        self.temperature = _check_temperature(temperature)
        if isinstance(kl_weight, str):
            check_choice("kl_weight", kl_weight, ("adaptive",))
            self.kl_weight: float | str = kl_weight
        else:
            self.kl_weight = check_float("kl_weight", kl_weight, low=0.0, high=1.0)
            if total_steps is not None:
                raise ValueError("give either a constant kl_weight or total_steps, not both")
        self.total_steps = (
            None if total_steps is None else check_int("total_steps", total_steps, low=1)
        )
        self.momentum = check_float("momentum", momentum, low=0.0, high=1.0, high_inclusive=False)
        self.renormalize_target = renormalize_target
        self.register_buffer("steps_done", torch.zeros((), dtype=torch.long))
        self.register_buffer("alpha_ema", torch.full((), float("nan")))
        self._last_alpha: torch.Tensor | None = None

    @property
    def current_kl_weight(self) -> float:
        """The KL weight the next call uses (meaningful for ``kind="hybrid"``)."""
        if not isinstance(self.kl_weight, str):
            return float(self.kl_weight)
        if self.total_steps is not None:
            return kl_weight_schedule(int(self.steps_done), self.total_steps)
        ema = float(self.alpha_ema)
        return 1.0 if math.isnan(ema) else min(1.0, max(0.0, 1.0 - ema))

    def step(self) -> None:
        """Advance the state by one optimizer step (fold the last batch's alpha in)."""
        self.steps_done += 1
        if self._last_alpha is not None:
            a = self._last_alpha.to(self.alpha_ema)
            first = torch.isnan(self.alpha_ema)
            self.alpha_ema.copy_(
                torch.where(first, a, self.momentum * self.alpha_ema + (1 - self.momentum) * a)
            )
            self._last_alpha = None

    def forward(
        self, draft_logits: torch.Tensor, target_logits: Target, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Loss of ``draft_logits`` against ``target_logits`` (see :func:`lk_loss`)."""
        w = self.current_kl_weight if self.kind == "hybrid" else 0.5
        loss, log_alpha = _lk_loss_and_log_alpha(
            draft_logits,
            target_logits,
            kind=self.kind,
            reduction=self.reduction,
            mask=mask,
            temperature=self.temperature,
            kl_weight=w,
            renormalize_target=self.renormalize_target,
            chunk_size=None,
        )
        if log_alpha is not None and self.training:
            # the batch's mean acceptance rate, for the adaptive weight (computed by the
            # loss itself: no second pass over the vocabulary)
            m = None if mask is None else mask.bool()
            self._last_alpha = _reduce(log_alpha.exp(), m, "mean")
        return loss

    def extra_repr(self) -> str:
        """The module's settings, shown by ``repr``."""
        return (
            f"kind={self.kind!r}, reduction={self.reduction!r}, temperature={self.temperature}, "
            f"kl_weight={self.kl_weight!r}"
        )
