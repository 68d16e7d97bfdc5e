"""Speculative sampling (draft gamma tokens, verify with the target) and its metrics.

The decoder is the standard one of Leviathan et al. (2023) and Chen et al. (2023):
the draft proposes ``gamma`` tokens ``x_i ~ q_i``; the target scores all of them in
one forward pass; token i is accepted with probability ``min(1, p_i(x_i)/q_i(x_i))``;
at the first rejection a token is drawn from ``norm(max(p_i - q_i, 0))``; when all
``gamma`` are accepted a bonus token is drawn from the target's next distribution.
Every cycle thus emits between 1 and ``gamma + 1`` tokens, and the emitted sequence
follows the target's distribution exactly. At temperature 0 both models decode
greedily and a draft token is accepted iff it equals the target's argmax, so the
output equals the target's greedy output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

__all__ = [
    "SpeculativeOutput",
    "expected_acceptance_length",
    "speculative_generate",
]


def expected_acceptance_length(alphas: Any, gamma: int) -> Any:
    """Expected tokens emitted per target call when each draft token is accepted w.p. alpha.

    ``tau(alpha, gamma) = (1 - alpha^(gamma + 1)) / (1 - alpha) = sum_{i=0}^{gamma} alpha^i``
    (Leviathan et al., 2023, eq. 1), computed as the sum so that alpha = 1 gives
    exactly ``gamma + 1``.

    Args:
        alphas: Acceptance rate(s) in [0, 1]: a float, numpy array or torch tensor.
            Pass the mean acceptance rate for the usual i.i.d. estimate of the mean
            acceptance length; pass per-position rates for per-position values.
        gamma: Number of draft tokens per cycle, >= 1.

    Returns:
        Same type and shape as ``alphas`` (a float for a float), values in [1, gamma+1].

    Raises:
        ValueError: If ``gamma`` < 1 or an alpha is outside [0, 1] or NaN.
        TypeError: If ``gamma`` is not an int.

    Example:
        >>> expected_acceptance_length(0.5, 3)
        1.875
        >>> expected_acceptance_length(1.0, 5)
        6.0
    """
    if isinstance(gamma, bool) or not isinstance(gamma, int | np.integer):
        raise TypeError(f"gamma must be an int, got {type(gamma).__name__}")
    if gamma < 1:
        raise ValueError(f"gamma must be >= 1, got {gamma}")
    is_tensor = isinstance(alphas, torch.Tensor)
    a = alphas.detach().double() if is_tensor else np.asarray(alphas, dtype=np.float64)
    bad = (a < 0) | (a > 1) | (a != a)
    if bool(bad.any()):
        raise ValueError("alphas must lie in [0, 1] (no NaN)")
    total = a * 0 + 1.0
    power = a * 0 + 1.0
    for _ in range(int(gamma)):
        power = power * a
        total = total + power
    if is_tensor:
        return total.to(alphas.dtype if alphas.is_floating_point() else torch.float64)
    return float(total) if np.ndim(alphas) == 0 else total


@dataclass
class SpeculativeOutput:
    """What :func:`speculative_generate` produced.

    Attributes:
        tokens: int64 tensor (prompt_len + n_new,) (the prompt followed by new tokens).
        acceptance_lengths: Tokens emitted in each cycle (accepted drafts + 1), each in
            [1, gamma + 1]; the last cycle may be cut short by ``max_new_tokens``.
        accepted: Draft tokens accepted in each cycle, in [0, gamma].
        target_calls: Number of target forward passes (= number of cycles).
    """

    tokens: torch.Tensor
    acceptance_lengths: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    target_calls: int = 0

    @property
    def mean_acceptance_length(self) -> float:
        """Average tokens per cycle over the full cycles (NaN if none)."""
        return float(np.mean(self.acceptance_lengths)) if self.acceptance_lengths else float("nan")


def _logits_of(model: Callable[..., Any], ids: torch.Tensor) -> torch.Tensor:
    out = model(ids[None, :])
    return getattr(out, "logits", out)[0].float()


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    return torch.softmax(logits / temperature, dim=-1)


def _sample(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    return int(torch.multinomial(probs, 1, generator=generator))


@torch.no_grad()
def speculative_generate(
    target: Callable[..., Any],
    draft: Callable[..., Any],
    prompt: Any,
    *,
    gamma: int = 4,
    max_new_tokens: int = 32,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    context_window: int | None = None,
) -> SpeculativeOutput:
    """Generate with speculative sampling and record the acceptance length per cycle.

    Batch size 1 (the usual setting of speculative decoding). Models are called on
    the whole (windowed) prefix each time, without a key-value cache, which keeps the
    decoder model-agnostic; the *number* of target calls is what speculative decoding
    saves and what :attr:`SpeculativeOutput.acceptance_lengths` measures.

    Args:
        target: Callable ``ids (1, n) int64 -> logits (1, n, vocab)`` (or an object with
            ``.logits``, e.g. a transformers causal LM in eval mode).
        draft: Same interface and vocabulary as ``target``.
        prompt: int token ids (n,) with n >= 1 (list, numpy array or tensor).
        gamma: Draft tokens per cycle, >= 1.
        max_new_tokens: Tokens to generate, >= 1.
        temperature: Sampling temperature >= 0 (0 = greedy for both models).
        generator: A ``torch.Generator`` on the models' device for reproducible sampling.
        context_window: Feed the models at most this many trailing tokens (None: all).

    Returns:
        A :class:`SpeculativeOutput`.

    Raises:
        ValueError: If ``gamma`` or ``max_new_tokens`` < 1, ``temperature`` < 0, the
            prompt is empty or not 1-D, or the two models' vocabularies differ.
        TypeError: If ``gamma``/``max_new_tokens`` is not an int.

    References:
        Leviathan, Kalman & Matias (2023); Chen et al. (2023), "Accelerating large
        language model decoding with speculative sampling".

    Example:
        >>> import torch
        >>> table = torch.randn(5, 5)
        >>> lm = lambda ids: table[ids]
        >>> out = speculative_generate(lm, lm, [0], gamma=3, max_new_tokens=8)
        >>> out.accepted[0]  # identical draft and target: every draft token is accepted
        3
    """
    for name, value in (("gamma", gamma), ("max_new_tokens", max_new_tokens)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if isinstance(temperature, bool) or not float(temperature) >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    temperature = float(temperature)
    ids = torch.as_tensor(np.asarray(prompt) if not isinstance(prompt, torch.Tensor) else prompt)
    if ids.ndim != 1 or ids.numel() == 0 or ids.is_floating_point():
        raise ValueError(
            f"prompt must be a non-empty 1-D integer sequence, got shape {tuple(ids.shape)}"
        )
    device = generator.device if generator is not None else None
    ids = ids.long().to(device) if device is not None else ids.long()
    window = context_window

    def view(seq: torch.Tensor) -> tuple[torch.Tensor, int]:
        if window is None or seq.numel() <= window:
            return seq, 0
        return seq[-window:], seq.numel() - window

    out = SpeculativeOutput(tokens=ids)
    n_prompt = ids.numel()
    seq = ids.clone()
    vocab = None
    while seq.numel() - n_prompt < max_new_tokens:
        remaining = max_new_tokens - (seq.numel() - n_prompt)
        k = min(gamma, remaining)
        # Draft k tokens autoregressively.
        proposal = seq
        q_rows = []
        for _ in range(k):
            logits = _logits_of(draft, view(proposal)[0])[-1]
            q = _probs(logits, temperature)
            token = _sample(q, generator) if temperature > 0 else int(logits.argmax())
            q_rows.append(q)
            proposal = torch.cat([proposal, proposal.new_tensor([token])])
        # One target pass scores the k drafted positions and the bonus position.
        ctx, offset = view(proposal)
        t_logits = _logits_of(target, ctx)
        if vocab is None:
            vocab = t_logits.shape[-1]
            if q_rows[0].shape[-1] != vocab:
                raise ValueError(
                    f"draft vocabulary ({q_rows[0].shape[-1]}) differs from target's ({vocab})"
                )
        first = seq.numel() - 1 - offset  # logits row predicting the first drafted token
        p_rows = _probs(t_logits[first : first + k + 1], temperature)
        out.target_calls += 1
        n_accepted = 0
        new_token = None
        for i in range(k):
            x = int(proposal[seq.numel() + i])
            p_x, q_x = float(p_rows[i, x]), float(q_rows[i][x])
            if temperature == 0:
                accept = p_x == 1.0
            else:
                u = float(torch.rand((), generator=generator, device=p_rows.device))
                accept = u * q_x < p_x  # u < p/q without dividing by a tiny q
            if not accept:
                residual = (p_rows[i] - q_rows[i]).clamp_min(0)
                if temperature == 0 or float(residual.sum()) <= 0:
                    residual = p_rows[i]  # p == q up to rounding: sample from p itself
                new_token = _sample(residual / residual.sum(), generator)
                break
            n_accepted += 1
        if new_token is None and n_accepted == k:
            if k < remaining:
                new_token = _sample(p_rows[k], generator)
        emitted = proposal[seq.numel() : seq.numel() + n_accepted]
        extra = [] if new_token is None else [new_token]
        seq = torch.cat([seq, emitted, seq.new_tensor(extra)])
        out.accepted.append(n_accepted)
        out.acceptance_lengths.append(n_accepted + len(extra))
    out.tokens = seq[: n_prompt + max_new_tokens]
    return out
