"""The two draft shapes of the experiment: a small draft LM and a head on the target.

Both propose tokens from a *reduced draft vocabulary*: the ``V_d`` most frequent
target tokens of the training text (EAGLE-3 drafts Llama-3's 128k vocabulary with a
32k one; FR-Spec restricts it further). The draft then costs ``V_d`` instead of
``V`` output logits per position, and its acceptance rate is the sum over the
``V_d`` tokens of ``min(p, q)``: the target's mass on the other tokens is mass the
draft cannot match, a capacity limit of its own. Train these drafts with
``lk_loss(..., renormalize_target=False)`` against the target's log-probabilities on
the draft vocabulary.

- :class:`VocabMappedLM`: a causal LM over the draft vocabulary (plus one id for
  every other token) that takes *target* token ids, so it plugs into
  :func:`lk_losses.speculative_generate` with ``draft_vocab``.
- :class:`FeatureHead`: a target-conditioned head (EAGLE-style input, Medusa-style
  output): from the target's last hidden state ``h_t`` and the embedding of the next
  token ``x_{t+1}`` it predicts ``x_{t+2}``, through a rank-``r`` bottleneck.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_int

__all__ = ["FeatureHead", "VocabMappedLM", "draft_vocabulary", "tiny_draft_lm"]


def draft_vocabulary(token_ids: Any, size: int, vocab_size: int) -> torch.Tensor:
    """The ``size`` most frequent token ids of ``token_ids`` (ties: lower id first).

    Args:
        token_ids: int token ids of the draft's training text, any shape.
        size: Draft vocabulary size ``V_d``, 1 <= size <= vocab_size.
        vocab_size: The target's vocabulary size ``V``.

    Returns:
        int64 tensor (size,) of target ids, most frequent first.

    Raises:
        ValueError: If ``size`` is out of range or an id lies outside [0, vocab_size).

    Example:
        >>> draft_vocabulary([5, 5, 1, 7, 1, 5], 2, 10).tolist()
        [5, 1]
    """
    vocab_size = check_int("vocab_size", vocab_size, low=1)
    size = check_int("size", size, low=1, high=vocab_size)
    ids = np.asarray(token_ids, dtype=np.int64).ravel()
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"token_ids must lie in [0, {vocab_size})")
    counts = np.bincount(ids, minlength=vocab_size)
    order = np.lexsort((np.arange(vocab_size), -counts))
    return torch.as_tensor(order[:size].copy(), dtype=torch.long)


def _cache_keyword(model: Any) -> str:
    import inspect

    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


class VocabMappedLM(torch.nn.Module):
    """A causal LM on a reduced vocabulary that reads and proposes target token ids.

    Inputs are target ids, mapped to draft ids (every token outside the draft
    vocabulary to one extra id ``V_d``); outputs are logits over the ``V_d`` draft
    tokens, in the order of ``draft_vocab``. The key-value cache of the wrapped
    transformers model passes through, so :func:`lk_losses.speculative_generate`
    uses it.

    Args:
        model: A transformers causal LM whose input vocabulary has ``V_d + 1`` ids and
            whose output layer gives ``V_d`` logits.
        draft_vocab: int64 (V_d,) target id of each draft token.
        vocab_size: The target's vocabulary size ``V``.

    Raises:
        ValueError: If ``draft_vocab`` is not 1-D, repeats an id or lies outside [0, V).
    """

    def __init__(self, model: torch.nn.Module, draft_vocab: torch.Tensor, vocab_size: int) -> None:
        super().__init__()
        vocab_size = check_int("vocab_size", vocab_size, low=1)
        dv = torch.as_tensor(draft_vocab).long()
        if dv.ndim != 1 or dv.unique().numel() != dv.numel():
            raise ValueError("draft_vocab must be 1-D with distinct ids")
        if int(dv.min()) < 0 or int(dv.max()) >= vocab_size:
            raise ValueError(f"draft_vocab ids must lie in [0, {vocab_size})")
        self.model = model
        to_draft = torch.full((vocab_size,), dv.numel(), dtype=torch.long)
        to_draft[dv] = torch.arange(dv.numel())
        self.register_buffer("draft_vocab", dv, persistent=False)
        self.register_buffer("to_draft", to_draft, persistent=False)
        self._kw = _cache_keyword(model)

    def get_output_embeddings(self) -> Any:
        """The wrapped model's output layer (``V_d`` outputs)."""
        return self.model.get_output_embeddings()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        cache: Any = None,
        use_cache: bool = False,
    ) -> Any:
        """Logits (batch, n, V_d) for target ids (batch, n); ``.cache`` when ``use_cache``."""
        kwargs = {
            "input_ids": self.to_draft[input_ids],
            "attention_mask": attention_mask,
            "position_ids": position_ids,
            "use_cache": use_cache,
            self._kw: cache,
        }
        out = self.model(**kwargs)
        if self._kw != "cache":  # older transformers: expose the cache under one name
            out["cache"] = out.past_key_values
        return out


