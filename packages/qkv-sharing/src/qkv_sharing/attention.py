"""Multi-head attention whose query, key and value projections may be shared.

Four variants (the paper's names):

| sharing | projections | queries | keys | values | cached per layer |
| --- | --- | --- | --- | --- | --- |
| ``"qkv"`` | W_q, W_k, W_v | W_q x | W_k x | W_v x | K and V |
| ``"q-k=v"`` | W_q, W_kv | W_q x | W_kv x | W_kv x | one tensor (W_kv x) |
| ``"q=k-v"`` | W_qk, W_v | W_qk x | W_qk x | W_v x | K and V |
| ``"q=k=v"`` | W_qkv | W_qkv x | W_qkv x | W_qkv x | one tensor (W_qkv x) |

Head sharing composes with all four: ``n_kv_heads`` key/value heads serve
``n_heads`` query heads in groups of ``n_heads // n_kv_heads`` (MHA when equal, MQA
when 1). When queries are tied to keys (``q=k-v``, ``q=k=v``) the shared projection has
``n_kv_heads`` heads and query head ``h`` is key head ``h // group``: a query may only
equal a key if they have one head layout, so with GQA/MQA these variants have fewer
distinct attention patterns (our reading; the abstract does not say).

Rotary embeddings (RoPE) turn queries and keys by their positions. With queries tied
to keys, RoPE alone keeps the score matrix symmetric
(``<R_i s_i, R_j s_j> = <R_j s_j, R_i s_i>``). ``asymmetric=True`` adds our 2-D
positional encoding: every vector gets a second coordinate, its *role* (0 for a query,
1 for a key), and the rotary angle of frequency pair ``f`` is
``theta_f * position + phi_{h,f} * role`` with a learned phase ``phi`` per key head and
pair. The score becomes ``<s_i, R(theta (j - i) + phi) s_j>``, which differs from the
transposed score unless ``phi`` is a multiple of pi, so the map is no longer symmetric;
it costs ``n_kv_heads * head_dim / 2`` parameters and no cache. It also works without
RoPE (a learned rotation of the keys only).

References:
    Projection sharing (Q-K=V, Q=K-V, Q=K=V) and its complementarity with GQA/MQA:
    the ICML 2026 paper (abstract only).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from qkv_sharing.rotary import apply_rotary, rotary_angles

__all__ = [
    "SHARING_VARIANTS",
    "SharedProjectionAttention",
    "cache_tensors_per_layer",
    "check_head_layout",
    "check_sharing",
]

SHARING_VARIANTS: tuple[str, ...] = ("qkv", "q-k=v", "q=k-v", "q=k=v")

# Which projections each variant owns (name -> role of its output).
_PROJECTIONS: dict[str, tuple[str, ...]] = {
    "qkv": ("q_proj", "k_proj", "v_proj"),
    "q-k=v": ("q_proj", "kv_proj"),
    "q=k-v": ("qk_proj", "v_proj"),
    "q=k=v": ("qkv_proj",),
}


def check_sharing(sharing: Any) -> str:
    """Return ``sharing`` if it names a variant; raise otherwise.

    Raises:
        ValueError: If ``sharing`` is not one of :data:`SHARING_VARIANTS`.
    """
    if not isinstance(sharing, str) or sharing not in SHARING_VARIANTS:
        raise ValueError(f"sharing must be one of {list(SHARING_VARIANTS)}, got {sharing!r}")
    return sharing


def cache_tensors_per_layer(sharing: str) -> int:
    """Tensors of shape (batch, n_kv_heads, seq, head_dim) a layer caches: 2 or 1."""
    return 1 if check_sharing(sharing) in ("q-k=v", "q=k=v") else 2


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def check_head_layout(
    hidden_size: int, n_heads: int, n_kv_heads: int | None = None, head_dim: int | None = None
) -> tuple[int, int]:
    """Validate a head layout; return ``(n_kv_heads, head_dim)``.

    Raises:
        ValueError: If a size is not a positive int, ``n_heads`` does not divide
            ``hidden_size`` (when ``head_dim`` is not given), or ``n_kv_heads`` does
            not divide ``n_heads``.
    """
    _positive_int("hidden_size", hidden_size)
    _positive_int("n_heads", n_heads)
    n_kv_heads = n_heads if n_kv_heads is None else _positive_int("n_kv_heads", n_kv_heads)
    if head_dim is None:
        if hidden_size % n_heads:
            raise ValueError(
                f"n_heads ({n_heads}) must divide hidden_size ({hidden_size}), "
                f"or give head_dim explicitly"
            )
        head_dim = hidden_size // n_heads
    _positive_int("head_dim", head_dim)
    if n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads ({n_heads}) must be a multiple of n_kv_heads ({n_kv_heads}): "
            f"each key/value head serves a whole group of query heads"
        )
    return n_kv_heads, head_dim


class SharedProjectionAttention(nn.Module):
    """Attention with shared Q/K/V projections, GQA/MQA, RoPE and causal masks.

    Args:
        hidden_size: Model width (input and output features).
        n_heads: Query heads.
        n_kv_heads: Key/value heads (None: ``n_heads``, i.e. MHA; 1: MQA).
        sharing: ``"qkv"``, ``"q-k=v"``, ``"q=k-v"`` or ``"q=k=v"`` (see module docs).
        head_dim: Channels per head (default ``hidden_size // n_heads``).
        causal: Causal mask (a token sees itself and the past) or bidirectional.
        rope: Rotary position embeddings on queries and keys.
        rope_theta: RoPE base.
        rope_dims: 1 for token positions, 2 for (row, column) grid positions (ViT).
        asymmetric: Our 2-D (position x role) encoding, a learned key phase that
            breaks the symmetry of tied query/key scores.
        bias: Biases in the projections.

    Shapes:
        ``forward(x)`` with ``x`` (batch, seq, hidden_size) returns (batch, seq,
        hidden_size).

    Raises:
        ValueError: On an unknown ``sharing`` or a head layout that does not divide.

    Example:
        >>> import torch
        >>> attn = SharedProjectionAttention(64, n_heads=8, n_kv_heads=2, sharing="q-k=v")
        >>> attn(torch.randn(3, 10, 64)).shape
        torch.Size([3, 10, 64])
    """

    def __init__(
        self,
        hidden_size: int,
        n_heads: int,
        n_kv_heads: int | None = None,
        *,
        sharing: str = "qkv",
        head_dim: int | None = None,
        causal: bool = True,
        rope: bool = True,
        rope_theta: float = 10000.0,
        rope_dims: int = 1,
        asymmetric: bool = False,
        bias: bool = False,
    ) -> None:
        super().__init__()
        self.sharing = check_sharing(sharing)
        self.n_kv_heads, self.head_dim = check_head_layout(
            hidden_size, n_heads, n_kv_heads, head_dim
        )
        if rope_dims not in (1, 2):
            raise ValueError(f"rope_dims must be 1 or 2, got {rope_dims!r}")
        if rope and self.head_dim % (2 * rope_dims):
            raise ValueError(
                f"head_dim ({self.head_dim}) must be a multiple of {2 * rope_dims} for "
                f"{rope_dims}-D rotary embeddings"
            )
        if asymmetric and self.head_dim % 2:
            raise ValueError(f"asymmetric needs an even head_dim, got {self.head_dim}")
        self.hidden_size = hidden_size
        self.n_heads = n_heads
        self.causal = bool(causal)
        self.rope = bool(rope)
        self.rope_theta = float(rope_theta)
        self.rope_dims = rope_dims
        self.asymmetric = bool(asymmetric)
        q_width = n_heads * self.head_dim
        kv_width = self.n_kv_heads * self.head_dim
        widths = {"q_proj": q_width, "k_proj": kv_width, "v_proj": kv_width}
        widths |= {"kv_proj": kv_width, "qk_proj": kv_width, "qkv_proj": kv_width}
        for name in _PROJECTIONS[self.sharing]:
            setattr(self, name, nn.Linear(hidden_size, widths[name], bias=bias))
        self.o_proj = nn.Linear(q_width, hidden_size, bias=bias)
        if self.asymmetric:
            self.key_phase = nn.Parameter(torch.empty(self.n_kv_heads, self.head_dim // 2))
        else:
            self.register_parameter("key_phase", None)
        self.reset_parameters()

    def reset_parameters(self, std: float | None = None) -> None:
        """Normal(0, std) weights (default ``1/sqrt(hidden_size)``), zero biases.

        The key phases of ``asymmetric`` are drawn uniformly in (-pi, pi).
        """
        std = 1.0 / math.sqrt(self.hidden_size) if std is None else std
        for module in self.children():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        if self.key_phase is not None:
            nn.init.uniform_(self.key_phase, -math.pi, math.pi)

    @property
    def group_size(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads

    def extra_repr(self) -> str:
        """The layout in ``repr``."""
        return (
            f"sharing={self.sharing!r}, n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, "
            f"head_dim={self.head_dim}, causal={self.causal}, rope={self.rope}, "
            f"asymmetric={self.asymmetric}"
        )

    def _heads(self, t: torch.Tensor, n: int) -> torch.Tensor:
        b, s, _ = t.shape
        return t.view(b, s, n, self.head_dim).transpose(1, 2)

    def _angles(self, positions: torch.Tensor) -> torch.Tensor:
        angles = rotary_angles(positions, self.head_dim, self.rope_theta, dims=self.rope_dims)
        return angles.unsqueeze(-3)  # a heads axis: (..., 1, seq, head_dim // 2)

    def _turn_keys(self, k: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        if self.rope:
            angles = self._angles(positions)
            if self.key_phase is not None:
                angles = angles + self.key_phase[:, None, :]
        elif self.key_phase is not None:
            angles = self.key_phase[:, None, :]
        else:
            return k
        return apply_rotary(k, angles)

    def _default_positions(self, start: int, length: int, device: torch.device) -> torch.Tensor:
        if self.rope and self.rope_dims == 2:
            raise ValueError(
                "positions is required with rope_dims=2: pass (seq, 2) grid coordinates"
            )
        return torch.arange(start, start + length, device=device)

    def _check_input(self, x: Any, positions: Any, cache: Any) -> None:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"x must be a floating-point torch.Tensor, got {type(x).__name__}")
        if x.ndim != 3 or x.shape[-1] != self.hidden_size:
            raise ValueError(
                f"x must have shape (batch, seq, {self.hidden_size}), got {tuple(x.shape)}"
            )
        if positions is not None:
            if cache is not None:
                raise ValueError(
                    "positions must be None when a cache is given: cached tokens take "
                    "positions 0, 1, ... in cache order"
                )
            want = (x.shape[1], 2) if self.rope_dims == 2 else (x.shape[1],)
            if tuple(positions.shape[-len(want) :]) != want:
                raise ValueError(
                    f"positions must end in shape {want} for x of shape {tuple(x.shape)}, "
                    f"got {tuple(positions.shape)}"
                )

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values before positions: (batch, heads, seq, head_dim) each.

        Queries have ``n_heads`` heads, keys and values ``n_kv_heads``; tied tensors
        are the same object (values) or repeated views of it (queries).
        """
        g = self.n_kv_heads
        if self.sharing == "qkv":
            q = self._heads(self.q_proj(x), self.n_heads)
            k, v = self._heads(self.k_proj(x), g), self._heads(self.v_proj(x), g)
        elif self.sharing == "q-k=v":
            q = self._heads(self.q_proj(x), self.n_heads)
            k = v = self._heads(self.kv_proj(x), g)
        elif self.sharing == "q=k-v":
            k = self._heads(self.qk_proj(x), g)
            q = k.repeat_interleave(self.group_size, dim=1)
            v = self._heads(self.v_proj(x), g)
        else:
            k = v = self._heads(self.qkv_proj(x), g)
            q = k.repeat_interleave(self.group_size, dim=1)
        return q, k, v

    def _mask(
        self, attn_mask: torch.Tensor | None, q_len: int, kv_len: int, device: torch.device
    ) -> torch.Tensor | None:
        mask = None
        if self.causal:
            offset = kv_len - q_len
            rows = torch.arange(q_len, device=device)[:, None] + offset
            mask = torch.arange(kv_len, device=device)[None, :] <= rows
        if attn_mask is None:
            return mask
        if attn_mask.ndim < 2 or attn_mask.shape[-1] != kv_len:
            raise ValueError(
                f"attn_mask must broadcast to (batch, heads, {q_len}, {kv_len}), "
                f"got {tuple(attn_mask.shape)}"
            )
        if attn_mask.dtype == torch.bool:
            mask = attn_mask if mask is None else attn_mask & mask
            # A row that sees nothing (a left pad) would give NaN that leaks through
            # later layers; let it see everything: its output is never used.
            return mask | ~mask.any(dim=-1, keepdim=True)
        if mask is not None:
            return attn_mask.masked_fill(~mask, torch.finfo(attn_mask.dtype).min)
        return attn_mask

    def scores(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Pre-softmax attention logits, before any mask: (batch, n_heads, seq, seq).

        ``scores[..., i, j]`` is the scaled dot product of query ``i`` and key ``j``;
        for ``q=k-v`` and ``q=k=v`` without ``asymmetric`` it is symmetric in ``i, j``.
        """
        self._check_input(x, positions, None)
        if positions is None:
            positions = self._default_positions(0, x.shape[1], x.device)
        q, k, _ = self.project(x)
        if self.rope:
            q = apply_rotary(q, self._angles(positions))
        k = self._turn_keys(k, positions).repeat_interleave(self.group_size, dim=1)
        return q @ k.transpose(-1, -2) * self.head_dim**-0.5

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        cache: Any = None,
        layer_idx: int = 0,
    ) -> torch.Tensor:
        """Attend.

        Args:
            x: (batch, seq, hidden_size) float.
            positions: Token positions (seq,) or (batch, seq); (seq, 2) or
                (batch, seq, 2) grid positions when ``rope_dims=2``. Default
                ``past, past + 1, ...`` where ``past`` is the cached length.
            attn_mask: Optional extra mask, combined with the causal one: bool (True
                = may attend) or float additive, broadcastable to
                (batch, heads, seq, past + seq).
            cache: A ``transformers.Cache`` (e.g. ``DynamicCache``); the layer
                appends what its variant needs (two tensors, or one) and attends over
                the whole cache. Not used when None.
            layer_idx: This layer's index in ``cache``.

        Returns:
            (batch, seq, hidden_size).

        Raises:
            TypeError: If ``x`` is not a float tensor.
            ValueError: On a wrong shape of ``x``, ``positions`` or ``attn_mask``.
        """
        self._check_input(x, positions, cache)
        b, q_len, _ = x.shape
        past = cache.get_seq_length(layer_idx) if cache is not None else 0
        if positions is None:
            positions = self._default_positions(past, q_len, x.device)
        q, k, v = self.project(x)
        if self.rope:
            q = apply_rotary(q, self._angles(positions))
        if cache_tensors_per_layer(self.sharing) == 1:
            # One tensor per layer: cache the shared projection before any rotation and
            # turn the keys on read; the values are that tensor itself.
            shared = k
            if cache is not None:
                from qkv_sharing.cache import adopt_one_tensor_layer

                adopt_one_tensor_layer(cache, layer_idx)
                shared, _ = cache.update(shared, shared, layer_idx)
                key_positions = self._default_positions(0, shared.shape[-2], x.device)
            else:
                key_positions = positions
            k, v = self._turn_keys(shared, key_positions), shared
        else:
            k = self._turn_keys(k, positions)
            if cache is not None:
                k, v = cache.update(k, v, layer_idx)
        if self.group_size > 1:
            k = k.repeat_interleave(self.group_size, dim=1)
            v = v.repeat_interleave(self.group_size, dim=1)
        mask = self._mask(attn_mask, q_len, k.shape[-2], x.device)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.head_dim**-0.5)
        return self.o_proj(out.transpose(1, 2).reshape(b, q_len, -1))
