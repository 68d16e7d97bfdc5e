"""Forward operators of imaging inverse problems ``y = A x + noise``, with adjoints.

Every operator is an ``nn.Module`` acting on batches (N, C, H, W): ``forward`` is
``A``, :meth:`ImagingOperator.adjoint` is ``A^T``, :meth:`ImagingOperator.norm_squared`
is ``||A||^2`` (the Lipschitz constant of the gradient of ``0.5 ||A x - y||^2``) and
:meth:`ImagingOperator.prox_data` solves ``(I + gamma A^T A) x = v + gamma A^T y``
(the proximal map of the data term), in closed form where one exists and by
conjugate gradients otherwise. Blurs are circular (FFT), so they match the
circular lattice of the denoisers.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lipschitz_denoiser._validation import check_image_batch, check_positive_int

__all__ = [
    "Blur",
    "Downsample",
    "ImagingOperator",
    "Mask",
    "gaussian_kernel",
    "motion_kernel",
]


def gaussian_kernel(size: int, std: float) -> torch.Tensor:
    """A normalised isotropic Gaussian blur kernel.

    Args:
        size: Odd side length in pixels.
        std: Standard deviation in pixels, > 0.

    Returns:
        float64 tensor (size, size), nonnegative, summing to 1.

    Raises:
        ValueError: If ``size`` is not a positive odd int or ``std`` <= 0.
    """
    check_positive_int(size, "size")
    if size % 2 == 0:
        raise ValueError(f"size must be odd, got {size}")
    if not (isinstance(std, int | float) and math.isfinite(std) and std > 0):
        raise ValueError(f"std must be a positive number of pixels, got {std!r}")
    r = torch.arange(size, dtype=torch.float64) - size // 2
    g = torch.exp(-(r**2) / (2 * std**2))
    k = torch.outer(g, g)
    return k / k.sum()


def motion_kernel(length: int, angle_deg: float) -> torch.Tensor:
    """A normalised linear motion-blur kernel (a segment drawn with bilinear weights).

    Args:
        length: Length of the motion in pixels, >= 1; the kernel side is the
            smallest odd number >= length.
        angle_deg: Direction of the motion in degrees (0 is horizontal).

    Returns:
        float64 tensor (side, side), nonnegative, summing to 1.

    Raises:
        ValueError: If ``length`` is not a positive int.
    """
    check_positive_int(length, "length")
    side = length if length % 2 else length + 1
    k = torch.zeros(side, side, dtype=torch.float64)
    c = side // 2
    t = math.radians(float(angle_deg))
    for s in torch.linspace(-(length - 1) / 2, (length - 1) / 2, 4 * length + 1).tolist():
        x, y = c + s * math.cos(t), c - s * math.sin(t)
        x0, y0 = math.floor(x), math.floor(y)
        for dx in (0, 1):
            for dy in (0, 1):
                xi, yi = x0 + dx, y0 + dy
                if 0 <= xi < side and 0 <= yi < side:
                    k[yi, xi] += (1 - abs(x - xi)) * (1 - abs(y - yi))
    return k / k.sum()


class ImagingOperator(nn.Module):
    """A linear operator ``A`` on image batches with its adjoint.

    Subclasses implement :meth:`forward` and :meth:`adjoint`; they may override
    :meth:`norm_squared` (default: power iteration) and :meth:`prox_data`
    (default: conjugate gradients).
    """

    channels: int | None = None

    def _check(self, x: object, name: str = "x") -> torch.Tensor:
        return check_image_batch(x, name, channels=self.channels)

    def adjoint(self, y: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """Apply ``A^T``."""
        raise NotImplementedError

    def norm_squared(self, shape: tuple[int, ...], *, iters: int = 100) -> float:
        """``||A||^2`` on inputs of ``shape`` (N, C, H, W), by power iteration on ``A^T A``.

        The estimate is a lower bound that converges from below; it is inflated by
        1 % so that steps ``1 / norm_squared`` stay admissible.
        """
        gen = torch.Generator().manual_seed(0)
        v = torch.randn(*shape, generator=gen, dtype=torch.float64)
        lam = 0.0
        for _ in range(iters):
            v = v / v.norm()
            w = self.adjoint(self(v))
            lam = float((v * w).sum())
            v = w
        return 1.01 * lam

    def prox_data(
        self,
        v: torch.Tensor,
        y: torch.Tensor,
        gamma: float,
        *,
        tol: float = 1e-7,
        max_iter: int = 200,
    ) -> torch.Tensor:
        """Solve ``(I + gamma A^T A) x = v + gamma A^T y``, i.e. ``prox_{gamma f}(v)``.

        Here ``f(x) = 0.5 ||A x - y||^2``.

        Conjugate gradients per image (the system is symmetric positive definite
        with eigenvalues in [1, 1 + gamma ||A||^2], so it converges fast).
        """
        b = v + gamma * self.adjoint(y)
        x = v.clone()
        dims = tuple(range(1, v.ndim))
        r = b - (x + gamma * self.adjoint(self(x)))
        p = r.clone()
        rs = (r * r).sum(dim=dims, keepdim=True)
        b_norm = (b * b).sum(dim=dims, keepdim=True).sqrt().clamp_min(1e-30)
        for _ in range(max_iter):
            if bool((rs.sqrt() <= tol * b_norm).all()):
                break
            ap = p + gamma * self.adjoint(self(p))
            alpha = rs / (p * ap).sum(dim=dims, keepdim=True).clamp_min(1e-300)
            x = x + alpha * p
            r = r - alpha * ap
            rs_new = (r * r).sum(dim=dims, keepdim=True)
            p = r + (rs_new / rs.clamp_min(1e-300)) * p
            rs = rs_new
        return x


def _kernel_spectrum(kernel: torch.Tensor, h: int, w: int, like: torch.Tensor) -> torch.Tensor:
    """DFT of the kernel placed with its centre at pixel (0, 0) of an h x w torus."""
    kh, kw = kernel.shape
    pad = torch.zeros(h, w, dtype=torch.float64, device=like.device)
    pad[:kh, :kw] = kernel.to(device=like.device, dtype=torch.float64)
    pad = torch.roll(pad, shifts=(-(kh // 2), -(kw // 2)), dims=(0, 1))
    spec = torch.fft.fft2(pad)
    return spec.to(torch.complex128 if like.dtype == torch.float64 else torch.complex64)


class Blur(ImagingOperator):
    """Circular convolution with a blur kernel: ``A x = k * x`` (same kernel per channel).

    Args:
        kernel: 2-D kernel (kh, kw) with odd sides (e.g. :func:`gaussian_kernel`,
            :func:`motion_kernel`); not modified.
        channels: Expected channel count, or None for any.

    Raises:
        TypeError: If ``kernel`` is not a tensor.
        ValueError: If it is not 2-D with odd sides, not finite, or all zero.

    Example:
        >>> A = Blur(gaussian_kernel(9, 1.6))
        >>> x = torch.rand(1, 1, 32, 32)
        >>> A(x).shape
        torch.Size([1, 1, 32, 32])
    """

    def __init__(self, kernel: torch.Tensor, channels: int | None = None) -> None:
        super().__init__()
        if not isinstance(kernel, torch.Tensor):
            raise TypeError(f"kernel must be a torch.Tensor, got {type(kernel).__name__}")
        if kernel.ndim != 2 or kernel.shape[0] % 2 == 0 or kernel.shape[1] % 2 == 0:
            raise ValueError(f"kernel must be 2-D with odd sides, got shape {tuple(kernel.shape)}")
        if not bool(torch.isfinite(kernel).all()):
            raise ValueError("kernel contains NaN or inf")
        if not bool((kernel != 0).any()):
            raise ValueError("kernel must have a nonzero entry (a zero blur observes nothing)")
        self.register_buffer("kernel", kernel.detach().to(torch.float64).clone())
        self.channels = channels

    def _spectrum(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        if h < self.kernel.shape[0] or w < self.kernel.shape[1]:
            raise ValueError(
                f"x of size {(h, w)} is smaller than the kernel {tuple(self.kernel.shape)}"
            )
        return _kernel_spectrum(self.kernel, h, w, x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the blur ``A x``."""
        self._check(x)
        return torch.fft.ifft2(torch.fft.fft2(x) * self._spectrum(x)).real

    def adjoint(self, y: torch.Tensor) -> torch.Tensor:
        """Apply ``A^T y`` (correlation with the kernel)."""
        self._check(y, "y")
        return torch.fft.ifft2(torch.fft.fft2(y) * self._spectrum(y).conj()).real

    def norm_squared(self, shape: tuple[int, ...], *, iters: int = 0) -> float:
        """Exact ``||A||^2 = max |k^|^2`` over the lattice frequencies."""
        like = torch.zeros(1, dtype=torch.float64)
        spec = _kernel_spectrum(self.kernel, int(shape[-2]), int(shape[-1]), like)
        return float(spec.abs().max() ** 2)

    def prox_data(self, v, y, gamma, *, tol=0.0, max_iter=0):  # noqa: D102 - see base class
        spec = self._spectrum(v)
        num = torch.fft.fft2(v) + gamma * torch.fft.fft2(y) * spec.conj()
        return torch.fft.ifft2(num / (1.0 + gamma * spec.abs() ** 2)).real


