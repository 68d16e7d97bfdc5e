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

Batches: all rows advance together. Each cycle keeps, in every row, the shortest
accepted prefix among the rows, ``n = min_b n_b``, then emits one more token per row:
the residual sample where that row rejected draft ``n``, the (accepted) draft token
where it did not, the bonus token where every row accepted all. Each emitted token is
still an exact sample of the target given its prefix (a row's truncation depends only
on the other rows' independent coin flips), and the key-value caches stay aligned
without padding. A batch therefore runs at the pace of its least accepted row.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_float, check_int

__all__ = [
    "SpeculativeOutput",
    "expected_acceptance_length",
    "sequence_acceptance_length",
    "speculative_generate",
]


def _as_alphas(alphas: Any) -> tuple[Any, bool]:
    is_tensor = isinstance(alphas, torch.Tensor)
    a = alphas.detach().double() if is_tensor else np.asarray(alphas, dtype=np.float64)
    bad = (a < 0) | (a > 1) | (a != a)
    if bool(bad.any()):
        raise ValueError("alphas must lie in [0, 1] (no NaN)")
    return a, is_tensor


def expected_acceptance_length(alphas: Any, gamma: int) -> Any:
    """Expected tokens emitted per target call when each draft token is accepted w.p. alpha.

    ``tau(alpha, gamma) = (1 - alpha^(gamma + 1)) / (1 - alpha) = sum_{i=0}^{gamma} alpha^i``
    (Leviathan et al., 2023, eq. 1), computed as the sum so that alpha = 1 gives
    exactly ``gamma + 1``. It is a function of the mean acceptance rate alone; see
    :func:`sequence_acceptance_length` for the length along real text.

    Args:
        alphas: Acceptance rate(s) in [0, 1]: a float, numpy array or torch tensor.
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
    gamma = check_int("gamma", gamma, low=1)
    a, is_tensor = _as_alphas(alphas)
    total = a * 0 + 1.0
    power = a * 0 + 1.0
    for _ in range(gamma):
        power = power * a
        total = total + power
    if is_tensor:
        return total.to(alphas.dtype if alphas.is_floating_point() else torch.float64)
    return float(total) if np.ndim(alphas) == 0 else total


def sequence_acceptance_length(alphas: Any, gamma: int) -> Any:
    """Expected tokens per target call when speculative decoding walks along a sequence.

    ``alphas[..., i]`` is the probability that a draft token at position i of the
    generated text is accepted (e.g. the draft's acceptance rate at that position of
    held-out text, the draft conditioned on the true prefix). Decoding starts at
    position 0; a cycle starting at position i drafts ``k = min(gamma, S - i - 1)``
    tokens, accepts the first j with probability ``alpha_i ... alpha_{i+j-1}
    (1 - alpha_{i+j})``, emits j + 1 tokens and moves to ``i + j + 1``. With ``C(i)``
    the expected number of cycles from i to the end (``C(i) = 1 + sum_j P_i(j)
    C(i + j + 1)``, ``C(S) = 0``) the result is ``S / C(0)``.

    Unlike :func:`expected_acceptance_length` of the mean alpha, this depends on where
    the accepted positions lie: runs of easy positions give long cycles, isolated
    ones do not, so two drafts with the same mean alpha can differ.

    Args:
        alphas: Per-position acceptance rates in [0, 1], shape (..., S) with S >= 1
            (numpy array or torch tensor).
        gamma: Draft tokens per cycle, >= 1.

    Returns:
        float64 numpy array (or tensor for a tensor) of shape ``...``, in [1, gamma + 1].

    Raises:
        ValueError: If ``gamma`` < 1, the sequence is empty, or an alpha is outside [0, 1].
        TypeError: If ``gamma`` is not an int.

    Example:
        >>> import numpy as np
        >>> float(sequence_acceptance_length(np.ones(9), 2))  # 3 tokens per call
        3.0
        >>> float(sequence_acceptance_length(np.zeros(9), 2))  # one token per call
        1.0
    """
    gamma = check_int("gamma", gamma, low=1)
    a, is_tensor = _as_alphas(alphas)
    a_np = a.cpu().numpy() if is_tensor else a
    if a_np.ndim < 1 or a_np.shape[-1] < 1:
        raise ValueError(f"alphas must have shape (..., S) with S >= 1, got {a_np.shape}")
    s = a_np.shape[-1]
    cycles = np.zeros((*a_np.shape[:-1], s + 1))
    for i in range(s - 1, -1, -1):
        k = min(gamma, s - i - 1)
        expect = np.zeros(a_np.shape[:-1])
        prefix = np.ones(a_np.shape[:-1])
        for j in range(k):
            # exactly j accepted: all of i..i+j-1 accepted, i+j rejected
            expect += prefix * (1 - a_np[..., i + j]) * cycles[..., i + j + 1]
            prefix = prefix * a_np[..., i + j]
        expect += prefix * cycles[..., i + k + 1]
        cycles[..., i] = 1.0 + expect
    out = s / cycles[..., 0]
    return torch.as_tensor(np.asarray(out)) if is_tensor else out


@dataclass
class SpeculativeOutput:
    """What :func:`speculative_generate` produced.

    Attributes:
        tokens: int64 tensor: the prompt followed by the new tokens, (batch, n + new)
            for a 2-D prompt, (n + new,) for a 1-D one. Rows that stopped at
            ``eos_token_id`` are padded with ``pad_token_id`` after it.
        acceptance_lengths: Tokens emitted per row in each cycle (accepted drafts + 1),
            each in [1, gamma + 1].
        draft_tokens: Tokens drafted in each cycle (``gamma``, fewer near the end).
        accepted: Per cycle, the draft tokens each row accepted on its own, in
            [0, draft_tokens] (the batch keeps the smallest of these among live rows).
        target_calls: Number of target forward passes after the prompt (= cycles).
        draft_calls: Number of draft forward passes after the prompt.
    """

    tokens: torch.Tensor
    acceptance_lengths: list[int] = field(default_factory=list)
    draft_tokens: list[int] = field(default_factory=list)
    accepted: list[list[int]] = field(default_factory=list)
    target_calls: int = 0
    draft_calls: int = 0
    gamma: int = 0

    @property
    def mean_acceptance_length(self) -> float:
        """Average tokens per cycle over the full cycles (``gamma`` drafted; NaN if none)."""
        full = [
            n
            for n, k in zip(self.acceptance_lengths, self.draft_tokens, strict=True)
            if k == self.gamma
        ]
        return float(np.mean(full)) if full else float("nan")


def _module_device(model: Any) -> torch.device | None:
    if isinstance(model, torch.nn.Module):
        for p in model.parameters():
            return p.device
    return None


def _cache_keyword(model: Any) -> str | None:
    """The keyword a transformers-style model takes its key-value cache under."""
    if not isinstance(model, torch.nn.Module):
        return None
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return None
    for name in ("cache", "past_key_values"):  # transformers >= 5.2x, older releases
        if name in params:
            return name
    return None


class _Runner:
    """Feeds a model new tokens, with a key-value cache where the model has one.

    A transformers-style module (``forward(input_ids, attention_mask, position_ids,
    cache | past_key_values, use_cache)``) keeps a cache that is cropped on rejection;
    any other callable ``ids (B, n) -> logits (B, n, V)`` is called on the whole prefix.
    """

    def __init__(self, model: Callable[..., Any], name: str) -> None:
        self.model, self.name = model, name
        self.kw = _cache_keyword(model)
        self.cache: Any = None
        self.length = 0  # tokens fed so far
        self.ids: torch.Tensor | None = None  # uncached: the fed prefix

    def feed(self, new: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        m = new.shape[1]
        end = self.length + m
        if self.kw is None:
            self.ids = new if self.ids is None else torch.cat([self.ids, new], 1)
            out = self.model(self.ids)
            logits = getattr(out, "logits", out)[:, -m:]
        else:
            kwargs = {
                "input_ids": new,
                "attention_mask": mask[:, :end],
                "position_ids": positions[:, self.length : end],
                "use_cache": True,
                self.kw: self.cache,
            }
            out = self.model(**kwargs)
            self.cache = getattr(out, self.kw, None)
            if self.cache is None:
                self.cache = getattr(out, "past_key_values", None)
            logits = out.logits
        self.length = end
        if logits.ndim != 3 or logits.shape[:2] != new.shape:
            raise ValueError(
                f"{self.name} must return logits (batch, n, vocab) for ids {tuple(new.shape)}, "
                f"got {tuple(logits.shape)}"
            )
        return logits.float()

    def crop(self, length: int) -> None:
        drop = self.length - length
        if drop <= 0:
            return
        if self.kw is None:
            assert self.ids is not None
            self.ids = self.ids[:, :length]
        else:
            self.cache.crop(-drop)  # negative: remove that many (every transformers 4.4x/5.x)
        self.length = length


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    return torch.softmax(logits / temperature, dim=-1)


def _output_size(model: Any) -> int | None:
    get = getattr(model, "get_output_embeddings", None)
    head = get() if callable(get) else None
    size = getattr(head, "out_features", None)
    return int(size) if isinstance(size, int) else None


@torch.no_grad()
def speculative_generate(
    target: Callable[..., Any],
    draft: Callable[..., Any],
    input_ids: Any,
    *,
    attention_mask: torch.Tensor | None = None,
    gamma: int = 4,
    max_new_tokens: int = 32,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    draft_vocab: torch.Tensor | None = None,
    eos_token_id: int | None = None,
    pad_token_id: int | None = None,
) -> SpeculativeOutput:
    """Generate with speculative sampling, batched and with key-value caches.

    Args:
        target: The target model: a transformers causal LM (its key-value cache is
            used and cropped on rejection), or any callable ``ids (B, n) int64 ->
            logits (B, n, V)`` (or an object with ``.logits``), called on the whole
            prefix.
        draft: The draft model, same interface; its logits are over the target's
            vocabulary, or over ``draft_vocab``.
        input_ids: Prompt token ids, (batch, n) or (n,) with n >= 1 (list, numpy array
            or tensor); moved to the target's device.
        attention_mask: Optional (batch, n) 0/1 mask for left-padded prompts
            (transformers models only).
        gamma: Draft tokens per cycle, >= 1.
        max_new_tokens: Tokens to generate per row, >= 1.
        temperature: Sampling temperature >= 0 (0 = greedy for both models).
        generator: A ``torch.Generator`` on the target's device for reproducible sampling.
        draft_vocab: Optional int64 (V_d,): the target token id of each draft output
            (a reduced draft vocabulary, as in EAGLE-3); the draft then proposes only
            these tokens (``q = 0`` elsewhere) and its inputs are target ids.
        eos_token_id: Stop a row after it emits this token; stop when every row has.
        pad_token_id: Fills a stopped row (default ``eos_token_id``).

    Returns:
        A :class:`SpeculativeOutput`.

    Raises:
        ValueError: On a bad ``gamma``/``max_new_tokens``/``temperature``, an empty or
            non-integer prompt, models on different devices or a generator on another
            device, a draft vocabulary that differs from the target's (or a bad
            ``draft_vocab``), or an attention mask with a plain callable.
        TypeError: If ``gamma``/``max_new_tokens`` is not an int.

    References:
        Leviathan, Kalman & Matias (2023); Chen et al. (2023), "Accelerating large
        language model decoding with speculative sampling".

    Example:
        >>> import torch
        >>> table = torch.randn(5, 5)
        >>> lm = lambda ids: table[ids]  # next-token logits depend on the last token
        >>> out = speculative_generate(lm, lm, [0], gamma=3, max_new_tokens=8)
        >>> out.accepted[0]  # identical draft and target: every draft token is accepted
        [3]
    """
    gamma = check_int("gamma", gamma, low=1)
    max_new_tokens = check_int("max_new_tokens", max_new_tokens, low=1)
    temperature = check_float("temperature", temperature, low=0.0)
    ids = (
        input_ids if isinstance(input_ids, torch.Tensor) else torch.as_tensor(np.asarray(input_ids))
    )
    squeeze = ids.ndim == 1
    if squeeze:
        ids = ids[None]
    if ids.ndim != 2 or ids.shape[1] == 0 or ids.shape[0] == 0 or ids.is_floating_point():
        raise ValueError(
            "input_ids must be a non-empty integer sequence (n,) or batch (batch, n), got "
            f"shape {tuple(ids.shape)}"
        )
    # Devices, up front.
    t_dev, d_dev = _module_device(target), _module_device(draft)
    if t_dev is not None and d_dev is not None and t_dev != d_dev:
        raise ValueError(f"target is on {t_dev} but draft on {d_dev}; put both on one device")
    device = t_dev or d_dev or ids.device
    if generator is not None and torch.device(generator.device).type != device.type:
        raise ValueError(f"generator is on {generator.device} but the models on {device}")
    ids = ids.to(device=device, dtype=torch.long)
    batch, n_prompt = ids.shape
    if attention_mask is None:
        mask = torch.ones_like(ids)
    else:
        mask = torch.as_tensor(attention_mask, device=device).long()
        if mask.shape != ids.shape:
            raise ValueError(
                f"attention_mask must have the shape of input_ids {tuple(ids.shape)}, "
                f"got {tuple(mask.shape)}"
            )
    runners = _Runner(target, "target"), _Runner(draft, "draft")
    if (mask == 0).any() and any(r.kw is None for r in runners):
        raise ValueError("attention_mask with padding needs transformers-style models")
    # Vocabularies, up front where the models say their output size.
    t_size, d_size = _output_size(target), _output_size(draft)
    if draft_vocab is not None:
        draft_vocab = torch.as_tensor(draft_vocab, device=device)
        if draft_vocab.ndim != 1 or draft_vocab.is_floating_point() or draft_vocab.numel() == 0:
            raise ValueError("draft_vocab must be a non-empty 1-D integer tensor (V_d,)")
        draft_vocab = draft_vocab.long()
        if draft_vocab.unique().numel() != draft_vocab.numel():
            raise ValueError("draft_vocab has repeated token ids")
    expected_draft = None if draft_vocab is None else draft_vocab.numel()

    def check_vocab(v_target: int, v_draft: int) -> None:
        want = v_target if expected_draft is None else expected_draft
        if v_draft != want:
            what = "the target's" if expected_draft is None else "len(draft_vocab)"
            raise ValueError(f"draft vocabulary ({v_draft}) differs from {what} ({want})")
        if draft_vocab is not None and int(draft_vocab.max()) >= v_target:
            raise ValueError(f"draft_vocab holds ids >= the target's vocabulary ({v_target})")

    if t_size is not None and d_size is not None:
        check_vocab(t_size, d_size)
    eos = None if eos_token_id is None else check_int("eos_token_id", eos_token_id, low=0)
    pad = eos if pad_token_id is None else check_int("pad_token_id", pad_token_id, low=0)

    total = n_prompt + max_new_tokens
    full_mask = torch.cat([mask, mask.new_ones(batch, max_new_tokens)], 1)
    positions = (full_mask.cumsum(-1) - 1).clamp_min(0)
    seq = ids
    tgt, drf = runners
    if n_prompt > 1:
        tgt.feed(seq[:, :-1], full_mask, positions)
        drf.feed(seq[:, :-1], full_mask, positions)
    out = SpeculativeOutput(tokens=seq, gamma=gamma)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    vocab: int | None = None

    def sample(probs: torch.Tensor) -> torch.Tensor:
        return torch.multinomial(probs, 1, generator=generator)[:, 0]

    while seq.shape[1] < total and not bool(finished.all()):
        length = seq.shape[1]
        k = min(gamma, total - length - 1)
        drafted, q_rows = [], []
        for i in range(k):
            new = seq[:, drf.length :] if i == 0 else drafted[-1][:, None]
            logits = drf.feed(new, full_mask, positions)[:, -1]
            out.draft_calls += 1
            q = _probs(logits, temperature)
            j = logits.argmax(-1) if temperature == 0 else sample(q)
            token = j if draft_vocab is None else draft_vocab[j]
            drafted.append(token)
            q_rows.append((q, j))
        block = torch.stack([seq[:, -1], *drafted], 1)
        t_logits = tgt.feed(block, full_mask, positions)
        out.target_calls += 1
        if vocab is None:
            vocab = t_logits.shape[-1]
            if q_rows:
                check_vocab(vocab, q_rows[0][0].shape[-1])
        p = _probs(t_logits, temperature)  # (B, k + 1, V)
        if k:
            x = torch.stack(drafted, 1)  # (B, k)
            p_x = p[:, :k].gather(-1, x[..., None])[..., 0]
            q_x = torch.stack([q.gather(-1, j[:, None])[:, 0] for q, j in q_rows], 1)
            if temperature == 0:
                accept = p_x == 1.0
            else:
                u = torch.rand(p_x.shape, generator=generator, device=device)
                accept = u * q_x < p_x  # u < p/q without dividing by a tiny q
            n_row = accept.long().cumprod(1).sum(1)
        else:
            n_row = torch.zeros(batch, dtype=torch.long, device=device)
        live = ~finished
        n = int(n_row[live].min()) if bool(live.any()) else k
        if n == k:
            nxt = p[:, k].argmax(-1) if temperature == 0 else sample(p[:, k])
        elif temperature == 0:
            nxt = p[:, n].argmax(-1)
        else:
            q_n, _ = q_rows[n]
            q_full = (
                q_n
                if draft_vocab is None
                else torch.zeros_like(p[:, n]).index_copy_(1, draft_vocab, q_n)
            )
            residual = (p[:, n] - q_full).clamp_min(0)
            empty = residual.sum(-1) <= 0
            residual[empty] = p[empty, n]  # p == q up to rounding: sample from p itself
            nxt = torch.where(accept[:, n], x[:, n], sample(residual))
        emitted = torch.cat([x[:, :n], nxt[:, None]], 1) if n else nxt[:, None]
        seq = torch.cat([seq, emitted], 1)
        if eos is not None:
            was = finished.clone()
            hit = emitted == eos
            # a row stops at its first EOS; everything after it (and rows done before) is pad
            after = hit.long().cumsum(1) - hit.long() > 0
            fill = was[:, None] | after
            seq[:, -emitted.shape[1] :] = torch.where(fill, torch.full_like(emitted, pad), emitted)
            finished = was | hit.any(1)
        out.acceptance_lengths.append(n + 1)
        out.draft_tokens.append(k)
        out.accepted.append(n_row.tolist())
        tgt.crop(length + n)
        drf.crop(length + n)
    out.tokens = seq[0] if squeeze else seq
    return out
