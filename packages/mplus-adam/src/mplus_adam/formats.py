"""Low-precision number formats for master weights: rounding onto their grids.

One generic rule rounds a tensor onto the grid of a small floating-point format given by
its mantissa bits ``m``, smallest normal exponent ``emin`` and largest finite value
``fmax``: in the binade ``[2^e, 2^(e+1))`` (``e`` clamped to ``emin`` for subnormals) the
representable values are the multiples of ``2^(e - m)``. Round-to-nearest uses ties to
even (the parity of the multiple is the parity of the mantissa's last bit), so it agrees
with torch's casts to ``bfloat16``, ``float8_e4m3fn`` and ``float8_e5m2`` (tested);
stochastic rounding rounds up with probability equal to the distance from the lower
neighbour in ulps, so it is unbiased. Values beyond ``fmax`` saturate to ``+-fmax``.

Formats (:data:`FORMATS`):

- ``"fp32"``: no rounding (the reference).
- ``"bf16"``: bfloat16 (8 exponent bits, 7 mantissa bits), no scale.
- ``"fp8_e4m3"``, ``"fp8_e5m2"``: OCP FP8 (``fmax`` 448 and 57344), with a power-of-two
  scale per block of ``block_size`` consecutive entries of the last dimension
  (MX-style; ``block_size=None`` for one scale per tensor).
- ``"fp4_e2m1"``: the grid {0, 0.5, 1, 1.5, 2, 3, 4, 6} with a power-of-two scale per
  block (MXFP4). torch's ``float4_e2m1fn_x2`` has no CPU cast, so the grid is ours.

Scales are powers of two, so ``scale * grid`` is itself a grid of the same format and
:func:`quantize` is idempotent. :func:`quantize` picks each block's scale from its largest
magnitude (the smallest power of two that makes it fit); the optimizers keep the scale
between steps and change it only on overflow or on a 16-fold underflow
(:func:`update_scale_exponent`), because a scale that follows each step's maximum
re-rounds every entry of the block at every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from icml26_core.validation import check_choice, check_int

__all__ = [
    "FORMATS",
    "ROUNDINGS",
    "Format",
    "format_bits",
    "get_format",
    "quantize",
    "round_to_grid",
]

ROUNDINGS = ("nearest", "stochastic")


@dataclass(frozen=True)
class Format:
    """A floating-point format's grid.

    Attributes:
        name: The format's name in :data:`FORMATS`.
        mantissa_bits: Explicit mantissa (fraction) bits ``m``.
        emin: Exponent of the smallest normal value (``2^emin``).
        fmax: Largest finite value.
        bits: Storage bits per entry.
        scaled: Whether the format carries a power-of-two scale per block.
    """

    name: str
    mantissa_bits: int
    emin: int
    fmax: float
    bits: int
    scaled: bool


_FORMATS = {
    "fp32": Format("fp32", 23, -126, 3.4028234663852886e38, 32, False),
    "bf16": Format("bf16", 7, -126, 3.3895313892515355e38, 16, False),
    "fp8_e4m3": Format("fp8_e4m3", 3, -6, 448.0, 8, True),
    "fp8_e5m2": Format("fp8_e5m2", 2, -14, 57344.0, 8, True),
    "fp4_e2m1": Format("fp4_e2m1", 1, 0, 6.0, 4, True),
}
FORMATS = tuple(_FORMATS)

# A scale exponent is lowered only when the block's largest magnitude falls below
# fmax * scale / 2**UNDERFLOW_BITS (ours: hysteresis, so scales do not chase each step).
UNDERFLOW_BITS = 4


# nearest rounding through torch's casts (ties to even), tested equal to the grid rule
_CASTS = {"bf16": torch.bfloat16, "fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}


def get_format(fmt: str) -> Format:
    """The :class:`Format` named ``fmt``.

    Raises:
        ValueError: If ``fmt`` is not one of :data:`FORMATS`.
    """
    check_choice("fmt", fmt, FORMATS)
    return _FORMATS[fmt]


def format_bits(fmt: str, numel: int, block_size: int | None = 32) -> int:
    """Storage bits of ``numel`` entries in ``fmt``, scales included (8 bits per scale).

    Args:
        fmt: One of :data:`FORMATS`.
        numel: Number of entries (the scale count assumes one row of ``numel``).
        block_size: Entries per scale for scaled formats, None for one scale.

    Returns:
        The number of bits.

    Raises:
        TypeError: If ``numel`` or ``block_size`` is not an integer.
        ValueError: If ``fmt`` is unknown, ``numel < 0`` or ``block_size < 1``.
    """
    f = get_format(fmt)
    numel = check_int("numel", numel, low=0)
    if block_size is not None:
        block_size = check_int("block_size", block_size, low=1)
    bits = f.bits * numel
    if f.scaled:
        n_scales = 1 if block_size is None else -(-numel // block_size)
        bits += 8 * n_scales
    return bits


def _check_float_tensor(name: str, x: Any) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def _check_generator(generator: Any) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )


def round_to_grid(
    x: Any,
    fmt: str | Format,
    rounding: str = "nearest",
    generator: Any = None,
) -> Any:
    """Round ``x`` onto the unscaled grid of ``fmt`` (no block scale).

    Args:
        x: Floating tensor, any shape; computed in float32 (float64 stays float64).
        fmt: Format name or :class:`Format`.
        rounding: ``"nearest"`` (ties to even) or ``"stochastic"`` (unbiased).
        generator: ``torch.Generator`` for stochastic rounding (on ``x``'s device), or
            None for torch's default generator.

    Returns:
        A tensor of ``x``'s shape whose values lie on the grid, saturated at ``+-fmax``;
        float32 (float64 for float64 input).

    Raises:
        TypeError: If ``x`` is not a floating-point tensor or ``generator`` is not a
            ``torch.Generator``.
        ValueError: If ``fmt`` or ``rounding`` is not valid.
    """
    _check_float_tensor("x", x)
    f = fmt if isinstance(fmt, Format) else get_format(fmt)
    check_choice("rounding", rounding, ROUNDINGS)
    _check_generator(generator)
    work = x.to(torch.float64 if x.dtype == torch.float64 else torch.float32)
    if f.name == "fp32":
        return work.clone()
    if rounding == "nearest" and f.name in _CASTS:
        # fast path: torch's cast rounds to nearest, ties to even (tested equal to the rule
        # below); clamp first so values beyond fmax saturate instead of becoming inf/NaN
        return work.clamp(-f.fmax, f.fmax).to(_CASTS[f.name]).to(work.dtype)
    return _round_generic(work, f, rounding, generator)


def _round_generic(work: Any, f: Format, rounding: str, generator: Any) -> Any:
    """The grid rule of the module docstring, for any format (float32/float64 ``work``)."""
    mag = work.abs()
    _, exp = torch.frexp(mag)  # mag = frac * 2^exp, frac in [0.5, 1): floor(log2 mag) = exp - 1
    e = torch.clamp(exp - 1, min=f.emin)
    ulp = torch.ldexp(torch.ones_like(mag), e - f.mantissa_bits)
    k = mag / ulp  # exact: ulp is a power of two
    if rounding == "nearest":
        k = torch.round(k)  # half to even = ties to an even mantissa
    else:
        low = torch.floor(k)
        u = torch.rand(k.shape, generator=generator, device=k.device, dtype=k.dtype)
        k = low + (u < (k - low)).to(k.dtype)
    out = torch.clamp(k * ulp, max=f.fmax)
    return torch.copysign(out, work)


def _blocks(x: Any, block_size: int | None) -> tuple[Any, int]:
    """``x`` as (n_blocks, block) rows (zero-padded); returns the padded tensor and pad."""
    if x.ndim == 0:
        x = x.reshape(1)
    if block_size is None:
        return x.reshape(1, -1), 0
    last = x.shape[-1]
    pad = (-last) % block_size
    if pad:
        x = torch.nn.functional.pad(x, (0, pad))
    return x.reshape(-1, block_size), pad


def _unblocks(b: Any, shape: Any, pad: int, block_size: int | None) -> Any:
    if not shape:  # a 0-d tensor was one entry, padded to a block
        return b.reshape(-1)[:1].reshape(shape)
    if block_size is None:
        return b.reshape(shape)
    last = shape[-1]
    b = b.reshape(*shape[:-1], last + pad)
    return b[..., :last] if pad else b


def scale_exponent_for(amax: Any, fmt: Format) -> Any:
    """The smallest integer ``k`` with ``amax <= fmax * 2^k`` (int32; 0 where amax is 0)."""
    ratio = amax.to(torch.float64) / fmt.fmax
    k = torch.ceil(torch.log2(torch.where(ratio > 0, ratio, torch.ones_like(ratio))))
    return k.to(torch.int32)


def update_scale_exponent(amax: Any, k: Any, fmt: Format) -> Any:
    """Keep the scale exponents ``k`` unless a block overflows or underflows 16-fold.

    Args:
        amax: Largest magnitude per block of the value about to be rounded, shape ``(n,)``.
        k: Current scale exponents, int32 ``(n,)``.
        fmt: The format.

    Returns:
        New int32 exponents: raised to fit where ``amax > fmax * 2^k``; lowered to fit
        where ``amax < fmax * 2^(k - 4)`` (and amax > 0); else unchanged.
    """
    fit = scale_exponent_for(amax, fmt)
    limit = fmt.fmax * torch.ldexp(torch.ones_like(amax, dtype=torch.float64), k - UNDERFLOW_BITS)
    under = (amax.to(torch.float64) < limit) & (amax > 0)
    return torch.where((fit > k) | under, fit, k).to(torch.int32)


def quantize_with_exponents(
    x: Any,
    fmt: Format,
    k: Any,
    block_size: int | None,
    rounding: str = "nearest",
    generator: Any = None,
) -> Any:
    """Round ``x`` onto ``2^k * grid`` per block, for given scale exponents ``k`` (int32)."""
    shape = x.shape
    b, pad = _blocks(x.to(torch.float64 if x.dtype == torch.float64 else torch.float32), block_size)
    scale = torch.ldexp(torch.ones(b.shape[0], 1, dtype=b.dtype, device=b.device), k[:, None])
    q = round_to_grid(b / scale, fmt, rounding, generator) * scale
    return _unblocks(q, shape, pad, block_size)


def block_amax(x: Any, block_size: int | None) -> Any:
    """Largest finite magnitude of each block of the last dimension, shape ``(n_blocks,)``.

    Infinities are left out (they saturate at the block's ``+-fmax * scale`` instead of
    making the scale infinite, which zeroed the whole block); NaN propagates.
    """
    b, _ = _blocks(x.detach(), block_size)
    a = b.abs()
    return torch.where(torch.isinf(a), torch.zeros_like(a), a).amax(dim=1)


def quantize(
    x: Any,
    fmt: str = "bf16",
    rounding: str = "nearest",
    block_size: int | None = 32,
    generator: Any = None,
) -> Any:
    """Round a tensor onto a low-precision format's grid (values only; dtype kept).

    Scaled formats (FP8, FP4) get one power-of-two scale per block of ``block_size``
    consecutive entries of the last dimension (the last block zero-padded when the
    dimension is not a multiple), the smallest that makes the block's largest magnitude
    fit.

    Args:
        x: Floating tensor, any shape (not modified).
        fmt: One of :data:`FORMATS`.
        rounding: ``"nearest"`` (ties to even, as torch's casts) or ``"stochastic"``.
        block_size: Entries per scale (>= 1), or None for one scale per tensor;
            unscaled formats ignore it.
        generator: ``torch.Generator`` for stochastic rounding, or None.

    Returns:
        A new tensor of ``x``'s shape and dtype whose values lie on the grid (for
        ``bf16``, exactly ``x.to(torch.bfloat16)`` with nearest rounding).

    Raises:
        TypeError: If ``x`` is not a floating-point tensor or ``generator`` is not a
            ``torch.Generator``.
        ValueError: If ``fmt``, ``rounding`` or ``block_size`` is not valid.

    Example:
        >>> import torch
        >>> x = torch.tensor([0.3, 1.1, 2.6, 7.0])  # one block, scale 2: {0, 1, 2, 3, 4, 6, 8, 12}
        >>> quantize(x, "fp4_e2m1", block_size=None).tolist()
        [0.0, 1.0, 3.0, 8.0]
        >>> quantize(torch.tensor([1.0, 1.001]), "bf16").tolist()  # 1.001 is below half a bf16 ulp
        [1.0, 1.0]
    """
    _check_float_tensor("x", x)
    f = get_format(fmt)
    check_choice("rounding", rounding, ROUNDINGS)
    _check_generator(generator)
    if block_size is not None:
        block_size = check_int("block_size", block_size, low=1)
    if not f.scaled:
        return round_to_grid(x, f, rounding, generator).to(x.dtype)
    k = scale_exponent_for(block_amax(x, block_size), f)
    return quantize_with_exponents(x, f, k, block_size, rounding, generator).to(x.dtype)
