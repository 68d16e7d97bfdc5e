"""Nonexpansive building blocks from permutations of the image lattice.

A convolution with circular padding on an ``H x W`` image is a sum of lattice
shifts, and each shift ``P_s`` is a permutation of the pixels. A multi-channel
convolution is the matrix

    M = sum_s K_s (x) P_s,        K_s[o, i] = w[o, i, s]

acting on ``C_in * H * W`` numbers. Its row ``(o, p)`` holds the numbers
``w[o, :, :]`` once each and its column ``(i, p)`` the numbers ``w[:, i, :]``, so
with ``R = max_o sum_{i,s} |w[o,i,s]|`` and ``C = max_i sum_{o,s} |w[o,i,s]|``:

* if ``R <= 1`` and ``C <= 1``, ``|M|`` is doubly substochastic, hence (Birkhoff-von
  Neumann, Mirsky's extension) a convex combination of partial permutation matrices
  ``|M| = sum_k lambda_k Q_k``, and ``M = sum_k lambda_k (sign(M) * Q_k)`` is a convex
  combination of signed partial permutations of the (channel x lattice) index set,
  each of operator norm <= 1;
* in general ``||M||_2 <= sqrt(R C)`` (Schur's test).

:class:`PermutationConv2d` divides its weight by ``max(1, sqrt(R C))``, so its
operator norm is <= 1 for every value of its parameters, for every image size and
after every training step. :class:`MaxMin` sorts pairs of channels, a
data-dependent permutation, which is 1-Lipschitz and keeps gradient norms.

References:
    The paper's abstract: ``shared/papers/lipschitz-denoiser.md`` (ICML 2026).
    Schur (1911), Bemerkungen zur Theorie der beschränkten Bilinearformen.
    Mirsky (1959), On a convex set of matrices. Anil, Lucas, Grosse (2019),
    Sorting out Lipschitz function approximation (GroupSort / MaxMin).
    Sedghi, Gupta, Long (2019), The singular values of convolutional layers.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "MaxMin",
    "PermutationConv2d",
    "conv_operator_norm",
    "schur_bound",
]


def schur_bound(weight: torch.Tensor) -> torch.Tensor:
    """Schur's bound ``sqrt(R C)`` on the operator norm of a circular convolution.

    Args:
        weight: Kernel, shape (C_out, C_in, kh, kw), any float dtype.

    Returns:
        Scalar tensor (differentiable): ``sqrt(max row abs sum * max column abs sum)``,
        an upper bound on the l2 operator norm of the circular convolution with
        ``weight`` on every lattice at least as large as the kernel.

    Raises:
        ValueError: If ``weight`` is not 4-D.
    """
    if weight.ndim != 4:
        raise ValueError(
            f"weight must be 4-D (C_out, C_in, kh, kw), got shape {tuple(weight.shape)}"
        )
    a = weight.abs()
    rows = a.sum(dim=(1, 2, 3)).max()
    cols = a.sum(dim=(0, 2, 3)).max()
    return torch.sqrt(rows * cols)


def conv_operator_norm(weight: torch.Tensor, image_size: tuple[int, int]) -> float:
    """Exact l2 operator norm of the circular convolution with ``weight`` on a lattice.

    The circular convolution is block-diagonalised by the 2-D DFT: at each of the
    ``H * W`` frequencies it acts as the (C_out, C_in) matrix of the kernels' Fourier
    coefficients; the operator norm is the largest singular value over all
    frequencies (Sedghi et al., 2019).

    Args:
        weight: Kernel (C_out, C_in, kh, kw), as used by ``F.conv2d`` (cross-correlation).
        image_size: ``(H, W)`` of the lattice, each >= the kernel's size.

    Returns:
        The operator norm as a Python float (computed in float64).

    Raises:
        ValueError: If ``weight`` is not 4-D or the lattice is smaller than the kernel.

    Example:
        >>> avg = torch.full((1, 1, 3, 3), 1 / 9, dtype=torch.float64)  # an average
        >>> round(conv_operator_norm(avg, (16, 16)), 12)
        1.0
    """
    if weight.ndim != 4:
        raise ValueError(
            f"weight must be 4-D (C_out, C_in, kh, kw), got shape {tuple(weight.shape)}"
        )
    h, w = (int(v) for v in image_size)
    kh, kw = weight.shape[-2:]
    if h < kh or w < kw:
        raise ValueError(f"image_size {(h, w)} must be at least the kernel size {(kh, kw)}")
    k = weight.detach().to(dtype=torch.float64)
    # Singular values do not depend on where the kernel sits on the torus (a shift
    # multiplies each Fourier coefficient by a unit phase), so no centring is needed.
    spectrum = torch.fft.fft2(k, s=(h, w))  # (C_out, C_in, H, W)
    mats = spectrum.permute(2, 3, 0, 1).reshape(h * w, k.shape[0], k.shape[1])
    return float(torch.linalg.matrix_norm(mats, ord=2).max())


class PermutationConv2d(nn.Module):
    """Circular convolution constrained to operator norm <= 1 by construction.

    The effective weight is ``w / max(1, sqrt(R C))`` (see the module docstring):
    when ``R, C <= 1`` the layer is a convex combination of signed partial
    permutations of the (channel x lattice) index set, and in every case its l2
    operator norm is at most 1, whatever the raw parameters are.

    Args:
        in_channels: Input channels, >= 1.
        out_channels: Output channels, >= 1.
        kernel_size: Odd kernel side, >= 1 (the set of lattice shifts used).
        bias: Add a learned per-channel bias (does not change the Lipschitz constant).

    Shape:
        Input (N, in_channels, H, W) with H, W >= kernel_size; output (N, out_channels, H, W).

    Example:
        >>> layer = PermutationConv2d(4, 8, 3)
        >>> layer(torch.randn(2, 4, 16, 16)).shape
        torch.Size([2, 8, 16, 16])
        >>> float(layer.lipschitz_bound()) <= 1.0
        True
    """

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: int = 3, *, bias: bool = True
    ) -> None:
        super().__init__()
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if (
            isinstance(kernel_size, bool)
            or not isinstance(kernel_size, int)
            or kernel_size < 1
            or kernel_size % 2 == 0
        ):
            raise ValueError(f"kernel_size must be a positive odd int, got {kernel_size!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size, kernel_size))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise near a (partial) identity permutation plus small noise.

        Schur's bound is tight on signed permutations and loose on dense random
        kernels (a Kaiming-initialised 3x3 layer has exact norm ~0.2-0.3 after
        normalisation), so the layers start close to permutations and keep their gain.
        """
        with torch.no_grad():
            self.weight.normal_(0.0, 1e-3 / math.sqrt(self.weight[0].numel()))
            c = self.kernel_size // 2
            n = min(self.in_channels, self.out_channels)
            idx = torch.arange(n)
            self.weight[idx, idx, c, c] += 1.0
            if self.out_channels > self.in_channels:
                # extra outputs copy inputs with a sign flip, so MaxMin sees +-x pairs
                extra = torch.arange(n, self.out_channels)
                self.weight[extra, extra % self.in_channels, c, c] -= 1.0

    def normalized_weight(self) -> torch.Tensor:
        """The weight actually applied: ``w / (max(1, sqrt(R C)) (1 + n eps))`` (differentiable).

        The factor ``1 + n eps`` (``n`` the number of weights, ``eps`` the dtype's
        machine epsilon) covers the worst-case rounding of the sums in R and C, so
        the bound holds for the stored floating-point weights, not only in exact
        arithmetic.
        """
        margin = 1.0 + self.weight.numel() * torch.finfo(self.weight.dtype).eps
        return self.weight / (torch.clamp(schur_bound(self.weight), min=1.0) * margin)

    def lipschitz_bound(self) -> torch.Tensor:
        """Schur's bound on the operator norm of the applied weight, in float64 (<= 1 always)."""
        return schur_bound(self.normalized_weight().detach().double())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the normalised circular convolution."""
        p = self.kernel_size // 2
        if p:
            x = F.pad(x, (p, p, p, p), mode="circular")
        return F.conv2d(x, self.normalized_weight(), self.bias)

    def extra_repr(self) -> str:  # noqa: D102 - nn.Module's repr hook
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"bias={self.bias is not None}"
        )


class MaxMin(nn.Module):
    """Sort pairs of channels ``(j, j + C/2)``: ``(a, b) -> (max(a, b), min(a, b))``.

    On each input it permutes the entries of each pair, so it is 1-Lipschitz in l2
    and its Jacobian is a permutation matrix wherever it exists.

    Shape:
        Input (N, C, H, W) with C even; output the same shape.

    Raises:
        ValueError: If the number of channels is odd.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Sort each pair (channel ``j``, channel ``j + C/2``)."""
        c = x.shape[1]
        if c % 2:
            raise ValueError(f"MaxMin needs an even number of channels, got {c}")
        a, b = x[:, : c // 2], x[:, c // 2 :]
        return torch.cat([torch.maximum(a, b), torch.minimum(a, b)], dim=1)
