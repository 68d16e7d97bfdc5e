"""A Llama-style causal LM (transformers) whose attention shares projections.

:class:`SharedQKVLlamaConfig` is a ``LlamaConfig`` with two more fields, ``sharing``
and ``asymmetric``; :class:`SharedQKVLlamaForCausalLM` is a ``LlamaForCausalLM`` whose
attention layers are :class:`~qkv_sharing.attention.SharedProjectionAttention`. Every
other part (embeddings, RMSNorm, SwiGLU MLP, the tied head, ``generate()``, saving and
loading, ``AutoModelForCausalLM``) is transformers' own.

The KV cache is transformers' ``DynamicCache``: a ``"q-k=v"`` or ``"q=k=v"`` layer
appends its one shared tensor as the keys and a zero-length tensor as the values, so
the cache holds one tensor per layer and the saving is real memory, measured by
:func:`~qkv_sharing.cache.cache_nbytes`.

Positions: the attention layers number the tokens ``0, 1, ...`` in cache order
(transformers' default ``position_ids``). Explicit ``position_ids`` (e.g. from left
padding) are ignored; RoPE depends only on position differences, so within a
left-padded row every real token sees the same relative positions as without padding.
"""

from __future__ import annotations

from typing import Any

import torch
from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from qkv_sharing.attention import SharedProjectionAttention, check_sharing

__all__ = ["SharedQKVLlamaConfig", "SharedQKVLlamaForCausalLM", "shared_llama"]


@strict
class SharedQKVLlamaConfig(LlamaConfig):
    """``LlamaConfig`` plus the projection sharing of the attention.

    Attributes:
        sharing: ``"qkv"``, ``"q-k=v"``, ``"q=k-v"`` or ``"q=k=v"``.
        asymmetric: Our 2-D (position x role) rotary encoding (a learned key phase),
            which makes the tied-query variants' scores asymmetric.

    Raises:
        ValueError: On an unknown ``sharing``, or ``num_attention_heads`` not a multiple
            of ``num_key_value_heads`` (or not dividing ``hidden_size``).
    """

    model_type = "qkv_sharing_llama"
    sharing: str = "qkv"
    asymmetric: bool = False

    def __post_init__(self, **kwargs: Any) -> None:
        # Checked here (not in validate_architecture) so that the error is a ValueError.
        check_sharing(self.sharing)
        super().__post_init__(**kwargs)
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )


def _rope_theta(config: LlamaConfig) -> float:
    params = getattr(config, "rope_parameters", None) or {}
    rope_type = params.get("rope_type", "default")
    if rope_type != "default":
        raise ValueError(f"only rope_type 'default' is supported, got {rope_type!r}")
    return float(params.get("rope_theta", getattr(config, "rope_theta", 10000.0)))


class LlamaSharedAttention(SharedProjectionAttention):
    """The attention of one Llama layer, with the call signature Llama layers use."""

    def __init__(self, config: SharedQKVLlamaConfig, layer_idx: int) -> None:
        super().__init__(
            config.hidden_size,
            config.num_attention_heads,
            config.num_key_value_heads,
            sharing=getattr(config, "sharing", "qkv"),
            head_dim=getattr(config, "head_dim", None),
            causal=True,
            rope=True,
            rope_theta=_rope_theta(config),
            asymmetric=getattr(config, "asymmetric", False),
            bias=config.attention_bias,
        )
        self.layer_idx = layer_idx
        self.reset_parameters(std=config.initializer_range)

    def forward(  # type: ignore[override]
        self,
        hidden_states: torch.Tensor,
        position_embeddings: Any = None,
        attention_mask: torch.Tensor | None = None,
        cache: Any = None,
        past_key_values: Any = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, None]:
        """Attention output (batch, seq, hidden) and no attention weights."""
        cache = cache if cache is not None else past_key_values
        out = super().forward(hidden_states, None, attention_mask, cache, self.layer_idx)
        return out, None


