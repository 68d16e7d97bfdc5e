"""Reference eps-prediction networks and the DDPM noise schedule.

Every model maps ``(x, t)`` to a noise prediction of the shape of ``x``: ``x`` is a
float tensor of shape ``(B, D)`` (images flattened row-major, ``D = side**2``), ``t`` a
float tensor of shape ``(B,)`` with the diffusion time in ``[0, 1]`` (step / n_steps).
"""

from __future__ import annotations

import itertools
import math

import torch
from icml26_core.validation import check_choice, check_int
from torch import nn

__all__ = ["DDPMSchedule", "ScoreCNN", "ScoreMLP", "ScoreUNet", "ScoreViT", "time_features"]


def time_features(t: torch.Tensor, n: int = 16) -> torch.Tensor:
    """Sinusoidal features of the diffusion time.

    Args:
        t: Times in ``[0, 1]``, shape ``(B,)``.
        n: Number of features (even).

    Returns:
        Tensor of shape ``(B, n)``, dtype of ``t``.
    """
    half = n // 2
    freqs = torch.exp(torch.linspace(0.0, math.log(1000.0), half, dtype=t.dtype, device=t.device))
    arg = t[:, None] * freqs[None, :]
    return torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)


def _side(dim: int) -> int:
    side = math.isqrt(dim)
    if side * side != dim:
        raise ValueError(f"dim must be a square (an image side**2), got {dim}")
    return side


