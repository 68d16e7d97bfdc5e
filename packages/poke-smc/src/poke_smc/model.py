"""Masked diffusion language models: the interface the decoders use, and two of them.

A masked diffusion LM (MDLM, LLaDA) maps a partially masked token sequence to
per-position logits over the vocabulary. The decoders in this package need only that
map and the id of the mask token, so any model satisfying :class:`MaskedDiffusionLM`
works: the small bidirectional :class:`MaskedDiffusionTransformer` trained here, or a
transformers masked LM behind :class:`TransformersMaskedLM`.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

import torch
from icml26_core.validation import check_float, check_int
from torch import nn

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
    ``(batch, length, vocab_size)`` for every position. To decode batches of prompts of
    unequal lengths the model must also take ``model(tokens, attention_mask=mask)``
    with a bool ``(batch, length)`` mask that is False on padding, ignore the padded
    positions and number the others by the mask (position ``cumsum(mask) - 1``), so
    that a padded row gives what the row gives alone. ``mask_token_id`` may lie
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
        ``forward(tokens, attention_mask=None)``: int64 ``(B, L)`` with entries in
        ``[0, vocab_size]`` (``vocab_size`` is the mask) and optional bool ``(B, L)``
        (False on padding) -> float ``(B, L, vocab_size)``. Positions are numbered by
        the mask, ``cumsum(mask) - 1``, and padded keys are left out of attention, so a
        padded row equals the row alone; at most ``max_len`` attended positions.

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
            check_int(name, value, low=1)
        check_float("dropout", dropout, low=0.0, high=1.0, high_inclusive=False)
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

    def forward(
        self, tokens: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Per-position logits ``(B, L, vocab_size)`` of int64 tokens ``(B, L)``.

        Raises:
            ValueError: On a wrong rank or shape, too many positions for ``max_len``, or
                ids outside ``[0, vocab_size]``.
        """
        if tokens.ndim != 2:
            raise ValueError(f"tokens must have shape (batch, length), got {tuple(tokens.shape)}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) > self.vocab_size):
            raise ValueError(
                f"token ids must be in [0, {self.vocab_size}] ({self.vocab_size} is the mask)"
            )
        if attention_mask is None:
            if tokens.shape[1] > self.max_len:
                raise ValueError(
                    f"sequence length {tokens.shape[1]} exceeds max_len {self.max_len}"
                )
            h = self.embed(tokens) + self.pos[: tokens.shape[1]]
            return self.head(self.norm(self.blocks(h)))
        am = attention_mask.bool()
        if am.shape != tokens.shape:
            raise ValueError(
                f"attention_mask {tuple(am.shape)} must have the shape of tokens "
                f"{tuple(tokens.shape)}"
            )
        positions = (am.long().cumsum(-1) - 1).clamp_min(0)
        if tokens.numel() and int(positions.max()) >= self.max_len:
            raise ValueError(
                f"{int(positions.max()) + 1} attended positions exceed max_len {self.max_len}"
            )
        h = self.embed(tokens) + self.pos[positions]
        return self.head(self.norm(self.blocks(h, src_key_padding_mask=~am)))


class TransformersMaskedLM(nn.Module):
    """Adapter: a transformers masked LM (``BertForMaskedLM``, LLaDA, ...) as a decoder model.

    Calls ``model(input_ids=tokens, attention_mask=mask)`` (all ones without padding)
    and returns its ``.logits``, with the mask token's own logit set to ``-inf`` so that
    decoders never emit it. With padding it also passes ``position_ids = cumsum(mask) -
    1`` when the model's ``forward`` takes them (BERT, Llama-style models), so that a
    left-padded row gives what it gives alone. :func:`~poke_smc.decoding.decode` takes
    the same arguments for it as for any model: ``block_length``, prompts of unequal
    lengths, ``eos_token_id=adapter.eos_token_id``.

    Args:
        model: A transformers model whose output has ``.logits`` of shape
            ``(B, L, vocab_size)``, e.g. ``AutoModelForMaskedLM.from_pretrained(...)`` or
            LLaDA's ``AutoModel.from_pretrained(..., trust_remote_code=True)``.
        mask_token_id: The id of the mask token; by default ``model.config.mask_token_id``
            (LLaDA) or, failing that, the ``tokenizer``'s ``mask_token_id``.
        tokenizer: Optional tokenizer to read ``mask_token_id``, ``pad_token_id`` and
            ``eos_token_id`` from.

    Attributes:
        mask_token_id: The mask token's id.
        vocab_size: ``model.config.vocab_size``.
        pad_token_id: Padding id (config, then tokenizer; None if neither has one),
            what :func:`~poke_smc.decoding.decode` pads shorter prompts with.
        eos_token_id: End-of-sequence id (config, then tokenizer; None if neither).

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
        self.pad_token_id = _special_id(model, tokenizer, "pad_token_id", self.mask_token_id)
        self.eos_token_id = _special_id(model, tokenizer, "eos_token_id", self.mask_token_id)
        fwd = getattr(model, "forward", model)
        try:
            self._position_ids = "position_ids" in inspect.signature(fwd).parameters
        except (TypeError, ValueError):
            self._position_ids = False

    def forward(
        self, tokens: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits ``(B, L, vocab_size)`` with the mask token's logit at ``-inf``.

        Args:
            tokens: int64 ``(B, L)``.
            attention_mask: Optional bool or 0/1 ``(B, L)``, False / 0 on padding.
        """
        if tokens.ndim != 2:
            raise ValueError(f"tokens must have shape (batch, length), got {tuple(tokens.shape)}")
        if attention_mask is None:
            out = self.model(input_ids=tokens, attention_mask=torch.ones_like(tokens))
        else:
            am = attention_mask.long()
            kwargs: dict[str, Any] = {"input_ids": tokens, "attention_mask": am}
            if self._position_ids:
                kwargs["position_ids"] = (am.cumsum(-1) - 1).clamp_min(0)
            out = self.model(**kwargs)
        logits = out.logits
        if 0 <= self.mask_token_id < logits.shape[-1]:
            logits = logits.clone()
            logits[..., self.mask_token_id] = float("-inf")
        return logits


def _special_id(model: Any, tokenizer: Any, name: str, mask_id: int) -> int | None:
    """``name`` from the model's config, else the tokenizer; None if neither (or the mask)."""
    for source in (getattr(model, "config", None), tokenizer):
        value = getattr(source, name, None)
        if isinstance(value, list | tuple):  # some configs list several EOS ids
            value = value[0] if value else None
        if isinstance(value, int) and value != mask_id:
            return value
    return None


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
        self.max_len = getattr(model, "max_len", None)
        self.nfe = 0
        self.calls = 0

    def __call__(self, tokens: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        """Evaluate the wrapped model and count ``tokens.shape[0]`` evaluations.

        Keyword arguments (``attention_mask``) are passed on to the model.
        """
        self.nfe += int(tokens.shape[0])
        self.calls += 1
        return self.model(tokens, **kwargs)

    def reset(self) -> None:
        """Set both counters back to zero."""
        self.nfe = 0
        self.calls = 0
