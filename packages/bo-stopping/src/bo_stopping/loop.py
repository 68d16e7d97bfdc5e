"""A Bayesian optimization loop with cost-aware acquisition and stopping (maximization).

:func:`run_bo` fits BoTorch's ``SingleTaskGP`` with ``fit_gpytorch_mll`` at each
step, maximizes the acquisition with ``optimize_acqf`` (or
``optimize_acqf_discrete`` over a finite candidate set), asks the stopping rule
whether the next evaluation is worth making, and records the cost-adjusted
simple regret

    R(t) = (f* - max_{i <= t} y_i) + sum_{i <= t} c(x_i)

after the initial design and after every evaluation. Further rules can be
*monitored*: they do not stop the run, but the step at which each would have
stopped it is recorded, so one trajectory scores several rules (a rule's
decisions depend only on the trajectory up to its stopping time, so this equals
running with that rule).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.optim import optimize_acqf, optimize_acqf_discrete
from botorch.utils.sampling import draw_sobol_samples
from icml26_core.validation import check_float, check_int
from torch import Tensor

from bo_stopping.acquisition import LogExpectedImprovementPerCost, PandoraBoxGittinsIndex
from bo_stopping.costs import CostFunction, ModelledCost, as_cost
from bo_stopping.gp import GPFittingWarning, check_bounds, fit_gp
from bo_stopping.stopping import BOState, StoppingRule

__all__ = ["ACQUISITIONS", "BOResult", "GPFittingWarning", "fit_gp", "run_bo"]

ACQUISITIONS = ("pbgi", "logeipc", "logei")
"""Acquisitions known by name: PBGI, LogEI per cost, and BoTorch's cost-unaware LogEI."""

AcquisitionFactory = Callable[[Any, Tensor, CostFunction], AcquisitionFunction]


@dataclass
class BOResult:
    """What one run of :func:`run_bo` observed.

    Attributes:
        X: ``(n, d)`` evaluated points, the initial design first.
        Y: ``(n,)`` observed values.
        costs: ``(n,)`` costs paid, objective units.
        n_init: Size of the initial design.
        best: ``(K+1,)`` best observed value after the initial design and after
            each of the ``K`` later evaluations.
        cumulative_cost: ``(K+1,)`` total cost paid at the same steps.
        regret: ``(K+1,)`` cost-adjusted simple regret, or None if no optimum was given.
        stopped_at: ``K``, the number of evaluations after the initial design.
        stop_reason: The rule (or limit) that ended the run.
        stop_times: For each monitored rule, the first step at which it said
            stop (None if it never did before the run ended).
        acq_values: The maximized acquisition value at each step.
    """

    X: Tensor
    Y: Tensor
    costs: Tensor
    n_init: int
    best: np.ndarray
    cumulative_cost: np.ndarray
    regret: np.ndarray | None
    stopped_at: int
    stop_reason: str
    stop_times: dict[str, int | None] = field(default_factory=dict)
    acq_values: list[float] = field(default_factory=list)

    def cost_adjusted_regret(self, optimum: float) -> np.ndarray:
        """``optimum - best + cumulative_cost`` at every step, shape ``(K+1,)``."""
        return float(optimum) - self.best + self.cumulative_cost

    def stop_step(self, rule: str) -> int:
        """The step at which monitored ``rule`` stops (the run's end if it never fired).

        Raises:
            KeyError: If ``rule`` was not monitored.
        """
        if rule not in self.stop_times:
            raise KeyError(f"rule {rule!r} was not monitored; monitored: {sorted(self.stop_times)}")
        step = self.stop_times[rule]
        return self.stopped_at if step is None else step


def _as_float(value: Any, what: str, x: Tensor) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be a number, got {type(value).__name__}") from err
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {v} at x={x.tolist()}")
    return v


def _make_acquisition(
    acquisition: str | AcquisitionFactory, model: Any, best_f: Tensor, cost: CostFunction, lmbda
) -> AcquisitionFunction:
    if callable(acquisition):
        return acquisition(model, best_f, cost)
    if acquisition == "pbgi":
        return PandoraBoxGittinsIndex(model, cost=cost, lmbda=lmbda, best_f=best_f)
    if acquisition == "logeipc":
        return LogExpectedImprovementPerCost(model, best_f=best_f, cost=cost, lmbda=lmbda)
    return LogExpectedImprovement(model, best_f=best_f)


def _progress(iterable: Iterable[int], progress: bool | Callable, total: int) -> Iterable[int]:
    if callable(progress):
        return progress(iterable, "Bayesian optimization")
    if progress:
        from rich.progress import track

        return track(iterable, description="Bayesian optimization", total=total)
    return iterable


