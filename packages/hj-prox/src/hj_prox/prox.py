"""Exact proximal operators in the functional style ``prox(x, t)``.

Each returns ``argmin_z g(z) + ||z - x||^2 / (2 t)`` for its ``g``, works on numpy
arrays and torch tensors alike, and broadcasts over leading axes (the vector is the
last axis where that matters: :func:`prox_l2`, :func:`prox_group_l2`). Bind extra
parameters with a lambda or :func:`functools.partial`, e.g.
``lambda v, t: prox_l1(v, t, lam=0.3)``: the solvers call ``prox(x, t)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from icml26_core.validation import check_float

__all__ = ["prox_box", "prox_group_l2", "prox_l1", "prox_l2", "prox_nonneg", "prox_quadratic"]


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _t(t: Any) -> float:
    return check_float("t", t, low=0.0, low_inclusive=False)


def prox_l1(x: Any, t: float, lam: float = 1.0) -> Any:
    """Soft thresholding: the prox of ``lam ||x||_1`` with step ``t``.

    ``sign(x) max(|x| - t lam, 0)``, elementwise.

    Args:
        x: Array of any shape.
        t: Step ``> 0``.
        lam: Weight ``>= 0``.

    Returns:
        Array shaped like ``x``.

    Example:
        >>> prox_l1(np.array([2.0, -0.3, 0.5]), 0.5)
        array([ 1.5, -0. ,  0. ])
    """
    thr = _t(t) * check_float("lam", lam, low=0.0)
    if _is_torch(x):
        import torch

        return torch.sign(x) * torch.clamp(x.abs() - thr, min=0.0)
    x = np.asarray(x, dtype=float)
    return np.sign(x) * np.maximum(np.abs(x) - thr, 0.0)


def prox_l2(x: Any, t: float, lam: float = 1.0) -> Any:
    """Block soft thresholding: the prox of ``lam ||x||_2`` (last axis) with step ``t``.

    ``max(1 - t lam / ||x||, 0) x``.

    Example:
        >>> prox_l2(np.array([3.0, 4.0]), 1.0)
        array([2.4, 3.2])
    """
    thr = _t(t) * check_float("lam", lam, low=0.0)
    if _is_torch(x):
        import torch

        nrm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
        return torch.clamp(1.0 - thr / torch.clamp(nrm, min=1e-300), min=0.0) * x
    x = np.asarray(x, dtype=float)
    nrm = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.maximum(1.0 - thr / np.maximum(nrm, 1e-300), 0.0) * x


def prox_group_l2(
    x: Any, t: float, groups: Sequence[Sequence[int]] | np.ndarray, lam: float = 1.0
) -> Any:
    """The prox of the group-lasso penalty ``lam sum_g sqrt(|g|) ||x_g||_2``.

    Args:
        x: Array ``(..., d)``.
        t: Step ``> 0``.
        groups: Either a label per coordinate (int array of length ``d``) or a list of
            index lists partitioning ``0..d-1``.
        lam: Weight ``>= 0``; each group's weight is ``lam sqrt(|g|)``.

    Returns:
        Array shaped like ``x``.

    Raises:
        ValueError: If ``groups`` does not partition the last axis.

    Example:
        >>> prox_group_l2(np.array([3.0, 4.0, 0.1]), 1.0, [[0, 1], [2]], lam=0.5)
        array([2.5757..., 3.4343..., 0.        ])
    """
    d = x.shape[-1]
    idx = _group_index(groups, d)
    thr = _t(t) * check_float("lam", lam, low=0.0)
    out = x.clone() if _is_torch(x) else np.array(x, dtype=float, copy=True)
    for g in idx:
        out[..., g] = prox_l2(x[..., g], 1.0, thr * np.sqrt(len(g)))
    return out


def _group_index(groups: Any, d: int) -> list[np.ndarray]:
    if isinstance(groups, np.ndarray) and groups.ndim == 1 and groups.size == d:
        idx = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    else:
        idx = [np.asarray(g, dtype=np.int64) for g in groups]
    flat = np.sort(np.concatenate(idx)) if idx else np.array([], dtype=np.int64)
    if flat.size != d or not np.array_equal(flat, np.arange(d)):
        raise ValueError(f"groups must partition the {d} coordinates of x's last axis")
    return idx


def prox_box(x: Any, t: float, lower: Any = -np.inf, upper: Any = np.inf) -> Any:
    """Projection onto the box ``[lower, upper]`` (the prox of its indicator; ``t`` unused).

    Raises:
        ValueError: If ``lower > upper`` somewhere.

    Example:
        >>> prox_box(np.array([-2.0, 0.5, 3.0]), 1.0, lower=-1.0, upper=1.0)
        array([-1. ,  0.5,  1. ])
    """
    _t(t)
    if np.any(np.asarray(lower) > np.asarray(upper)):
        raise ValueError("lower must be <= upper everywhere")
    if _is_torch(x):
        import torch

        lo = torch.as_tensor(lower, dtype=x.dtype, device=x.device)
        hi = torch.as_tensor(upper, dtype=x.dtype, device=x.device)
        return torch.minimum(torch.maximum(x, lo), hi)
    return np.clip(np.asarray(x, dtype=float), lower, upper)


def prox_nonneg(x: Any, t: float) -> Any:
    """Projection onto the non-negative orthant (``t`` unused).

    Example:
        >>> prox_nonneg(np.array([-1.0, 2.0]), 1.0)
        array([0., 2.])
    """
    _t(t)
    if _is_torch(x):
        import torch

        return torch.clamp(x, min=0.0)
    return np.maximum(np.asarray(x, dtype=float), 0.0)


class prox_quadratic:
    """The prox of ``g(x) = ||A x - b||^2 / (2 n)``: solves ``(I + t A'A/n) z = x + t A'b/n``.

    Caches one eigendecomposition of ``A'A/n`` so every call, for any ``t``, costs two
    matrix-vector products with a ``d x d`` matrix.

    Args:
        A: Matrix ``(n, d)``.
        b: Vector ``(n,)``.

    Example:
        >>> p = prox_quadratic(np.eye(2), np.array([1.0, 2.0]))
        >>> p(np.zeros(2), 2.0)  # (I + I) z = [1, 2]
        array([0.5, 1. ])
    """

    def __init__(self, A: Any, b: Any) -> None:
        A = np.asarray(A, dtype=float)
        b = np.asarray(b, dtype=float)
        if A.ndim != 2 or b.shape != (A.shape[0],):
            raise ValueError(f"A must be (n, d) and b (n,), got {A.shape} and {b.shape}")
        n = A.shape[0]
        self.evals, self.evecs = np.linalg.eigh(A.T @ A / n)
        self.atb = A.T @ b / n

    def __call__(self, x: Any, t: float) -> np.ndarray:
        """Return ``prox_{t g}(x)``."""
        t = _t(t)
        rhs = np.asarray(x, dtype=float) + t * self.atb
        return (rhs @ self.evecs / (1.0 + t * self.evals)) @ self.evecs.T
