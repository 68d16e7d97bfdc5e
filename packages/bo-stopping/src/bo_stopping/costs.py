"""Evaluation costs as differentiable functions of the design point, known or modelled.

Every cost object is a ``torch.nn.Module`` with ``log_cost(X)``: the acquisition
functions work with ``log c(x)`` so that costs spanning orders of magnitude stay
well conditioned. Costs are in the objective's units (one unit of cost is worth
one unit of objective value in the cost-adjusted regret); a cost multiplier
``lmbda`` in the acquisitions and the stopping rule rescales them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch
from torch import Tensor, nn

__all__ = ["CostFunction", "FixedCost", "KnownCost", "ModelledCost", "as_cost"]


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
        if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"cost must be a finite number > 0, got {value!r}")
        self.value = float(value)

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

    Raises:
        ValueError: If a cost is not finite and > 0 or the shapes disagree.
    """

    def __init__(self, X: Tensor, costs: Tensor, bounds: Tensor) -> None:
        super().__init__()
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from botorch.models.transforms import Normalize, Standardize
        from gpytorch.mlls import ExactMarginalLogLikelihood

        costs = costs.reshape(-1, 1).to(X)
        if costs.shape[0] != X.shape[0]:
            raise ValueError(f"costs has {costs.shape[0]} entries but X has {X.shape[0]} rows")
        if not torch.all(torch.isfinite(costs) & (costs > 0)):
            raise ValueError("observed costs must be finite and > 0")
        self.model = SingleTaskGP(
            X,
            torch.log(costs),
            input_transform=Normalize(d=X.shape[-1], bounds=bounds.to(X)),
            outcome_transform=Standardize(m=1),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(ExactMarginalLogLikelihood(self.model.likelihood, self.model))

    def log_cost(self, X: Tensor) -> Tensor:
        """Return the posterior mean of ``log c`` at ``X`` (``(..., d)`` -> ``(...)``)."""
        shape = X.shape[:-1]
        post = self.model.posterior(X.reshape(-1, 1, X.shape[-1]))
        return post.mean.reshape(shape)


def as_cost(cost: CostFunction | Callable[[Tensor], Tensor] | float | int) -> CostFunction:
    """Turn a number or a callable into a :class:`CostFunction`.

    Args:
        cost: A :class:`CostFunction`, a callable ``(..., d) -> (...)`` of positive
            costs, or a positive number (uniform cost).

    Returns:
        The cost as a :class:`CostFunction`.

    Raises:
        ValueError: If a number cost is not > 0.
        TypeError: If ``cost`` is of another type.
    """
    if isinstance(cost, CostFunction):
        return cost
    if isinstance(cost, bool):
        raise TypeError("cost must be a CostFunction, a callable or a number > 0, got bool")
    if isinstance(cost, int | float):
        return FixedCost(float(cost))
    if callable(cost):
        return KnownCost(cost)
    raise TypeError(
        f"cost must be a CostFunction, a callable or a number > 0, got {type(cost).__name__}"
    )
