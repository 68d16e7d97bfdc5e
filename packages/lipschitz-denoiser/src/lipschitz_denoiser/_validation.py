"""Checks at the public boundary: clear errors naming the argument.

Shape and type checks read only metadata (no device synchronisation, traceable by
``torch.compile``). Value checks (NaN/inf, negative noise levels) read the data, which
synchronises an accelerator: the functions that run once per call (plug-and-play
solvers, certificates, training) always make them; the models make them per forward
only with ``validate=True`` (a debug mode), as ``torch.distributions`` does.
"""

from __future__ import annotations

import math

import torch
from icml26_core.validation import check_float, check_int

__all__ = ["check_image_batch", "check_noise_level", "check_positive_int", "check_unit_interval"]


def check_image_batch(
    x: object,
    name: str,
    *,
    channels: int | None = None,
    min_size: int = 1,
    allow_empty: bool = False,
    check_values: bool = True,
) -> torch.Tensor:
    """Return ``x`` if it is a float tensor (N, C, H, W); raise otherwise.

    Args:
        x: The value given.
        name: The argument's name, for messages.
        channels: Required channel count, or None.
        min_size: Smallest height and width.
        allow_empty: Accept N = 0.
        check_values: Also reject NaN/inf (reads the data).

    Raises:
        TypeError: If ``x`` is not a floating-point torch tensor.
        ValueError: If it is not 4-D, has the wrong channel count, is smaller than
            ``min_size``, is empty (unless allowed) or holds NaN/inf.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor (N, C, H, W), got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.ndim != 4:
        raise ValueError(f"{name} must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if channels is not None and x.shape[1] != channels:
        raise ValueError(f"{name} must have {channels} channel(s), got shape {tuple(x.shape)}")
    if (x.shape[0] < 1 and not allow_empty) or x.shape[-2] < min_size or x.shape[-1] < min_size:
        raise ValueError(
            f"{name} must hold {'' if allow_empty else 'at least one image '}images of size "
            f">= {min_size} x {min_size}, got shape {tuple(x.shape)}"
        )
    if check_values and x.numel() and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return x


def check_noise_level(
    sigma: object, name: str, like: torch.Tensor, *, check_values: bool = True
) -> torch.Tensor:
    """Turn a noise level into a tensor that broadcasts to (N, 1, H, W), like ``like``.

    Accepted: a real number >= 0; a tensor of shape (), (N,), (N, 1, 1, 1), or a
    per-pixel map (N, 1, H, W) or (1, 1, H, W), in intensity units of [0, 1] images.

    Args:
        sigma: The value given.
        name: The argument's name.
        like: The image batch (N, C, H, W) the noise level belongs to.
        check_values: Reject negative, NaN or inf entries of a tensor (reads the data;
            Python numbers are always checked).

    Returns:
        A tensor of shape (N or 1, 1, 1 or H, 1 or W) in ``like``'s dtype and device.

    Raises:
        TypeError: If ``sigma`` is neither a real number nor a tensor.
        ValueError: If it is negative, not finite or of a shape that does not fit.
    """
    n, _, h, w = like.shape
    if isinstance(sigma, torch.Tensor):
        s = sigma.to(dtype=like.dtype, device=like.device)
        if s.ndim <= 1 and s.numel() in (1, n):
            s = s.reshape(-1, 1, 1, 1)
        elif not (
            s.ndim == 4
            and s.shape[0] in (1, n)
            and s.shape[1] == 1
            and s.shape[2] in (1, h)
            and s.shape[3] in (1, w)
        ):
            raise ValueError(
                f"{name} must be a float, an (N,) tensor or a noise map (N, 1, H, W) with "
                f"N={n}, H={h}, W={w}; got shape {tuple(sigma.shape)}"
            )
        if check_values and s.numel() and not bool(((s >= 0) & torch.isfinite(s)).all()):
            raise ValueError(f"{name} must be finite and >= 0 (intensity units, [0, 1] images)")
        return s
    # a tuple, not int | float: torch.compile before 2.10 cannot trace a types.UnionType
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float)):
        raise TypeError(
            f"{name} must be a float, an (N,) tensor or a noise map, got {type(sigma).__name__}"
        )
    value = check_float(name, sigma, low=0.0)
    return torch.full((1, 1, 1, 1), value, dtype=like.dtype, device=like.device)


def check_positive_int(value: object, name: str) -> int:
    """Return ``value`` if it is a positive int (TypeError / ValueError otherwise)."""
    return check_int(name, value, low=1)


def check_unit_interval(value: object, name: str) -> float:
    """Return ``value`` as float if it lies in (0, 1] (TypeError / ValueError otherwise)."""
    v = check_float(name, value, low=0.0, high=1.0, low_inclusive=False)
    if not math.isfinite(v):  # pragma: no cover - check_float rejects it
        raise ValueError(f"{name} must be finite")
    return v
