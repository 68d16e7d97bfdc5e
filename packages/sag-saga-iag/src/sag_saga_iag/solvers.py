r"""The solvers :func:`sag`, :func:`saga` and :func:`iag` for f(x) = (1/n) sum_i f_i(x).

Each keeps a table of the last gradient seen for every component (one scalar per
sample on the linear-model fast path, one vector per sample for a generic oracle),
initialized at x_0 with one full pass, and at step k, with index j from the sampler:

- SAG / IAG: refresh entry j at x_k, then x_{k+1} = x_k - gamma (1/n) sum_i table_i;
- SAGA: x_{k+1} = x_k - gamma (grad f_j(x_k) - table_j + (1/n) sum_i table_i), then refresh j.

IAG is SAG's update with the cyclic order; every method accepts every sampling scheme.

References:
    Zhu, Heath & Mitra (ICML 2026), unified analysis of SAG, SAGA and IAG
    (abstract only).
    Le Roux, Schmidt & Bach (2012), SAG; Defazio, Bach & Lacoste-Julien (2014), SAGA;
    Blatt, Hero & Gauchman (2007), IAG.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from icml26_core.validation import check_choice, check_float, check_int
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import ThreadpoolController

from sag_saga_iag import _kernels
from sag_saga_iag.bounds import (
    METHODS,
    classical_rate,
    delay_bound,
    max_lemma_iag_bound,
    theory_step_size,
)
from sag_saga_iag.problems import FiniteSum, LinearModelProblem, column_scale_ratio
from sag_saga_iag.sampling import Sampler, make_sampler

STEP_RULES = ("auto", "theory", "classical")
"""Named step sizes: see :func:`resolve_step_size`."""

Callback = Callable[[int, np.ndarray, dict[str, float]], Any]

_THREADS: list[ThreadpoolController] = []  # found once: a fresh lookup costs ~4 ms per call


def _blas_controller() -> ThreadpoolController:
    if not _THREADS:
        _THREADS.append(ThreadpoolController())
    return _THREADS[0]


@dataclass
class SolverResult:
    """What a run returns.

    Attributes:
        x: Final iterate, shape (dim,) (for a multinomial problem the rows of [W; b],
            flattened: ``x.reshape(-1, n_classes)``).
        method: ``"sag"``, ``"saga"`` or ``"iag"``.
        sampling: Name of the sampling scheme.
        step_size: The step gamma used.
        n_epochs: Epochs run (each n steps; the initial pass is epoch 0).
        converged: True when ``tol`` was met or the callback asked to stop.
        max_delay: Largest delay of a stored gradient read during the run (steps).
        grad_mapping: Max-norm of the gradient mapping at ``x`` on the weight-normalized
            objective (the quantity ``tol`` is compared with); NaN when it was not
            computed (``tol == 0`` without ``record_objective``).
        history: Arrays over recorded epochs: ``epoch``, ``grad_evals`` (per-sample
            gradient evaluations, the initial pass included), ``time_s`` (cumulative
            solver time), ``objective`` and ``grad_mapping`` (when f can be evaluated
            and ``record_objective``) and ``suboptimality`` (when ``f_star`` was given).
    """

    x: np.ndarray
    method: str
    sampling: str
    step_size: float
    n_epochs: int
    converged: bool
    max_delay: int
    grad_mapping: float = float("nan")
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
        check_choice("step_size", step_size, STEP_RULES)
        if step_size == "auto" and method != "iag":
            _, L_max, mu = problem.sample_constants()
            if method == "sag":
                return 1.0 / L_max
            return 1.0 / (2.0 * L_max + min(2.0 * problem.n * (mu or 0.0), L_max))
        s = problem.smoothness()
        tau = delay_bound(sampler, problem.n, method=method, horizon=horizon, delta=delta)
        if step_size == "classical":
            if method == "iag":
                return max_lemma_iag_bound(s, max(tau, 1)).step_size
            return classical_rate(method, s, problem.n)[0]
        return theory_step_size(method, s, tau)
    return check_float("step_size", step_size, low=0.0, low_inclusive=False)


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
    verbose: int = 0,
) -> SolverResult:
    """Run SAG, SAGA or IAG on ``problem`` (see the module docstring for the updates).

    With an l1 term (``problem.l1 > 0``, SAGA and IAG) every step ends with the proximal
    map of ``step * l1 ||W||_1`` (soft-thresholding), as scikit-learn's SAGA does.

    **Stopping.** After each epoch the solver forms the gradient mapping
    G(x) = (x - prox(x - gamma grad f(x))) / gamma (the gradient when l1 = 0) on the
    objective normalized by the sum of the sample weights, first from the memory's
    average (free), and, when that estimate is below ``tol``, from one exact pass over
    the data; it stops when the exact max-norm is <= ``tol``. A run that ends without
    meeting ``tol > 0`` emits a ``ConvergenceWarning`` giving the norm reached (and,
    for badly scaled features, the ratio of their scales). This test cannot be fooled
    by a small step: with one feature 1e6 times larger than the others, the iterate
    barely moves, but its gradient does not vanish.

    Args:
        problem: A :class:`~sag_saga_iag.problems.LinearModelProblem` (compiled fast
            path, scalar memory, dense or CSR) or a
            :class:`~sag_saga_iag.problems.FiniteSum` (any per-sample oracle, memory
            n x dim).
        method: ``"sag"``, ``"saga"`` or ``"iag"``.
        x0: Starting point, shape (dim,); zeros if None. Not modified.
        step_size: A float > 0 or ``"auto"``, ``"theory"``, ``"classical"``
            (:func:`resolve_step_size`).
        n_epochs: Passes of n steps after the initial pass, >= 1.
        sampling: ``"uniform"``, ``"reshuffle"``, ``"cyclic"``, ``"markov"`` or a
            Sampler; default ``"cyclic"`` for IAG and ``"uniform"`` otherwise.
        random_state: Seed or numpy Generator of the sampler.
        f_star: Optimal value, to record the suboptimality f(x_k) - f_star.
        tol: Stop when the max-norm of the gradient mapping is <= tol (0: never).
        callback: ``callback(epoch, x, info) -> bool``, called after every epoch with a
            copy of x and ``info`` holding ``objective``/``suboptimality`` when known;
            returning True stops the run.
        delta: Failure probability of the delay bound behind ``step_size="theory"``.
        record_objective: Evaluate f and its gradient mapping after every epoch for the
            history (an extra pass over the data); the estimators switch it off.
        verbose: 0 for silence; >= 1 prints one line per epoch.

    The run is single-threaded (BLAS is limited to one thread during the call), as
    scikit-learn's sag is.

    Returns:
        A :class:`SolverResult`.

    Raises:
        ValueError: On an unknown method/sampling/step rule, a non-positive step, a
            wrong shape of x0, non-finite values, or an l1 term with SAG.
        TypeError: If ``problem`` is not a FiniteSum or LinearModelProblem.
        FloatingPointError: If the iterate becomes non-finite (the step is too large).

    Warns:
        ConvergenceWarning: If ``tol > 0`` and the run ends before meeting it.

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
    # One thread, like scikit-learn's sag: the per-epoch products (resummed average,
    # gradient mapping, objective) are small, and BLAS threads that wait on each other
    # cost more than they save (30x on a loaded 2-core machine).
    with _blas_controller().limit(limits=1, user_api="blas"):
        return _solve(
            problem,
            method,
            x0,
            step_size=step_size,
            n_epochs=n_epochs,
            sampling=sampling,
            random_state=random_state,
            f_star=f_star,
            tol=tol,
            callback=callback,
            delta=delta,
            record_objective=record_objective,
            verbose=verbose,
        )


