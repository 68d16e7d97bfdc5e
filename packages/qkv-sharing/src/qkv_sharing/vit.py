"""A small Vision Transformer built from :class:`SharedProjectionAttention`.

Patches of a square image are embedded linearly; each block is pre-norm (LayerNorm)
bidirectional attention plus a GELU MLP; positions enter through 2-D (row, column)
rotary embeddings in every attention layer; the class is read from the mean of the
patch tokens (no class token, so every token has a grid position).
"""

from __future__ import annotations

import torch
from torch import nn

from qkv_sharing.attention import SharedProjectionAttention, check_head_layout, check_sharing

__all__ = ["SharedViT"]


class _Block(nn.Module):
    def __init__(self, dim: int, n_heads: int, n_kv_heads: int | None, mlp_ratio: int, **kw):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SharedProjectionAttention(dim, n_heads, n_kv_heads, causal=False, **kw)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim)
        )

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), positions)
        return x + self.mlp(self.norm2(x))


class SharedViT(nn.Module):
    """ViT classifier with projection-shared attention.

    Args:
        image_size: Side of the square input image in pixels.
        patch_size: Side of a square patch; must divide ``image_size``.
        n_classes: Output classes.
        dim: Token width.
        depth: Blocks.
        n_heads: Query heads per block.
        n_kv_heads: Key/value heads (None: MHA).
        sharing: ``"qkv"``, ``"q-k=v"``, ``"q=k-v"`` or ``"q=k=v"``.
        asymmetric: Our 2-D (position x role) encoding on the attention scores.
        channels: Input channels.
        mlp_ratio: MLP hidden width over ``dim``.

    Shapes:
        ``forward(images)``: images (batch, channels, H, W) or (batch, H, W) float ->
        logits (batch, n_classes).

    Raises:
        ValueError: If ``patch_size`` does not divide ``image_size``, or on a bad head
            layout or sharing.

    Example:
        >>> import torch
        >>> vit = SharedViT(image_size=8, patch_size=2, n_classes=10, sharing="q=k=v")
        >>> vit(torch.rand(5, 8, 8)).shape
        torch.Size([5, 10])
    """

    def __init__(
        self,
        image_size: int,
        patch_size: int,
        n_classes: int,
        *,
        dim: int = 64,
        depth: int = 2,
        n_heads: int = 4,
        n_kv_heads: int | None = None,
        sharing: str = "qkv",
        asymmetric: bool = False,
        channels: int = 1,
        mlp_ratio: int = 2,
    ) -> None:
        super().__init__()
        check_sharing(sharing)
        check_head_layout(dim, n_heads, n_kv_heads)
        for name, value in (("image_size", image_size), ("patch_size", patch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if image_size % patch_size:
            raise ValueError(f"patch_size ({patch_size}) must divide image_size ({image_size})")
        self.image_size, self.patch_size, self.channels = image_size, patch_size, channels
        self.grid = image_size // patch_size
        self.embed = nn.Conv2d(channels, dim, kernel_size=patch_size, stride=patch_size)
        self.blocks = nn.ModuleList(
            _Block(
                dim,
                n_heads,
                n_kv_heads,
                mlp_ratio,
                sharing=sharing,
                rope=True,
                rope_dims=2,
                asymmetric=asymmetric,
            )
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, n_classes)
        rows, cols = torch.meshgrid(torch.arange(self.grid), torch.arange(self.grid), indexing="ij")
        self.register_buffer(
            "positions", torch.stack((rows.flatten(), cols.flatten()), -1), persistent=False
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Class logits (batch, n_classes) of images (batch, [channels,] H, W)."""
        if not isinstance(images, torch.Tensor) or not images.is_floating_point():
            raise TypeError(f"images must be a float torch.Tensor, got {type(images).__name__}")
        if images.ndim == 3 and self.channels == 1:
            images = images.unsqueeze(1)
        want = (self.channels, self.image_size, self.image_size)
        if images.ndim != 4 or tuple(images.shape[1:]) != want:
            raise ValueError(
                f"images must have shape (batch, {', '.join(map(str, want))}), "
                f"got {tuple(images.shape)}"
            )
        x = self.embed(images).flatten(2).transpose(1, 2)  # (batch, tokens, dim)
        for block in self.blocks:
            x = block(x, self.positions)
        return self.head(self.norm(x).mean(dim=1))
