"""Checks at the public boundary: every error names the argument, the value and what is expected."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np


def as_matrix(X: Any, name: str = "X") -> np.ndarray:
    """Return ``X`` as a fresh C-contiguous float64 matrix of shape (n, d), n >= 1, d >= 1.

    Raises:
        TypeError: If ``X`` is not numeric.
        ValueError: If ``X`` is not 2-D, is empty, or holds NaN or inf.
    """
    try:
        arr = np.array(X, dtype=np.float64, order="C", copy=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a numeric array of shape (n, d), got {type(X).__name__}"
        ) from exc
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (n, d), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"{name} must have n >= 1 samples and d >= 1 features, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite values, got NaN or inf")
    return arr


def as_vector(y: Any, n: int, name: str = "y") -> np.ndarray:
    """Return ``y`` as a fresh float64 vector of length ``n`` with finite entries.

    Raises:
        TypeError: If ``y`` is not numeric.
        ValueError: If the shape is not (n,) or ``y`` holds NaN or inf.
    """
    try:
        arr = np.array(y, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a numeric array of shape ({n},), got {type(y).__name__}"
        ) from exc
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) to match X, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite values, got NaN or inf")
    return arr


def check_nonnegative(value: Any, name: str) -> float:
    """Return ``value`` as a float >= 0.

    Raises:
        TypeError: If ``value`` is not a real number.
        ValueError: If it is negative, NaN or inf.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number >= 0, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def check_positive(value: Any, name: str) -> float:
    """Return ``value`` as a float > 0.

    Raises:
        TypeError: If ``value`` is not a real number.
        ValueError: If it is <= 0, NaN or inf.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number > 0, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def check_count(value: Any, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an int >= ``minimum``.

    Raises:
        TypeError: If ``value`` is not an integer.
        ValueError: If it is smaller than ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``.

    Raises:
        ValueError: If it is not.
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value
