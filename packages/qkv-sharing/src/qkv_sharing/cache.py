"""KV-cache size: the formula, and the bytes a live cache really holds."""

from __future__ import annotations

from typing import Any

import torch

from qkv_sharing.attention import cache_tensors_per_layer

__all__ = ["cache_nbytes", "kv_cache_bytes", "kv_cache_reduction"]


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a nonnegative int, got {value!r}")
    return value


def kv_cache_bytes(config: Any, seq_len: int, batch: int = 1, dtype: Any = None) -> int:
    """Bytes of the KV cache of a model after ``seq_len`` tokens.

    ``layers * tensors * batch * n_kv_heads * seq_len * head_dim * bytes``, where
    ``tensors`` is 2 for ``"qkv"`` and ``"q=k-v"`` and 1 for ``"q-k=v"`` and
    ``"q=k=v"``.

    Args:
        config: A ``LlamaConfig`` (``sharing`` read when present, else ``"qkv"``).
        seq_len: Cached tokens (prompt plus generated tokens fed back).
        batch: Sequences.
        dtype: Cache dtype; default the config's ``dtype``, else float32.

    Returns:
        Bytes.

    Raises:
        ValueError: If ``seq_len`` or ``batch`` is negative or not an int.

    Example:
        >>> from qkv_sharing import SharedQKVLlamaConfig, kv_cache_bytes
        >>> c = SharedQKVLlamaConfig(hidden_size=64, num_attention_heads=4,
        ...     num_key_value_heads=4, num_hidden_layers=2, sharing="q-k=v")
        >>> kv_cache_bytes(c, seq_len=10, batch=1)  # 2 layers x 1 x 4 x 10 x 16 x 4 B
        5120
    """
    _positive_int("seq_len", seq_len)
    _positive_int("batch", batch)
    if dtype is None:
        dtype = getattr(config, "dtype", None)
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        dtype = torch.float32
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    n_kv = config.num_key_value_heads or config.num_attention_heads
    tensors = cache_tensors_per_layer(getattr(config, "sharing", "qkv"))
    itemsize = torch.empty((), dtype=dtype).element_size()
    return config.num_hidden_layers * tensors * batch * n_kv * seq_len * head_dim * itemsize


def kv_cache_reduction(config: Any, reference: Any) -> float:
    """``1 - bytes(config) / bytes(reference)`` per cached token, from the formula."""
    return 1.0 - kv_cache_bytes(config, 1) / kv_cache_bytes(reference, 1)


def cache_nbytes(cache: Any) -> int:
    """Bytes that a live ``transformers`` cache holds (its distinct tensor storages).

    Args:
        cache: A ``transformers.Cache`` (e.g. the ``past_key_values`` returned by
            ``generate(..., return_dict_in_generate=True)``).

    Returns:
        Sum of the sizes of the distinct storages behind the cached keys and values
        (a view does not count twice; an empty tensor counts 0).
    """
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise TypeError(f"cache must be a transformers Cache with .layers, got {type(cache)}")
    seen: dict[int, int] = {}
    for layer in layers:
        for tensor in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(tensor, torch.Tensor) and tensor.numel():
                storage = tensor.untyped_storage()
                seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())
