"""Masked diffusion language models: the interface the decoders use, and two of them.

A masked diffusion LM (MDLM, LLaDA) maps a partially masked token sequence to
per-position logits over the vocabulary. The decoders in this package need only that
map and the id of the mask token, so any model satisfying :class:`MaskedDiffusionLM`
works: the small bidirectional :class:`MaskedDiffusionTransformer` trained here, or a
transformers masked LM behind :class:`TransformersMaskedLM`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from poke_smc._checks import positive_int

__all__ = [
    "MaskedDiffusionLM",
    "MaskedDiffusionTransformer",
    "NFECounter",
    "TransformersMaskedLM",
    "model_device",
]


@runtime_checkable
class MaskedDiffusionLM(Protocol):
    """What a decoder needs from a masked diffusion language model.

    ``model(tokens)`` takes an int64 tensor of shape ``(batch, length)`` in which some
    entries equal ``mask_token_id`` and returns float logits of shape
    ``(batch, length, vocab_size)`` for every position. ``mask_token_id`` may lie
    outside ``range(vocab_size)`` (the mask is an input-only token, as in
    :class:`MaskedDiffusionTransformer`); when it lies inside, decoders never emit it.
    """

    mask_token_id: int
    vocab_size: int

    def __call__(self, tokens: torch.Tensor) -> torch.Tensor:  # noqa: D102
        ...


def model_device(model: Any) -> torch.device:
    """The device of a model's first parameter (CPU for a parameterless callable)."""
    if isinstance(model, NFECounter):
        model = model.model
    params = getattr(model, "parameters", None)
    if callable(params):
        for p in params():
            return p.device
    device = getattr(model, "device", None)
    return torch.device(device) if device is not None else torch.device("cpu")


