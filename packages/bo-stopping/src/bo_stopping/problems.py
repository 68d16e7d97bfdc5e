"""Benchmark problems with known optima and heterogeneous evaluation costs.

* :func:`synthetic_problem`: a BoTorch test function (Ackley, Levy, Rosenbrock)
  rescaled so that its maximum is 0 and its median over the domain is -1, with
  a known smooth cost ``c(x) = c0 * 10^(2 u_j - 1)`` that varies a hundredfold
  along one coordinate ``u_j`` of the unit cube (chosen by the seed).
* :func:`gp_prior_problem`: a function drawn from a known GP prior on a finite
  Sobol set, with the prior itself as the model (:class:`KnownPriorGP`): the
  well-specified setting in which Bayesian regret and the stopping rule's guarantee
  are stated.
* :func:`hpo_table`: hyperparameter optimization of scikit-learn's histogram
  gradient boosting on a real data set, tabulated on a Sobol grid of
  configurations: validation score and measured training CPU time per configuration.
* :func:`coordinate_cost_shape`: the heterogeneous cost shape ``10^(2 u_j - 1)``.

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
from icml26_core.validation import check_choice, check_float, check_int
from torch import Tensor

__all__ = [
    "DiscreteProblem",
    "HPOTable",
    "KnownPriorGP",
    "SyntheticProblem",
    "coordinate_cost_shape",
    "discretize",
    "gp_prior_problem",
    "hpo_table",
    "synthetic_problem",
]

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


class _UniformCost:
    """``c0`` everywhere, as a picklable callable."""

    def __init__(self, c0: float) -> None:
        self.c0 = c0

    def __call__(self, X: Tensor) -> Tensor:
        return torch.full(X.shape[:-1], self.c0, dtype=X.dtype, device=X.device)


def coordinate_cost_shape(u: np.ndarray, coordinate: int) -> np.ndarray:
    """The heterogeneous cost shape ``10^(2 u_j - 1)`` of unit-cube points ``u``.

    Its median over the cube is 1 and it spans a factor of 100 along coordinate ``j``.

    Args:
        u: ``(m, d)`` points of the unit cube.
        coordinate: ``j``.

    Returns:
        ``(m,)`` positive cost factors.
    """
    return 10.0 ** (2.0 * np.asarray(u)[:, coordinate] - 1.0)


def synthetic_problem(
    name: str, dim: int, seed: int, c0: float = 0.02, *, cost: str = "heterogeneous"
) -> SyntheticProblem:
    """Build a rescaled BoTorch test function with a known cost.

    Args:
        name: ``"ackley"``, ``"levy"`` or ``"rosenbrock"``.
        dim: Input dimension, >= 2.
        seed: Chooses the coordinate along which the cost varies.
        c0: Median cost, in units of the objective's median-to-best gap.
        cost: ``"heterogeneous"`` (``c0 * 10^(2 u_j - 1)``) or ``"uniform"`` (``c0``).

    Returns:
        The problem.

    Raises:
        ValueError: On an unknown name or cost, ``dim < 2`` or ``c0 <= 0``.
    """
    check_choice("name", name, sorted(_FUNCTIONS))
    check_choice("cost", cost, ("heterogeneous", "uniform"))
    check_int("dim", dim, low=2)
    c0 = check_float("c0", c0, low=0.0, low_inclusive=False)
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
        cost=_CoordinateCost(bounds, coordinate, c0)
        if cost == "heterogeneous"
        else _UniformCost(c0),
        bounds=bounds,
    )


@dataclass
class DiscreteProblem:
    """A maximization problem on a finite candidate set, values known in advance.

    Attributes:
        name: Setting name.
        candidates: ``(m, d)`` float64 points (BO's search space).
        values: ``(m,)`` objective values, rescaled so that the best is 0.
        bounds: ``(2, d)`` bounds containing the candidates.
        fit_model: ``(X, Y, bounds) -> Model`` for :func:`bo_stopping.run_bo`, or
            None for the default fitted GP.
    """

    name: str
    candidates: Tensor
    values: np.ndarray
    bounds: Tensor
    fit_model: Callable[..., Any] | None = None

    def lookup(self) -> Callable[[Tensor], float]:
        """``objective(x) -> value`` for the candidates (a dictionary lookup)."""
        index = {tuple(row.tolist()): i for i, row in enumerate(self.candidates)}
        values = self.values

        def objective(x: Tensor) -> float:
            return float(values[index[tuple(x.tolist())]])

        return objective


def discretize(problem: SyntheticProblem, n_candidates: int, seed: int) -> DiscreteProblem:
    """Restrict a synthetic problem to a scrambled Sobol set, rescaled on that set.

    The values are rescaled once more so that the set's best is 0 and its median
    -1 (the set's best is the optimum the regret is measured against).

    Args:
        problem: From :func:`synthetic_problem`.
        n_candidates: Size of the set.
        seed: Scrambling seed of the Sobol set.

    Returns:
        The discrete problem.
    """
    from torch.quasirandom import SobolEngine

    n_candidates = check_int("n_candidates", n_candidates, low=2)
    b = problem.bounds
    u = SobolEngine(b.shape[1], scramble=True, seed=seed).draw(n_candidates).to(b)
    X = b[0] + (b[1] - b[0]) * u
    v = np.array([float(problem.objective(x)) for x in X])
    v = (v - v.max()) / max(v.max() - np.median(v), 1e-12)
    return DiscreteProblem(problem.name, X, v, b)


class KnownPriorGP:
    """The surrogate of a well-specified problem: a GP with known hyperparameters.

    Constant mean ``mean``, ``outputscale * Matern-5/2(lengthscale)`` covariance,
    observation noise ``noise`` (fixed), no input or outcome transforms; nothing is
    fitted.
    Called as ``KnownPriorGP(...)(X, Y, bounds)`` it returns the conditioned
    ``SingleTaskGP``, so it can be passed as ``run_bo(fit_model=...)``.

    Args:
        lengthscale: Matern lengthscale (unit-cube units), > 0.
        outputscale: Prior variance, > 0.
        noise: Observation noise variance, > 0 (a jitter for noiseless data).
        mean: The prior mean (a constant, objective units).
    """

    def __init__(
        self, lengthscale: float, outputscale: float, noise: float = 1e-6, mean: float = 0.0
    ) -> None:
        self.lengthscale = check_float("lengthscale", lengthscale, low=0.0, low_inclusive=False)
        self.outputscale = check_float("outputscale", outputscale, low=0.0, low_inclusive=False)
        self.noise = check_float("noise", noise, low=0.0, low_inclusive=False)
        self.mean = check_float("mean", mean)

    def kernel(self, dim: int, dtype: torch.dtype = torch.float64) -> Any:
        """The prior covariance as a gpytorch ``ScaleKernel``."""
        from gpytorch.kernels import MaternKernel, ScaleKernel

        k = ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=dim)).to(dtype)
        k.base_kernel.lengthscale = torch.full((1, dim), self.lengthscale, dtype=dtype)
        k.outputscale = torch.tensor(self.outputscale, dtype=dtype)
        return k

    def __call__(self, X: Tensor, Y: Tensor, bounds: Tensor) -> Any:
        """Condition the prior on ``(X, Y)``; ``(n, d)``, ``(n,)``."""
        from botorch.models import SingleTaskGP
        from gpytorch.means import ConstantMean

        Y = Y.reshape(-1, 1)
        mean = ConstantMean().to(X)
        mean.constant.data.fill_(self.mean)
        model = SingleTaskGP(
            X,
            Y,
            train_Yvar=torch.full_like(Y, self.noise),
            covar_module=self.kernel(X.shape[-1], X.dtype),
            mean_module=mean,
            outcome_transform=None,
        )
        return model.eval()


def gp_prior_problem(
    dim: int,
    seed: int,
    n_candidates: int = 1024,
    *,
    lengthscale: float = 0.2,
    outputscale: float = 0.1,
) -> DiscreteProblem:
    """A function drawn from a GP prior on a Sobol set of the unit cube, with that prior.

    ``f ~ GP(0, outputscale * Matern-5/2(lengthscale))`` on ``n_candidates`` scrambled
    Sobol points (Cholesky of the prior covariance with a 1e-8 jitter), shifted so
    that its best value is 0. The model given to BO is the same prior, shifted alike
    (:class:`KnownPriorGP` with mean ``-max f``), so the Bayesian assumptions behind
    the Gittins index and the stopping rule hold exactly.

    Args:
        dim: Dimension, >= 1.
        seed: Seed of the candidate set and of the draw.
        n_candidates: Number of candidates, >= 2.
        lengthscale: Prior lengthscale.
        outputscale: Prior variance (0.1: standard deviation 0.32, which makes the
            median-to-best gap about 1 on 1024 points in 4 dimensions).

    Returns:
        The problem (``values`` shifted by the draw's maximum, and the model's prior
        mean with them; not rescaled, so the prior stays exact).
    """
    from torch.quasirandom import SobolEngine

    check_int("dim", dim, low=1)
    n_candidates = check_int("n_candidates", n_candidates, low=2)
    prior = KnownPriorGP(lengthscale, outputscale)
    u = SobolEngine(dim, scramble=True, seed=seed).draw(n_candidates).to(torch.float64)
    with torch.no_grad():
        K = prior.kernel(dim)(u).to_dense()
        K = K + 1e-8 * torch.eye(n_candidates, dtype=torch.float64)
        L = torch.linalg.cholesky(K)
        z = torch.randn(
            n_candidates, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
        )
        f = (L @ z).numpy()
    bounds = torch.stack([torch.zeros(dim), torch.ones(dim)]).to(torch.float64)
    shift = float(f.max())
    model = KnownPriorGP(lengthscale, outputscale, mean=-shift)
    return DiscreteProblem(f"gp-{dim}d", u, f - shift, bounds, fit_model=model)


@dataclass
class HPOTable:
    """A tabulated hyperparameter search space with measured scores and times.

    Attributes:
        name: e.g. ``"hgb-breast_cancer"``.
        configs: ``(m, k)`` configurations in the unit cube (BO's search space).
        params: The ``m`` decoded hyperparameter dicts.
        scores: ``(m,)`` validation scores (accuracy or R^2).
        times: ``(m,)`` measured training CPU times, seconds.
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
        t0 = time.process_time()  # CPU time: less sensitive to other jobs than wall time
        model.fit(X_tr, y_tr)
        times[i] = max(time.process_time() - t0, 1e-4)
        scores[i] = model.score(X_va, y_va)
    return HPOTable(f"hgb-{dataset}", configs, params, scores, times)
