"""A Llama-style causal LM (transformers) whose attention shares projections.

:class:`SharedQKVLlamaConfig` is a ``LlamaConfig`` with two more fields, ``sharing``
and ``asymmetric``; :class:`SharedQKVLlamaForCausalLM` is a ``LlamaForCausalLM`` whose
attention layers are :class:`LlamaSharedAttention`. Every other part (embeddings,
RMSNorm, SwiGLU MLP, the tied head, rotary embeddings of every ``rope_type``,
masks, the attention kernels of ``attn_implementation``, ``generate()``, saving and
loading, ``AutoModelForCausalLM``, ``output_attentions`` / ``output_hidden_states``) is
transformers' own.

Caches. Two-tensor variants (``"qkv"``, ``"q=k-v"``) cache rotated keys and values
exactly as stock Llama does. One-tensor variants (``"q-k=v"``, ``"q=k=v"``) cache the
shared projection *before* RoPE in one tensor (:mod:`qkv_sharing.cache`): any
``DynamicCache`` or ``StaticCache`` (so ``generate(cache_implementation="static")``,
``torch.compile`` of the decode step and ``torch.export``, see
:class:`SharedQKVExportableDecoder`) holds half the bytes of the two-tensor cache.

Positions. Every variant rotates queries and keys by ``position_ids`` (any positions:
packed sequences, offsets) in a forward pass without a cache and in the first pass that
fills one (a prompt). Two-tensor variants cache rotated keys, as stock Llama does, so
they honour any ``position_ids`` later too. One-tensor variants cache the unrotated
tensor and, once it holds tokens, rotate the cached keys on every read by their index
in the cache, and the new queries by theirs. RoPE depends only on position
differences, so this equals rotating by ``position_ids`` whenever those advance by one
per token within a row, which is what ``generate()`` produces for every search
strategy and for left-padded batches (tested). Position ids that jump inside a row
that is continued from a cache (not produced by ``generate()``) are honoured only by
the two-tensor variants and by ``value_rope=True`` (which caches rotated keys).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import (
    LlamaDecoderLayer,
    LlamaModel,
    LlamaPreTrainedModel,
    eager_attention_forward,
)

from qkv_sharing.attention import SharedProjectionAttention, cache_tensors_per_layer, check_sharing
from qkv_sharing.cache import adopt_one_tensor_layer, shared_cache
from qkv_sharing.rotary import rotate_half

__all__ = [
    "LlamaSharedAttention",
    "SharedQKVExportableDecoder",
    "SharedQKVLlamaConfig",
    "SharedQKVLlamaForCausalLM",
    "SharedQKVLlamaModel",
    "shared_llama",
]


@strict
class SharedQKVLlamaConfig(LlamaConfig):
    """``LlamaConfig`` plus the projection sharing of the attention.

    Attributes:
        sharing: ``"qkv"``, ``"q-k=v"``, ``"q=k-v"`` or ``"q=k=v"``.
        asymmetric: Our 2-D (position x role) rotary encoding (a learned key phase),
            which makes the tied-query variants' scores asymmetric.
        value_rope: One-tensor variants only. False (default): the values are the
            shared projection before RoPE, ``o_i = sum_j a_ij s_j``, and the cached
            keys are turned on every read. True: the values are the *rotated* keys and
            each output is turned back by its query's position,
            ``o_i = sum_j a_ij R(p_j - p_i) s_j`` (still relative); the cache holds
            rotated keys, as stock Llama's does, so decoding costs what stock costs
            and any ``position_ids`` are honoured. A different model: train it so.

    Raises:
        ValueError: On an unknown ``sharing``, ``value_rope`` with a two-tensor
            variant, or ``num_attention_heads`` not a multiple of
            ``num_key_value_heads`` (or not dividing ``hidden_size``).
    """

    model_type = "qkv_sharing_llama"
    sharing: str = "qkv"
    asymmetric: bool = False
    value_rope: bool = False

    def __post_init__(self, **kwargs: Any) -> None:
        # Checked here (not in validate_architecture) so that the error is a ValueError.
        check_sharing(self.sharing)
        if self.value_rope and cache_tensors_per_layer(self.sharing) != 1:
            raise ValueError(
                f"value_rope applies to the one-tensor variants ('q-k=v', 'q=k=v'), "
                f"got sharing={self.sharing!r}"
            )
        super().__post_init__(**kwargs)
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Transformers' ``apply_rotary_pos_emb`` for one tensor; cos/sin (batch, seq, head_dim)."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (x * cos) + (rotate_half(x) * sin)


def _tracing() -> bool:
    exporting = getattr(torch.compiler, "is_exporting", lambda: False)
    return bool(torch.compiler.is_compiling() or exporting())


def _rope_cached(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """:func:`_rope` with one output buffer and no ``cat``: for the whole cache each step."""
    half = x.shape[-1] // 2
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    out = x * cos
    out[..., :half].addcmul_(x[..., half:], sin[..., :half], value=-1)
    out[..., half:].addcmul_(x[..., :half], sin[..., half:])
    return out


class _CachedKeyRotary:
    """cos/sin of cache indices 0, 1, ... from the model's rotary embedding, shared by layers.

    For rope types whose frequencies do not change with the sequence length the table is
    computed once (grown by doubling) and sliced; for ``dynamic``-style types it is
    recomputed per call, as the rotary module itself does.
    """

    def __init__(self, rotary: nn.Module) -> None:
        self.rotary = rotary
        rope_type = str(getattr(rotary, "rope_type", "default"))
        self.static = not any(word in rope_type for word in ("dynamic", "longrope"))
        self._table: tuple[torch.Tensor, torch.Tensor] | None = None

    def __call__(self, length: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin of positions ``0 .. length - 1``: (1, length, head_dim), ``like``'s dtype."""
        table = self._table
        fits = (
            self.static
            and table is not None
            and table[0].shape[1] >= length
            and table[0].device == like.device
            and table[0].dtype == like.dtype
        )
        if not fits:
            if not self.static or _tracing():
                # never store a tensor made while tracing (export would leak a fake one)
                ids = torch.arange(length, device=like.device)[None]
                return self.rotary(like, ids)
            size = max(length, 2 * (table[0].shape[1] if table is not None else 0), 64)
            ids = torch.arange(size, device=like.device)[None]
            with torch.no_grad():
                cos, sin = self.rotary(like, ids)
            table = (cos.detach(), sin.detach())
            self._table = table
        return table[0][:, :length], table[1][:, :length]


