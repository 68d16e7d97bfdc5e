"""Nonexpansive building blocks from permutations of the image lattice.

A convolution with circular padding on an ``H x W`` image is a sum of lattice
shifts, and each shift ``P_s`` is a permutation of the pixels. A multi-channel
convolution is the matrix

    M = sum_s K_s (x) P_s,        K_s[o, i] = w[o, i, s]

acting on ``C_in * H * W`` numbers. The shifts form an abelian group whose characters
are the lattice frequencies: the 2-D DFT block-diagonalises ``M`` into the
``(C_out, C_in)`` matrices ``K^(w) = sum_s K_s e^{-i <w, s>}``, one per frequency
``w`` (Sedghi et al., 2019), so

    ||M||_2 = max over the lattice's frequencies of sigma_max(K^(w))
            <= sup over the whole torus [0, 2 pi)^2 of sigma_max(K^(w))   (every lattice).

Two normalisations make ``||M|| <= 1`` for every value of the parameters:

* ``"spectral"`` (default, tight): divide by a provable upper bound of the sup over the
  torus, computed on a ``grid x grid`` set of frequencies. The top eigenvalue
  ``lambda(w)`` of the Gram matrix ``K^(w)^H K^(w)`` is, along any direction, a
  trigonometric sum of exponential type ``2 (r_h + r_w) |delta|`` (``r`` the kernel's
  radii); at its maximum its gradient vanishes, and Bernstein's inequality bounds its
  second derivative, so a maximum at distance ``<= pi / grid`` (per coordinate) from
  the grid exceeds the grid's maximum by a factor of at most
  ``1 / (1 - 2 (r_h + r_w)^2 pi^2 / grid^2)``: 1.0024 in norm for 3x3 kernels on a
  128 grid. The layer's norm is then within that factor of 1 wherever the kernel
  allows it, on every lattice.
* ``"schur"`` (loose, the earlier construction, kept as an ablation): divide by
  Schur's ``sqrt(R C)`` with ``R = max_o sum_{i,s} |w[o,i,s]|`` and
  ``C = max_i sum_{o,s} |w[o,i,s]|``. When ``R, C <= 1``, ``|M|`` is doubly
  substochastic, hence (Birkhoff-von Neumann, Mirsky) ``M`` is a convex combination of
  signed partial permutations of the (channel x lattice) index set. Tight on sparse
  sign-coherent kernels, loose (norm 0.2-0.3) on dense mixed-sign ones.

Rounding: the bound ``B`` is computed in float64 from the stored weights; the applied
weight ``fl(w / d)`` in the compute dtype (unit roundoff ``u``) has norm at most
``(B + u S) / d`` with ``S`` Schur's bound (each entry moves by at most ``u`` times
itself), so ``d = max(1, B (1 + 2e-10) + u S)`` keeps every layer <= 1 in fp16 and bf16
too, at a cost of ``u S / B`` (about 1e-3 in bf16, 1e-7 in fp32) instead of a margin
that grows with the number of weights.

:class:`MaxMin` sorts pairs of channels, a data-dependent permutation, which is
1-Lipschitz and keeps gradient norms.

References:
    The ICML 2026 paper (abstract only).
    Sedghi, Gupta, Long (2019), The singular values of convolutional layers, ICLR.
    Bernstein's inequality for functions of exponential type: Boas (1954), *Entire
    Functions*, 11.1. Schur (1911), Bemerkungen zur Theorie der beschränkten
    Bilinearformen. Mirsky (1959), On a convex set of matrices. Anil, Lucas, Grosse
    (2019), Sorting out Lipschitz function approximation (GroupSort / MaxMin).
    Miyato et al. (2018), Spectral normalization for GANs (power iteration with a
    persistent vector).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from icml26_core.validation import check_choice, check_int
from torch import nn

__all__ = [
    "MaxMin",
    "PermutationConv2d",
    "conv_operator_norm",
    "schur_bound",
    "torus_norm_bound",
]

NORMALIZATIONS = ("spectral", "schur")
_F64_SAFETY = 2e-10  # covers float64 rounding of the FFT and the eigensolver (~1e-14)


def schur_bound(weight: torch.Tensor) -> torch.Tensor:
    """Schur's bound ``sqrt(R C)`` on the operator norm of a circular convolution.

    Args:
        weight: Kernel, shape (C_out, C_in, kh, kw), any float dtype.

    Returns:
        Scalar tensor (differentiable, in ``weight``'s dtype):
        ``sqrt(max row abs sum * max column abs sum)``, an upper bound on the l2
        operator norm of the circular convolution with ``weight`` on every lattice.

    Raises:
        ValueError: If ``weight`` is not 4-D.
    """
    _check_kernel(weight)
    a = weight.abs()
    rows = a.sum(dim=(1, 2, 3)).max()
    cols = a.sum(dim=(0, 2, 3)).max()
    return torch.sqrt(rows * cols)


def _check_kernel(weight: object) -> None:
    if not isinstance(weight, torch.Tensor) or weight.ndim != 4:
        shape = tuple(weight.shape) if isinstance(weight, torch.Tensor) else type(weight).__name__
        raise ValueError(f"weight must be a 4-D tensor (C_out, C_in, kh, kw), got {shape}")


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
    _check_kernel(weight)
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


def _grid_factor(kh: int, kw: int, grid: int) -> float:
    """Bernstein factor: sup over the torus <= factor * max over the grid (in norm)."""
    r = (kh // 2) + (kw // 2)
    c = 2.0 * r * r * math.pi**2 / grid**2
    if c >= 1.0:
        raise ValueError(f"grid={grid} is too coarse for a {kh}x{kw} kernel")
    return 1.0 / math.sqrt(1.0 - c)


def _spectrum(weight: torch.Tensor, grid: int) -> torch.Tensor:
    """(F, C_out, C_in) Fourier matrices on the half grid (real kernels: conjugate pairs).

    A direct separable DFT of the small kernel, ``sum_{a,b} w[:, :, a, b]
    e^{-2 pi i (f_y a + f_x b) / grid}`` for ``f_y < grid``, ``f_x <= grid / 2``: cheaper
    than an FFT of the zero-padded kernel for kernels of a few taps, and differentiable.
    """
    kh, kw = weight.shape[-2:]
    cdt = torch.complex128 if weight.dtype == torch.float64 else torch.complex64
    fy = torch.arange(grid, dtype=torch.float64, device=weight.device)
    fx = torch.arange(grid // 2 + 1, dtype=torch.float64, device=weight.device)
    ay = torch.arange(kh, dtype=torch.float64, device=weight.device)
    ax = torch.arange(kw, dtype=torch.float64, device=weight.device)
    py = torch.exp(-2j * math.pi * torch.outer(fy, ay) / grid).to(cdt)  # (grid, kh)
    px = torch.exp(-2j * math.pi * torch.outer(fx, ax) / grid).to(cdt)  # (grid//2+1, kw)
    spec = torch.einsum("ya,xb,oiab->yxoi", py, px, weight.to(cdt))
    return spec.reshape(-1, weight.shape[0], weight.shape[1])


def _gram(mats: torch.Tensor) -> torch.Tensor:
    """The smaller Gram matrix of each Fourier matrix (same nonzero eigenvalues)."""
    return mats.mH @ mats if mats.shape[-1] <= mats.shape[-2] else mats @ mats.mH


def _grid_max(weight64: torch.Tensor, grid: int) -> tuple[float, int]:
    """Exact max over the grid of sigma_max^2, and the frequency where it is reached."""
    with torch.no_grad():
        lam = torch.linalg.eigvalsh(_gram(_spectrum(weight64, grid)))[..., -1]
        idx = int(lam.argmax())
    return float(lam[idx]), idx


def torus_norm_bound(weight: torch.Tensor, grid: int = 128) -> float:
    """Provable upper bound on the operator norm of the circular convolution, every lattice.

    ``sup`` over the torus of ``sigma_max(K^(w))`` is at most the exact maximum on a
    ``grid x grid`` set of frequencies times Bernstein's factor
    ``1 / sqrt(1 - 2 (r_h + r_w)^2 pi^2 / grid^2)`` (module docstring), computed in
    float64 with a relative safety of 2e-10 for its rounding.

    Args:
        weight: Kernel (C_out, C_in, kh, kw).
        grid: Frequencies per axis, >= 8; 128 gives a factor 1.0024 for 3x3 kernels.

    Returns:
        The bound as a Python float.

    Raises:
        ValueError: If ``weight`` is not 4-D or ``grid`` is too coarse for the kernel.

    Example:
        >>> ident = torch.zeros(2, 2, 3, 3)
        >>> ident[0, 0, 1, 1] = ident[1, 1, 1, 1] = 1.0
        >>> 1.0 <= torus_norm_bound(ident) < 1.003
        True
    """
    _check_kernel(weight)
    check_int("grid", grid, low=8)
    factor = _grid_factor(weight.shape[-2], weight.shape[-1], grid)
    lam, _ = _grid_max(weight.detach().to(torch.float64), grid)
    return math.sqrt(max(lam, 0.0)) * factor * (1.0 + _F64_SAFETY)


def _unit_roundoff(dtype: torch.dtype) -> float:
    return float(torch.finfo(dtype).eps) / 2.0


def _compute_dtype(x: torch.Tensor | None, weight: torch.Tensor) -> torch.dtype:
    if x is not None and torch.is_autocast_enabled(x.device.type):
        return torch.get_autocast_dtype(x.device.type)
    return weight.dtype


class PermutationConv2d(nn.Module):
    """Circular convolution whose operator norm is <= 1 for every value of its parameters.

    The applied weight is ``fl(w / max(1, B (1 + 2e-10) + u S))`` with ``B`` a provable
    bound on the operator norm of ``w`` on every lattice (see the module docstring),
    ``S`` Schur's bound and ``u`` the unit roundoff of the compute dtype:

    * ``normalization="spectral"``: ``B`` = :func:`torus_norm_bound`, tight within
      Bernstein's factor (1.0024 for 3x3 kernels at ``grid=128``). ``B`` is Bernstein's
      factor times the exact top singular value at one grid frequency, so its value
      and gradient come from that frequency. In eval mode (and whenever gradients are
      off) it is the maximising frequency, found by one eigensolve per frequency when
      the weight has changed (cached per weight version). In training mode with
      gradients on, the maximising frequency is tracked by power iteration with a
      persistent vector per frequency (as ``spectral_norm`` does), refreshed every
      ``refresh`` forwards: a value from below, equal to the exact one once the
      tracked frequency is the maximiser. Only eval-mode outputs are certified.
    * ``normalization="schur"``: ``B`` = Schur's bound, exact arithmetic in both modes,
      loose for dense kernels.

    Args:
        in_channels: Input channels, >= 1.
        out_channels: Output channels, >= 1.
        kernel_size: Odd kernel side, >= 1 (the set of lattice shifts used).
        bias: Add a learned per-channel bias (does not change the Lipschitz constant).
        normalization: ``"spectral"`` (default) or ``"schur"``.
        grid: Frequencies per axis of the spectral bound, >= 8.

    Shape:
        Input (N, in_channels, H, W), N >= 0, H and W >= kernel_size // 2; output
        (N, out_channels, H, W), in the input's dtype.

    Raises:
        TypeError: If an integer argument is not an int.
        ValueError: If it is out of range or ``normalization`` is unknown.

    Example:
        >>> layer = PermutationConv2d(4, 8, 3).eval()
        >>> layer(torch.randn(2, 4, 16, 16)).shape
        torch.Size([2, 8, 16, 16])
        >>> float(layer.lipschitz_bound()) <= 1.0
        True
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int = 3,
        *,
        bias: bool = True,
        normalization: str = "spectral",
        grid: int = 128,
    ) -> None:
        super().__init__()
        self.in_channels = check_int("in_channels", in_channels, low=1)
        self.out_channels = check_int("out_channels", out_channels, low=1)
        self.kernel_size = check_int("kernel_size", kernel_size, low=1)
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be a positive odd int, got {kernel_size!r}")
        self.normalization = check_choice("normalization", normalization, NORMALIZATIONS)
        self.grid = check_int("grid", grid, low=max(8, kernel_size))
        self.grid_factor = _grid_factor(kernel_size, kernel_size, self.grid)
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size, kernel_size))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        n_freq = self.grid * (self.grid // 2 + 1)
        small = min(in_channels, out_channels)
        # persistent power-iteration vectors, one per frequency (real and imaginary parts)
        self.register_buffer("_u", torch.randn(n_freq, small, 2), persistent=False)
        self._fresh = True  # run a few power steps before the first estimate
        self._wcache: tuple[tuple, torch.Tensor] | None = None
        self._idx: int | None = None
        self._steps = 0
        self.refresh = 8  # training mode: re-track the maximising frequency every 8 forwards
        self._exact: tuple[tuple[int, torch.dtype, torch.device], int] | None = None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise near a (partial) identity permutation plus small noise.

        Signed permutations have norm exactly 1 under both normalisations, so the
        layers start as isometries on a path through the network and keep their gain.
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
        self._exact, self._idx, self._fresh, self._wcache = None, None, True, None

    def _load_from_state_dict(self, *args, **kwargs):
        super()._load_from_state_dict(*args, **kwargs)
        self._exact, self._idx, self._fresh, self._wcache = None, None, True, None

    # -- the bound B ---------------------------------------------------------------------
    def _sigma_at(self, w64: torch.Tensor, idx: int) -> torch.Tensor:
        """Bernstein factor times the top singular value at grid frequency ``idx``."""
        fy, fx = divmod(idx, self.grid // 2 + 1)
        kh, kw = w64.shape[-2:]
        dev = w64.device
        ay = torch.arange(kh, dtype=torch.float64, device=dev)
        ax = torch.arange(kw, dtype=torch.float64, device=dev)
        phase = torch.exp(-2j * math.pi * (fy * ay[:, None] + fx * ax[None, :]) / self.grid)
        mat = (w64.to(torch.complex128) * phase).sum(dim=(-2, -1))  # (Co, Ci) at that frequency
        return torch.linalg.matrix_norm(mat, ord=2) * self.grid_factor

    def _track_argmax(self) -> int:
        """Training mode: power steps per frequency (persistent vectors), argmax frequency."""
        with torch.no_grad():
            mats = _spectrum(self.weight.detach().float(), self.grid)  # (F, Co, Ci), complex64
            a = mats if mats.shape[-1] <= mats.shape[-2] else mats.mH  # (F, m, k), k smaller
            v = torch.view_as_complex(self._u.float().contiguous())
            for _ in range(30 if self._fresh else 1):
                v = (a.mH @ (a @ v.unsqueeze(-1))).squeeze(-1)
                v = v / v.norm(dim=-1, keepdim=True).clamp_min(1e-30)
            self._u.copy_(torch.view_as_real(v).to(self._u.dtype))
            sig2 = (a @ v.unsqueeze(-1)).squeeze(-1).abs().pow(2).sum(-1)
            self._fresh = False
            return int(sig2.argmax())

    def _bound_estimate(self, w64: torch.Tensor) -> torch.Tensor:
        """Training mode: the frequency tracked by power iteration, refreshed every few steps."""
        if self._fresh or self._idx is None or self._steps % self.refresh == 0:
            self._idx = self._track_argmax()
        self._steps += 1
        return self._sigma_at(w64, self._idx)

    def _bound_exact(self, w64: torch.Tensor) -> torch.Tensor:
        """Exact maximum on the grid (one eigensolve per frequency, cached per weight version)."""
        key = (self.weight._version, self.weight.dtype, self.weight.device)
        if torch.compiler.is_compiling():
            idx = self._exact[1] if self._exact is not None else None
        else:
            idx = self._exact[1] if self._exact is not None and self._exact[0] == key else None
        if idx is None:
            _, idx = _grid_max(w64.detach(), self.grid)
            if not torch.compiler.is_compiling():
                self._exact = (key, idx)
        return self._sigma_at(w64, idx)

    def norm_bound(self, *, exact: bool | None = None) -> torch.Tensor:
        """The bound ``B`` on the raw weight's operator norm (float64, differentiable).

        Args:
            exact: Force the exact grid bound (True) or the training estimate (False);
                None picks the estimate in training mode with gradients on.
        """
        w64 = self.weight.to(torch.float64)
        if self.normalization == "schur":
            return schur_bound(w64)
        if exact is None:
            exact = not (self.training and torch.is_grad_enabled())
        return self._bound_exact(w64) if exact else self._bound_estimate(w64)

    def normalized_weight(
        self, dtype: torch.dtype | None = None, *, exact: bool | None = None
    ) -> torch.Tensor:
        """The weight actually applied, ``fl(w / max(1, B (1 + 2e-10) + u S))`` (differentiable).

        Args:
            dtype: The compute dtype (its unit roundoff ``u`` enters the divisor and the
                result is rounded to it once); default the weight's dtype.
            exact: As in :meth:`norm_bound`.
        """
        dtype = self.weight.dtype if dtype is None else dtype
        w64 = self.weight.to(torch.float64)
        bound = self.norm_bound(exact=exact)
        divisor = bound * (1.0 + _F64_SAFETY) + _unit_roundoff(dtype) * schur_bound(w64).detach()
        return (w64 / torch.clamp(divisor, min=1.0)).to(dtype)

    def lipschitz_bound(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        """Certified bound on the operator norm of the applied weight, every lattice (<= 1).

        Recomputed in float64 from the applied (rounded) weight: the exact grid bound
        times Bernstein's factor (``"spectral"``) or Schur's bound (``"schur"``).
        """
        w = self.normalized_weight(dtype, exact=True).detach().to(torch.float64)
        if self.normalization == "schur":
            return schur_bound(w)
        return torch.tensor(torus_norm_bound(w, self.grid), dtype=torch.float64)

    def _applied_weight(self, dtype: torch.dtype) -> torch.Tensor:
        """The normalised weight; without gradients it is cached per weight version."""
        if torch.compiler.is_compiling() or (torch.is_grad_enabled() and self.weight.requires_grad):
            return self.normalized_weight(dtype)
        w = self.weight
        key = (w._version, w.data_ptr(), w.device, dtype, self.training)
        if self._wcache is None or self._wcache[0] != key:
            self._wcache = (key, self.normalized_weight(dtype).detach())
        return self._wcache[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the normalised circular convolution."""
        weight = self._applied_weight(_compute_dtype(x, self.weight))
        p = self.kernel_size // 2
        if p:
            x = F.pad(x, (p, p, p, p), mode="circular")
        return F.conv2d(x, weight, self.bias)

    def extra_repr(self) -> str:  # noqa: D102 - nn.Module's repr hook
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"bias={self.bias is not None}, normalization={self.normalization!r}"
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
