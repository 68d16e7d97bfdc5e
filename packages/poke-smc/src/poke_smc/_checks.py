"""Argument checks shared by the package's public functions."""

from __future__ import annotations

from typing import Any


def positive_int(name: str, value: Any) -> int:
    """Return ``value`` if it is an int >= 1 (not a bool).

    Raises:
        ValueError: Naming ``name``, otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value
