"""Tabular regression and classification sets that ship inside registry packages.

``load_tabular(name)`` returns ``(X, y, meta)``:

- ``X``: float64 array of shape (n_samples, n_features), a fresh copy. Categorical
  columns are one-hot encoded (one 0/1 column per level, named ``column=level``).
- ``y``: shape (n_samples,); int64 class indices 0..n_classes-1 for classification,
  float64 for regression.
- ``meta``: dict with ``name``, ``task`` ("regression" or "classification"),
  ``feature_names`` (list of n_features str), ``target_name``, ``class_names`` (list,
  classification only), ``n_classes`` (classification only), ``units``, ``source``,
  ``license``, ``description``.

| name | n x d | task | carrier (extra) |
| --- | --- | --- | --- |
| diabetes | 442 x 10 | regression | scikit-learn (data) |
| breast_cancer | 569 x 30 | classification, 2 | scikit-learn (data) |
| wine | 178 x 13 | classification, 3 | scikit-learn (data) |
| digits | 1797 x 64 | classification, 10 | scikit-learn (data) |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from icml26_core._lazy import require
from icml26_core.datasets._registry import DatasetInfo, dataset_info, register

__all__ = ["load_tabular"]

_CC_BY_UCI = "CC BY 4.0 (UCI Machine Learning Repository)"
_SKLEARN = "scikit-learn (sklearn.datasets, bundled in the wheel)"


def _sklearn(name: str) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    ds = require("sklearn.datasets", "data")
    bunch = getattr(ds, f"load_{name}")()
    meta: dict[str, Any] = {"feature_names": [str(f) for f in bunch.feature_names]}
    if name == "diabetes":
        meta["target_name"] = "disease_progression"
    else:
        meta["target_name"] = "class"
        meta["class_names"] = [str(c) for c in bunch.target_names]
    return bunch.data, bunch.target, meta


_Loader = Callable[[str], tuple[np.ndarray, np.ndarray, dict[str, Any]]]
_LOADERS: dict[str, _Loader] = {}


def _add(
    name: str,
    loader: _Loader,
    *,
    n: int,
    d: int,
    task: str,
    extra: str,
    modules: tuple[str, ...],
    source: str,
    license: str,
    units: str,
    description: str,
    n_classes: int | None = None,
) -> None:
    kind = "regression" if task == "regression" else f"classification, {n_classes} classes"
    register(
        DatasetInfo(
            name=name,
            kind="tabular",
            loader="icml26_core.datasets.tabular.load_tabular",
            extra=extra,
            modules=modules,
            shape=f"X ({n}, {d}), y ({n},); {kind}",
            source=source,
            license=license,
            description=description,
        )
    )
    _LOADERS[name] = loader
    _SPECS[name] = {
        "n": n,
        "d": d,
        "task": task,
        "n_classes": n_classes,
        "units": units,
        "description": description,
    }


_SPECS: dict[str, dict[str, Any]] = {}

_add(
    "diabetes",
    _sklearn,
    n=442,
    d=10,
    task="regression",
    extra="data",
    modules=("sklearn",),
    source=f"{_SKLEARN}; Efron, Hastie, Johnstone, Tibshirani (2004), Least Angle Regression",
    license="BSD-3-Clause (as distributed with scikit-learn)",
    units="features: age, sex, bmi, blood pressure and six blood serum measurements, each "
    "mean-centred and scaled to unit Euclidean norm (scikit-learn's default); target: a "
    "quantitative measure of disease progression one year after baseline (25..346)",
    description="Diabetes progression of 442 patients from 10 baseline variables",
)
_add(
    "breast_cancer",
    _sklearn,
    n=569,
    d=30,
    task="classification",
    n_classes=2,
    extra="data",
    modules=("sklearn",),
    source=f"{_SKLEARN}; UCI Breast Cancer Wisconsin (Diagnostic)",
    license=_CC_BY_UCI,
    units="features: mean, standard error and worst value of 10 properties of cell nuclei "
    "computed from a digitized image of a fine needle aspirate (lengths in pixels); "
    "classes: 0 malignant, 1 benign",
    description="Malignant vs benign breast masses from 30 nucleus features",
)
_add(
    "wine",
    _sklearn,
    n=178,
    d=13,
    task="classification",
    n_classes=3,
    extra="data",
    modules=("sklearn",),
    source=f"{_SKLEARN}; UCI Wine",
    license=_CC_BY_UCI,
    units="features: results of a chemical analysis (alcohol %, malic acid g/l, ...); "
    "classes: three cultivars",
    description="Three Italian wine cultivars from 13 chemical measurements",
)
_add(
    "digits",
    _sklearn,
    n=1797,
    d=64,
    task="classification",
    n_classes=10,
    extra="data",
    modules=("sklearn",),
    source=f"{_SKLEARN}; UCI Optical Recognition of Handwritten Digits (test part)",
    license=_CC_BY_UCI,
    units="features: 8x8 images flattened row-major, pixel counts 0..16; classes: digit 0..9",
    description="8x8 handwritten digits",
)


def load_tabular(name: str) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Load a bundled tabular dataset as float64 features and a target.

    Args:
        name: Dataset name, case-insensitive: see the table in this module's docstring
            or ``icml26 data list``.

    Returns:
        ``(X, y, meta)``: ``X`` float64 (n_samples, n_features), a fresh array;
        ``y`` (n_samples,), int64 class indices for classification or float64 for
        regression; ``meta`` a dict with ``task``, ``feature_names``, ``target_name``,
        ``class_names`` and ``n_classes`` (classification), ``units``, ``source``,
        ``license`` and ``description``.

    Raises:
        ValueError: If ``name`` is unknown (the message lists the known names).
        TypeError: If ``name`` is not a string.
        icml26_core._lazy.MissingExtraError: If the carrier package is not installed;
            the message names the extra to install.

    Example:
        >>> X, y, meta = load_tabular("wine")
        >>> X.shape, y.shape, meta["n_classes"]
        ((178, 13), (178,), 3)
    """
    info = dataset_info("tabular", name)
    spec = _SPECS[info.name]
    X, y, meta = _LOADERS[info.name](info.name)
    X = np.array(X, dtype=np.float64, copy=True)
    if spec["task"] == "regression":
        y = np.array(y, dtype=np.float64, copy=True)
    else:
        y = np.array(y, dtype=np.int64, copy=True)
        meta["n_classes"] = spec["n_classes"]
    expected = (spec["n"], spec["d"])
    if X.shape != expected or y.shape != (spec["n"],):
        raise RuntimeError(
            f"{info.name}: the carrier returned X {X.shape} and y {y.shape}, expected "
            f"X {expected} and y ({spec['n']},); the installed carrier version changed the data"
        )
    meta.update(
        name=info.name,
        task=spec["task"],
        units=spec["units"],
        source=info.source,
        license=info.license,
        description=spec["description"],
    )
    return X, y, meta
