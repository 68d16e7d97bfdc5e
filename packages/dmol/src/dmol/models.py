"""Ready-made blocks and nets for the experiment: residual MLPs, GCN layers, a denoiser.

Every builder returns a :class:`~dmol.DMoLNet` whose heads are ``nn.Linear`` layers
zeroed at initialisation (:func:`~dmol.net.zero_head_`), so every belief starts at 0.
"""

from __future__ import annotations

import math

import torch
from icml26_core.validation import check_choice, check_float, check_int
from torch import nn

from dmol.net import DMoLNet, zero_head_

__all__ = [
    "ConvResBlock",
    "GCNLayer",
    "PairNorm",
    "ResidualMLPBlock",
    "TimeMLPBlock",
    "UNetBlock",
    "cnn_net",
    "gcn_net",
    "mlp_net",
    "normalized_adjacency",
    "pool_head",
    "resnet18_net",
    "time_embedding",
    "unet_denoiser",
]


class ResidualMLPBlock(nn.Module):
    """``h + W_2 relu(W_1 LayerNorm(h))``: a pre-norm residual MLP block, width ``dim``.

    Args:
        dim: Width ``d`` of the input and output, ``(..., d)``.
        expansion: Hidden width ``expansion * d``.

    Raises:
        TypeError, ValueError: If ``dim`` or ``expansion`` is not an integer >= 1.
    """

    def __init__(self, dim: int, expansion: int = 2) -> None:
        super().__init__()
        dim = check_int("dim", dim, low=1)
        expansion = check_int("expansion", expansion, low=1)
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, expansion * dim)
        self.fc2 = nn.Linear(expansion * dim, dim)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """``(..., dim) -> (..., dim)``."""
        return h + self.fc2(torch.relu(self.fc1(self.norm(h))))


class TimeMLPBlock(nn.Module):
    """A residual MLP block that also reads a time embedding: ``block(h, t_emb)``.

    The first block (``in_dim != dim``) also embeds the input (a noisy image): it
    returns ``W_in x + W_t t_emb`` followed by the residual update. Maps ``h`` of
    shape ``(B, in_dim or dim)`` and ``t_emb`` of shape ``(B, time_dim)`` to ``(B, dim)``.

    Raises:
        TypeError, ValueError: If ``dim``, ``time_dim`` or ``in_dim`` is not an integer
            >= 1.
    """

    def __init__(self, dim: int, time_dim: int, in_dim: int | None = None) -> None:
        super().__init__()
        dim, time_dim = check_int("dim", dim, low=1), check_int("time_dim", time_dim, low=1)
        in_dim = None if in_dim is None else check_int("in_dim", in_dim, low=1)
        self.inp = None if in_dim is None else nn.Linear(in_dim, dim)
        self.time = nn.Linear(time_dim, dim)
        self.body = ResidualMLPBlock(dim)

    def forward(self, h: torch.Tensor, t_emb: torch.Tensor) -> torch.Tensor:
        """``h`` ``(B, in_dim or dim)``, ``t_emb`` ``(B, time_dim)`` -> ``(B, dim)``."""
        if self.inp is not None:
            h = self.inp(h)
        return self.body(h + self.time(t_emb))


