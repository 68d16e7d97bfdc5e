"""Checks at the public boundary: clear errors naming the argument."""

from __future__ import annotations

import math

import torch

__all__ = ["check_image_batch", "check_noise_level", "check_positive_int"]


def check_image_batch(
    x: object, name: str, *, channels: int | None = None, min_size: int = 1
) -> torch.Tensor:
    """Return ``x`` if it is a finite float tensor (N, C, H, W); raise otherwise.

    Raises:
        TypeError: If ``x`` is not a floating-point torch tensor.
        ValueError: If it is not 4-D, has the wrong channel count, is smaller than
            ``min_size`` or holds NaN/inf.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor (N, C, H, W), got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.ndim != 4:
        raise ValueError(f"{name} must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if channels is not None and x.shape[1] != channels:
        raise ValueError(f"{name} must have {channels} channel(s), got shape {tuple(x.shape)}")
    if x.shape[0] < 1 or x.shape[-2] < min_size or x.shape[-1] < min_size:
        raise ValueError(
            f"{name} must hold at least one image of size >= {min_size} x {min_size}, "
            f"got shape {tuple(x.shape)}"
        )
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return x


def check_noise_level(sigma: object, name: str, batch: int, like: torch.Tensor) -> torch.Tensor:
    """Turn a noise level (float or (N,) tensor, >= 0) into a (N, 1, 1, 1) tensor like ``like``.

    Raises:
        TypeError: If ``sigma`` is neither a real number nor a tensor.
        ValueError: If it is negative, not finite or has the wrong length.
    """
    if isinstance(sigma, bool) or not isinstance(sigma, int | float | torch.Tensor):
        raise TypeError(f"{name} must be a float or a (N,) tensor, got {type(sigma).__name__}")
    s = torch.as_tensor(sigma, dtype=like.dtype, device=like.device).reshape(-1)
    if s.numel() == 1:
        s = s.expand(batch)
    if s.numel() != batch:
        raise ValueError(f"{name} must be a scalar or have {batch} entries, got {s.numel()}")
    if not bool(torch.isfinite(s).all()) or bool((s < 0).any()):
        raise ValueError(
            f"{name} must be finite and >= 0 (intensity units, [0, 1] images), got {sigma}"
        )
    return s.reshape(batch, 1, 1, 1)


def check_positive_int(value: object, name: str) -> int:
    """Return ``value`` if it is a positive int.

    Raises:
        ValueError: Otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def check_unit_interval(value: object, name: str, *, open_left: bool = True) -> float:
    """Return ``value`` as float if it lies in (0, 1] (or [0, 1]).

    Raises:
        ValueError: Otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a real number in (0, 1], got {value!r}")
    lo_ok = value > 0 if open_left else value >= 0
    if not lo_ok or value > 1:
        raise ValueError(f"{name} must lie in {'(0' if open_left else '[0'}, 1], got {value!r}")
    return float(value)