def _solve(
    problem: FiniteSum | LinearModelProblem,
    method: str,
    x0: np.ndarray | None,
    *,
    step_size: float | str,
    n_epochs: int,
    sampling: str | Sampler | None,
    random_state: Any,
    f_star: float | None,
    tol: float,
    callback: Callback | None,
    delta: float,
    record_objective: bool,
    verbose: int,
) -> SolverResult:
    check_choice("method", method, METHODS)
    if not isinstance(problem, FiniteSum | LinearModelProblem):
        raise TypeError(
            f"problem must be a FiniteSum or LinearModelProblem, got {type(problem).__name__}"
        )
    n_epochs = check_int("n_epochs", n_epochs, low=1)
    tol = check_float("tol", tol, low=0.0)
    verbose = check_int("verbose", int(verbose) if isinstance(verbose, bool) else verbose, low=0)
    if problem.l1 and method == "sag":
        raise ValueError(
            "an l1 term needs method='saga' or 'iag' (proximal steps); SAG's biased step "
            "has no proximal version"
        )
    n, dim = problem.n, problem.dim
    if x0 is None:
        x = np.zeros(dim)
    else:
        x = np.array(x0, dtype=np.float64, copy=True).ravel()
        if x.shape != (dim,):
            raise ValueError(f"x0 must have shape ({dim},), got {np.shape(x0)}")
        if not np.all(np.isfinite(x)):
            raise ValueError("x0 must hold finite values, got NaN or inf")
    if sampling is None:
        sampling = "cyclic" if method == "iag" else "uniform"
    sampler = make_sampler(sampling, n, random_state)
    gamma = resolve_step_size(step_size, method, problem, sampler, n * n_epochs, delta)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")

    linear = isinstance(problem, LinearModelProblem)
    scale = n / problem.sw_sum  # gradients of the objective normalized by the weights
    last = np.zeros(n, dtype=np.int64)
    maxgap = np.zeros(1, dtype=np.int64)
    t0 = time.perf_counter()
    if linear:
        K, P = problem.n_outputs, problem.n_rows
        table = problem.loss_derivative(problem.margins(x))  # (n, K)
        agg = problem.data_gradient(table)  # (P, K)
        if K == 1:
            table, agg = np.ascontiguousarray(table[:, 0]), np.ascontiguousarray(agg[:, 0])
            xk = x  # (P,)
        else:
            xk = x.reshape(P, K)  # a view: the kernels update x in place
        flast = np.zeros(problem.n_features, dtype=np.int64) if problem.sparse else None
        tables = _kernels.geometric_tables(n, gamma, problem.alpha) if problem.sparse else None
    else:
        table = np.stack([problem.grad_i(x, i) for i in range(n)])
        agg = table.mean(axis=0)
    elapsed = time.perf_counter() - t0

    hist: dict[str, list[float]] = {"epoch": [], "grad_evals": [], "time_s": []}
    track = bool(record_objective) and problem.has_value
    if track:
        hist["objective"] = []
        hist["grad_mapping"] = []
        if f_star is not None:
            hist["suboptimality"] = []
    last_gm = float("nan")

    def exact_gm() -> float:
        return scale * float(np.max(np.abs(problem.gradient_mapping(x, gamma))))

    def record(epoch: int) -> dict[str, float]:
        nonlocal last_gm
        hist["epoch"].append(epoch)
        hist["grad_evals"].append(n * (epoch + 1))
        hist["time_s"].append(elapsed)
        info: dict[str, float] = {}
        if track:
            val = problem.value(x)
            last_gm = exact_gm()
            hist["objective"].append(val)
            hist["grad_mapping"].append(last_gm)
            info["objective"] = val
            info["grad_mapping"] = last_gm
            if f_star is not None:
                hist["suboptimality"].append(val - f_star)
                info["suboptimality"] = val - f_star
        return info

    def estimated_gm() -> float:
        # the memory's average stands in for the data term's gradient at x
        g = agg.ravel() + (problem.regularizer_gradient(x) if linear else 0.0)
        if problem.l1:
            g = (x - problem.prox(x - gamma * g, gamma)) / gamma
        return scale * float(np.max(np.abs(g)))

    record(0)
    method_id = _kernels.SAGA if method == "saga" else _kernels.SAG
    converged = False
    epoch = 0
    for epoch in range(1, n_epochs + 1):
        idx = sampler.epoch()
        t0 = time.perf_counter()
        k0 = (epoch - 1) * n
        if linear:
            _linear_epoch(
                problem, xk, table, agg, idx, gamma, method_id, k0, last, maxgap, flast, tables
            )
            _check_finite(x, method, epoch, gamma)
            # resum the average once per epoch so rounding does not drift over long runs
            with np.errstate(over="ignore", invalid="ignore"):
                full = problem.data_gradient(table if K > 1 else table[:, None])
                agg = full if K > 1 else np.ascontiguousarray(full[:, 0])
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                _oracle_epoch(problem, x, table, agg, idx, gamma, method_id, k0, last, maxgap)
            _check_finite(x, method, epoch, gamma)
            agg = table.mean(axis=0)
        elapsed += time.perf_counter() - t0
        with np.errstate(over="ignore", invalid="ignore"):
            info = record(epoch)
        if tol > 0 and estimated_gm() <= tol:
            gm = last_gm if track else exact_gm()
            last_gm = gm
            converged = gm <= tol
        if verbose:
            gm = last_gm if track else exact_gm()
            last_gm = gm
            obj = f", objective {info['objective']:.12g}" if "objective" in info else ""
            print(
                f"{method} epoch {epoch}: gradient mapping {gm:.3e}{obj} ({elapsed:.3f} s)",
                flush=True,
            )
        if callback is not None and callback(epoch, x.copy(), info):
            converged = True
        if converged:
            break

    if tol > 0 and not converged:
        gm = exact_gm()
        last_gm = gm
        msg = (
            f"{method} did not reach tol={tol:g} in {epoch} epochs: the gradient mapping's "
            f"max-norm is {gm:.3g}"
        )
        if linear:
            ratio = column_scale_ratio(problem.X)
            if ratio >= 1e3:
                msg += (
                    f"; the features' scales differ by a factor of {ratio:.1e}, which makes "
                    "the step tiny: standardize X (e.g. sklearn.preprocessing.StandardScaler)"
                )
        warnings.warn(msg + "; raise max_iter/n_epochs or tol", ConvergenceWarning, stacklevel=3)
    steps_done = n * epoch
    tail = int(np.max(steps_done - 1 - last)) if steps_done > 0 else 0
    gap = int(maxgap[0])
    max_delay = max(gap, tail) if method == "saga" else max(gap - 1, tail, 0)
    history = {k: np.asarray(v) for k, v in hist.items()}
    name = sampler.name
    return SolverResult(
        x.copy(), method, name, gamma, epoch, converged, max_delay, last_gm, history
    )


