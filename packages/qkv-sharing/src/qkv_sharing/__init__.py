"""Attention with shared query/key/value projections, and what it saves in KV cache.

Reference implementation of the ICML 2026 paper on QKV projection sharing
(Q-K=V, Q=K-V, Q=K=V), composable with grouped-query heads (GQA/MQA):

- :class:`SharedProjectionAttention`: the attention module (``sharing``,
  ``n_kv_heads``, causal or bidirectional, RoPE on 1-D or 2-D positions, and our
  2-D position x role encoding for asymmetric scores).
- :class:`SharedQKVLlamaConfig`, :class:`SharedQKVLlamaForCausalLM`,
  :func:`shared_llama`: a transformers Llama whose KV cache holds only what the
  variant needs (one tensor per layer for ``q-k=v``), with ``generate()``, dynamic and
  static caches, ``torch.compile`` and ``torch.export``
  (:class:`SharedQKVExportableDecoder`).
- :class:`SharedDynamicLayer`, :class:`SharedStaticLayer`, :func:`shared_cache`: the
  one-tensor cache layers on transformers' Cache API.
- :func:`from_llama`: convert a stock Llama (SmolLM2, ...) to Q-K=V (mean or SVD merge).
- :class:`SharedViT`: a small Vision Transformer from the same module.
- :func:`kv_cache_bytes` (formula) and :func:`cache_nbytes` (a live cache's bytes).
"""

from importlib.metadata import PackageNotFoundError, version

from qkv_sharing.attention import (
    SHARING_VARIANTS,
    SharedProjectionAttention,
    cache_tensors_per_layer,
)
from qkv_sharing.cache import (
    SharedDynamicLayer,
    SharedStaticLayer,
    cache_nbytes,
    kv_cache_bytes,
    kv_cache_reduction,
    shared_cache,
)
from qkv_sharing.convert import from_llama
from qkv_sharing.llama import (
    SharedQKVExportableDecoder,
    SharedQKVLlamaConfig,
    SharedQKVLlamaForCausalLM,
    shared_llama,
)
from qkv_sharing.vit import SharedViT

try:
    __version__ = version("qkv-sharing")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "SHARING_VARIANTS",
    "SharedDynamicLayer",
    "SharedProjectionAttention",
    "SharedQKVExportableDecoder",
    "SharedQKVLlamaConfig",
    "SharedQKVLlamaForCausalLM",
    "SharedStaticLayer",
    "SharedViT",
    "__version__",
    "cache_nbytes",
    "cache_tensors_per_layer",
    "from_llama",
    "kv_cache_bytes",
    "kv_cache_reduction",
    "shared_cache",
    "shared_llama",
]
