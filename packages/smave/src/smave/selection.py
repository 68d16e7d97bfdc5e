"""Choosing the dimension of the subspace by cross-validated prediction error."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

__all__ = ["DimensionSelection", "default_regressor", "reduced_regression", "select_n_components"]


def default_regressor() -> GridSearchCV:
    """The downstream nonparametric regressor: kNN with its k chosen by inner 3-fold CV.

    Uniform weights: distance weights interpolate exact duplicates, common in data
    with discrete covariates, and then overfit.
    """
    return GridSearchCV(
        KNeighborsRegressor(),
        {"n_neighbors": [5, 10, 20, 40, 80]},
        cv=3,
        scoring="neg_mean_squared_error",
    )


def reduced_regression(reducer, regressor=None):
    """Pipeline ``reducer -> StandardScaler -> regressor`` (kNN by default).

    The reduced coordinates are standardized so that a distance-based regressor weighs
    them equally.
    """
    reg = default_regressor() if regressor is None else clone(regressor)
    return make_pipeline(clone(reducer), StandardScaler(), reg)


@dataclass(frozen=True)
class DimensionSelection:
    """Result of :func:`select_n_components`.

    Attributes:
        best: The dimension with the smallest mean cross-validated error.
        candidates: The dimensions tried, in order.
        mean_error: Mean CV mean squared error of each candidate (same order).
        std_error: Standard deviation of the CV error across folds.
    """

    best: int
    candidates: tuple[int, ...]
    mean_error: tuple[float, ...]
    std_error: tuple[float, ...]


def select_n_components(
    estimator,
    X,
    y,
    candidates=None,
    *,
    regressor=None,
    cv: int = 5,
    random_state=None,
) -> DimensionSelection:
    """Choose ``n_components`` by the cross-validated error of a regressor on ``B^T x``.

    For each candidate ``d`` the pipeline ``estimator(n_components=d) -> scaler ->
    regressor`` is scored by K-fold cross-validation (the subspace is re-estimated on
    each training fold, so the error is honest); the smallest mean squared error wins.

    Args:
        estimator: An unfitted transformer with an ``n_components`` parameter
            (:class:`smave.SMAVE`, :class:`smave.OPG`, :class:`smave.MAVE`, ...).
        X: array-like (n_samples, n_features).
        y: array-like (n_samples,).
        candidates: Iterable of dimensions to try; default ``1 .. min(5, p - 1)``.
        regressor: Downstream regressor; default kNN with inner CV over k.
        cv: Number of folds (>= 2).
        random_state: Seed of the fold shuffle.

    Returns:
        A :class:`DimensionSelection`.

    Raises:
        ValueError: If ``candidates`` is empty or holds a value outside ``[1, p - 1]``,
            or ``cv < 2``.

    Example:
        >>> import numpy as np
        >>> from smave import SMAVE, select_n_components
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 4)); y = X[:, 0] + X[:, 1] ** 2
        >>> select_n_components(SMAVE(max_iter=50), X, y, [1, 2], random_state=0).best
        2
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    p = X.shape[1]
    if candidates is None:
        candidates = range(1, min(5, p - 1) + 1)
    cands = tuple(int(c) for c in candidates)
    if not cands or any(c < 1 or c >= p for c in cands):
        raise ValueError(
            f"candidates must be a non-empty set of dimensions in [1, {p - 1}], got {cands}"
        )
    if int(cv) < 2:
        raise ValueError(f"cv must be >= 2, got {cv}")
    folds = KFold(n_splits=int(cv), shuffle=True, random_state=random_state)
    means, stds = [], []
    for d in cands:
        pipe = reduced_regression(clone(estimator).set_params(n_components=d), regressor)
        scores = -cross_val_score(pipe, X, y, cv=folds, scoring="neg_mean_squared_error")
        means.append(float(scores.mean()))
        stds.append(float(scores.std()))
    best = cands[int(np.argmin(means))]
    return DimensionSelection(best, cands, tuple(means), tuple(stds))