def run_bo(
    objective: Callable[[Tensor], Any],
    bounds: Any,
    cost: CostFunction | Callable[[Tensor], Tensor] | float | Literal["observed"],
    *,
    acquisition: str | AcquisitionFactory = "pbgi",
    stopping: StoppingRule | None = None,
    monitor: Sequence[StoppingRule] = (),
    lmbda: float = 1.0,
    max_evaluations: int = 50,
    n_init: int | None = None,
    candidates: Any = None,
    optimum: float | None = None,
    num_restarts: int = 4,
    raw_samples: int = 128,
    seed: int = 0,
    progress: bool | Callable[..., Iterable[int]] = False,
    dtype: torch.dtype = torch.float64,
    device: str | torch.device | None = None,
    fit_model: Callable[[Tensor, Tensor, Tensor], Any] = fit_gp,
    refit_every: int = 1,
) -> BOResult:
    """Maximize ``objective`` over a box by Bayesian optimization with cost-aware stopping.

    Args:
        objective: ``objective(x) -> y`` for one point ``x`` of shape ``(d,)``; with
            ``cost="observed"`` it returns ``(y, c)``, the value and the cost it
            incurred (e.g. measured training time times a price). ``y`` is maximized.
        bounds: ``(2, d)`` lower and upper bounds.
        cost: Cost in objective units: a :class:`~bo_stopping.CostFunction`, a
            callable ``(..., d) -> (...)`` of positive costs, a positive number,
            or ``"observed"`` (costs come from ``objective`` and are modelled by
            a GP on log cost for the acquisitions).
        acquisition: ``"pbgi"``, ``"logeipc"``, ``"logei"`` or a factory
            ``(model, best_f, cost) -> AcquisitionFunction``.
        stopping: The rule that ends the run (None: run ``max_evaluations``).
        monitor: Rules evaluated at every step without acting; their stopping
            steps go to ``BOResult.stop_times`` (names must be distinct).
        lmbda: Cost multiplier of PBGI and LogEIPC.
        max_evaluations: Hard cap on evaluations after the initial design.
        n_init: Size of the Sobol (or random-subset) initial design;
            default ``2 * (d + 1)``.
        candidates: Optional ``(m, d)`` finite search space; the acquisitions are
            then maximized by enumeration and each point is evaluated at most once.
        optimum: The known maximum of ``objective``, to record the regret.
        num_restarts: Restarts of ``optimize_acqf``.
        raw_samples: Raw samples of ``optimize_acqf``'s initialization.
        seed: Seed of the initial design and the optimizer's random starts.
        progress: True for a progress bar, or ``progress(iterable, description)``.
        dtype: Floating dtype of the model (float64 recommended).
        device: Torch device of the model and data.
        fit_model: ``fit_model(X, Y, bounds) -> Model`` builds the surrogate at each
            step from ``(n, d)`` inputs and ``(n,)`` values (default :func:`fit_gp`);
            e.g. a GP with known hyperparameters.
        refit_every: With the default ``fit_gp`` (and for the observed-cost GP),
            re-estimate the hyperparameters every ``refit_every`` steps, warm-started
            from the last fit; in between the GP is only conditioned on the new data
            with the last hyperparameters (1: refit at every step).

    Returns:
        A :class:`BOResult`.

    Raises:
        ValueError: On bounds with lower >= upper, a cost <= 0, an objective value
            that is NaN or infinite, ``n_init < 2``, ``max_evaluations < 0``,
            an unknown acquisition name or duplicate monitored rule names.
        TypeError: If ``objective`` is not callable or returns a non-number.

    Example:
        >>> from botorch.test_functions import Ackley
        >>> f = Ackley(dim=2, negate=True)
        >>> res = run_bo(lambda x: f(x), f.bounds, cost=lambda X: 0.01 * (1 + X.abs().sum(-1)),
        ...              stopping=CostAwareStopping(), optimum=0.0, max_evaluations=20)
        >>> len(res.regret) == res.stopped_at + 1  # after the design and each evaluation
        True
    """
    if not callable(objective):
        raise TypeError(f"objective must be callable, got {type(objective).__name__}")
    dev = torch.device(device) if device is not None else None
    b = check_bounds(bounds, dtype, dev)
    d = b.shape[1]
    if isinstance(acquisition, str) and acquisition not in ACQUISITIONS:
        raise ValueError(
            f"acquisition must be one of {ACQUISITIONS} or a callable, got {acquisition!r}"
        )
    max_evaluations = check_int("max_evaluations", max_evaluations, low=0)
    n_init = check_int("n_init", 2 * (d + 1) if n_init is None else n_init, low=2)
    num_restarts = check_int("num_restarts", num_restarts, low=1)
    raw_samples = check_int("raw_samples", raw_samples, low=1)
    seed = check_int("seed", seed, low=0)
    lmbda = check_float("lmbda", lmbda, low=0.0, low_inclusive=False)
    refit_every = check_int("refit_every", refit_every, low=1)
    if not callable(fit_model):
        raise TypeError(f"fit_model must be callable, got {type(fit_model).__name__}")
    names = [r.name for r in monitor]
    if len(set(names)) != len(names):
        raise ValueError(f"monitored rules must have distinct names, got {names}")
    observed = isinstance(cost, str)
    if observed and cost != "observed":
        raise ValueError(f"cost must be a cost function, a number or 'observed', got {cost!r}")
    known_cost = None if observed else as_cost(cost)
    choices = None
    if candidates is not None:
        choices = torch.as_tensor(candidates, dtype=dtype, device=dev)
        if choices.ndim != 2 or choices.shape[1] != d:
            raise ValueError(f"candidates must have shape (m, {d}), got {tuple(choices.shape)}")
        if torch.any(choices < b[0]) or torch.any(choices > b[1]):
            raise ValueError("candidates must lie inside bounds")
        if choices.shape[0] < n_init:
            raise ValueError(f"candidates has {choices.shape[0]} rows, fewer than n_init={n_init}")

    def evaluate(x: Tensor) -> tuple[float, float]:
        out = objective(x)
        if observed:
            if not isinstance(out, tuple | list) or len(out) != 2:
                raise TypeError("with cost='observed', objective must return (value, cost)")
            y, c = _as_float(out[0], "objective value", x), _as_float(out[1], "observed cost", x)
        else:
            y = _as_float(out, "objective value", x)
            c = _as_float(known_cost(x.unsqueeze(0)).squeeze(0).detach(), "cost", x)
        if c <= 0:
            raise ValueError(f"cost must be > 0, got {c} at x={x.tolist()}")
        return y, c

    with torch.random.fork_rng(devices=[dev] if dev is not None and dev.type == "cuda" else []):
        torch.manual_seed(seed)
        if choices is None:
            X0 = draw_sobol_samples(bounds=b, n=n_init, q=1, seed=seed).squeeze(1)
            remaining = None
        else:
            order = torch.randperm(choices.shape[0], device=dev)
            X0 = choices[order[:n_init]]
            remaining = torch.ones(choices.shape[0], dtype=torch.bool, device=dev)
            remaining[order[:n_init]] = False
        xs, ys, cs = [], [], []
        for x in X0:
            y, c = evaluate(x)
            xs.append(x)
            ys.append(y)
            cs.append(c)

        def maximize(acqf: AcquisitionFunction) -> tuple[Tensor, float]:
            if choices is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    x, v = optimize_acqf(
                        acqf, bounds=b, q=1, num_restarts=num_restarts, raw_samples=raw_samples
                    )
                return x.squeeze(0).detach(), float(v)
            with torch.no_grad():
                x, v = optimize_acqf_discrete(acqf, q=1, choices=choices[remaining])
            return x.squeeze(0), float(v.reshape(-1)[0])

        best = [max(ys)]
        cum = [sum(cs)]
        stop_times: dict[str, int | None] = dict.fromkeys(names)
        acq_values: list[float] = []
        stop_reason = "max_evaluations"
        k = 0
        model: Any = None
        cost_fn: Any = None
        # the last pass only asks the rules, so the bar counts evaluations
        for k in _progress(range(max_evaluations + 1), progress, max(max_evaluations, 1)):
            if remaining is not None and not bool(remaining.any()):
                stop_reason = "candidates exhausted"
                break
            X = torch.stack(xs)
            Y = torch.tensor(ys, dtype=dtype, device=dev)
            C = torch.tensor(cs, dtype=dtype, device=dev)
            refit = k % refit_every == 0
            if fit_model is fit_gp:
                model = fit_gp(X, Y, b, hyperparameters_from=model, optimize=refit or model is None)
            else:
                model = fit_model(X, Y, b)
            if observed:
                cost_fn = ModelledCost(
                    X, C, b, hyperparameters_from=cost_fn, optimize=refit or cost_fn is None
                )
            else:
                cost_fn = known_cost
            best_f = Y.max()
            acqf = _make_acquisition(acquisition, model, best_f, cost_fn, lmbda)
            # reseed per step: the trajectory must not depend on what monitored rules draw
            torch.manual_seed(seed * 100_003 + k)
            x_next, value = maximize(acqf)
            acq_values.append(value)
            state = BOState(
                iteration=k, X=X, Y=Y, costs=C, model=model, cost=cost_fn, best_f=best_f,
                acquisition=acqf, candidate=x_next, acq_value=value, maximize=maximize,
            )  # fmt: skip
            for rule in monitor:
                if stop_times[rule.name] is None and rule.should_stop(state):
                    stop_times[rule.name] = k
            if k >= max_evaluations:
                break
            if stopping is not None and stopping.should_stop(state):
                stop_reason = stopping.name
                break
            y, c = evaluate(x_next)
            xs.append(x_next)
            ys.append(y)
            cs.append(c)
            if remaining is not None:
                hit = torch.all(choices == x_next, dim=-1) & remaining
                remaining[torch.nonzero(hit).flatten()[:1]] = False
            best.append(max(best[-1], y))
            cum.append(cum[-1] + c)

    best_a, cum_a = np.asarray(best), np.asarray(cum)
    regret = None if optimum is None else float(optimum) - best_a + cum_a
    return BOResult(
        X=torch.stack(xs), Y=torch.tensor(ys, dtype=dtype), costs=torch.tensor(cs, dtype=dtype),
        n_init=n_init, best=best_a, cumulative_cost=cum_a, regret=regret,
        stopped_at=len(best) - 1, stop_reason=stop_reason, stop_times=stop_times,
        acq_values=acq_values,
    )  # fmt: skip