def normalized_adjacency(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """The GCN propagation matrix ``D^{-1/2} (A + I) D^{-1/2}`` as a sparse COO tensor.

    Args:
        edge_index: Long tensor ``(2, E)`` of directed edges (list both directions for
            an undirected graph); duplicates are merged.
        num_nodes: Number of nodes ``n``.

    Returns:
        A coalesced sparse float32 tensor of shape ``(n, n)`` (Kipf & Welling 2017).

    Raises:
        TypeError: If ``edge_index`` is not an integer torch tensor, or ``num_nodes``
            not an integer.
        ValueError: If ``edge_index`` is not ``(2, E)``, has a node outside
            ``0..n-1``, or ``num_nodes < 1``.
    """
    n = check_int("num_nodes", num_nodes, low=1)
    if not isinstance(edge_index, torch.Tensor):
        raise TypeError(
            f"edge_index: expected a torch.Tensor of shape (2, E), got "
            f"{type(edge_index).__name__} (use torch.as_tensor(edge_index))"
        )
    if (
        edge_index.dtype.is_floating_point
        or edge_index.dtype.is_complex
        or edge_index.dtype == torch.bool
    ):
        raise TypeError(f"edge_index: expected an integer tensor, got {edge_index.dtype}")
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index: expected shape (2, E), got {tuple(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(
            f"edge_index: node indices must lie in 0..{n - 1} (num_nodes={n}), got "
            f"{int(edge_index.min())}..{int(edge_index.max())}"
        )
    edge_index = edge_index.long()
    loops = torch.arange(n, dtype=edge_index.dtype, device=edge_index.device)
    idx = torch.cat([edge_index, torch.stack([loops, loops])], dim=1)
    a = torch.sparse_coo_tensor(
        idx, torch.ones(idx.shape[1], device=idx.device), (n, n), check_invariants=False
    )
    a = a.coalesce()
    idx = a.indices()
    deg = torch.zeros(n, device=idx.device).index_add_(
        0, idx[0], torch.ones_like(idx[0], dtype=torch.float32)
    )
    w = deg[idx[0]].rsqrt() * deg[idx[1]].rsqrt()
    return torch.sparse_coo_tensor(idx, w, (n, n), check_invariants=False).coalesce()


class PairNorm(nn.Module):
    """PairNorm (Zhao & Akoglu 2020, "PN" mode) on node features ``(n, d)``.

    Centres the features over nodes, then rescales so that the mean squared row norm
    is ``scale**2``.

    Raises:
        ValueError: If ``scale`` is not > 0.
    """

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.scale = check_float("scale", scale, low=0.0, low_inclusive=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """``(n, d) -> (n, d)``."""
        h = h - h.mean(dim=0, keepdim=True)
        return self.scale * h / (1e-6 + h.pow(2).sum(dim=1).mean()).sqrt()


class GCNLayer(nn.Module):
    """One GCN layer, ``relu(A_hat dropout(h) W)``, of a plain deep GCN.

    Its head (a linear layer) reads the ReLU output. Call as ``layer(h, adj)`` with
    ``adj`` from :func:`normalized_adjacency`; ``h`` may be a sparse COO tensor (e.g.
    bag-of-words node features).

    Args:
        in_dim: Input features per node.
        out_dim: Output features per node.
        dropout: Dropout on the input, in ``[0, 1)``.
        pairnorm: Apply :class:`PairNorm` after the propagation.

    Raises:
        TypeError, ValueError: If a size is not an integer >= 1 or ``dropout`` is out
            of range.
    """

    def __init__(
        self, in_dim: int, out_dim: int, *, dropout: float = 0.5, pairnorm: bool = False
    ) -> None:
        super().__init__()
        self.lin = nn.Linear(
            check_int("in_dim", in_dim, low=1), check_int("out_dim", out_dim, low=1)
        )
        self.dropout = nn.Dropout(
            check_float("dropout", dropout, low=0.0, high=1.0, high_inclusive=False)
        )
        self.norm = PairNorm() if pairnorm else None

    def forward(self, h: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        """``h`` ``(n, in_dim)`` (dense or sparse), ``adj`` ``(n, n)`` -> ``(n, out_dim)``."""
        if h.is_sparse:  # sparse input features (bag of words): dropout on the stored values
            h = h.coalesce()
            h = torch.sparse_coo_tensor(
                h.indices(), self.dropout(h.values()), h.shape, check_invariants=False
            )
            h = torch.sparse.mm(h, self.lin.weight.t()) + self.lin.bias
        else:
            h = self.lin(self.dropout(h))
        h = torch.sparse.mm(adj, h)
        if self.norm is not None:
            h = self.norm(h)
        return torch.relu(h)


def _heads(dim: int, out_dim: int, depth: int) -> list[nn.Module]:
    return [zero_head_(nn.Linear(dim, out_dim)) for _ in range(depth)]


def mlp_net(
    in_dim: int, dim: int, out_dim: int, depth: int, *, belief: str = "additive"
) -> DMoLNet:
    """A residual MLP as a DMoLNet of ``depth`` blocks.

    Block 1 is ``relu(Linear(in_dim, dim))``, blocks 2..L are :class:`ResidualMLPBlock`;
    every head is a zeroed ``Linear(dim, out_dim)``. The net maps float32 ``(B, in_dim)``
    to beliefs ``(B, out_dim)`` (``net.double()`` for float64 inputs).

    Args:
        in_dim: Input features.
        dim: Width of every block.
        out_dim: Size of the belief (e.g. the number of classes).
        depth: Number of blocks ``L``.
        belief: ``"additive"`` (DMoL) or ``"independent"`` (DGL), see :class:`DMoLNet`.

    Raises:
        TypeError, ValueError: If a size is not an integer >= 1, or ``belief`` is
            unknown.
    """
    in_dim, dim = check_int("in_dim", in_dim, low=1), check_int("dim", dim, low=1)
    out_dim = check_int("out_dim", out_dim, low=1)
    depth = check_int("depth", depth, low=1)
    blocks: list[nn.Module] = [nn.Sequential(nn.Linear(in_dim, dim), nn.ReLU())]
    blocks += [ResidualMLPBlock(dim) for _ in range(depth - 1)]
    return DMoLNet(blocks, _heads(dim, out_dim, depth), belief=belief)


def gcn_net(
    in_dim: int,
    dim: int,
    out_dim: int,
    depth: int,
    *,
    dropout: float = 0.5,
    pairnorm: bool = False,
    belief: str = "additive",
) -> DMoLNet:
    """A plain deep GCN as a DMoLNet of ``depth`` :class:`GCNLayer` blocks of width ``dim``.

    The first block reads ``in_dim`` features; each block has a zeroed
    ``Linear(dim, out_dim)`` head. Blocks are called as ``block(h, adj)``: the net maps
    node features ``(n, in_dim)`` (dense or sparse, float32) and ``adj`` ``(n, n)`` from
    :func:`normalized_adjacency` to beliefs ``(n, out_dim)``.

    Args:
        in_dim: Input features per node.
        dim: Width of every layer.
        out_dim: Size of the belief (the number of classes).
        depth: Number of layers ``L``.
        dropout: Dropout on each layer's input, in ``[0, 1)``.
        pairnorm: Apply :class:`PairNorm` after each propagation (the BP + PairNorm
            baseline).
        belief: ``"additive"`` (DMoL) or ``"independent"`` (DGL), see :class:`DMoLNet`.

    Raises:
        TypeError, ValueError: If a size is not an integer >= 1, ``dropout`` is out of
            range, or ``belief`` is unknown.
    """
    in_dim, dim = check_int("in_dim", in_dim, low=1), check_int("dim", dim, low=1)
    out_dim = check_int("out_dim", out_dim, low=1)
    depth = check_int("depth", depth, low=1)
    check_choice("belief", belief, ("additive", "independent"))
    blocks = [
        GCNLayer(in_dim if i == 0 else dim, dim, dropout=dropout, pairnorm=pairnorm)
        for i in range(depth)
    ]
    return DMoLNet(blocks, _heads(dim, out_dim, depth), belief=belief)


def time_embedding(t: torch.Tensor, dim: int, max_period: float = 1000.0) -> torch.Tensor:
    """Sinusoidal embedding of integer steps ``t`` (shape ``(B,)``) -> ``(B, dim)``.

    Args:
        t: Diffusion steps, a 1-D tensor ``(B,)`` of any real or integer dtype.
        dim: Embedding size, even (``dim / 2`` cosines, then ``dim / 2`` sines).
        max_period: Longest period of the frequencies.

    Returns:
        A float32 tensor ``(B, dim)`` on ``t``'s device.

    Raises:
        TypeError: If ``t`` is not a torch tensor, or ``dim`` not an integer.
        ValueError: If ``t`` is not 1-D, or ``dim`` is not an even integer >= 2.
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(
            f"t: expected a 1-D torch.Tensor of steps (B,), got {type(t).__name__} "
            "(use torch.as_tensor(t))"
        )
    if t.ndim != 1:
        raise ValueError(f"t: expected a 1-D tensor of steps (B,), got shape {tuple(t.shape)}")
    dim = check_int("dim", dim, low=2)
    if dim % 2:
        raise ValueError(f"dim: must be even (cos and sin halves), got {dim}")
    half = dim // 2
    freqs = torch.exp(
        -math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half
    )
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=1)


# --------------------------------------------------------------------------- images
class ConvResBlock(nn.Module):
    """A pre-activation residual conv block, ``h + conv(relu(bn(conv(relu(bn(h))))))``.

    Two 3x3 convolutions of ``channels`` channels (He et al. 2016, "identity mappings").
    With ``stride > 1`` or ``in_channels != channels`` the shortcut is a strided 1x1
    convolution (a ResNet-18 stage start).

    Args:
        channels: Output channels ``C``.
        in_channels: Input channels (default ``channels``).
        stride: Stride of the first convolution (and of the shortcut), ``>= 1``.

    Raises:
        TypeError, ValueError: If a size is not an integer >= 1.
    """

    def __init__(self, channels: int, in_channels: int | None = None, stride: int = 1) -> None:
        super().__init__()
        c = check_int("channels", channels, low=1)
        cin = c if in_channels is None else check_int("in_channels", in_channels, low=1)
        stride = check_int("stride", stride, low=1)
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, c, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.shortcut = (
            None if stride == 1 and cin == c else nn.Conv2d(cin, c, 1, stride=stride, bias=False)
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """``(B, in_channels, H, W) -> (B, channels, H / stride, W / stride)``."""
        a = torch.relu(self.bn1(h))
        skip = h if self.shortcut is None else self.shortcut(a)
        return skip + self.conv2(torch.relu(self.bn2(self.conv1(a))))


def pool_head(channels: int, out_dim: int, size: int = 1) -> nn.Module:
    """Average pooling to ``size x size``, flatten, then a zeroed linear layer.

    ``size=1`` is global average pooling (``Linear(channels, out_dim)``); ``size`` equal
    to the feature map's side keeps every position (a flattened head,
    ``Linear(channels * size**2, out_dim)``). Maps ``(B, channels, H, W)`` to
    ``(B, out_dim)``; its output is 0 at initialisation.

    Raises:
        TypeError, ValueError: If a size is not an integer >= 1.
    """
    c = check_int("channels", channels, low=1)
    out_dim = check_int("out_dim", out_dim, low=1)
    size = check_int("size", size, low=1)
    return zero_head_(
        nn.Sequential(nn.AdaptiveAvgPool2d(size), nn.Flatten(), nn.Linear(c * size * size, out_dim))
    )


def cnn_net(
    in_channels: int,
    channels: int,
    out_dim: int,
    depth: int,
    *,
    patch: int = 4,
    pool: int = 1,
    belief: str = "additive",
) -> DMoLNet:
    """A CNN of ``depth`` residual blocks as a DMoLNet (the issue's MNIST CNN).

    Block 1 is a patchify stem (``Conv2d(in_channels, channels, patch, stride=patch)``,
    28x28 -> 7x7 for ``patch=4``) followed by a :class:`ConvResBlock`; blocks 2..L are
    :class:`ConvResBlock` of ``channels`` channels at that resolution. Every head is
    :func:`pool_head` with pooled side ``pool`` (1: global average pooling; 7 with the
    7x7 maps of ``patch=4`` on 28x28: a flattened head). The net maps float32 images
    ``(B, in_channels, H, W)`` to beliefs ``(B, out_dim)``.

    Args:
        in_channels: Input channels (1 for MNIST).
        channels: Channels of every block.
        out_dim: Size of the belief (the number of classes).
        depth: Number of residual blocks ``L``.
        patch: Stem kernel and stride (``H`` and ``W`` should be multiples of it).
        pool: Side of the heads' average pooling (see :func:`pool_head`).
        belief: ``"additive"`` (DMoL) or ``"independent"`` (DGL), see :class:`DMoLNet`.

    Raises:
        TypeError, ValueError: If a size is not an integer >= 1, or ``belief`` is
            unknown.
    """
    cin = check_int("in_channels", in_channels, low=1)
    c = check_int("channels", channels, low=1)
    out_dim = check_int("out_dim", out_dim, low=1)
    depth = check_int("depth", depth, low=1)
    patch = check_int("patch", patch, low=1)
    pool = check_int("pool", pool, low=1)
    stem = nn.Conv2d(cin, c, patch, stride=patch)
    blocks: list[nn.Module] = [nn.Sequential(stem, ConvResBlock(c))]
    blocks += [ConvResBlock(c) for _ in range(depth - 1)]
    heads = [pool_head(c, out_dim, pool) for _ in range(depth)]
    return DMoLNet(blocks, heads, belief=belief)


def resnet18_net(
    in_channels: int, out_dim: int, *, width: int = 64, belief: str = "additive"
) -> DMoLNet:
    """A ResNet-18-like DMoLNet: 8 basic residual blocks, one head each (full scale).

    A 3x3 stem conv of ``width`` channels, then 4 stages of 2 :class:`ConvResBlock`
    (``width``, ``2 width``, ``4 width``, ``8 width`` channels; each stage after the first
    starts with stride 2), the CIFAR variant of He et al. (2016): 8 blocks, 16 convs plus
    the stem. Block 1 holds the stem. Every head is :func:`pool_head`, so the net maps
    ``(B, in_channels, H, W)`` to ``(B, out_dim)``.

    Raises:
        TypeError, ValueError: If a size is not an integer >= 1, or ``belief`` is
            unknown.
    """
    cin = check_int("in_channels", in_channels, low=1)
    out_dim = check_int("out_dim", out_dim, low=1)
    w = check_int("width", width, low=1)
    stem = nn.Conv2d(cin, w, 3, padding=1, bias=False)
    blocks: list[nn.Module] = [nn.Sequential(stem, ConvResBlock(w))]
    widths = [w]
    for i, c in enumerate((w, 2 * w, 2 * w, 4 * w, 4 * w, 8 * w, 8 * w)):
        prev = widths[-1]
        blocks.append(ConvResBlock(c, in_channels=prev, stride=2 if i % 2 == 1 else 1))
        widths.append(c)
    heads = [pool_head(c, out_dim) for c in widths]
    return DMoLNet(blocks, heads, belief=belief)


# --------------------------------------------------------------------------- diffusion
class UNetBlock(nn.Module):
    """A time-conditioned residual mini U-Net on ``(B, C, H, W)`` feature maps.

    ``h + up(mid(down(a)), skip=a)`` with ``a = relu(GroupNorm(h) + W_t t_emb)``: one
    strided 3x3 conv down to ``(2C, H/2, W/2)``, a 3x3 conv there, a transposed conv back
    up, concatenated with ``a`` and mixed by a 3x3 conv. The first block
    (``in_channels`` given) first lifts the noisy image to ``C`` channels. Stacked, these
    blocks make the U-Net DDPM denoiser of the full scale (:func:`unet_denoiser`).

    Args:
        channels: Channels ``C`` (even; GroupNorm uses ``min(8, C)`` groups dividing ``C``).
        time_dim: Width of the time embedding.
        in_channels: Image channels, for the first block only.

    Raises:
        TypeError, ValueError: If a size is not an integer >= 1.
    """

    def __init__(self, channels: int, time_dim: int, in_channels: int | None = None) -> None:
        super().__init__()
        c = check_int("channels", channels, low=1)
        time_dim = check_int("time_dim", time_dim, low=1)
        cin = None if in_channels is None else check_int("in_channels", in_channels, low=1)
        self.inp = None if cin is None else nn.Conv2d(cin, c, 3, padding=1)
        groups = max(g for g in range(1, min(8, c) + 1) if c % g == 0)
        self.norm = nn.GroupNorm(groups, c)
        self.time = nn.Linear(time_dim, c)
        self.down = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
        self.mid = nn.Conv2d(2 * c, 2 * c, 3, padding=1)
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.out = nn.Conv2d(2 * c, c, 3, padding=1)

    def forward(self, h: torch.Tensor, t_emb: torch.Tensor) -> torch.Tensor:
        """``h`` ``(B, in_channels or C, H, W)`` (H, W even), ``t_emb`` ``(B, time_dim)``."""
        if self.inp is not None:
            h = self.inp(h)
        a = torch.relu(self.norm(h) + self.time(t_emb)[:, :, None, None])
        d = torch.relu(self.mid(torch.relu(self.down(a))))
        u = torch.relu(self.up(d))
        return h + self.out(torch.cat([u, a], dim=1))


def unet_denoiser(
    depth: int, channels: int, time_dim: int, *, in_channels: int = 1, belief: str = "additive"
) -> DMoLNet:
    """A DDPM noise predictor of ``depth`` :class:`UNetBlock` as a DMoLNet (full scale).

    Called as ``net(x_t, t_emb)`` with ``x_t`` ``(B, in_channels, H, W)`` and ``t_emb``
    from :func:`time_embedding`; every head is a zeroed 1x1 conv to ``in_channels``, so
    the belief is the noise prediction ``(B, in_channels, H, W)``, refined block by block.

    Raises:
        TypeError, ValueError: If a size is not an integer >= 1, or ``belief`` is
            unknown.
    """
    depth = check_int("depth", depth, low=1)
    c = check_int("channels", channels, low=1)
    cin = check_int("in_channels", in_channels, low=1)
    blocks = [UNetBlock(c, time_dim, in_channels=cin if i == 0 else None) for i in range(depth)]
    heads = [zero_head_(nn.Conv2d(c, cin, 1)) for _ in range(depth)]
    return DMoLNet(blocks, heads, belief=belief)
