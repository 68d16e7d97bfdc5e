"""The theory check: gradient descent on ``f(x) = sum_i x_i^4`` with the (L0, L1) step.

``f`` is not L-smooth (its curvature ``12 x_i^2`` is unbounded) but satisfies
``||Hess f(x)|| = max_i 12 x_i^2 <= 9 + 4 f(x)`` (since ``(2 s - 3)^2 >= 0`` for
``s = x_i^2``), i.e. ``K0 = 9``, ``K1 = 4``, ``f* = 0``. The adaptive step
``1 / (K0 + K1 (f - f*))`` needs no tuning; a fixed step must be small enough for the
curvature at the start and is then slow near the minimum.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

__all__ = ["quartic_descent"]


def quartic_descent(
    x0: Any,
    step: Any = "l0l1",
    *,
    k0: float = 9.0,
    k1: float = 4.0,
    target: float = 1e-6,
    max_iter: int = 200_000,
) -> np.ndarray:
    """Iterations gradient descent needs to reach ``f(x) <= target`` on ``sum x_i^4``.

    Args:
        x0: Start point, shape (d,), finite.
        step: ``"l0l1"`` for ``eta_t = 1 / (k0 + k1 f(x_t))``, or fixed step sizes, a
            float or shape (m,) array of positive floats (run side by side).
        k0: ``K0`` of the (L0, L1) bound (9 holds for this ``f``).
        k1: ``K1`` of the bound (4 holds for this ``f``).
        target: Stop when ``f <= target`` (> 0).
        max_iter: Give up after this many iterations.

    Returns:
        float64 array (m,) (``(1,)`` for ``"l0l1"``): the first iteration with
        ``f <= target``, ``inf`` where it never got there (diverged or too slow).

    Raises:
        ValueError: If ``x0`` is empty or not finite, a step is not positive, or a
            constant is out of range.
    """
    x = np.asarray(x0, dtype=float).ravel()
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("x0 must be a non-empty finite vector")
    k0 = check_float("k0", k0, low=0.0, low_inclusive=False)
    k1 = check_float("k1", k1, low=0.0)
    target = check_float("target", target, low=0.0, low_inclusive=False)
    max_iter = check_int("max_iter", max_iter, low=1)
    adaptive = isinstance(step, str)
    if adaptive:
        if step != "l0l1":
            raise ValueError(f"step must be 'l0l1' or positive floats, got {step!r}")
        etas = np.zeros(1)
    else:
        etas = np.asarray(step, dtype=float).ravel()
        if etas.size == 0 or not np.all(np.isfinite(etas)) or np.any(etas <= 0):
            raise ValueError(f"step sizes must be positive and finite, got {step!r}")
    xs = np.tile(x, (etas.size, 1))
    out = np.full(etas.size, np.inf)
    active = np.ones(etas.size, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(max_iter + 1):
            f = (xs**4).sum(axis=1)
            reached = active & (f <= target)
            out[reached] = t
            active &= ~reached & np.isfinite(f) & (f < 1e300)
            if not active.any() or t == max_iter:
                break
            eta = 1.0 / (k0 + k1 * f) if adaptive else etas
            xs = xs - (eta[:, None] * 4.0 * xs**3)
    return out