class LlamaSharedAttention(SharedProjectionAttention):
    """The attention of one Llama layer, with transformers' call signature.

    Projections, head layout and the key phase are :class:`SharedProjectionAttention`'s;
    rotary embeddings come from the model (``position_embeddings``, any ``rope_type``);
    the kernel is transformers' ``attn_implementation`` (``"sdpa"``, ``"eager"``,
    flash/flex where installed), so masks and grouped-query kernels are stock Llama's.
    ``output_attentions=True`` uses the eager kernel and returns the weights.
    """

    def __init__(
        self, config: SharedQKVLlamaConfig, layer_idx: int, key_rotary: _CachedKeyRotary
    ) -> None:
        super().__init__(
            config.hidden_size,
            config.num_attention_heads,
            config.num_key_value_heads,
            sharing=getattr(config, "sharing", "qkv"),
            head_dim=getattr(config, "head_dim", None),
            causal=True,
            rope=True,  # turned by the model's rotary embedding (position_embeddings)
            asymmetric=getattr(config, "asymmetric", False),
            bias=config.attention_bias,
        )
        self.config = config
        self.layer_idx = layer_idx
        self.is_causal = True
        self.num_key_value_groups = self.group_size
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = float(getattr(config, "attention_dropout", 0.0))
        self.one_tensor = cache_tensors_per_layer(self.sharing) == 1
        self.value_rope = bool(getattr(config, "value_rope", False))
        object.__setattr__(self, "_key_rotary", key_rotary)  # shared, not a submodule
        self.reset_parameters(std=config.initializer_range)

    def _phase(self, k: torch.Tensor) -> torch.Tensor:
        if self.key_phase is None:
            return k
        phase = torch.cat((self.key_phase, self.key_phase), dim=-1)[None, :, None, :]
        return k * phase.cos().to(k.dtype) + rotate_half(k) * phase.sin().to(k.dtype)

    def forward(  # type: ignore[override]
        self,
        hidden_states: torch.Tensor,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        attention_mask: torch.Tensor | None = None,
        cache: Any = None,
        past_key_values: Any = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attention output (batch, seq, hidden) and the weights (or None).

        Args:
            hidden_states: (batch, seq, hidden_size).
            position_embeddings: ``(cos, sin)`` of the tokens' ``position_ids``, each
                (batch, seq, head_dim), from the model's rotary embedding.
            attention_mask: The model's 4-D mask (bool or additive float) or None.
            cache: A ``transformers.Cache``.
            past_key_values: The same, under the name transformers used before 5.24.
            **kwargs: Passed to the attention kernel (``output_attentions`` selects
                the eager kernel).
        """
        cache = cache if cache is not None else past_key_values
        if position_embeddings is None:
            raise ValueError("position_embeddings (cos, sin) are required")
        b, q_len, _ = hidden_states.shape
        q, k, v = self.project(hidden_states)
        cos, sin = position_embeddings
        if self.one_tensor and self.value_rope:
            # values are the rotated keys: cache them (one tensor), turn outputs back below
            q = _rope(q, cos, sin)
            k = self._phase(_rope(k, cos, sin))
            if cache is not None:
                adopt_one_tensor_layer(cache, self.layer_idx)
                k, _ = cache.update(k, k, self.layer_idx)
            v = k
        elif self.one_tensor and cache is not None:
            adopt_one_tensor_layer(cache, self.layer_idx)  # False: stored twice, still right
            past = cache.get_seq_length(self.layer_idx)
            # A first write of several tokens attends only among them: turn them by
            # position_ids (exact, like no cache). Later reads turn the cached keys by
            # cache index. (Not checked for single tokens or while compiling/exporting,
            # where cache order is used: the same for contiguous positions.)
            fresh = q_len > 1 and not _tracing() and int(past) == 0
            # cache indices of the new tokens, taken before the write (a static layer's
            # length is a tensor that the write increments in place)
            q_pos = torch.arange(q_len, device=hidden_states.device) + past
            shared, _ = cache.update(k, k, self.layer_idx)
            if fresh:
                q = _rope(q, cos, sin)
                k, v = self._phase(_rope(k, cos, sin)), k
                if attention_mask is not None:  # a static cache's mask spans its whole buffer
                    attention_mask = attention_mask[..., :q_len]
            else:
                cos_k, sin_k = self._key_rotary(shared.shape[-2], hidden_states)
                q = _rope(q, cos_k.index_select(1, q_pos), sin_k.index_select(1, q_pos))
                k, v = self._phase(_rope_cached(shared, cos_k, sin_k)), shared
        elif self.one_tensor:
            q = _rope(q, cos, sin)
            k, v = self._phase(_rope(k, cos, sin)), k
        else:
            q = _rope(q, cos, sin)
            k = self._phase(_rope(k, cos, sin))
            if cache is not None:
                k, v = cache.update(k, v, self.layer_idx)

        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

        interface: Callable[..., Any] = eager_attention_forward
        if not kwargs.get("output_attentions", False):
            interface = ALL_ATTENTION_FUNCTIONS.get_interface(
                self.config._attn_implementation, eager_attention_forward
            )
        elif attention_mask is None and q_len > 1:
            # the model left the causal mask to the sdpa kernel; the eager one needs it
            kv_len = k.shape[-2]
            future = torch.ones(q_len, kv_len, dtype=torch.bool, device=q.device).triu(
                kv_len - q_len + 1
            )
            attention_mask = torch.zeros(q_len, kv_len, dtype=q.dtype, device=q.device)
            attention_mask = attention_mask.masked_fill(future, torch.finfo(q.dtype).min)[
                None, None
            ]
        out, weights = interface(
            self,
            q,
            k,
            v,
            attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling,
            **kwargs,
        )
        if self.one_tensor and self.value_rope:
            # out (batch, seq, heads, head_dim): turn each output back by its query's
            # position, R(-p_i) = (cos, -sin) / (cos^2 + sin^2) (rope scaling included)
            c, s_ = cos.unsqueeze(2).to(out.dtype), sin.unsqueeze(2).to(out.dtype)
            out = (out * c - rotate_half(out) * s_) / (c * c + s_ * s_)
        out = out.reshape(b, q_len, -1).contiguous()
        return self.o_proj(out), weights


class SharedQKVLlamaModel(LlamaModel):
    """``LlamaModel`` whose attention layers are :class:`LlamaSharedAttention`."""

    config_class = SharedQKVLlamaConfig
    _can_record_outputs: ClassVar[dict[str, Any]] = {
        "hidden_states": LlamaDecoderLayer,
        "attentions": LlamaSharedAttention,  # so that output_attentions finds our layers
    }

    def __init__(self, config: SharedQKVLlamaConfig) -> None:
        super().__init__(config)
        key_rotary = _CachedKeyRotary(self.rotary_emb)
        weight = self.embed_tokens.weight
        for idx, layer in enumerate(self.layers):
            layer.self_attn = LlamaSharedAttention(config, idx, key_rotary).to(
                device=weight.device, dtype=weight.dtype
            )


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
        LlamaPreTrainedModel.__init__(self, config)
        self.model = SharedQKVLlamaModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()


AutoConfig.register(SharedQKVLlamaConfig.model_type, SharedQKVLlamaConfig, exist_ok=True)
AutoModelForCausalLM.register(SharedQKVLlamaConfig, SharedQKVLlamaForCausalLM, exist_ok=True)


class SharedQKVExportableDecoder(nn.Module):
    """A model plus its own static cache as an ``nn.Module``: for ``torch.export`` / compile.

    The cache tensors (one per layer for one-tensor variants, two otherwise) and their
    write positions are registered as non-persistent buffers, so an exported program
    owns and mutates them. ``forward(input_ids, cache_position)`` feeds the tokens at
    cache slots ``cache_position[0], cache_position[0] + 1, ...`` and returns logits
    (batch, seq, vocab).

    Args:
        model: A :class:`SharedQKVLlamaForCausalLM` (or a stock ``LlamaForCausalLM``).
        max_cache_len: Tokens the cache holds.
        batch_size: Sequences per call.

    Example:
        >>> import torch
        >>> model = shared_llama("1M", "q-k=v", n_kv_heads=1, n_heads=4,
        ...                      num_hidden_layers=1).eval()
        >>> step = SharedQKVExportableDecoder(model, max_cache_len=16)
        >>> ids, pos = torch.tensor([[1, 2, 3]]), torch.tensor([0])
        >>> program = torch.export.export(step, (ids, pos))
        >>> program.module()(ids, pos).shape
        torch.Size([1, 3, 256])
    """

    def __init__(self, model: nn.Module, max_cache_len: int, batch_size: int = 1) -> None:
        super().__init__()
        self.model = model
        self.cache = shared_cache(
            model, "static", max_cache_len=max_cache_len, batch_size=batch_size
        )
        for module in model.modules():  # the rotary table of cached keys, made before tracing
            key_rotary = getattr(module, "_key_rotary", None)
            if key_rotary is not None:
                weight = model.get_input_embeddings().weight
                key_rotary(max_cache_len, weight[:1, None])
                break
        for i, layer in enumerate(self.cache.layers):
            self.register_buffer(f"cache_{i}", layer.keys, persistent=False)
            if layer.values is not layer.keys:
                self.register_buffer(f"cache_values_{i}", layer.values, persistent=False)
            if isinstance(getattr(layer, "cumulative_length", None), torch.Tensor):
                self.register_buffer(f"cache_length_{i}", layer.cumulative_length, persistent=False)

    def forward(self, input_ids: torch.Tensor, cache_position: torch.Tensor) -> torch.Tensor:
        """Logits (batch, seq, vocab) of ``input_ids`` (batch, seq) at ``cache_position[0]``."""
        with torch.no_grad():  # inference: the cache buffers must not join a graph
            for layer in self.cache.layers:
                if isinstance(getattr(layer, "cumulative_length", None), torch.Tensor):
                    layer.cumulative_length.copy_(cache_position[0])
            out = self.model(
                input_ids=input_ids, attention_mask=None, use_cache=True, **{_CACHE_KW: self.cache}
            )
        return out.logits


def _cache_keyword() -> str:
    import inspect

    params = inspect.signature(LlamaModel.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


_CACHE_KW = _cache_keyword()


def shared_llama(
    size: str = "1M",
    sharing: str = "qkv",
    n_kv_heads: int | None = None,
    *,
    n_heads: int | None = None,
    vocab_size: int = 256,
    asymmetric: bool = False,
    value_rope: bool = False,
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
        value_rope: One-tensor variants: values are the rotated keys (see
            :class:`SharedQKVLlamaConfig`).
        max_seq_len: ``max_position_embeddings``.
        seed: Seed of the initial weights (torch's global state is left alone).
        device: Where to put the model.
        **overrides: Other ``LlamaConfig`` fields (``head_dim``, ``rope_parameters``,
            ``attn_implementation``, ...).

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
    attn_implementation = overrides.pop("attn_implementation", None)
    fields |= overrides
    if fields["hidden_size"] % fields["num_attention_heads"] and "head_dim" not in fields:
        raise ValueError(
            f"n_heads ({fields['num_attention_heads']}) must divide hidden_size "
            f"({fields['hidden_size']})"
        )
    config = SharedQKVLlamaConfig(
        sharing=sharing, asymmetric=asymmetric, value_rope=value_rope, **fields
    )
    if attn_implementation is not None:
        config._attn_implementation = attn_implementation
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = SharedQKVLlamaForCausalLM(config)
    model.to(torch_device(device))
    model.train()
    return model
