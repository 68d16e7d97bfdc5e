"""Stopping rules for Bayesian optimization: the cost-aware rule and the usual baselines.

A rule looks at the loop's state after the next candidate has been chosen and
before it is evaluated, and says whether to stop. Rules that need the maximum
of some acquisition over the search space get it through ``state.maximize``,
which uses the same optimizer (continuous or discrete) as the loop.

* :class:`CostAwareStopping` (ours, from the paper's abstract): stop when no
  point's Gittins index exceeds the best value in hand, i.e.
  ``max_x EI(x) / c(x) <= lmbda``: no evaluation is expected to improve
  on the incumbent by more than it costs. With PBGI or LogEIPC as the
  acquisition it reuses the acquisition's own maximum and costs nothing extra.
* :class:`FixedBudget`: stop after a number of evaluations (or a total cost).
* :class:`ExpectedImprovementThreshold`: stop when ``max_x EI(x)`` falls below
  a threshold (cost-unaware).
* :class:`ProbabilityOfImprovementThreshold`: stop when ``max_x PI(x)`` falls
  below a threshold.
* :class:`RegretGapStopping`: stop when the upper bound
  ``max_x UCB(x) - max_{observed} LCB(x)`` on the simple regret falls below a
  threshold (Makarova et al., 2022).

References:
    The paper: "Cost-aware stopping for Bayesian optimization" (ICML 2026,
    abstract only); Makarova et al. (2022), "Automatic
    termination for hyperparameter optimization".
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import (
    LogExpectedImprovement,
    LogProbabilityOfImprovement,
    UpperConfidenceBound,
)
from botorch.models.model import Model
from icml26_core.validation import check_float, check_int
from torch import Tensor

from bo_stopping.acquisition import LogExpectedImprovementPerCost, PandoraBoxGittinsIndex
from bo_stopping.costs import CostFunction

__all__ = [
    "BOState",
    "CostAwareStopping",
    "ExpectedImprovementThreshold",
    "FixedBudget",
    "ProbabilityOfImprovementThreshold",
    "RegretGapStopping",
    "StoppingRule",
]


@dataclass
class BOState:
    """What a stopping rule may read at one step of the loop (maximization).

    Attributes:
        iteration: Number of evaluations made after the initial design.
        X: ``(n, d)`` evaluated points.
        Y: ``(n,)`` observed values.
        costs: ``(n,)`` costs paid so far, in objective units.
        model: The fitted GP on ``(X, Y)``.
        cost: The cost function the acquisitions use (known or modelled).
        best_f: The best observed value, a 0-dim tensor.
        acquisition: The acquisition function that chose ``candidate``.
        candidate: ``(d,)`` the point the loop would evaluate next.
        acq_value: The acquisition's value at ``candidate`` (its maximum).
        maximize: ``maximize(acqf) -> (x, value)``, the loop's optimizer.
        cache: Scratch space shared by the rules within one step.
    """

    iteration: int
    X: Tensor
    Y: Tensor
    costs: Tensor
    model: Model
    cost: CostFunction
    best_f: Tensor
    acquisition: AcquisitionFunction
    candidate: Tensor
    acq_value: float
    maximize: Callable[[AcquisitionFunction], tuple[Tensor, float]]
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def cumulative_cost(self) -> float:
        """Total cost paid so far (initial design included)."""
        return float(self.costs.sum())

    @property
    def observed_range(self) -> float:
        """``max Y - min Y``, the scale of the relative thresholds."""
        return float(self.Y.max() - self.Y.min())

    def max_of(self, key: str, make: Callable[[], AcquisitionFunction]) -> float:
        """Maximum of an acquisition over the search space, computed once per step."""
        if key not in self.cache:
            self.cache[key] = self.maximize(make())[1]
        return self.cache[key]


def _check_positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    return check_float(name, value, low=0.0, low_inclusive=allow_zero)


class StoppingRule(ABC):
    """A rule that decides, from the loop's state, whether to stop before the next evaluation."""

    name: str = "rule"

    @abstractmethod
    def should_stop(self, state: BOState) -> bool:
        """Return True to stop before evaluating ``state.candidate``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class CostAwareStopping(StoppingRule):
    r"""Stop when no point's Gittins index exceeds the incumbent.

    .. math:: \text{stop} \iff \max_x g_\lambda(x) \le y^\ast
              \iff \max_x \log \mathrm{EI}(x) - \log c(x) \le \log\lambda,

    where ``g_lambda`` is the PBGI index with cost multiplier ``lambda``. Pandora's
    box reading: a box is worth opening only while its reservation value
    exceeds the best prize in hand. With ``lmbda = 1`` (costs in objective
    units, the cost-adjusted regret's exchange rate) there is nothing to tune.

    If the loop's acquisition is PBGI or LogEIPC with the same ``lmbda``, the
    rule reads the acquisition's maximum; otherwise it maximizes LogEIPC itself.

    Args:
        lmbda: Cost multiplier ``lambda > 0`` (value of one unit of cost).

    Raises:
        ValueError: If ``lmbda`` is not a finite number > 0.
    """

    name = "cost-aware (ours)"

    def __init__(self, lmbda: float = 1.0) -> None:
        self.lmbda = _check_positive("lmbda", lmbda)

    def should_stop(self, state: BOState) -> bool:
        """Stop when ``max_x EI(x)/c(x) <= lmbda``."""
        acqf = state.acquisition
        if isinstance(acqf, PandoraBoxGittinsIndex) and math.isclose(acqf.lmbda, self.lmbda):
            return state.acq_value <= float(state.best_f)
        if isinstance(acqf, LogExpectedImprovementPerCost) and math.isclose(acqf.lmbda, self.lmbda):
            return state.acq_value <= 0.0
        # max_x LogEIPC_lmbda = max_x LogEIPC_1 - log(lmbda): one maximization serves
        # every lmbda (rules for several cost levels monitored on one trajectory)
        value = state.max_of(
            "logeipc", lambda: LogExpectedImprovementPerCost(state.model, state.best_f, state.cost)
        )
        return value <= math.log(self.lmbda)


class FixedBudget(StoppingRule):
    """Stop after ``n_evaluations`` evaluations beyond the initial design, or a total cost.

    ``FixedBudget(0)`` is the trivial floor "stop at once": keep the best point of the
    initial design and pay for nothing more.

    Args:
        n_evaluations: Evaluations allowed after the initial design (>= 0).
        max_cost: Optional cap on the cumulative cost (initial design included).

    Raises:
        ValueError: If ``n_evaluations`` < 0 or ``max_cost`` <= 0.
    """

    def __init__(self, n_evaluations: int, max_cost: float | None = None) -> None:
        self.n_evaluations = check_int("n_evaluations", n_evaluations, low=0)
        self.max_cost = None if max_cost is None else _check_positive("max_cost", max_cost)
        self.name = (
            "stop at once"
            if n_evaluations == 0 and max_cost is None
            else (f"fixed budget ({n_evaluations})")
        )

    def should_stop(self, state: BOState) -> bool:
        """Stop once the evaluation count (or the cost cap) is reached."""
        if state.iteration >= self.n_evaluations:
            return True
        return self.max_cost is not None and state.cumulative_cost >= self.max_cost


class ExpectedImprovementThreshold(StoppingRule):
    """Stop when ``max_x EI(x) <= threshold`` (times the observed range if ``relative``).

    Args:
        threshold: The threshold, >= 0.
        relative: Whether ``threshold`` is a fraction of ``max Y - min Y``.

    Raises:
        ValueError: If ``threshold`` < 0.
    """

    def __init__(self, threshold: float = 0.01, relative: bool = True) -> None:
        self.threshold = _check_positive("threshold", threshold, allow_zero=True)
        self.relative = relative
        self.name = f"EI threshold ({threshold:g}{' x range' if relative else ''})"

    def should_stop(self, state: BOState) -> bool:
        """Stop when the largest expected improvement is below the threshold."""
        log_ei = state.max_of("logei", lambda: LogExpectedImprovement(state.model, state.best_f))
        scale = state.observed_range if self.relative else 1.0
        return math.exp(log_ei) <= self.threshold * scale


class ProbabilityOfImprovementThreshold(StoppingRule):
    """Stop when ``max_x P(f(x) > best_f) <= threshold``.

    Args:
        threshold: A probability in ``[0, 1]``.

    Raises:
        ValueError: If ``threshold`` is outside ``[0, 1]``.
    """

    def __init__(self, threshold: float = 0.01) -> None:
        self.threshold = _check_positive("threshold", threshold, allow_zero=True)
        if self.threshold > 1:
            raise ValueError(f"threshold must be a probability in [0, 1], got {threshold!r}")
        self.name = f"PI threshold ({threshold:g})"

    def should_stop(self, state: BOState) -> bool:
        """Stop when the largest probability of improvement is below the threshold."""
        log_pi = state.max_of(
            "logpi", lambda: LogProbabilityOfImprovement(state.model, state.best_f)
        )
        return math.exp(log_pi) <= self.threshold


class RegretGapStopping(StoppingRule):
    """Stop when ``max_x UCB(x) - max_{x observed} LCB(x) <= threshold`` (Makarova et al., 2022).

    The gap bounds the simple regret of the incumbent with high probability
    under the GP; ``UCB/LCB = mu +- sqrt(beta) sigma``.

    Args:
        threshold: The threshold, >= 0.
        beta: Confidence parameter, > 0 (BoTorch's convention: ``sqrt(beta)`` sigmas).
        relative: Whether ``threshold`` is a fraction of ``max Y - min Y``.

    Raises:
        ValueError: If ``threshold`` < 0 or ``beta`` <= 0.
    """

    def __init__(self, threshold: float = 0.01, beta: float = 4.0, relative: bool = True) -> None:
        self.threshold = _check_positive("threshold", threshold, allow_zero=True)
        self.beta = _check_positive("beta", beta)
        self.relative = relative
        self.name = f"UCB-LCB gap ({threshold:g}{' x range' if relative else ''})"

    def gap(self, state: BOState) -> float:
        """The regret bound ``max UCB - max observed LCB``."""
        max_ucb = state.max_of(
            f"ucb:{self.beta}", lambda: UpperConfidenceBound(state.model, beta=self.beta)
        )
        with torch.no_grad():
            post = state.model.posterior(state.X)
            mean = post.mean.squeeze(-1)
            width = math.sqrt(self.beta) * post.variance.clamp_min(0).sqrt().squeeze(-1)
        # over a discrete set ``maximize`` sees only unevaluated points; add the observed ones
        max_ucb = max(max_ucb, float((mean + width).max()))
        return max_ucb - float((mean - width).max())

    def should_stop(self, state: BOState) -> bool:
        """Stop when the regret gap is below the threshold."""
        scale = state.observed_range if self.relative else 1.0
        return self.gap(state) <= self.threshold * scale
