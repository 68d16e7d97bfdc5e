"""KV caches that hold one tensor per layer, and the size of a cache: formula and bytes.

A ``"q-k=v"`` or ``"q=k=v"`` layer needs one tensor per token (the shared projection,
before rotary embeddings): its keys are that tensor turned by RoPE and its values are the
tensor itself. Two cache layers on transformers' Cache API store exactly that:

- :class:`SharedDynamicLayer` (a ``DynamicLayer``): grows by concatenation;
- :class:`SharedStaticLayer` (a ``StaticLayer``): one preallocated buffer of
  ``max_cache_len`` tokens written in place, for ``torch.compile`` and ``torch.export``.

In both, ``layer.values`` *is* ``layer.keys`` (the same tensor object), so every part of
transformers that reads ``keys`` and ``values`` works unchanged and the memory is held
once; :func:`cache_nbytes` counts distinct storages and sees half the bytes.

Any ``DynamicCache`` or ``StaticCache`` works with the shared-projection model: the
attention swaps each of its stock ``DynamicLayer``/``StaticLayer`` for the one-tensor
class before the first write (:func:`adopt_one_tensor_layer`), so ``generate()`` with
``cache_implementation="dynamic"`` or ``"static"`` just works. :func:`shared_cache`
builds a cache with the right layers up front (and allocated, for ``torch.export``).
"""

from __future__ import annotations

from typing import Any

import torch
from icml26_core.validation import check_choice, check_int
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer, StaticCache, StaticLayer

from qkv_sharing.attention import cache_tensors_per_layer

__all__ = [
    "SharedDynamicLayer",
    "SharedStaticLayer",
    "adopt_one_tensor_layer",
    "cache_nbytes",
    "kv_cache_bytes",
    "kv_cache_reduction",
    "shared_cache",
]


def _same_tensor(key_states: torch.Tensor, value_states: Any) -> None:
    if value_states is not None and value_states is not key_states:
        raise ValueError(
            "a one-tensor cache layer stores one tensor per token: pass the same tensor as "
            "key_states and value_states"
        )


def _offload(layer: Any) -> None:
    if layer.is_initialized and layer.keys is not None:
        layer.keys = layer.keys.to("cpu", non_blocking=True)
        layer.values = layer.keys


def _prefetch(layer: Any) -> None:
    device = getattr(layer, "device", None)
    if layer.is_initialized and layer.keys is not None and layer.keys.device != device:
        layer.keys = layer.keys.to(device, non_blocking=True)
        layer.values = layer.keys


