"""Checks of scalar arguments at a public boundary, with messages that name the argument.

One convention for every package: a value of the wrong type raises ``TypeError``, a
value of the right type outside its range raises ``ValueError``; both name the
argument, what was given and what is expected. Python and numpy integers are integers;
``bool`` is not (``True`` is rarely meant as ``1``); an integer is a valid float.

Example:
    >>> check_int("n_components", 5, low=1)
    5
    >>> check_float("lr", 1e-3, low=0.0, low_inclusive=False)
    0.001
    >>> check_choice("reduction", "mean", ("none", "mean", "sum"))
    'mean'
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any

__all__ = ["check_choice", "check_float", "check_int"]


def _range_text(low: float | None, high: float | None, lo_inc: bool, hi_inc: bool) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>=' if lo_inc else '>'} {low}")
    if high is not None:
        parts.append(f"{'<=' if hi_inc else '<'} {high}")
    return " and ".join(parts)


def check_int(
    name: str,
    value: Any,
    *,
    low: int | None = None,
    high: int | None = None,
) -> int:
    """Return ``value`` as a Python ``int`` if it is an integer in ``[low, high]``.

    Args:
        name: The argument's name, for the message.
        value: The value given.
        low: Smallest allowed value (inclusive), or None.
        high: Largest allowed value (inclusive), or None.

    Returns:
        ``int(value)``.

    Raises:
        TypeError: If ``value`` is not an integer (bools and floats are not).
        ValueError: If it lies outside ``[low, high]``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise ValueError(f"{name} must be an integer {_range_text(low, high, True, True)}, got {v}")
    return v


def check_float(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
    finite: bool = True,
) -> float:
    """Return ``value`` as a Python ``float`` if it is a real number in range.

    Args:
        name: The argument's name, for the message.
        value: The value given (an int, float, numpy scalar or 0-d array).
        low: Lower bound, or None.
        high: Upper bound, or None.
        low_inclusive: Whether ``low`` itself is allowed.
        high_inclusive: Whether ``high`` itself is allowed.
        finite: Reject NaN and infinities.

    Returns:
        ``float(value)``.

    Raises:
        TypeError: If ``value`` is not a real number (bools are not).
        ValueError: If it is NaN or infinite (with ``finite``) or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        if getattr(value, "shape", None) == () and hasattr(value, "item"):
            return check_float(
                name,
                value.item(),
                low=low,
                high=high,
                low_inclusive=low_inclusive,
                high_inclusive=high_inclusive,
                finite=finite,
            )
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    v = float(value)
    if math.isnan(v) or (finite and math.isinf(v)):
        raise ValueError(f"{name} must be a finite number, got {v}")
    bad_low = low is not None and (v < low or (v == low and not low_inclusive))
    bad_high = high is not None and (v > high or (v == high and not high_inclusive))
    if bad_low or bad_high:
        rng = _range_text(low, high, low_inclusive, high_inclusive)
        raise ValueError(f"{name} must be {rng}, got {v}")
    return v


def check_choice(name: str, value: Any, choices: Collection[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``.

    Raises:
        ValueError: If it is not, listing the choices.
    """
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value