class Downsample(ImagingOperator):
    """Super-resolution operator: average over ``factor x factor`` blocks.

    ``A x`` has shape (N, C, H / factor, W / factor); ``A^T y`` spreads each value
    evenly over its block (divided by ``factor^2``), so ``A A^T = I / factor^2`` and
    ``||A||^2 = 1 / factor^2``; the data prox is in closed form.

    Args:
        factor: Integer downsampling factor, >= 1.
        channels: Expected channel count, or None for any.

    Raises:
        ValueError: If ``factor`` is not a positive int; in ``forward``, if H or W is
            not a multiple of ``factor`` (even sizes for factor 2).

    Example:
        >>> Downsample(2)(torch.rand(1, 1, 32, 32)).shape
        torch.Size([1, 1, 16, 16])
    """

    def __init__(self, factor: int = 2, channels: int | None = None) -> None:
        super().__init__()
        self.factor = check_positive_int(factor, "factor")
        self.channels = channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Block averages of ``x``."""
        self._check(x)
        h, w = x.shape[-2:]
        f = self.factor
        if h % f or w % f:
            raise ValueError(f"x must have height and width divisible by factor={f}, got {(h, w)}")
        return torch.nn.functional.avg_pool2d(x, f)

    def adjoint(self, y: torch.Tensor) -> torch.Tensor:
        """Spread each low-resolution pixel over its block, divided by ``factor^2``."""
        self._check(y, "y")
        f = self.factor
        return y.repeat_interleave(f, dim=-2).repeat_interleave(f, dim=-1) / (f * f)

    def norm_squared(self, shape: tuple[int, ...] = (), *, iters: int = 0) -> float:
        """Exact ``||A||^2 = 1 / factor^2``."""
        return 1.0 / self.factor**2

    def prox_data(self, v, y, gamma, *, tol=0.0, max_iter=0):  # noqa: D102 - see base class
        # A^T A = Pi / f^2 with Pi the projector onto block-constant images.
        c = gamma / self.factor**2
        b = v + gamma * self.adjoint(y)
        block_mean = self.adjoint(self(b)) * self.factor**2
        return b - (c / (1.0 + c)) * block_mean


class Mask(ImagingOperator):
    """Inpainting operator: keep the pixels where ``mask`` is 1 (``A = A^T = diag(mask)``).

    Args:
        mask: 0/1 tensor broadcastable to the images, e.g. (H, W) or (1, C, H, W); not
            modified.

    Raises:
        TypeError: If ``mask`` is not a tensor.
        ValueError: If it holds values other than 0 and 1.

    Example:
        >>> m = (torch.rand(32, 32) > 0.5).double()
        >>> Mask(m)(torch.rand(1, 1, 32, 32)).shape
        torch.Size([1, 1, 32, 32])
    """

    def __init__(self, mask: torch.Tensor) -> None:
        super().__init__()
        if not isinstance(mask, torch.Tensor):
            raise TypeError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
        m = mask.detach().to(torch.float64)
        if not bool(((m == 0) | (m == 1)).all()):
            raise ValueError("mask must contain only 0 and 1")
        self.register_buffer("mask", m.clone())

    def _mask_for(self, x: torch.Tensor) -> torch.Tensor:
        try:
            torch.broadcast_shapes(self.mask.shape, x.shape)
        except RuntimeError as err:
            raise ValueError(
                f"mask of shape {tuple(self.mask.shape)} does not broadcast to x of shape "
                f"{tuple(x.shape)}"
            ) from err
        return self.mask.to(device=x.device, dtype=x.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Zero the unobserved pixels."""
        self._check(x)
        return x * self._mask_for(x)

    def adjoint(self, y: torch.Tensor) -> torch.Tensor:
        """``A^T = A``."""
        return self.forward(y)

    def norm_squared(self, shape: tuple[int, ...] = (), *, iters: int = 0) -> float:
        """``||A||^2`` is 1 if any pixel is observed, else 0."""
        return float(self.mask.max())

    def prox_data(self, v, y, gamma, *, tol=0.0, max_iter=0):  # noqa: D102 - see base class
        m = self._mask_for(v)
        return (v + gamma * m * y) / (1.0 + gamma * m)