class SharedDynamicLayer(DynamicLayer):
    """A ``DynamicLayer`` that stores one tensor, shape (batch, n_kv_heads, seq, head_dim).

    ``update(states, states)`` appends ``states`` along the sequence axis and returns
    ``(cached, cached)``; ``values`` is the same tensor as ``keys``. Every other
    operation (crop, beam reorder, batch selection, offloading) acts on it once.
    """

    one_tensor = True

    def _alias(self) -> None:
        self.values = self.keys

    def crop(self, *args: Any, **kwargs: Any) -> None:
        """Drop tokens from the end (the installed transformers' ``crop`` arguments)."""
        super().crop(*args, **kwargs)
        self._alias()

    def reset(self) -> None:
        """Empty the layer (see ``DynamicLayer.reset``)."""
        super().reset()
        self._alias()

    def offload(self) -> None:
        """Move the tensor to the CPU."""
        _offload(self)

    def prefetch(self) -> None:
        """Move the tensor back to the layer's device."""
        _prefetch(self)

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the shared states; return the whole cached tensor twice.

        Raises:
            ValueError: If ``value_states`` is another tensor than ``key_states``.
        """
        _same_tensor(key_states, value_states)
        if not self.is_initialized:
            self.lazy_initialization(key_states, key_states)
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        self._alias()
        return self.keys, self.keys

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Reorder the batch for beam search (one ``index_select``)."""
        if self.get_seq_length() > 0:
            self.keys = self.keys.index_select(0, beam_idx.to(self.keys.device))
            self._alias()

    def batch_repeat_interleave(self, repeats: int) -> None:
        """Repeat every batch row ``repeats`` times."""
        if self.get_seq_length() > 0:
            self.keys = self.keys.repeat_interleave(repeats, dim=0)
            self._alias()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep only the batch rows ``indices``."""
        if self.get_seq_length() > 0:
            self.keys = self.keys[indices, ...]
            self._alias()


class SharedStaticLayer(StaticLayer):
    """A ``StaticLayer`` with one buffer (batch, n_kv_heads, max_cache_len, head_dim).

    The buffer is allocated once (lazily at the first write, or by
    ``Cache.early_initialization``) and written in place, so its address is static for
    ``torch.compile`` (CUDA graphs) and ``torch.export``.
    """

    one_tensor = True

    def _alias(self) -> None:
        self.values = self.keys

    def crop(self, *args: Any, **kwargs: Any) -> None:
        """Forget tokens at the end (see ``StaticLayer.crop``)."""
        super().crop(*args, **kwargs)
        self._alias()

    def reset(self) -> None:
        """Zero the buffer and the write position (see ``StaticLayer.reset``)."""
        super().reset()
        self._alias()

    def offload(self) -> None:
        """Move the buffer to the CPU."""
        _offload(self)

    def prefetch(self) -> None:
        """Move the buffer back to the layer's device."""
        _prefetch(self)

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Allocate the one buffer (the values buffer of the base class has zero width)."""
        super().lazy_initialization(key_states, key_states[..., :0])
        self._alias()
        if hasattr(self, "v_head_dim"):
            self.v_head_dim = self.k_head_dim

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the shared states at the next free slots; return the buffer twice.

        Raises:
            ValueError: If ``value_states`` is another tensor than ``key_states``.
        """
        _same_tensor(key_states, value_states)
        # The base class writes keys then values; both are this buffer (two small writes
        # of the new tokens only, so the base class keeps its own position bookkeeping).
        return super().update(key_states, key_states, *args, **kwargs)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Reorder the batch in place (the buffer keeps its address)."""
        if self.is_initialized and self.keys is not None:
            self.keys.copy_(self.keys.index_select(0, beam_idx.to(self.keys.device)))
            self._alias()


_ONE_TENSOR_CLASS = {DynamicLayer: SharedDynamicLayer, StaticLayer: SharedStaticLayer}


def adopt_one_tensor_layer(cache: Cache, layer_idx: int) -> bool:
    """Make layer ``layer_idx`` of ``cache`` a one-tensor layer, if it is a stock one.

    A stock ``DynamicLayer`` or ``StaticLayer`` becomes :class:`SharedDynamicLayer` or
    :class:`SharedStaticLayer` (same object, same state; an allocated but empty static
    layer drops its values buffer). A cache that creates its layers lazily gets them
    created first.

    Args:
        cache: A ``transformers.Cache``.
        layer_idx: The model layer.

    Returns:
        True if the layer stores one tensor now; False for other layer kinds (e.g. a
        quantized layer), which then store the shared tensor twice (correct, not smaller).

    Raises:
        ValueError: If the stock layer already holds tokens (written as two tensors).
    """
    layers = cache.layers
    replicate = getattr(cache, "layer_class_to_replicate", None)
    if replicate is not None:
        while len(layers) <= layer_idx:
            layers.append(replicate())
    layer = layers[layer_idx]
    if getattr(layer, "one_tensor", False):
        return True
    cls = _ONE_TENSOR_CLASS.get(type(layer))
    if cls is None:
        return False
    if layer.is_initialized and layer.keys is not None and int(layer.get_seq_length()) > 0:
        raise ValueError(
            f"cache layer {layer_idx} already holds {int(layer.get_seq_length())} tokens as "
            "separate keys and values; use a fresh cache (or shared_cache()) for a one-tensor "
            "model"
        )
    layer.__class__ = cls
    if layer.is_initialized:
        layer.values = layer.keys
        if hasattr(layer, "v_head_dim"):
            layer.v_head_dim = layer.k_head_dim
    return True


def shared_cache(
    model_or_config: Any,
    kind: str = "dynamic",
    *,
    max_cache_len: int | None = None,
    batch_size: int | None = None,
    dtype: torch.dtype | None = None,
    device: Any = None,
) -> Cache:
    """A transformers cache whose layers store what the model's sharing needs.

    Args:
        model_or_config: A model (its ``config``, dtype and device are used) or a config.
        kind: ``"dynamic"`` (``DynamicCache``) or ``"static"`` (``StaticCache``).
        max_cache_len: Tokens a static cache holds (required for ``"static"``).
        batch_size: With ``"static"``, allocate the buffers now for this batch size
            (what ``torch.export`` needs); None allocates them at the first write.
        dtype: Buffer dtype of an allocated static cache (default: the model's).
        device: Buffer device of an allocated static cache (default: the model's).

    Returns:
        A ``DynamicCache`` or ``StaticCache`` whose layers are one-tensor layers for
        ``"q-k=v"``/``"q=k=v"`` and stock layers otherwise.

    Raises:
        ValueError: On an unknown ``kind``, a missing or bad ``max_cache_len``, or a bad
            ``batch_size``.
    """
    check_choice("kind", kind, ("dynamic", "static"))
    config = getattr(model_or_config, "config", model_or_config)
    n_layers = config.num_hidden_layers
    if kind == "dynamic":
        cache: Cache = DynamicCache(config=config)
    else:
        if max_cache_len is None:
            raise ValueError("max_cache_len is required for a static cache")
        check_int("max_cache_len", max_cache_len, low=1)
        cache = StaticCache(config=config, max_cache_len=max_cache_len)
    if cache_tensors_per_layer(getattr(config, "sharing", "qkv")) == 1:
        for idx in range(n_layers):
            adopt_one_tensor_layer(cache, idx)
    if kind == "static" and batch_size is not None:
        check_int("batch_size", batch_size, low=1)
        head_dim = (
            getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        )
        n_kv = config.num_key_value_heads or config.num_attention_heads
        if dtype is None:
            dtype = getattr(model_or_config, "dtype", None)
        dtype = dtype if isinstance(dtype, torch.dtype) else torch.float32
        if device is None:
            device = getattr(model_or_config, "device", "cpu")
        cache.early_initialization(batch_size, n_kv, head_dim, dtype, torch.device(device))
    return cache


def _nonnegative_int(name: str, value: Any) -> int:
    return check_int(name, value, low=0)


def kv_cache_bytes(config: Any, seq_len: int, batch: int = 1, dtype: Any = None) -> int:
    """Bytes of the KV cache of a model after ``seq_len`` tokens.

    ``layers * tensors * batch * n_kv_heads * seq_len * head_dim * bytes``, where
    ``tensors`` is 2 for ``"qkv"`` and ``"q=k-v"`` and 1 for ``"q-k=v"`` and
    ``"q=k=v"``.

    Args:
        config: A ``LlamaConfig`` (``sharing`` read when present, else ``"qkv"``).
        seq_len: Cached tokens (prompt plus generated tokens fed back; for a static
            cache, its ``max_cache_len``).
        batch: Sequences.
        dtype: Cache dtype; default the config's ``dtype``, else float32.

    Returns:
        Bytes.

    Raises:
        TypeError: If ``seq_len`` or ``batch`` is not an integer.
        ValueError: If ``seq_len`` or ``batch`` is negative.

    Example:
        >>> from qkv_sharing import SharedQKVLlamaConfig, kv_cache_bytes
        >>> c = SharedQKVLlamaConfig(hidden_size=64, num_attention_heads=4,
        ...     num_key_value_heads=4, num_hidden_layers=2, sharing="q-k=v")
        >>> kv_cache_bytes(c, seq_len=10, batch=1)  # 2 layers x 1 x 4 x 10 x 16 x 4 B
        5120
    """
    _nonnegative_int("seq_len", seq_len)
    _nonnegative_int("batch", batch)
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
        cache: A ``transformers.Cache`` (e.g. the cache returned by
            ``generate(..., return_dict_in_generate=True)``).

    Returns:
        Sum of the sizes of the distinct storages behind the cached keys and values
        (a view or an alias does not count twice; an empty tensor counts 0).

    Raises:
        TypeError: If ``cache`` has no ``layers``.
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
