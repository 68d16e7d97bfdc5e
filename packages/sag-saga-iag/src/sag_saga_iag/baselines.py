"""Baselines beside the aggregated-gradient methods, and the high-precision optimum.

- :func:`gradient_descent`: full gradient steps, one per epoch (n gradient evaluations).
- :func:`sgd`: stochastic gradient with the decreasing step min(1/L_max, 2/(mu (k + 1)))
  (sublinear, the classical O(1/k) schedule for strongly convex sums).
- :func:`reference_optimum`: the optimum to near machine precision by an independent
  route: Newton's method with the exact Hessian and a backtracking line search.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

from sag_saga_iag import _kernels
from sag_saga_iag.problems import LinearModelProblem
from sag_saga_iag.sampling import Sampler, make_sampler
from sag_saga_iag.solvers import SolverResult


def _history(problem: LinearModelProblem, f_star: float | None) -> dict[str, list[float]]:
    hist: dict[str, list[float]] = {"epoch": [], "grad_evals": [], "time_s": [], "objective": []}
    if f_star is not None:
        hist["suboptimality"] = []
    return hist


def _record(
    hist: dict[str, list[float]],
    problem: LinearModelProblem,
    x: np.ndarray,
    epoch: int,
    evals: int,
    elapsed: float,
    f_star: float | None,
) -> None:
    val = problem.value(x)
    hist["epoch"].append(epoch)
    hist["grad_evals"].append(evals)
    hist["time_s"].append(elapsed)
    hist["objective"].append(val)
    if f_star is not None:
        hist["suboptimality"].append(val - f_star)


def gradient_descent(
    problem: LinearModelProblem,
    *,
    n_epochs: int = 100,
    step_size: float | None = None,
    f_star: float | None = None,
) -> SolverResult:
    """Full gradient descent x <- x - gamma grad f(x) from 0, gamma = 1/L by default.

    Args:
        problem: The linear model.
        n_epochs: Iterations (each costs n per-sample gradients).
        step_size: gamma > 0; None means 1/L.
        f_star: Optimal value, to record the suboptimality.

    Returns:
        A :class:`~sag_saga_iag.solvers.SolverResult` (method ``"gd"``).
    """
    n_epochs = check_int("n_epochs", n_epochs, low=1)
    gamma = (
        1.0 / problem.smoothness().L
        if step_size is None
        else check_float("step_size", step_size, low=0.0, low_inclusive=False)
    )
    x = np.zeros(problem.dim)
    hist = _history(problem, f_star)
    elapsed = 0.0
    _record(hist, problem, x, 0, 0, elapsed, f_star)
    for epoch in range(1, n_epochs + 1):
        t0 = time.perf_counter()
        x -= gamma * problem.gradient(x)
        elapsed += time.perf_counter() - t0
        _record(hist, problem, x, epoch, problem.n * epoch, elapsed, f_star)
    return SolverResult(
        x,
        "gd",
        "full",
        gamma,
        n_epochs,
        False,
        0,
        history={k: np.asarray(v) for k, v in hist.items()},
    )


def sgd(
    problem: LinearModelProblem,
    *,
    n_epochs: int = 100,
    sampling: str | Sampler = "uniform",
    random_state: Any = None,
    f_star: float | None = None,
) -> SolverResult:
    """SGD from 0 with step min(1/L_max, 2/(mu (k + 1))) at step k (mu = L_max/n if unknown).

    Dense data, logistic or squared loss, unit sample weights, no l1 term.

    Returns:
        A :class:`~sag_saga_iag.solvers.SolverResult` (method ``"sgd"``).

    Raises:
        ValueError: For sparse data, the multinomial loss, sample weights or l1 > 0.
    """
    n_epochs = check_int("n_epochs", n_epochs, low=1)
    if (
        problem.sparse
        or problem.n_outputs > 1
        or problem.l1
        or not np.all(problem.sample_weight == 1.0)
    ):
        raise ValueError("sgd covers dense, unweighted logistic/squared problems without l1")
    s = problem.smoothness()
    mu = s.mu if s.mu else s.L_max / problem.n
    sampler = make_sampler(sampling, problem.n, random_state)
    x = np.zeros(problem.dim)
    hist = _history(problem, f_star)
    elapsed = 0.0
    _record(hist, problem, x, 0, 0, elapsed, f_star)
    loss = _kernels.LOGISTIC if problem.loss == "logistic" else _kernels.SQUARED
    n = problem.n
    for epoch in range(1, n_epochs + 1):
        k = np.arange((epoch - 1) * n, epoch * n, dtype=np.float64)
        steps = np.minimum(1.0 / s.L_max, 2.0 / (mu * (k + 1.0)))
        idx = sampler.epoch()
        t0 = time.perf_counter()
        _kernels.sgd_epoch(
            problem.X,
            problem.y,
            x,
            idx,
            steps,
            problem.alpha,
            problem.nonconvex,
            problem.fit_intercept,
            loss,
        )
        elapsed += time.perf_counter() - t0
        _record(hist, problem, x, epoch, n * epoch, elapsed, f_star)
    return SolverResult(
        x,
        "sgd",
        sampler.name,
        1.0 / s.L_max,
        n_epochs,
        False,
        0,
        history={k: np.asarray(v) for k, v in hist.items()},
    )


def reference_optimum(
    problem: LinearModelProblem, *, max_iter: int = 100
) -> tuple[np.ndarray, float]:
    """Minimizer and minimum of a convex smooth ``problem`` to near machine precision.

    Newton's method from 0 with the exact Hessian and an Armijo backtracking line search
    (globally convergent on a strongly convex f, quadratically near x*), run until the
    gradient norm stops decreasing; an independent route from the first-order solvers.
    Problems with more than 3000 coordinates use scipy's L-BFGS-B instead (gradient
    tolerance 1e-13), which is less exact.

    Returns:
        (x_star of shape (dim,), f_star).

    Raises:
        ValueError: If the problem has the non-convex regularizer or an l1 term (no
            smooth optimum: run SAGA to a tight ``tol`` instead).
    """
    if problem.nonconvex:
        raise ValueError("reference_optimum needs a convex problem (nonconvex=0)")
    if problem.l1:
        raise ValueError("reference_optimum needs a smooth problem (l1=0); run saga with tol")
    max_iter = check_int("max_iter", max_iter, low=1)
    if problem.dim > 3000:
        from scipy.optimize import minimize

        res = minimize(
            lambda v: (problem.value(v), problem.gradient(v)),
            np.zeros(problem.dim),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 100_000, "gtol": 1e-13, "ftol": 0.0, "maxcor": 30},
        )
        return res.x, problem.value(res.x)
    x = np.zeros(problem.dim)
    f = problem.value(x)
    g = problem.gradient(x)
    for _ in range(max_iter):
        gnorm = float(np.linalg.norm(g))
        if gnorm == 0.0:
            break
        H = problem.hessian(x)
        if problem.loss == "multinomial":  # softmax: H is singular along constant shifts
            step = np.linalg.lstsq(H, g, rcond=None)[0]
        else:
            try:
                step = np.linalg.solve(H, g)
            except np.linalg.LinAlgError:
                step = np.linalg.lstsq(H, g, rcond=None)[0]
        t = 1.0
        while t > 1e-12:
            x_new = x - t * step
            f_new = problem.value(x_new)
            if f_new <= f - 1e-4 * t * float(g @ step) or (t < 1.0 and f_new <= f):
                break
            t *= 0.5
        g_new = problem.gradient(x_new)
        if np.linalg.norm(g_new) >= gnorm and gnorm < 1e-8:
            break  # rounding floor reached
        x, f, g = x_new, f_new, g_new
    return x, problem.value(x)
