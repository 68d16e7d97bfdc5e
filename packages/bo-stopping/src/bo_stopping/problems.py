"""Benchmark problems with known optima and heterogeneous evaluation costs.

* :func:`synthetic_problem`: a BoTorch test function (Ackley, Levy, Rosenbrock)
  rescaled so that its maximum is 0 and its median over the domain is -1, with
  a known smooth cost ``c(x) = c0 * 10^(2 u_j - 1)`` that varies a hundredfold
  along one coordinate ``u_j`` of the unit cube (chosen by the seed).
* :func:`hpo_table`: hyperparameter optimization of scikit-learn's histogram
  gradient boosting on a real data set, tabulated on a Sobol grid of
  configurations: validation score and measured training time per configuration.

Both rescale the objective the same way (best 0, median -1), so the cost level
``c0`` means the same thing everywhere: the price of one evaluation at typical
cost, as a fraction of the gap between a median and the best point.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from botorch.test_functions import Ackley, Levy, Rosenbrock
from botorch.utils.sampling import draw_sobol_samples
from torch import Tensor

__all__ = ["HPOTable", "SyntheticProblem", "hpo_table", "synthetic_problem"]

_FUNCTIONS = {
    "ackley": (Ackley, None),
    "levy": (Levy, None),
    # the classic [-2.048, 2.048] box: BoTorch's default [-5, 10] makes the
    # function span eight orders of magnitude
    "rosenbrock": (Rosenbrock, (-2.048, 2.048)),
}


@dataclass
class SyntheticProblem:
    """A rescaled test function with a known cost (maximization, optimum 0).

    Attributes:
        name: e.g. ``"ackley-4d"``.
        objective: ``(d,) -> float`` tensor function, maximum 0.
        cost: ``(..., d) -> (...)`` positive cost, differentiable.
        bounds: ``(2, d)`` float64 bounds.
        optimum: 0.0.
    """

    name: str
    objective: Callable[[Tensor], Tensor]
    cost: Callable[[Tensor], Tensor]
    bounds: Tensor
    optimum: float = 0.0


class _Scaled:
    """``-(F(x) - F*) / scale`` as a picklable callable."""

    def __init__(self, fn: Any, scale: float) -> None:
        self.fn, self.scale = fn, scale

    def __call__(self, x: Tensor) -> Tensor:
        return -(self.fn.evaluate_true(x) - self.fn.optimal_value) / self.scale


class _CoordinateCost:
    """``c0 * 10^(2 u_j - 1)`` with ``u = (x - lower) / (upper - lower)``."""

    def __init__(self, bounds: Tensor, coordinate: int, c0: float) -> None:
        self.bounds, self.j, self.c0 = bounds, coordinate, c0

    def __call__(self, X: Tensor) -> Tensor:
        lo, hi = self.bounds[0, self.j].to(X), self.bounds[1, self.j].to(X)
        u = (X[..., self.j] - lo) / (hi - lo)
        return self.c0 * torch.exp(math.log(10.0) * (2.0 * u - 1.0))


def synthetic_problem(name: str, dim: int, seed: int, c0: float = 0.02) -> SyntheticProblem:
    """Build a rescaled BoTorch test function with a heterogeneous known cost.

    Args:
        name: ``"ackley"``, ``"levy"`` or ``"rosenbrock"``.
        dim: Input dimension, >= 2.
        seed: Chooses the coordinate along which the cost varies.
        c0: Median cost, in units of the objective's median-to-best gap.

    Returns:
        The problem.

    Raises:
        ValueError: On an unknown name, ``dim < 2`` or ``c0 <= 0``.
    """
    if name not in _FUNCTIONS:
        raise ValueError(f"name must be one of {sorted(_FUNCTIONS)}, got {name!r}")
    if dim < 2:
        raise ValueError(f"dim must be >= 2, got {dim}")
    if not c0 > 0:
        raise ValueError(f"c0 must be > 0, got {c0}")
    cls, box = _FUNCTIONS[name]
    kwargs: dict[str, Any] = {"dim": dim, "dtype": torch.float64}
    if box is not None:
        kwargs["bounds"] = [box] * dim
    fn = cls(**kwargs)
    bounds = fn.bounds.to(torch.float64)
    sobol = draw_sobol_samples(bounds=bounds, n=4096, q=1, seed=1234).squeeze(1)
    values = fn.evaluate_true(sobol)
    scale = float(values.median() - fn.optimal_value)
    coordinate = int(np.random.default_rng(seed).integers(dim))
    return SyntheticProblem(
        name=f"{name}-{dim}d",
        objective=_Scaled(fn, scale),
        cost=_CoordinateCost(bounds, coordinate, c0),
        bounds=bounds,
    )


@dataclass
class HPOTable:
    """A tabulated hyperparameter search space with measured scores and times.

    Attributes:
        name: e.g. ``"hgb-breast_cancer"``.
        configs: ``(m, k)`` configurations in the unit cube (BO's search space).
        params: The ``m`` decoded hyperparameter dicts.
        scores: ``(m,)`` validation scores (accuracy or R^2).
        times: ``(m,)`` measured training times, seconds.
        objective: ``(m,)`` scores rescaled to best 0, median -1.
    """

    name: str
    configs: np.ndarray
    params: list[dict[str, Any]]
    scores: np.ndarray
    times: np.ndarray

    @property
    def objective(self) -> np.ndarray:
        """Scores rescaled so that the best is 0 and the median -1."""
        best, med = self.scores.max(), np.median(self.scores)
        return (self.scores - best) / max(best - med, 1e-12)

    def costs(self, c0: float) -> np.ndarray:
        """Measured times priced so that the median configuration costs ``c0``."""
        return c0 * self.times / np.median(self.times)


def _decode(u: np.ndarray, max_iter_cap: int) -> dict[str, Any]:
    """Map a point of the unit cube to histogram gradient boosting hyperparameters."""
    return {
        "learning_rate": float(10 ** (-2 + 2 * u[0])),
        "max_iter": round(
            10 ** (math.log10(5) + (math.log10(max_iter_cap) - math.log10(5)) * u[1])
        ),
        "max_leaf_nodes": round(2 ** (2 + 4 * u[2])),
        "l2_regularization": float(10 ** (-4 + 5 * u[3])),
    }


def hpo_table(
    dataset: str,
    n_configs: int,
    *,
    max_iter_cap: int = 100,
    progress: Callable[..., Any] | None = None,
) -> HPOTable:
    """Tabulate gradient boosting's validation score and training time on a real data set.

    The search space (4-d unit cube, Sobol grid with a fixed seed): learning rate
    ``10^[-2, 0]``, boosting iterations ``[5, max_iter_cap]`` (log scale; the main
    driver of cost), leaves ``2^[2, 6]``, L2 penalty ``10^[-4, 1]``. Score: accuracy
    (classification) or R^2 (regression) on a fixed 30 % validation split.

    Args:
        dataset: A name for :func:`icml26_core.datasets.load_tabular`.
        n_configs: Grid size.
        max_iter_cap: Largest number of boosting iterations.
        progress: Optional ``progress(iterable, description)`` wrapper.

    Returns:
        The table.
    """
    from icml26_core.datasets import load_tabular
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.model_selection import train_test_split
    from torch.quasirandom import SobolEngine

    X, y, meta = load_tabular(dataset)
    classification = meta["task"] == "classification"
    X_tr, X_va, y_tr, y_va = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y if classification else None
    )
    configs = SobolEngine(4, scramble=True, seed=0).draw(n_configs).to(torch.float64).numpy()
    params = [_decode(u, max_iter_cap) for u in configs]
    scores, times = np.empty(n_configs), np.empty(n_configs)
    items = range(n_configs)
    if progress is not None:
        items = progress(items, f"tabulating {dataset}")
    model_cls = HistGradientBoostingClassifier if classification else HistGradientBoostingRegressor
    for i in items:
        model = model_cls(**params[i], early_stopping=False, random_state=0)
        t0 = time.perf_counter()
        model.fit(X_tr, y_tr)
        times[i] = time.perf_counter() - t0
        scores[i] = model.score(X_va, y_va)
    return HPOTable(f"hgb-{dataset}", configs, params, scores, times)
