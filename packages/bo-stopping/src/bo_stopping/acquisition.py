"""Cost-aware acquisition functions as BoTorch ``AcquisitionFunction``s.

* :class:`PandoraBoxGittinsIndex` (PBGI): the Gittins index ``g(x)`` solving
  ``EI_x(g) = lmbda * c(x)``; BO evaluates the point of largest index.
* :class:`LogExpectedImprovementPerCost` (LogEIPC): ``log EI(x) - log c(x)``,
  BoTorch's :class:`~botorch.acquisition.analytic.LogExpectedImprovement` minus
  the log cost.

Both are analytic (``q = 1``), differentiable, and work with
:func:`botorch.optim.optimize_acqf` and :func:`botorch.optim.optimize_acqf_discrete`.
They share one threshold: ``g(x) > best_f`` exactly when
``LogEIPC(x) > log(lmbda)``, because ``EI_x(t)`` decreases in ``t``. The cost-aware
stopping rule (:class:`bo_stopping.CostAwareStopping`) reads that threshold.

Both take a ``posterior_transform`` (e.g. ``ScalarizedPosteriorTransform`` of a
multi-output model) and register BoTorch input constructors, so Ax's
``BoTorchGenerator`` can build them from its data: pass ``cost`` (and optionally
``lmbda``) through ``acquisition_options``; ``best_f`` defaults to the best
observed (transformed) value, as for BoTorch's own LogEI.

References:
    The paper: "Cost-aware stopping for Bayesian optimization" (ICML 2026,
    abstract only); Xie et al. (2024), "Cost-aware Bayesian
    optimization via the Pandora's Box Gittins index"; Ament et al. (2023),
    "Unexpected improvements to expected improvement for Bayesian optimization".
"""

from __future__ import annotations

import math
from typing import Any

import torch
from botorch.acquisition.analytic import AnalyticAcquisitionFunction, LogExpectedImprovement
from botorch.acquisition.input_constructors import acqf_input_constructor, get_best_f_analytic
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.model import Model
from botorch.utils.transforms import t_batch_mode_transform
from icml26_core.validation import check_float
from torch import Tensor

from bo_stopping.costs import CostFunction, as_cost, checked_log_cost
from bo_stopping.index import gittins_index

__all__ = [
    "LogExpectedImprovementPerCost",
    "PandoraBoxGittinsIndex",
    "construct_inputs_logeipc",
    "construct_inputs_pbgi",
]


def _check_lmbda(lmbda: float) -> float:
    return check_float("lmbda", lmbda, low=0.0, low_inclusive=False)


class PandoraBoxGittinsIndex(AnalyticAcquisitionFunction):
    r"""Pandora's Box Gittins index (PBGI) acquisition function.

    For the posterior ``f(x) ~ N(mu(x), sigma(x)^2)`` and evaluation cost ``c(x)``,
    returns the ``g(x)`` that solves

    .. math:: \sigma(x)\, h\!\left(\frac{\mu(x) - g}{\sigma(x)}\right) = \lambda\, c(x),
              \qquad h(u) = \varphi(u) + u\,\Phi(u),

    i.e. the value at which the expected improvement of evaluating ``x`` equals
    its cost. The root is found in log space and its gradient by implicit
    differentiation (:func:`bo_stopping.index.gittins_index`).

    Limits: as ``lmbda -> 0`` the index grows like
    ``mu + sigma * sqrt(2 log(sigma / (lmbda c)))`` (UCB with a growing
    ``beta``); as ``lmbda * c / sigma -> inf`` it tends to ``mu - lmbda c``.

    Args:
        model: A fitted BoTorch model (single-output, or multi-output with a
            ``posterior_transform``).
        cost: Evaluation cost in objective units: a :class:`CostFunction`, a
            callable ``(..., d) -> (...)`` of positive costs, a number, or a
            BoTorch cost model / ``InverseCostWeightedUtility`` (see
            :func:`bo_stopping.as_cost`).
        lmbda: Cost multiplier ``lambda > 0``.
        best_f: Best value observed so far; not used by the index itself, kept
            for the stopping rule (``stop when max_x g(x) <= best_f``).
        maximize: If False, the index is computed for ``-f`` (a larger index
            is still better).
        posterior_transform: Optional BoTorch ``PosteriorTransform`` applied to
            the posterior before the index is computed.

    Raises:
        ValueError: If ``lmbda`` is not a finite number > 0; on evaluation, if a
            cost is <= 0, NaN or infinite.
        TypeError: If ``cost`` is of an unsupported type.

    Example:
        >>> acqf = PandoraBoxGittinsIndex(model, cost=lambda X: 1 + X.sum(-1), lmbda=1e-2)
        >>> x, g = optimize_acqf(acqf, bounds, q=1, num_restarts=4, raw_samples=128)
    """

    def __init__(
        self,
        model: Model,
        cost: CostFunction | float,
        lmbda: float = 1.0,
        best_f: float | Tensor | None = None,
        maximize: bool = True,
        posterior_transform: PosteriorTransform | None = None,
    ) -> None:
        super().__init__(model=model, posterior_transform=posterior_transform)
        self.cost = as_cost(cost)
        self.lmbda = _check_lmbda(lmbda)
        self.maximize = maximize
        if best_f is not None:
            self.register_buffer("best_f", torch.as_tensor(best_f))
        else:
            self.best_f = None

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        """Evaluate the index on a ``(b1 x ... bk) x 1 x d`` batch; returns ``(b1 x ... bk)``."""
        mean, sigma = self._mean_and_sigma(X)
        mean, sigma = mean.squeeze(-1), sigma.squeeze(-1)
        if not self.maximize:
            mean = -mean
        log_c = checked_log_cost(self.cost, X.squeeze(-2)).to(mean)
        return gittins_index(mean, sigma, log_c, lmbda=self.lmbda, log_cost=True)