class MaskedDiffusionTransformer(nn.Module):
    """A small bidirectional transformer for masked diffusion over a fixed-length window.

    Token and learned position embeddings, ``n_layers`` pre-norm
    :class:`torch.nn.TransformerEncoderLayer` blocks with full (non-causal) attention and
    GELU, a final LayerNorm and a linear head. The mask is the extra input token
    ``vocab_size``, so the head predicts only real tokens.

    Args:
        vocab_size: Number of real tokens (the mask token is added on top).
        max_len: Longest sequence the position embedding covers.
        d_model: Width of the residual stream.
        n_layers: Number of transformer blocks.
        n_heads: Attention heads; must divide ``d_model``.
        dim_feedforward: Hidden width of the MLPs (default ``4 * d_model``).
        dropout: Dropout inside the blocks (0 for these small data sets).

    Shapes:
        ``forward(tokens)``: int64 ``(B, L)`` with ``L <= max_len`` and entries in
        ``[0, vocab_size]`` (``vocab_size`` is the mask) -> float ``(B, L, vocab_size)``.

    Raises:
        ValueError: On non-positive sizes or ``d_model % n_heads != 0``; in ``forward``,
            on a wrong rank, a too-long sequence or out-of-range ids.
    """

    def __init__(
        self,
        vocab_size: int,
        max_len: int,
        *,
        d_model: int = 128,
        n_layers: int = 4,
        n_heads: int = 4,
        dim_feedforward: int | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("max_len", max_len),
            ("d_model", d_model),
            ("n_layers", n_layers),
            ("n_heads", n_heads),
        ):
            positive_int(name, value)
        if d_model % n_heads:
            raise ValueError(f"n_heads ({n_heads}) must divide d_model ({d_model})")
        self.vocab_size = vocab_size
        self.mask_token_id = vocab_size
        self.max_len = max_len
        self.config = {
            "vocab_size": vocab_size,
            "max_len": max_len,
            "d_model": d_model,
            "n_layers": n_layers,
            "n_heads": n_heads,
            "dim_feedforward": dim_feedforward or 4 * d_model,
            "dropout": dropout,
        }
        self.embed = nn.Embedding(vocab_size + 1, d_model)
        self.pos = nn.Parameter(torch.zeros(max_len, d_model))
        # same scale for tokens and positions: with torch's N(0, 1) token embeddings the
        # positions are drowned out and training sits on a long plateau
        nn.init.normal_(self.embed.weight, std=0.02)
        nn.init.normal_(self.pos, std=0.02)
        layer = nn.TransformerEncoderLayer(
            d_model,
            n_heads,
            dim_feedforward or 4 * d_model,
            dropout,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Per-position logits ``(B, L, vocab_size)`` of int64 tokens ``(B, L)``."""
        if tokens.ndim != 2:
            raise ValueError(f"tokens must have shape (batch, length), got {tuple(tokens.shape)}")
        if tokens.shape[1] > self.max_len:
            raise ValueError(f"sequence length {tokens.shape[1]} exceeds max_len {self.max_len}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) > self.vocab_size):
            raise ValueError(
                f"token ids must be in [0, {self.vocab_size}] ({self.vocab_size} is the mask)"
            )
        h = self.embed(tokens) + self.pos[: tokens.shape[1]]
        return self.head(self.norm(self.blocks(h)))


class TransformersMaskedLM(nn.Module):
    """Adapter: a transformers masked LM (``BertForMaskedLM``, LLaDA, ...) as a decoder model.

    Calls ``model(input_ids=tokens)`` (plus an all-ones ``attention_mask`` when the model
    accepts one) and returns its ``.logits``, with the mask token's own logit set to
    ``-inf`` so that decoders never emit it.

    Args:
        model: A transformers model whose output has ``.logits`` of shape
            ``(B, L, vocab_size)``, e.g. ``AutoModelForMaskedLM.from_pretrained(...)``.
        mask_token_id: The id of the mask token; by default ``model.config.mask_token_id``
            (LLaDA) or, failing that, the ``tokenizer``'s ``mask_token_id``.
        tokenizer: Optional tokenizer to read ``mask_token_id`` from.

    Raises:
        ValueError: If no mask token id is given or found.
    """

    def __init__(self, model: Any, mask_token_id: int | None = None, tokenizer: Any = None):
        super().__init__()
        self.model = model
        if mask_token_id is None:
            mask_token_id = getattr(getattr(model, "config", None), "mask_token_id", None)
        if mask_token_id is None and tokenizer is not None:
            mask_token_id = getattr(tokenizer, "mask_token_id", None)
        if mask_token_id is None:
            raise ValueError(
                "mask_token_id is needed: pass it, or a tokenizer with a mask token, or a "
                "model whose config has mask_token_id"
            )
        self.mask_token_id = int(mask_token_id)
        self.vocab_size = int(model.config.vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, L, vocab_size)`` with the mask token's logit at ``-inf``."""
        if tokens.ndim != 2:
            raise ValueError(f"tokens must have shape (batch, length), got {tuple(tokens.shape)}")
        out = self.model(input_ids=tokens, attention_mask=torch.ones_like(tokens))
        logits = out.logits
        if 0 <= self.mask_token_id < logits.shape[-1]:
            logits = logits.clone()
            logits[..., self.mask_token_id] = float("-inf")
        return logits


class NFECounter:
    """Wraps a model and counts network function evaluations (sequences evaluated).

    One NFE is one sequence passed through the network once, so a forward pass on a
    batch of ``B`` sequences adds ``B``. Decoders report their own NFE; this wrapper
    lets a caller check those counts or meter any other code.

    Attributes:
        model: The wrapped model.
        nfe: Sequences evaluated so far.
        calls: Forward calls (batches) so far.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.mask_token_id = model.mask_token_id
        self.vocab_size = model.vocab_size
        self.nfe = 0
        self.calls = 0

    def __call__(self, tokens: torch.Tensor) -> torch.Tensor:
        """Evaluate the wrapped model and count ``tokens.shape[0]`` evaluations."""
        self.nfe += int(tokens.shape[0])
        self.calls += 1
        return self.model(tokens)

    def reset(self) -> None:
        """Set both counters back to zero."""
        self.nfe = 0
        self.calls = 0