class ScoreMLP(nn.Module):
    """MLP eps-predictor: ``[x, time features] -> width -> ... -> D`` with SiLU.

    Args:
        dim: Data dimension D.
        width: Hidden width (256 in the issue's prototype).
        depth: Number of hidden layers (2).

    Called as ``model(x, t)`` with ``x`` of shape ``(B, D)`` and ``t`` of shape ``(B,)``
    in ``(0, 1]``, both of the parameters' dtype; returns the predicted noise ``(B, D)``.

    Raises:
        TypeError: If ``dim``, ``width`` or ``depth`` is not an integer.
        ValueError: If any of them is below 1.
    """

    def __init__(self, dim: int, width: int = 256, depth: int = 2) -> None:
        super().__init__()
        self.dim = check_int("dim", dim, low=1)
        width = check_int("width", width, low=1)
        depth = check_int("depth", depth, low=1)
        layers: list[nn.Module] = [nn.Linear(dim + 16, width), nn.SiLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.SiLU()]
        layers.append(nn.Linear(width, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Predict the noise; ``x`` (B, D), ``t`` (B,) -> (B, D)."""
        return self.net(torch.cat([x, time_features(t.to(x.dtype))], dim=1))


class ScoreCNN(nn.Module):
    """Fully convolutional eps-predictor on a ``side x side`` grid.

    The time enters as a constant extra input channel. ``depth`` convolutions of
    ``kernel x kernel`` with ``channels`` channels and SiLU, the last one to 1 channel.

    Args:
        dim: Data dimension D = side**2.
        channels: Hidden channels (32).
        kernel: Odd kernel size (3).
        depth: Number of convolutions (3).
        padding_mode: ``"zeros"`` or ``"circular"`` (translation-equivariant on the torus).

    Called as ``model(x, t)`` with ``x`` of shape ``(B, D)`` and ``t`` of shape ``(B,)``
    in ``(0, 1]``, both of the parameters' dtype; returns the predicted noise ``(B, D)``.

    Raises:
        TypeError: If ``dim``, ``channels``, ``kernel`` or ``depth`` is not an integer.
        ValueError: If ``dim`` is not a square, ``kernel`` is even, ``depth`` < 2,
            another size is below 1, or ``padding_mode`` is unknown.
    """

    def __init__(
        self,
        dim: int,
        channels: int = 32,
        kernel: int = 3,
        depth: int = 3,
        padding_mode: str = "zeros",
    ) -> None:
        super().__init__()
        self.dim = check_int("dim", dim, low=1)
        self.side = _side(dim)
        channels = check_int("channels", channels, low=1)
        kernel = check_int("kernel", kernel, low=1)
        if kernel % 2 == 0:
            raise ValueError(f"kernel must be odd, got {kernel}")
        depth = check_int("depth", depth, low=2)
        check_choice("padding_mode", padding_mode, ("zeros", "circular"))
        chans = [2] + [channels] * (depth - 1) + [1]
        convs = [
            nn.Conv2d(a, b, kernel, padding=kernel // 2, padding_mode=padding_mode)
            for a, b in itertools.pairwise(chans)
        ]
        self.convs = nn.ModuleList(convs)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Predict the noise; ``x`` (B, D), ``t`` (B,) -> (B, D)."""
        b = x.shape[0]
        img = x.reshape(b, 1, self.side, self.side)
        tt = t.to(x.dtype).reshape(b, 1, 1, 1).expand(b, 1, self.side, self.side)
        h = torch.cat([img, tt], dim=1)
        for i, conv in enumerate(self.convs):
            h = conv(h)
            if i < len(self.convs) - 1:
                h = torch.nn.functional.silu(h)
        return h.reshape(b, self.dim)


class _Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width)
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, n, w = h.shape
        q, k, v = self.qkv(self.ln1(h)).reshape(b, n, 3, self.heads, w // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))  # (b, heads, n, w/heads)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(w // self.heads), dim=-1)
        h = h + self.proj((att @ v).transpose(1, 2).reshape(b, n, w))
        return h + self.mlp(self.ln2(h))


class ScoreViT(nn.Module):
    """Small vision-transformer eps-predictor: patches -> pre-LN blocks -> patches.

    Args:
        dim: Data dimension D = side**2; ``side`` divisible by ``patch``.
        patch: Patch side (2).
        width: Token width (64).
        depth: Number of transformer blocks (2).
        heads: Attention heads (4; divides ``width``).

    Called as ``model(x, t)`` with ``x`` of shape ``(B, D)`` and ``t`` of shape ``(B,)``
    in ``(0, 1]``, both of the parameters' dtype; returns the predicted noise ``(B, D)``.

    Raises:
        TypeError: If a size is not an integer.
        ValueError: If ``dim`` is not a square, ``patch`` does not divide its side,
            ``heads`` does not divide ``width``, or a size is below 1.
    """

    def __init__(
        self, dim: int, patch: int = 2, width: int = 64, depth: int = 2, heads: int = 4
    ) -> None:
        super().__init__()
        self.dim = check_int("dim", dim, low=1)
        self.side = _side(dim)
        self.patch = check_int("patch", patch, low=1)
        if self.side % patch:
            raise ValueError(f"patch must divide the image side {self.side}, got {patch}")
        width = check_int("width", width, low=1)
        heads = check_int("heads", heads, low=1)
        if width % heads:
            raise ValueError(f"heads must divide width {width}, got {heads}")
        depth = check_int("depth", depth, low=1)
        self.grid = self.side // patch
        n_tok = self.grid**2
        self.embed = nn.Linear(patch * patch, width)
        self.pos = nn.Parameter(0.02 * torch.randn(1, n_tok, width))
        self.temb = nn.Linear(16, width)
        self.blocks = nn.ModuleList(_Block(width, heads) for _ in range(depth))
        self.ln = nn.LayerNorm(width)
        self.out = nn.Linear(width, patch * patch)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Predict the noise; ``x`` (B, D), ``t`` (B,) -> (B, D)."""
        b, g, p = x.shape[0], self.grid, self.patch
        tok = x.reshape(b, g, p, g, p).permute(0, 1, 3, 2, 4).reshape(b, g * g, p * p)
        h = self.embed(tok) + self.pos + self.temb(time_features(t.to(x.dtype)))[:, None, :]
        for blk in self.blocks:
            h = blk(h)
        out = self.out(self.ln(h)).reshape(b, g, g, p, p).permute(0, 1, 3, 2, 4)
        return out.reshape(b, self.dim)


class ScoreUNet(nn.Module):
    """Adapter: a diffusers ``UNet2DModel`` as an eps-predictor on flattened images.

    Reshapes ``x`` (B, D) to ``(B, 1, side, side)``, calls the UNet with the timestep
    ``t * time_scale`` (diffusers' models are trained on integer steps 0..999) and
    flattens the ``.sample`` back to (B, D). Built from a config, offline (no hub).

    Args:
        dim: Data dimension D = side**2; ``side`` divisible by
            ``2 ** (len(block_out_channels) - 1)``.
        block_out_channels: Channels per resolution level ((32, 64): one downsampling).
        layers_per_block: ResNet layers per level (1).
        norm_num_groups: GroupNorm groups; divides every entry of
            ``block_out_channels`` (8).
        add_attention: Self-attention in the middle block (diffusers' default, True).
        time_scale: Factor from ``t`` in ``(0, 1]`` to the UNet's timestep (1000).
        unet: An existing ``UNet2DModel`` with 1 input and 1 output channel and
            ``sample_size == side``; the other arguments are then ignored.

    Raises:
        ImportError: If diffusers is not installed (``pip install
            'score-anisotropy[unet]'``).
        ValueError: If ``dim`` is not a square, the side does not fit the levels, or
            ``unet`` has other channels or sample size.

    Source: diffusers ``UNet2DModel`` (von Platen et al., Hugging Face), the DDPM UNet
    of Ho et al. (2020) with ``DownBlock2D``/``UpBlock2D`` levels (no attention).
    """

    def __init__(
        self,
        dim: int,
        block_out_channels: tuple[int, ...] = (32, 64),
        layers_per_block: int = 1,
        norm_num_groups: int = 8,
        add_attention: bool = True,
        time_scale: float = 1000.0,
        unet: nn.Module | None = None,
    ) -> None:
        super().__init__()
        try:
            from diffusers import UNet2DModel
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "ScoreUNet needs diffusers: pip install 'score-anisotropy[unet]'"
            ) from exc
        self.dim = check_int("dim", dim, low=1)
        self.side = _side(dim)
        self.time_scale = float(time_scale)
        if unet is None:
            levels = len(block_out_channels)
            if levels < 1 or self.side % (2 ** (levels - 1)):
                raise ValueError(
                    f"the image side {self.side} must be divisible by 2**(levels - 1) = "
                    f"{2 ** (levels - 1)} for block_out_channels={block_out_channels}"
                )
            for c in block_out_channels:
                if check_int("block_out_channels entry", c, low=1) % norm_num_groups:
                    raise ValueError(
                        f"norm_num_groups={norm_num_groups} must divide every entry of "
                        f"block_out_channels={block_out_channels}"
                    )
            unet = UNet2DModel(
                sample_size=self.side,
                in_channels=1,
                out_channels=1,
                layers_per_block=check_int("layers_per_block", layers_per_block, low=1),
                block_out_channels=tuple(block_out_channels),
                down_block_types=("DownBlock2D",) * levels,
                up_block_types=("UpBlock2D",) * levels,
                norm_num_groups=norm_num_groups,
                add_attention=bool(add_attention),
            )
        elif not isinstance(unet, UNet2DModel):
            raise TypeError(f"unet must be a diffusers UNet2DModel, got {type(unet).__name__}")
        cfg = unet.config
        if cfg.in_channels != 1 or cfg.out_channels != 1 or cfg.sample_size != self.side:
            raise ValueError(
                "unet must have in_channels = out_channels = 1 and sample_size = "
                f"{self.side}, got {cfg.in_channels}, {cfg.out_channels}, {cfg.sample_size}"
            )
        self.unet = unet

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Predict the noise; ``x`` (B, D), ``t`` (B,) -> (B, D)."""
        b = x.shape[0]
        img = x.reshape(b, 1, self.side, self.side)
        out = self.unet(img, t.to(x.dtype) * self.time_scale).sample
        return out.reshape(b, self.dim)


class DDPMSchedule:
    """Discrete DDPM noise schedule: ``x_s = sqrt(abar_s) x_0 + sqrt(1 - abar_s) eps``.

    Args:
        n_steps: Number of diffusion steps T (>= 1).
        kind: ``"linear"`` (default; Ho et al. 2020, betas from ``1e-4 * 1000 / T`` to
            ``0.02 * 1000 / T``, capped at 0.999: use ``n_steps >= 50``, below it the
            last betas near 1 make ancestral sampling unstable) or ``"cosine"``
            (Nichol & Dhariwal 2021).

    Raises:
        TypeError: If ``n_steps`` is not an integer.
        ValueError: If ``n_steps < 1`` or ``kind`` is neither.

    Attributes:
        betas: Tensor of shape ``(T,)``, float64.
        alphas_bar: Cumulative products ``prod_{s' <= s} (1 - beta_s')``, shape ``(T,)``.
    """

    def __init__(self, n_steps: int = 100, kind: str = "linear") -> None:
        self.n_steps = check_int("n_steps", n_steps, low=1)
        self.kind = check_choice("kind", kind, ("cosine", "linear"))
        T = self.n_steps
        if kind == "linear":
            scale = 1000.0 / T
            betas = torch.linspace(1e-4 * scale, min(0.02 * scale, 0.999), T, dtype=torch.float64)
        else:
            s = torch.arange(T + 1, dtype=torch.float64) / T
            f = torch.cos((s + 0.008) / 1.008 * math.pi / 2) ** 2
            betas = (1 - f[1:] / f[:-1]).clamp(max=0.999)
        self.betas = betas
        self.alphas_bar = torch.cumprod(1 - betas, dim=0)

    def time(self, step: torch.Tensor) -> torch.Tensor:
        """The model's time input ``(step + 1) / T`` in ``(0, 1]``, float64."""
        return (step.to(torch.float64) + 1) / self.n_steps

    def add_noise(self, x0: torch.Tensor, step: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        """``x_s`` for clean ``x0`` (B, D), integer ``step`` (B,) and noise ``eps`` (B, D)."""
        ab = self.alphas_bar.to(x0.device)[step].to(x0.dtype)[:, None]
        return ab.sqrt() * x0 + (1 - ab).sqrt() * eps

    def __repr__(self) -> str:
        return f"DDPMSchedule(n_steps={self.n_steps}, kind={self.kind!r})"


def _check_model(model: nn.Module, name: str = "model") -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(model).__name__}")
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError(f"{name} has no trainable parameters; its tangent kernel is zero")
