r"""The solvers :func:`sag`, :func:`saga` and :func:`iag` for f(x) = (1/n) sum_i f_i(x).

Each keeps a table of the last gradient seen for every component (one scalar per
sample on the linear-model fast path, one vector per sample for a generic oracle),
initialized at x_0 with one full pass, and at step k, with index j from the sampler:

- SAG / IAG: refresh entry j at x_k, then x_{k+1} = x_k - gamma (1/n) sum_i table_i;
- SAGA: x_{k+1} = x_k - gamma (grad f_j(x_k) - table_j + (1/n) sum_i table_i), then refresh j.

IAG is SAG's update with the cyclic order; every method accepts every sampling scheme.

References:
    Zhu, Heath & Mitra (ICML 2026), unified analysis of SAG, SAGA and IAG
    (``papers/sag-saga-iag.md``).
    Le Roux, Schmidt & Bach (2012), SAG; Defazio, Bach & Lacoste-Julien (2014), SAGA;
    Blatt, Hero & Gauchman (2007), IAG.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sag_saga_iag import _kernels
from sag_saga_iag._validation import check_choice, check_count, check_nonnegative, check_positive
from sag_saga_iag.bounds import (
    METHODS,
    classical_rate,
    delay_bound,
    max_lemma_iag_bound,
    theory_step_size,
)
from sag_saga_iag.problems import FiniteSum, LinearModelProblem
from sag_saga_iag.sampling import Sampler, make_sampler

STEP_RULES = ("auto", "theory", "classical")
"""Named step sizes: see :func:`resolve_step_size`."""

Callback = Callable[[int, np.ndarray, dict[str, float]], Any]


@dataclass
class SolverResult:
    """What a run returns.

    Attributes:
        x: Final iterate, shape (dim,).
        method: ``"sag"``, ``"saga"`` or ``"iag"``.
        sampling: Name of the sampling scheme.
        step_size: The step gamma used.
        n_epochs: Epochs run (each n steps; the initial pass is epoch 0).
        converged: True when ``tol`` was met or the callback asked to stop.
        max_delay: Largest delay of a stored gradient read during the run (steps).
        history: Arrays over recorded epochs: ``epoch``, ``grad_evals`` (per-sample
            gradient evaluations, the initial pass included), ``time_s`` (cumulative
            solver time), ``objective`` (when f can be evaluated) and
            ``suboptimality`` (when ``f_star`` was given).
    """

    x: np.ndarray
    method: str
    sampling: str
    step_size: float
    n_epochs: int
    converged: bool
    max_delay: int
    history: dict[str, np.ndarray] = field(default_factory=dict)


def resolve_step_size(
    step_size: float | str,
    method: str,
    problem: FiniteSum | LinearModelProblem,
    sampler: Sampler,
    horizon: int,
    delta: float = 0.05,
) -> float:
    """Turn ``step_size`` into a number.

    - a float > 0: used as given;
    - ``"auto"``: the steps scikit-learn uses, 1/L_max for SAG and
      1/(2 L_max + min(2 n mu, L_max)) for SAGA (Defazio et al., 2014, section 5); for IAG
      the ``"theory"`` step;
    - ``"theory"``: the largest step of the unified analysis for this sampling scheme's
      delay bound over ``horizon`` steps (:func:`~sag_saga_iag.bounds.theory_step_size`);
    - ``"classical"``: 1/(16 L_max) for SAG (Schmidt et al., 2017), 1/(3 L_max) for SAGA
      (Defazio et al., 2014), mu/(2 L_bar^2 tau) for IAG (the max-lemma analysis).

    Raises:
        ValueError: If the rule is unknown or the step is not positive.
        TypeError: If ``step_size`` is neither a number nor a string.
    """
    if isinstance(step_size, str):
        check_choice(step_size, "step_size", STEP_RULES)
        s = problem.smoothness()
        if step_size == "auto" and method != "iag":
            if method == "sag":
                return 1.0 / s.L_max
            mu = s.mu or 0.0
            return 1.0 / (2.0 * s.L_max + min(2.0 * problem.n * mu, s.L_max))
        tau = delay_bound(sampler, problem.n, method=method, horizon=horizon, delta=delta)
        if step_size == "classical":
            if method == "iag":
                return max_lemma_iag_bound(s, max(tau, 1)).step_size
            return classical_rate(method, s, problem.n)[0]
        return theory_step_size(method, s, tau)
    return check_positive(step_size, "step_size")


def solve(
    problem: FiniteSum | LinearModelProblem,
    method: str,
    x0: np.ndarray | None = None,
    *,
    step_size: float | str = "auto",
    n_epochs: int = 50,
    sampling: str | Sampler | None = None,
    random_state: Any = None,
    f_star: float | None = None,
    tol: float = 0.0,
    callback: Callback | None = None,
    delta: float = 0.05,
    record_objective: bool = True,
) -> SolverResult:
    """Run SAG, SAGA or IAG on ``problem`` (see the module docstring for the updates).

    Args:
        problem: A :class:`~sag_saga_iag.problems.LinearModelProblem` (compiled fast
            path, scalar memory) or a :class:`~sag_saga_iag.problems.FiniteSum` (any
            per-sample oracle, memory n x dim).
        method: ``"sag"``, ``"saga"`` or ``"iag"``.
        x0: Starting point, shape (dim,); zeros if None. Not modified.
        step_size: A float > 0 or ``"auto"``, ``"theory"``, ``"classical"``
            (:func:`resolve_step_size`).
        n_epochs: Passes of n steps after the initial pass, >= 1.
        sampling: ``"uniform"``, ``"reshuffle"``, ``"cyclic"``, ``"markov"`` or a
            Sampler; default ``"cyclic"`` for IAG and ``"uniform"`` otherwise.
        random_state: Seed or numpy Generator of the sampler.
        f_star: Optimal value, to record the suboptimality f(x_k) - f_star.
        tol: Stop when max|x_new - x_old| / max|x_new| over an epoch is <= tol (0: never).
        callback: ``callback(epoch, x, info) -> bool``, called after every epoch with a
            copy of x and ``info`` holding ``objective``/``suboptimality`` when known;
            returning True stops the run.
        delta: Failure probability of the delay bound behind ``step_size="theory"``.
        record_objective: Evaluate f after every epoch for the history (an extra pass
            over the data); the estimators switch it off.

    Returns:
        A :class:`SolverResult`.

    Raises:
        ValueError: On an unknown method/sampling/step rule, a non-positive step, a
            wrong shape of x0, or non-finite values.
        TypeError: If ``problem`` is not a FiniteSum or LinearModelProblem.

    Example:
        >>> import numpy as np
        >>> from sklearn.datasets import load_breast_cancer
        >>> from sklearn.preprocessing import StandardScaler
        >>> X, y = load_breast_cancer(return_X_y=True)
        >>> prob = LinearModelProblem(StandardScaler().fit_transform(X), 2.0 * y - 1, alpha=0.1)
        >>> res = solve(prob, "saga", n_epochs=50, random_state=0)
        >>> bool(np.linalg.norm(prob.gradient(res.x)) < 1e-5)
        True
    """
    check_choice(method, "method", METHODS)
    if not isinstance(problem, FiniteSum | LinearModelProblem):
        raise TypeError(
            f"problem must be a FiniteSum or LinearModelProblem, got {type(problem).__name__}"
        )
    n_epochs = check_count(n_epochs, "n_epochs")
    tol = check_nonnegative(tol, "tol")
    n, dim = problem.n, problem.dim
    if x0 is None:
        x = np.zeros(dim)
    else:
        x = np.array(x0, dtype=np.float64, copy=True)
        if x.shape != (dim,):
            raise ValueError(f"x0 must have shape ({dim},), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("x0 must hold finite values, got NaN or inf")
    if sampling is None:
        sampling = "cyclic" if method == "iag" else "uniform"
    sampler = make_sampler(sampling, n, random_state)
    gamma = resolve_step_size(step_size, method, problem, sampler, n * n_epochs, delta)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")

    linear = isinstance(problem, LinearModelProblem)
    last = np.zeros(n, dtype=np.int64)
    maxgap = np.zeros(1, dtype=np.int64)
    t0 = time.perf_counter()
    if linear:
        table = problem.loss_derivative(problem.A @ x)
        agg = problem.A.T @ table / n
    else:
        table = np.stack([problem.grad_i(x, i) for i in range(n)])
        agg = table.mean(axis=0)
    elapsed = time.perf_counter() - t0

    hist: dict[str, list[float]] = {"epoch": [], "grad_evals": [], "time_s": []}
    track = bool(record_objective) and problem.has_value
    if track:
        hist["objective"] = []
        if f_star is not None:
            hist["suboptimality"] = []

    def record(epoch: int) -> dict[str, float]:
        hist["epoch"].append(epoch)
        hist["grad_evals"].append(n * (epoch + 1))
        hist["time_s"].append(elapsed)
        info: dict[str, float] = {}
        if track:
            val = problem.value(x)
            hist["objective"].append(val)
            info["objective"] = val
            if f_star is not None:
                hist["suboptimality"].append(val - f_star)
                info["suboptimality"] = val - f_star
        return info

    record(0)
    method_id = _kernels.SAGA if method == "saga" else _kernels.SAG
    converged = False
    epoch = 0
    for epoch in range(1, n_epochs + 1):
        idx = sampler.epoch()
        x_old = x.copy()
        t0 = time.perf_counter()
        k0 = (epoch - 1) * n
        if linear:
            _kernels.aggregated_epoch(
                problem.A,
                problem.y,
                x,
                table,
                agg,
                idx,
                gamma,
                problem.alpha,
                problem.nonconvex,
                problem.penalized,
                _kernels.LOGISTIC if problem.loss == "logistic" else _kernels.SQUARED,
                method_id,
                k0,
                last,
                maxgap,
            )
            _check_finite(x, method, epoch, gamma)
            # resum the average once per epoch so rounding does not drift over long runs
            with np.errstate(over="ignore", invalid="ignore"):
                agg = problem.A.T @ table / n
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                _oracle_epoch(problem, x, table, agg, idx, gamma, method_id, k0, last, maxgap)
            _check_finite(x, method, epoch, gamma)
            agg = table.mean(axis=0)
        elapsed += time.perf_counter() - t0
        with np.errstate(over="ignore", invalid="ignore"):
            info = record(epoch)
        scale = max(np.max(np.abs(x)), 1e-300)
        if tol > 0 and np.max(np.abs(x - x_old)) / scale <= tol:
            converged = True
        if callback is not None and callback(epoch, x.copy(), info):
            converged = True
        if converged:
            break

    steps_done = n * epoch
    tail = int(np.max(steps_done - 1 - last)) if steps_done > 0 else 0
    gap = int(maxgap[0])
    max_delay = max(gap, tail) if method == "saga" else max(gap - 1, tail, 0)
    history = {k: np.asarray(v) for k, v in hist.items()}
    name = sampler.name
    return SolverResult(x.copy(), method, name, gamma, epoch, converged, max_delay, history)


def _check_finite(x: np.ndarray, method: str, epoch: int, gamma: float) -> None:
    if not np.all(np.isfinite(x)):
        raise FloatingPointError(
            f"{method} diverged at epoch {epoch} with step_size={gamma:.4g}; use a smaller "
            "step (e.g. step_size='theory')"
        )


def _oracle_epoch(
    problem: FiniteSum,
    x: np.ndarray,
    table: np.ndarray,
    agg: np.ndarray,
    indices: np.ndarray,
    gamma: float,
    method_id: int,
    k0: int,
    last: np.ndarray,
    maxgap: np.ndarray,
) -> None:
    """One epoch of the generic-oracle path (Python loop), in place."""
    n = problem.n
    for t, j in enumerate(indices):
        k = k0 + t
        g = problem.grad_i(x, int(j))
        diff = g - table[j]
        table[j] = g
        maxgap[0] = max(maxgap[0], k - last[j])
        last[j] = k
        if method_id == _kernels.SAGA:
            direction = diff + agg
            agg += diff / n
        else:
            agg += diff / n
            direction = agg
        x -= gamma * direction


def sag(
    problem: FiniteSum | LinearModelProblem, x0: np.ndarray | None = None, **kwargs: Any
) -> SolverResult:
    """Stochastic average gradient: :func:`solve` with ``method="sag"`` (uniform by default).

    Example:
        >>> import numpy as np
        >>> y = np.array([1.0, 2.0, 3.0])
        >>> prob = LinearModelProblem(np.eye(3), y, loss="squared", alpha=0.5)
        >>> res = sag(prob, n_epochs=300, random_state=0)
        >>> np.allclose(res.x, y / 2.5)  # (w - y)/n + alpha w = 0 with n = 3
        True
    """
    return solve(problem, "sag", x0, **kwargs)


def saga(
    problem: FiniteSum | LinearModelProblem, x0: np.ndarray | None = None, **kwargs: Any
) -> SolverResult:
    """SAGA: :func:`solve` with ``method="saga"`` (uniform sampling by default)."""
    return solve(problem, "saga", x0, **kwargs)


def iag(
    problem: FiniteSum | LinearModelProblem, x0: np.ndarray | None = None, **kwargs: Any
) -> SolverResult:
    """Incremental aggregated gradient: :func:`solve` with ``method="iag"``.

    Cyclic order and the theory step by default.
    """
    return solve(problem, "iag", x0, **kwargs)
