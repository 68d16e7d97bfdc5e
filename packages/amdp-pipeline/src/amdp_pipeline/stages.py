"""Cut a Llama-style causal LM into pipeline stages (one ``nn.Module`` per stage)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from icml26_core.validation import check_int
from torch import nn

__all__ = ["LlamaStage", "split_llama"]


class LlamaStage(nn.Module):
    """Some consecutive decoder layers of a ``LlamaForCausalLM``, as one pipeline stage.

    The first stage owns the token embedding and takes int64 ids (batch, seq); the
    others take hidden states (batch, seq, hidden) float; the last one owns the final
    norm and the head and returns logits (batch, seq, vocab). Causal attention comes
    from PyTorch's SDPA with no mask (``is_causal``), rotary embeddings are recomputed
    in each stage (they have no parameters).

    Args:
        model: A ``transformers.LlamaForCausalLM`` with untied embeddings (a tied head
            would be one parameter in two stages).
        layers: Indices of the decoder layers in this stage, consecutive.
        first: Whether this stage embeds the tokens.
        last: Whether this stage applies the final norm and the head.
    """

    def __init__(self, model: Any, layers: Sequence[int], *, first: bool, last: bool) -> None:
        super().__init__()
        inner = model.model
        self.first, self.last = first, last
        self.embed_tokens = inner.embed_tokens if first else None
        self.layers = nn.ModuleList(inner.layers[i] for i in layers)
        self.rotary_emb = inner.rotary_emb
        self.norm = inner.norm if last else None
        self.lm_head = model.lm_head if last else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Ids or hidden states in, hidden states or logits out (see the class)."""
        h = self.embed_tokens(x) if self.first else x
        pos = torch.arange(h.shape[1], device=h.device)[None, :]
        pe = self.rotary_emb(h, position_ids=pos)
        for layer in self.layers:
            h = layer(h, attention_mask=None, position_ids=pos, position_embeddings=pe)
        if self.last:
            h = self.lm_head(self.norm(h))
        return h


def split_llama(model: Any, n_stages: int) -> list[LlamaStage]:
    """Cut ``model``'s decoder layers into ``n_stages`` contiguous, near-equal stages.

    The stages share the model's parameters (no copy): training the stages trains
    ``model``. E.g. 4 layers, 4 stages: embedding + layer 0 | layer 1 | layer 2 |
    layer 3 + norm + head.

    Args:
        model: ``LlamaForCausalLM`` built with ``tie_word_embeddings=False``.
        n_stages: Number of stages, 1 <= n_stages <= number of layers.

    Returns:
        The stage modules, in order.

    Raises:
        TypeError: If ``model`` is not a Llama-style causal LM or ``n_stages`` not an int.
        ValueError: If ``n_stages`` is out of range or the embeddings are tied.
    """
    inner = getattr(model, "model", None)
    if (
        not isinstance(model, nn.Module)
        or not hasattr(model, "lm_head")
        or not hasattr(inner, "layers")
        or not hasattr(inner, "embed_tokens")
    ):
        raise TypeError(
            "model must be a LlamaForCausalLM (with .model.layers, .model.embed_tokens and "
            f".lm_head), got {type(model).__name__}"
        )
    n_layers = len(inner.layers)
    s = check_int("n_stages", n_stages, low=1, high=n_layers)
    if model.lm_head.weight is model.model.embed_tokens.weight:
        raise ValueError(
            "model has tied embeddings; build it with tie_word_embeddings=False so the "
            "first and the last stage own separate parameters"
        )
    bounds = [round(i * n_layers / s) for i in range(s + 1)]
    return [
        LlamaStage(model, range(bounds[i], bounds[i + 1]), first=i == 0, last=i == s - 1)
        for i in range(s)
    ]
