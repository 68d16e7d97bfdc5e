"""Evaluation costs as differentiable functions of the design point, known or modelled.

Every cost object is a ``torch.nn.Module`` with ``log_cost(X)``: the acquisition
functions work with ``log c(x)`` so that costs spanning orders of magnitude stay
well conditioned. Costs are in the objective's units (one unit of cost is worth
one unit of objective value in the cost-adjusted regret); a cost multiplier
``lmbda`` in the acquisitions and the stopping rule rescales them.

BoTorch's own cost objects are accepted wherever a cost is: a cost ``Model``
(``FixedCostModel``, ``AffineFidelityCostModel``, ``GenericDeterministicModel``, or a
fitted GP of the cost or of its logarithm) through :class:`ModelCost`, and an
``InverseCostWeightedUtility`` through its cost model (see :func:`as_cost`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from icml26_core.validation import check_float
from torch import Tensor, nn

__all__ = [
    "CostFunction",
    "FixedCost",
    "KnownCost",
    "ModelCost",
    "ModelledCost",
    "as_cost",
    "checked_log_cost",
]


class CostFunction(nn.Module):
    """Base class: a positive evaluation cost ``c(x)``, exposed through ``log c(x)``."""

    def log_cost(self, X: Tensor) -> Tensor:
        """Return ``log c(x)``.

        Args:
            X: ``(..., d)`` design points in the original (unnormalized) space.

        Returns:
            ``(...)`` log costs.
        """
        raise NotImplementedError

    def forward(self, X: Tensor) -> Tensor:
        """Return ``c(x)`` with shape ``X.shape[:-1]``."""
        return torch.exp(self.log_cost(X))


class FixedCost(CostFunction):
    """The same cost ``value > 0`` everywhere.

    Raises:
        ValueError: If ``value`` is not a finite number > 0.
    """

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = check_float("cost", value, low=0.0, low_inclusive=False)

    def log_cost(self, X: Tensor) -> Tensor:
        """Return ``log(value)`` broadcast to ``X.shape[:-1]``."""
        return torch.full(X.shape[:-1], math.log(self.value), dtype=X.dtype, device=X.device)


class KnownCost(CostFunction):
    """A known cost function ``fn(X) -> c`` with ``c > 0``, differentiable in ``X``.

    Args:
        fn: Maps ``(..., d)`` tensors to ``(...)`` positive costs (or to log costs
            when ``log=True``). It is also called on single points ``(d,)``.
        log: Whether ``fn`` returns ``log c(x)`` rather than ``c(x)``.

    Raises:
        TypeError: If ``fn`` is not callable.
    """

    def __init__(self, fn: Callable[[Tensor], Tensor], *, log: bool = False) -> None:
        super().__init__()
        if not callable(fn):
            raise TypeError(f"cost function must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.log = log

    def log_cost(self, X: Tensor) -> Tensor:
        """Return ``log c(X)``."""
        out = self.fn(X)
        return out if self.log else torch.log(out)

    def forward(self, X: Tensor) -> Tensor:
        """Return ``c(X)`` (as given by ``fn``, so a nonpositive cost can be reported)."""
        return torch.exp(self.fn(X)) if self.log else self.fn(X)


class ModelledCost(CostFunction):
    """A cost learned from observed costs: a GP on ``log c``; predicts ``exp(posterior mean)``.

    The prediction is the median of the log-normal predictive distribution of
    the cost. It is BoTorch's ``SingleTaskGP`` (inputs normalized to ``bounds``,
    outputs standardized) fitted with ``fit_gpytorch_mll``.

    Args:
        X: ``(n, d)`` evaluated points.
        costs: ``(n,)`` or ``(n, 1)`` observed costs, > 0.
        bounds: ``(2, d)`` lower and upper bounds of the search space.
        hyperparameters_from: A previous :class:`ModelledCost` whose GP
            hyperparameters start (or, with ``optimize=False``, replace) the fit.
        optimize: Fit the hyperparameters (see :func:`bo_stopping.fit_gp`).

    Raises:
        ValueError: If a cost is not finite and > 0 or the shapes disagree.
    """

    def __init__(
        self,
        X: Tensor,
        costs: Tensor,
        bounds: Tensor,
        *,
        hyperparameters_from: ModelledCost | None = None,
        optimize: bool = True,
    ) -> None:
        super().__init__()
        from bo_stopping.gp import fit_gp

        costs = costs.reshape(-1, 1).to(X)
        if costs.shape[0] != X.shape[0]:
            raise ValueError(f"costs has {costs.shape[0]} entries but X has {X.shape[0]} rows")
        if not torch.all(torch.isfinite(costs) & (costs > 0)):
            raise ValueError("observed costs must be finite and > 0")
        self.model = fit_gp(
            X,
            torch.log(costs),
            bounds.to(X),
            hyperparameters_from=None
            if hyperparameters_from is None
            else hyperparameters_from.model,
            optimize=optimize,
        )

    def log_cost(self, X: Tensor) -> Tensor:
        """Return the posterior mean of ``log c`` at ``X`` (``(..., d)`` -> ``(...)``)."""
        shape = X.shape[:-1]
        post = self.model.posterior(X.reshape(-1, 1, X.shape[-1]))
        return post.mean.reshape(shape)


class ModelCost(CostFunction):
    """A BoTorch ``Model`` of the cost (or of its logarithm) used as the cost.

    The cost at ``x`` is the model's posterior mean there (for a
    ``DeterministicModel`` such as ``FixedCostModel`` or ``AffineFidelityCostModel``,
    its output). With ``log=True`` the model predicts ``log c`` and the cost is
    ``exp(mean)`` (the median of the log-normal predictive distribution), or
    ``exp(mean + variance / 2)`` (its mean) with ``log_normal_mean=True``.

    Args:
        model: A single-output BoTorch ``Model``; called on ``(..., 1, d)`` points.
        log: Whether the model predicts the logarithm of the cost.
        log_normal_mean: With ``log``, use the predictive mean of the cost rather
            than its median.

    Raises:
        TypeError: If ``model`` is not a BoTorch ``Model``.
        ValueError: If the model has more than one output.

    Example:
        >>> from botorch.models import AffineFidelityCostModel
        >>> cost = ModelCost(AffineFidelityCostModel({1: 2.0}, fixed_cost=0.5))
        >>> cost(torch.tensor([[0.3, 0.25]], dtype=torch.float64))  # 0.5 + 2 * 0.25
        tensor([1.], dtype=torch.float64)
    """

    def __init__(self, model: Any, *, log: bool = False, log_normal_mean: bool = False) -> None:
        super().__init__()
        from botorch.models.model import Model

        if not isinstance(model, Model):
            raise TypeError(f"model must be a BoTorch Model, got {type(model).__name__}")
        if model.num_outputs != 1:
            raise ValueError(
                f"a cost model must have one output, got num_outputs={model.num_outputs}"
            )
        self.model = model
        self.log = bool(log)
        self.log_normal_mean = bool(log_normal_mean)

    def log_cost(self, X: Tensor) -> Tensor:
        """Return ``log c(X)``, ``(..., d) -> (...)``; NaN where the modelled cost is <= 0."""
        post = self.model.posterior(X.unsqueeze(-2))
        mean = post.mean[..., 0, 0]
        if self.log:
            if self.log_normal_mean:
                return mean + 0.5 * post.variance[..., 0, 0]
            return mean
        # a nonpositive modelled cost becomes NaN here and is reported by checked_log_cost
        return torch.log(torch.where(mean > 0, mean, torch.full_like(mean, math.nan)))


def checked_log_cost(cost: CostFunction, X: Tensor) -> Tensor:
    """``cost.log_cost(X)``, checked: every cost must be finite and > 0.

    Args:
        cost: The cost function.
        X: ``(..., d)`` points.

    Returns:
        ``(...)`` finite log costs.

    Raises:
        ValueError: If a cost is <= 0, NaN or infinite (naming how many and the first
            offending point), or has the wrong shape.
    """
    log_c = cost.log_cost(X)
    if log_c.shape != X.shape[:-1]:
        raise ValueError(
            f"cost must map (..., d) points to (...) costs: got shape {tuple(log_c.shape)} "
            f"for points of shape {tuple(X.shape)}"
        )
    bad = ~torch.isfinite(log_c)
    if bool(bad.any()):
        i = int(torch.nonzero(bad.reshape(-1))[0])
        x = X.reshape(-1, X.shape[-1])[i].tolist()
        value = float(torch.exp(log_c.reshape(-1)[i])) if not log_c.isnan().reshape(-1)[i] else None
        what = "NaN or <= 0" if value is None else f"{value}"
        raise ValueError(
            f"cost must be finite and > 0 at every point; got {what} at x={x} "
            f"({int(bad.sum())} of {bad.numel()} points)"
        )
    return log_c


def as_cost(cost: Any) -> CostFunction:
    """Turn a number, a callable or a BoTorch cost object into a :class:`CostFunction`.

    Args:
        cost: A :class:`CostFunction`; a callable ``(..., d) -> (...)`` of positive
            costs; a positive number (uniform cost); a BoTorch ``Model`` of the cost
            (``FixedCostModel``, ``AffineFidelityCostModel``, a fitted GP: see
            :class:`ModelCost`); or BoTorch's ``InverseCostWeightedUtility``, whose
            cost model is used (on the log scale if it was built with ``log=True``).

    Returns:
        The cost as a :class:`CostFunction`.

    Raises:
        ValueError: If a number cost is not > 0, or a cost model has several outputs.
        TypeError: If ``cost`` is of another type (another ``CostAwareUtility``
            included: it does not expose a cost).
    """
    from botorch.acquisition.cost_aware import CostAwareUtility, InverseCostWeightedUtility
    from botorch.models.model import Model

    if isinstance(cost, CostFunction):
        return cost
    if isinstance(cost, Model):
        return ModelCost(cost)
    if isinstance(cost, InverseCostWeightedUtility):
        return ModelCost(cost.cost_model, log=bool(getattr(cost, "_log", False)))
    if isinstance(cost, CostAwareUtility):
        raise TypeError(
            f"cost: a {type(cost).__name__} does not expose its cost; pass its cost model, "
            "a callable or an InverseCostWeightedUtility"
        )
    if isinstance(cost, bool):
        raise TypeError("cost must be a CostFunction, a callable or a number > 0, got bool")
    if isinstance(cost, int | float):
        return FixedCost(float(cost))
    if callable(cost):
        return KnownCost(cost)
    raise TypeError(
        f"cost must be a CostFunction, a callable, a number > 0 or a BoTorch cost model, "
        f"got {type(cost).__name__}"
    )