class SharedQKVLlamaForCausalLM(LlamaForCausalLM):
    """``LlamaForCausalLM`` with projection-shared attention (see the module docs).

    Example:
        >>> import torch
        >>> from qkv_sharing import SharedQKVLlamaForCausalLM, SharedQKVLlamaConfig
        >>> config = SharedQKVLlamaConfig(vocab_size=256, hidden_size=64,
        ...     intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        ...     num_key_value_heads=1, sharing="q-k=v", bos_token_id=None,
        ...     eos_token_id=None)
        >>> model = SharedQKVLlamaForCausalLM(config).eval()
        >>> model.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=4,
        ...                do_sample=False).shape
        torch.Size([1, 7])
    """

    config_class = SharedQKVLlamaConfig

    def __init__(self, config: SharedQKVLlamaConfig) -> None:
        super().__init__(config)
        for idx, layer in enumerate(self.model.layers):
            layer.self_attn = LlamaSharedAttention(config, idx).to(
                device=self.model.embed_tokens.weight.device,
                dtype=self.model.embed_tokens.weight.dtype,
            )


AutoConfig.register(SharedQKVLlamaConfig.model_type, SharedQKVLlamaConfig, exist_ok=True)
AutoModelForCausalLM.register(SharedQKVLlamaConfig, SharedQKVLlamaForCausalLM, exist_ok=True)


def shared_llama(
    size: str = "1M",
    sharing: str = "qkv",
    n_kv_heads: int | None = None,
    *,
    n_heads: int | None = None,
    vocab_size: int = 256,
    asymmetric: bool = False,
    max_seq_len: int = 1024,
    seed: int = 0,
    device: str | Any = "cpu",
    **overrides: Any,
) -> SharedQKVLlamaForCausalLM:
    """A fresh model at one of the core's named Llama sizes, with projection sharing.

    Widths, depth and MLP come from ``icml26_core.lm.LLAMA_SIZES``, the other fields
    from ``icml26_core.lm.tiny_llama_config`` (tied embeddings, no special tokens).

    Args:
        size: ``"1M"``, ``"3M"``, ``"10M"`` or ``"30M"``.
        sharing: The projection sharing (see :mod:`qkv_sharing.attention`).
        n_kv_heads: Key/value heads (None: MHA).
        n_heads: Query heads (None: the size's default).
        vocab_size: 256 for bytes.
        asymmetric: Our 2-D (position x role) encoding.
        max_seq_len: ``max_position_embeddings``.
        seed: Seed of the initial weights (torch's global state is left alone).
        device: Where to put the model.
        **overrides: Other ``LlamaConfig`` fields.

    Returns:
        The model, in training mode, with ``use_cache=True`` (``generate()`` keeps a
        KV cache unless told otherwise).

    Raises:
        ValueError: On a bad size, sharing or head layout.
    """
    from icml26_core.device import torch_device
    from icml26_core.lm import LLAMA_SIZES, tiny_llama_config

    if size not in LLAMA_SIZES:
        raise ValueError(f"size must be one of {list(LLAMA_SIZES)}, got {size!r}")
    check_sharing(sharing)
    heads = LLAMA_SIZES[size][2] if n_heads is None else n_heads
    fields = tiny_llama_config(size, vocab_size, max_seq_len=max_seq_len).to_dict()
    keep = {
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
        "max_position_embeddings", "tie_word_embeddings", "use_cache", "rms_norm_eps",
        "bos_token_id", "eos_token_id", "pad_token_id",
    }  # fmt: skip
    fields = {k: v for k, v in fields.items() if k in keep}
    # generate() uses the KV cache by default (the core's config turns it off for training;
    # train_lm asks for no cache explicitly anyway).
    fields |= {"num_attention_heads": heads, "num_key_value_heads": n_kv_heads or heads}
    fields["use_cache"] = True
    fields |= overrides
    if fields["hidden_size"] % fields["num_attention_heads"] and "head_dim" not in fields:
        raise ValueError(
            f"n_heads ({fields['num_attention_heads']}) must divide hidden_size "
            f"({fields['hidden_size']})"
        )
    config = SharedQKVLlamaConfig(sharing=sharing, asymmetric=asymmetric, **fields)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = SharedQKVLlamaForCausalLM(config)
    model.to(torch_device(device))
    model.train()
    return model
