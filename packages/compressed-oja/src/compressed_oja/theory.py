"""The abstract's rates and the error measure.

Leading terms only (no constants), from the paper's abstract: after t samples the
expected sin^2 error is of order

- fully observed Oja (minimax): lambda1 lambda2 d / (Delta^2 t)
- two adaptive measurements (this paper, with a matching lower bound):
  lambda1 lambda2 d^2 / (Delta^2 t)
- any non-adaptive scheme with two measurements (lower bound): lambda2^2 d^3 / (Delta^2 t)
"""

from __future__ import annotations

import numpy as np
from icml26_core.validation import check_float, check_int


def rates(lam1: float, lam2: float, d: int, t: float) -> dict[str, float]:
    """The three leading terms of the sin^2 error after ``t`` samples.

    Args:
        lam1: Top eigenvalue lambda1 > lambda2.
        lam2: Second eigenvalue lambda2 >= 0.
        d: Dimension >= 2.
        t: Number of samples > 0.

    Returns:
        ``{"full": ..., "adaptive": ..., "nonadaptive": ...}``.

    Raises:
        ValueError: If ``lam1 <= lam2``, or an argument is out of range.
    """
    lam2 = check_float("lam2", lam2, low=0.0)
    lam1 = check_float("lam1", lam1, low=lam2, low_inclusive=False)
    d = check_int("d", d, low=2)
    t = check_float("t", t, low=0.0, low_inclusive=False)
    gap2 = (lam1 - lam2) ** 2
    return {
        "full": lam1 * lam2 * d / (gap2 * t),
        "adaptive": lam1 * lam2 * d**2 / (gap2 * t),
        "nonadaptive": lam2**2 * d**3 / (gap2 * t),
    }


def sin2_error(w: np.ndarray, v: np.ndarray) -> np.ndarray | float:
    """sin^2 of the angle between ``w`` and ``v`` (1 - cos^2; sign-free, scale-free).

    Args:
        w: (..., d) estimates (need not be unit).
        v: (d,) or (..., d) reference direction.

    Returns:
        (...,) values in [0, 1]; a float for 1-D input.

    Raises:
        ValueError: On a zero vector or mismatched last dimensions.
    """
    w = np.asarray(w, dtype=float)
    v = np.asarray(v, dtype=float)
    if w.shape[-1] != v.shape[-1]:
        raise ValueError(f"w and v must have the same last dimension, got {w.shape} and {v.shape}")
    nw = np.linalg.norm(w, axis=-1)
    nv = np.linalg.norm(v, axis=-1)
    if np.any(nw == 0) or np.any(nv == 0):  # exact: a zero vector has no direction
        raise ValueError("w and v must be nonzero")
    cos = np.sum(w * v, axis=-1) / (nw * nv)
    out = np.clip(1.0 - cos**2, 0.0, 1.0)
    return float(out) if out.ndim == 0 else out