def _linear_epoch(
    problem: LinearModelProblem,
    xk: np.ndarray,
    table: np.ndarray,
    agg: np.ndarray,
    idx: np.ndarray,
    gamma: float,
    method_id: int,
    k0: int,
    last: np.ndarray,
    maxgap: np.ndarray,
    flast: np.ndarray | None,
    tables: tuple[np.ndarray, np.ndarray] | None,
) -> None:
    """One epoch of the compiled fast path (dense or CSR, one or K outputs), in place."""
    loss = _kernels.LOSS_IDS[problem.loss]
    K = problem.n_outputs
    icpt = problem.fit_intercept
    if problem.sparse:
        X = problem.X
        kern = _kernels.csr_epoch if K == 1 else _kernels.csr_epoch_multi
        kern(
            X.data,
            X.indices,
            X.indptr,
            problem.y,
            problem.sample_weight,
            xk,
            table,
            agg,
            idx,
            gamma,
            problem.alpha,
            problem.l1,
            icpt,
            loss,
            method_id,
            k0,
            last,
            maxgap,
            flast,
            *tables,
        )
        x2 = xk[:, None] if K == 1 else xk
        a2 = agg[:, None] if K == 1 else agg
        _kernels.csr_catch_up(
            x2, a2, flast, k0 + idx.shape[0], gamma, problem.alpha, problem.l1, *tables
        )
    else:
        kern = _kernels.dense_epoch if K == 1 else _kernels.dense_epoch_multi
        kern(
            problem.X,
            problem.y,
            problem.sample_weight,
            xk,
            table,
            agg,
            idx,
            gamma,
            problem.alpha,
            problem.l1,
            problem.nonconvex,
            icpt,
            loss,
            method_id,
            k0,
            last,
            maxgap,
        )


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