def tiny_draft_lm(
    draft_vocab: torch.Tensor,
    vocab_size: int,
    *,
    hidden_size: int = 64,
    num_hidden_layers: int = 1,
    num_attention_heads: int = 2,
    intermediate_size: int | None = None,
    seed: int = 0,
    device: Any = "cpu",
) -> VocabMappedLM:
    """A small Llama draft on a reduced vocabulary (:class:`VocabMappedLM`), seeded.

    Args:
        draft_vocab: int64 (V_d,) target ids of the draft vocabulary.
        vocab_size: The target's vocabulary size.
        hidden_size: Width of the draft.
        num_hidden_layers: Decoder layers.
        num_attention_heads: Attention heads (``hidden_size`` must divide by it).
        intermediate_size: MLP width (default ``3 * hidden_size``).
        seed: Seed of the initial weights.
        device: Where to put it.

    Returns:
        The draft in training mode.
    """
    from icml26_core.lm import tiny_llama

    vd = int(torch.as_tensor(draft_vocab).numel())
    inner = tiny_llama(
        "1M",
        vd + 1,
        seed=seed,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_attention_heads,
        intermediate_size=intermediate_size or 3 * hidden_size,
        tie_word_embeddings=False,
    )
    head = torch.nn.Linear(hidden_size, vd, bias=False)
    with torch.no_grad():
        gen = torch.Generator().manual_seed(seed + 1_000_003)
        head.weight.copy_(0.02 * torch.randn(head.weight.shape, generator=gen))
    inner.lm_head = head
    return VocabMappedLM(inner, draft_vocab, vocab_size).to(device).train()


class FeatureHead(torch.nn.Module):
    """A head on the target's features: ``q(x_{t+2} | h_t, x_{t+1})`` on the draft vocabulary.

    ``logits = W_2 silu(W_1 [rms(h_t); rms(E x_{t+1})] + b_1) + b_2`` with ``W_1``
    (rank x 2 d), ``W_2`` (V_d x rank): a rank-``rank`` bottleneck on the target's
    last hidden state ``h_t`` (d) and the target's (frozen) embedding ``E`` of the token
    it just emitted. It drafts the token after next from features the target already
    computed (the input of EAGLE, one step; the output layer of a Medusa head).

    Args:
        embedding: The target's input embedding matrix (V, d); kept frozen, not copied.
        vocab: Draft vocabulary size ``V_d``.
        rank: Width of the bottleneck.
        seed: Seed of the initial weights.

    Raises:
        ValueError: If ``embedding`` is not 2-D or ``vocab``/``rank`` is not positive.
    """

    def __init__(self, embedding: torch.Tensor, vocab: int, rank: int = 32, seed: int = 0) -> None:
        super().__init__()
        if embedding.ndim != 2:
            raise ValueError(f"embedding must be (V, d), got shape {tuple(embedding.shape)}")
        vocab = check_int("vocab", vocab, low=1)
        rank = check_int("rank", rank, low=1)
        self.embedding = embedding.detach()
        d = embedding.shape[1]
        gen = torch.Generator().manual_seed(seed)
        self.inp = torch.nn.Linear(2 * d, rank)
        self.out = torch.nn.Linear(rank, vocab)
        with torch.no_grad():
            for layer in (self.inp, self.out):
                fan_in = layer.weight.shape[1]
                layer.weight.copy_(torch.randn(layer.weight.shape, generator=gen) / fan_in**0.5)
                layer.bias.zero_()
        self.to(embedding.device)

    @staticmethod
    def _rms(x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    def forward(self, hidden: torch.Tensor, next_ids: torch.Tensor) -> torch.Tensor:
        """Logits (..., V_d) from target features ``hidden`` (..., d) and ids ``next_ids`` (...)."""
        e = self.embedding[next_ids].to(self.inp.weight.dtype)
        x = torch.cat([self._rms(hidden.to(self.inp.weight.dtype)), self._rms(e)], -1)
        return self.out(torch.nn.functional.silu(self.inp(x)))
