"""Rotary position embeddings on 1-D (tokens) and 2-D (image grid) positions.

The layout is transformers' Llama one (``rotate_half``: frequency pair ``i`` is the
pair of channels ``(i, i + head_dim / 2)``), so that a ``"qkv"`` attention with the
same weights gives the same output as ``transformers``' ``LlamaAttention``.
"""

from __future__ import annotations

import torch

__all__ = ["apply_rotary", "rotary_angles", "rotate_half"]


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``(x1, x2) -> (-x2, x1)`` on the two halves of the last dimension."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary_angles(
    positions: torch.Tensor, head_dim: int, theta: float = 10000.0, *, dims: int = 1
) -> torch.Tensor:
    """Rotation angles (radians) of every frequency pair at every position.

    Args:
        positions: Integer or float positions, shape (..., seq) for 1-D positions, or
            (..., seq, 2) for (row, column) positions on an image grid when
            ``dims=2`` (axial RoPE: the first half of the frequency pairs turns with
            the row, the second half with the column).
        head_dim: Channels per head; even for 1-D positions, a multiple of 4 for 2-D.
        theta: RoPE base (10000 in Llama).
        dims: 1 for token positions, 2 for grid positions.

    Returns:
        float32 tensor (..., seq, head_dim // 2).

    Raises:
        ValueError: If ``head_dim`` does not suit the positions' dimension.
    """
    positions = positions.float()
    if dims == 2:
        if positions.ndim < 2 or positions.shape[-1] != 2:
            raise ValueError(
                f"2-D positions must have shape (..., seq, 2), got {tuple(positions.shape)}"
            )
        if head_dim % 4:
            raise ValueError(f"head_dim must be a multiple of 4 for 2-D positions, got {head_dim}")
        quarter = head_dim // 4
        inv = 1.0 / theta ** (torch.arange(quarter, device=positions.device).float() / quarter)
        return torch.cat(
            (positions[..., 0:1] * inv, positions[..., 1:2] * inv), dim=-1
        )  # (..., seq, head_dim // 2)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even for rotary embeddings, got {head_dim}")
    half = head_dim // 2
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim)
    return positions[..., None] * inv[:half]


def apply_rotary(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate each frequency pair of ``x`` by ``angles``.

    Args:
        x: (batch, heads, seq, head_dim).
        angles: Broadcastable to (batch, heads, seq, head_dim // 2), in radians.

    Returns:
        Tensor like ``x`` (same dtype); the rotation is computed in float32.
    """
    angles = torch.cat((angles, angles), dim=-1)
    xf = x.float()
    out = xf * angles.cos() + rotate_half(xf) * angles.sin()
    return out.to(x.dtype)