class LogExpectedImprovementPerCost(AnalyticAcquisitionFunction):
    r"""Log expected improvement per unit cost (LogEIPC).

    .. math:: \mathrm{LogEIPC}(x) = \log \mathrm{EI}(x) - \log c(x),

    with ``log EI`` from BoTorch's :class:`LogExpectedImprovement` (stable far
    into the tails).

    Args:
        model: A fitted BoTorch model (single-output, or multi-output with a
            ``posterior_transform``).
        best_f: Best value observed so far (noiseless).
        cost: Evaluation cost in objective units (see :class:`PandoraBoxGittinsIndex`).
        lmbda: Cost multiplier; subtracted as ``log(lmbda)`` so that the
            stopping threshold is 0 (the ranking does not depend on it).
        maximize: If False, improvement is measured downwards.
        posterior_transform: Optional BoTorch ``PosteriorTransform``.

    Raises:
        ValueError: If ``lmbda`` is not a finite number > 0; on evaluation, if a
            cost is <= 0, NaN or infinite.
        TypeError: If ``cost`` is of an unsupported type.

    Example:
        >>> acqf = LogExpectedImprovementPerCost(model, best_f=Y.max(), cost=0.1)
        >>> x, value = optimize_acqf(acqf, bounds, q=1, num_restarts=4, raw_samples=128)
    """

    def __init__(
        self,
        model: Model,
        best_f: float | Tensor,
        cost: CostFunction | float,
        lmbda: float = 1.0,
        maximize: bool = True,
        posterior_transform: PosteriorTransform | None = None,
    ) -> None:
        super().__init__(model=model, posterior_transform=posterior_transform)
        self.log_ei = LogExpectedImprovement(
            model, best_f=best_f, maximize=maximize, posterior_transform=posterior_transform
        )
        self.cost = as_cost(cost)
        self.lmbda = _check_lmbda(lmbda)
        self.maximize = maximize

    @property
    def best_f(self) -> Tensor:
        """The incumbent value that improvement is measured against."""
        return self.log_ei.best_f

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        """Evaluate on a ``(b1 x ... bk) x 1 x d`` batch; returns ``(b1 x ... bk)``."""
        log_ei = self.log_ei(X)
        log_c = checked_log_cost(self.cost, X.squeeze(-2)).to(log_ei)
        return log_ei - log_c - math.log(self.lmbda)


@acqf_input_constructor(PandoraBoxGittinsIndex)
def construct_inputs_pbgi(
    model: Model,
    training_data: Any,
    cost: Any,
    lmbda: float = 1.0,
    posterior_transform: PosteriorTransform | None = None,
    best_f: float | Tensor | None = None,
    maximize: bool = True,
) -> dict[str, Any]:
    """BoTorch/Ax input constructor of :class:`PandoraBoxGittinsIndex`.

    Args:
        model: The fitted model.
        training_data: ``SupervisedDataset`` (or a dict of them), for ``best_f``.
        cost: The evaluation cost (anything :func:`bo_stopping.as_cost` accepts).
        lmbda: Cost multiplier.
        posterior_transform: Optional posterior transform.
        best_f: The incumbent; by default the best observed (transformed) value.
        maximize: Orientation.

    Returns:
        The keyword arguments of :class:`PandoraBoxGittinsIndex`.
    """
    if best_f is None:
        best_f = get_best_f_analytic(
            training_data=training_data, posterior_transform=posterior_transform
        )
    return {
        "model": model,
        "cost": cost,
        "lmbda": lmbda,
        "best_f": best_f,
        "maximize": maximize,
        "posterior_transform": posterior_transform,
    }


@acqf_input_constructor(LogExpectedImprovementPerCost)
def construct_inputs_logeipc(
    model: Model,
    training_data: Any,
    cost: Any,
    lmbda: float = 1.0,
    posterior_transform: PosteriorTransform | None = None,
    best_f: float | Tensor | None = None,
    maximize: bool = True,
) -> dict[str, Any]:
    """BoTorch/Ax input constructor of :class:`LogExpectedImprovementPerCost`.

    Args: as :func:`construct_inputs_pbgi`.

    Returns:
        The keyword arguments of :class:`LogExpectedImprovementPerCost`.
    """
    return construct_inputs_pbgi(
        model,
        training_data,
        cost,
        lmbda=lmbda,
        posterior_transform=posterior_transform,
        best_f=best_f,
        maximize=maximize,
    )
