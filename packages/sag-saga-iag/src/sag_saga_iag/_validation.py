"""Checks of arrays at the public boundary (scalars go through :mod:`icml26_core.validation`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

FLOAT_DTYPES = (np.float64, np.float32)


def as_matrix(X: Any, name: str = "X") -> Any:
    """Return ``X`` as a float matrix of shape (n, d), n >= 1, d >= 1, without copying if possible.

    Dense input becomes a C-ordered ndarray, sparse input a CSR matrix in canonical
    form (sorted indices, no duplicates); float32 and float64 are kept, other dtypes
    become float64. A copy is made only when the layout or dtype must change, so the
    caller's array is never modified.

    Raises:
        TypeError: If ``X`` is not numeric.
        ValueError: If ``X`` is not 2-D, is empty, or holds NaN or inf.
    """
    if sp.issparse(X):
        M = sp.csr_matrix(X)  # a new container; the data array is shared when possible
        if M.dtype not in FLOAT_DTYPES:
            M = M.astype(np.float64)
        if not M.has_canonical_format:
            M = M.copy()
            M.sum_duplicates()
        if M.shape[0] == 0 or M.shape[1] == 0:
            raise ValueError(
                f"{name} must have n >= 1 samples and d >= 1 features, got shape {M.shape}"
            )
        if not np.all(np.isfinite(M.data)):
            raise ValueError(f"{name} must hold finite values, got NaN or inf")
        return M
    try:
        arr = np.asarray(X)
        if arr.dtype not in FLOAT_DTYPES:
            arr = arr.astype(np.float64)
        arr = np.ascontiguousarray(arr)
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
