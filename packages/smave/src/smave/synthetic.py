"""Standard single- and multi-index regression models for subspace recovery."""

from __future__ import annotations

import numpy as np

__all__ = ["DISCRETE_KINDS", "MODELS", "make_discrete_model", "make_index_model"]

MODELS = ("single", "multi")


def make_index_model(
    model: str, n_samples: int, n_features: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``(X, y, B0)`` from a single- or multi-index model with Gaussian covariates.

    ``x ~ N(0, I_p)``, ``beta1 = (1, 1, 1, 1, 0, ...)/2``, ``beta2 = (1, -1, 1, -1, 0, ...)/2``,
    ``u_k = beta_k^T x``, ``eps ~ N(0, 1)``:

    * ``"single"``: ``y = sin(2 u1) + u1^2 / 2 + 0.2 eps`` (non-monotone link, d0 = 1);
    * ``"multi"``: ``y = u1 / (0.5 + (u2 + 1.5)^2) + (1 + u2)^2 + 0.5 eps`` (the
      two-index model of Li (1991) used by Xia et al. (2002), d0 = 2).

    Args:
        model: ``"single"`` or ``"multi"``.
        n_samples: Number of samples n.
        n_features: Ambient dimension p >= 4.
        rng: numpy Generator.

    Returns:
        ``X`` (n, p), ``y`` (n,) and the true basis ``B0`` (d0, p) with orthonormal rows.

    Raises:
        ValueError: On an unknown model or ``n_features < 4``.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if n_features < 4:
        raise ValueError(f"n_features must be >= 4, got {n_features}")
    X = rng.standard_normal((n_samples, n_features))
    b1 = np.zeros(n_features)
    b1[:4] = [0.5, 0.5, 0.5, 0.5]
    b2 = np.zeros(n_features)
    b2[:4] = [0.5, -0.5, 0.5, -0.5]
    u1, u2 = X @ b1, X @ b2
    eps = rng.standard_normal(n_samples)
    if model == "single":
        return X, np.sin(2 * u1) + 0.5 * u1**2 + 0.2 * eps, b1[None, :]
    y = u1 / (0.5 + (u2 + 1.5) ** 2) + (1 + u2) ** 2 + 0.5 * eps
    return X, y, np.stack([b1, b2])


DISCRETE_KINDS = ("levels", "binary", "duplicated")


def make_discrete_model(
    kind: str, model: str, n_samples: int, n_features: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``(X, y, B0)`` from an index model on discrete or tied covariates.

    The link and directions are those of :func:`make_index_model`; only the covariates
    change:

    * ``"levels"``: integers 0..9, uniform and independent; the indices are taken on
      the raw integers, ``u_k = beta_k^T x`` (the design on which tied projected
      distances broke SMAVE's localization);
    * ``"binary"``: 0/1 with probability 1/2, indices on the standardized columns;
    * ``"duplicated"``: Gaussian rows, each of ``n_samples // 10`` distinct rows repeated
      10 times (the noise is drawn per sample).

    Args:
        kind: One of :data:`DISCRETE_KINDS`.
        model: ``"single"`` or ``"multi"``.
        n_samples: Number of samples n (a multiple of 10 for ``"duplicated"``).
        n_features: Ambient dimension p >= 4.
        rng: numpy Generator.

    Returns:
        ``X`` (n, p), ``y`` (n,) and the true basis ``B0`` (d0, p) with orthonormal rows,
        in the coordinates of ``X``.

    Raises:
        ValueError: On an unknown kind or model, or ``n_features < 4``.
    """
    if kind not in DISCRETE_KINDS:
        raise ValueError(f"kind must be one of {DISCRETE_KINDS}, got {kind!r}")
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if n_features < 4:
        raise ValueError(f"n_features must be >= 4, got {n_features}")
    n, p = n_samples, n_features
    if kind == "levels":
        X = rng.integers(0, 10, size=(n, p)).astype(np.float64)
        U = X
    elif kind == "binary":
        X = rng.integers(0, 2, size=(n, p)).astype(np.float64)
        U = (X - 0.5) / 0.5
    else:
        rows = rng.standard_normal((max(1, n // 10), p))
        X = np.repeat(rows, 10, axis=0)[:n]
        if X.shape[0] < n:
            X = np.vstack([X, rows[: n - X.shape[0]]])
        U = X
    b1 = np.zeros(p)
    b1[:4] = 0.5
    b2 = np.zeros(p)
    b2[:4] = [0.5, -0.5, 0.5, -0.5]
    u1, u2 = U @ b1, U @ b2
    eps = rng.standard_normal(n)
    if model == "single":
        return X, np.sin(2 * u1) + 0.5 * u1**2 + 0.2 * eps, b1[None, :]
    y = u1 / (0.5 + (u2 + 1.5) ** 2) + (1 + u2) ** 2 + 0.5 * eps
    return X, y, np.stack([b1, b2])
