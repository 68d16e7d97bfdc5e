"""Error-versus-time traces of eNMF, its ablations and its baselines, measured alike.

Used by the experiment and the benchmark (not part of the public API). Every run is
single-threaded (one BLAS thread). Our solvers record ``(time, error)`` after every
iteration, initialization included; scikit-learn's ``NMF`` and tensorly's HALS have no
callback, so their curves are sampled by fresh runs with ``max_iter = 1, 2, 3, 5, 8,
...`` (``tol=0``), each timed from start to end, as a user would see it; a run is
credited with the shortest time of any longer run (noise makes some longer runs
faster), which favours them.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from enmf._linalg import exact_squared_error, squared_norm
from enmf.exterior import exterior_solve
from enmf.hals import MatrixLike, SolverResult, hals_solve
from enmf.init import exterior_point, nndsvd
from enmf.path import path_to_orthant


@dataclass(frozen=True)
class Spec:
    """How to run one method: its library and the options of its pipeline.

    Attributes:
        library: ``"enmf"``, ``"sklearn"`` or ``"tensorly"``.
        start: ``"exterior"`` (SVD + rotation), ``"nndsvda"``, ``"nndsvd"``, ``"random"``.
        solver: ``"hals"`` (plain), ``"hals+acc"``, ``"extrapolated"`` (Ang-Gillis with
            accelerated sweeps), ``"cd"``, ``"mu"``.
        rotation: ``"l1"``, ``"l2"`` or ``"none"`` (exterior starts only).
        signs: Stage-1 sign rule (``"paper"`` or ``"balanced"``).
        path_steps: Lifts of the gradual path; None: no path (start at the exterior
            point itself, as the extrapolated variant does); 0 clips.
    """

    library: str
    start: str
    solver: str
    rotation: str = "l1"
    signs: str = "paper"
    path_steps: int | None = 100


PAPER = "eNMF (paper)"
EXTRAPOLATED = "eNMF (extrapolated)"
SKLEARN_DEFAULT = "sklearn cd (nndsvda)"
HALS_PLAIN = "HALS (nndsvda)"
HALS_EXTRAP = "HALS + extrapolation (nndsvda)"
TENSORLY = "tensorly HALS (svd)"

#: The methods of the main comparison, in display order.
METHODS: dict[str, Spec] = {
    PAPER: Spec("enmf", "exterior", "hals"),
    EXTRAPOLATED: Spec("enmf", "exterior", "extrapolated", "l2", "balanced", None),
    SKLEARN_DEFAULT: Spec("sklearn", "nndsvda", "cd"),
    "sklearn cd (nndsvd)": Spec("sklearn", "nndsvd", "cd"),
    "sklearn cd (random)": Spec("sklearn", "random", "cd"),
    "sklearn mu (nndsvda)": Spec("sklearn", "nndsvda", "mu"),
    HALS_PLAIN: Spec("enmf", "nndsvda", "hals"),
    HALS_EXTRAP: Spec("enmf", "nndsvda", "extrapolated"),
    TENSORLY: Spec("tensorly", "svd", "hals+acc"),
}

#: The paper's pipeline with one stage changed at a time.
ABLATIONS: dict[str, Spec] = {
    PAPER: METHODS[PAPER],
    "L2 rotation + path + HALS": Spec("enmf", "exterior", "hals", "l2"),
    "L1 rotation, clipped (no path) + HALS": Spec("enmf", "exterior", "hals", "l1", "paper", 0),
    "no rotation + path + HALS": Spec("enmf", "exterior", "hals", "none"),
    "L1 rotation + path + extrapolated HALS": Spec("enmf", "exterior", "extrapolated"),
    HALS_PLAIN: METHODS[HALS_PLAIN],
}


@dataclass
class Curve:
    """Relative error ``||X - W H||_F / ||X||_F`` against wall time of one method.

    Attributes:
        times: Seconds since the start of the run (initialization included).
        errors: Relative error of the feasible iterate at that time.
        W: Final left factor, shape (n, r).
        H: Final right factor, shape (r, m).
        converged: Whether the run met its own stopping rule (our solvers only).
    """

    times: NDArray[np.float64]
    errors: NDArray[np.float64]
    W: NDArray[np.float64]
    H: NDArray[np.float64]
    converged: bool = False

    def error_at(self, t: float) -> float:
        """Error of the last iterate finished by time ``t`` (``inf`` if none)."""
        done = self.times <= t
        return float(self.errors[done][-1]) if done.any() else float("inf")

    def time_to(self, target: float) -> float:
        """First time the error is ``<= target`` (``inf`` if never within the run)."""
        hit = np.flatnonzero(self.errors <= target)
        return float(self.times[hit[0]]) if hit.size else float("inf")


def sklearn_default_fit(X: MatrixLike, r: int, seed: int) -> float:
    """Fit ``sklearn.decomposition.NMF(r)`` with its defaults; return its relative error."""
    from sklearn.decomposition import NMF

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NMF(r, random_state=seed).fit(X)
    return float(model.reconstruction_err_) / np.sqrt(squared_norm(X))


def _fresh_run_curve(
    fit: Callable[[int], tuple[np.ndarray, np.ndarray]],
    X: MatrixLike,
    horizon: float,
    target: float | None,
    cap: float,
) -> Curve:
    """Sample a curve by fresh runs of ``fit(k)`` (k iterations), timed in full."""
    x_norm = np.sqrt(squared_norm(X))
    times, errors = [], []
    W = H = None
    k = 1.0
    while True:
        t0 = time.perf_counter()
        W, H = fit(int(k))
        elapsed = time.perf_counter() - t0
        times.append(elapsed)
        errors.append(np.sqrt(exact_squared_error(X, W, H)) / x_norm)
        done = elapsed >= horizon and (target is None or errors[-1] <= target)
        if done or elapsed >= cap or k >= 20000:
            break
        k = max(k + 1, np.floor(k * 1.6))
    t = np.minimum.accumulate(np.array(times)[::-1])[::-1]
    return Curve(t, np.array(errors), W, H)


def _sklearn_fit(X: MatrixLike, r: int, solver: str, init: str, seed: int):
    from sklearn.decomposition import NMF

    def fit(k: int) -> tuple[np.ndarray, np.ndarray]:
        model = NMF(r, solver=solver, init=init, max_iter=k, tol=0.0, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            W = model.fit_transform(X)
        return W, model.components_

    return fit


def _tensorly_fit(X: MatrixLike, r: int, seed: int):
    import tensorly as tl
    from tensorly.decomposition import non_negative_parafac_hals

    dense = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    tensor = tl.tensor(dense)

    def fit(k: int) -> tuple[np.ndarray, np.ndarray]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cp = non_negative_parafac_hals(
                tensor, r, n_iter_max=k, init="svd", tol=0.0, random_state=seed
            )
        weights, (A, B) = cp
        return np.asarray(A) * np.asarray(weights), np.ascontiguousarray(np.asarray(B).T)

    return fit


def own_start(spec: Spec, X: MatrixLike, r: int, rng: np.random.Generator):
    """The start of one of our pipelines: ``(W0, H0)``, feasible unless no path is taken."""
    if spec.start == "nndsvda":
        return nndsvd(X, r, rng, fill="mean")
    if spec.start == "nndsvd":
        return nndsvd(X, r, rng)
    W0, H0, _ = exterior_point(X, r, rng, rotation=spec.rotation, signs=spec.signs)
    if spec.path_steps is None:
        return W0, H0
    path = path_to_orthant(X, W0, H0, steps=spec.path_steps)
    return path.W, path.H


def own_solve(
    spec: Spec,
    X: MatrixLike,
    r: int,
    seed: int,
    *,
    max_iter: int = 10**7,
    tol: float = 0.0,
    time_limit: float | None = None,
    stop: Callable[[float, float], bool] | None = None,
) -> tuple[SolverResult, float]:
    """Run one of our pipelines; return its result and the seconds spent on the start."""
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    W0, H0 = own_start(spec, X, r, rng)
    t_start = time.perf_counter() - t0
    kw = dict(max_iter=max_iter, tol=tol, time_limit=time_limit, t_offset=t_start, stop=stop)
    if spec.solver == "extrapolated":
        return exterior_solve(X, W0, H0, inner=True, **kw), t_start
    return hals_solve(X, W0, H0, inner=spec.solver == "hals+acc", **kw), t_start


def measure_curve(
    spec: Spec,
    X: MatrixLike,
    r: int,
    horizon: float,
    seed: int,
    *,
    target: float | None = None,
    cap: float | None = None,
) -> Curve:
    """Trace one method on ``X`` at rank ``r``.

    Runs until ``horizon`` seconds have passed and, if ``target`` is given, the
    relative error is at or below it, or until ``cap`` seconds (default ``horizon``).
    """
    cap = horizon if cap is None else max(cap, horizon)
    with threadpool_limits(1):
        if spec.library == "sklearn":
            return _fresh_run_curve(
                _sklearn_fit(X, r, spec.solver, spec.start, seed), X, horizon, target, cap
            )
        if spec.library == "tensorly":
            return _fresh_run_curve(_tensorly_fit(X, r, seed), X, horizon, target, cap)
        x_norm2 = squared_norm(X)
        goal = None if target is None else (target**2) * x_norm2

        def stop(now: float, sq_err: float) -> bool:
            return now >= horizon and (goal is None or sq_err <= goal)

        res, _ = own_solve(spec, X, r, seed, time_limit=cap, stop=stop)
    x_norm = np.sqrt(x_norm2)
    errors = np.array(res.trace.errors) / x_norm
    # The trace uses the cheap expanded formula; the final point is checked exactly.
    errors[-1] = np.sqrt(exact_squared_error(X, res.W, res.H)) / x_norm
    return Curve(np.array(res.trace.times), errors, res.W, res.H, res.converged)
