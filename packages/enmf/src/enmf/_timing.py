"""Error-versus-time traces of eNMF and its baselines, measured the same way for all.

Used by the experiment and the benchmark (not part of the public API). Every run
is single-threaded (one BLAS thread), so that the methods share the same budget
on a busy machine. Our solvers record ``(time, error)`` after every iteration;
scikit-learn's ``NMF`` has no callback, so its curve is sampled by fresh runs with
``max_iter = 1, 2, 3, 5, 8, ...`` (``tol=0``), each timed from start to end,
initialization included, as a user would see it; a run is credited with the
shortest time of any longer run (noise makes some longer runs faster).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from enmf._linalg import exact_squared_error, squared_norm
from enmf.exterior import exterior_solve
from enmf.hals import MatrixLike, hals_solve
from enmf.init import exterior_point, nndsvd

#: Methods compared, in display order: name -> (library, solver, init).
METHODS: dict[str, tuple[str, str, str]] = {
    "eNMF": ("enmf", "exterior", "svd"),
    "sklearn cd (nndsvda)": ("sklearn", "cd", "nndsvda"),
    "sklearn cd (nndsvd)": ("sklearn", "cd", "nndsvd"),
    "sklearn cd (random)": ("sklearn", "cd", "random"),
    "sklearn mu (nndsvda)": ("sklearn", "mu", "nndsvda"),
    "HALS (nndsvda)": ("enmf", "hals", "nndsvda"),
}


@dataclass
class Curve:
    """Relative error ``||X - W H||_F / ||X||_F`` against wall time of one method.

    Attributes:
        times: Seconds since the start of the run (initialization included).
        errors: Relative error of the feasible iterate at that time.
        W: Final left factor, shape (n, r).
        H: Final right factor, shape (r, m).
    """

    times: NDArray[np.float64]
    errors: NDArray[np.float64]
    W: NDArray[np.float64]
    H: NDArray[np.float64]

    def error_at(self, t: float) -> float:
        """Error of the last iterate finished by time ``t`` (``inf`` if none)."""
        done = self.times <= t
        return float(self.errors[done][-1]) if done.any() else float("inf")

    def time_to(self, target: float) -> float:
        """First time the error is ``<= target`` (``inf`` if never within the run)."""
        hit = np.flatnonzero(self.errors <= target)
        return float(self.times[hit[0]]) if hit.size else float("inf")


def sklearn_default(X: MatrixLike, r: int, seed: int) -> tuple[float, float]:
    """Time and relative error of ``sklearn.decomposition.NMF(r)``'s default run (cd)."""
    from sklearn.decomposition import NMF

    x_norm = np.sqrt(squared_norm(X))
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model = NMF(r, random_state=seed).fit(X)
        elapsed = time.perf_counter() - t0
    return elapsed, float(model.reconstruction_err_) / x_norm


def _sklearn_curve(
    X: MatrixLike, r: int, solver: str, init: str, horizon: float, seed: int
) -> Curve:
    from sklearn.decomposition import NMF

    x_norm = np.sqrt(squared_norm(X))
    times, errors = [], []
    W = H = None
    k = 1.0
    while True:
        model = NMF(r, solver=solver, init=init, max_iter=int(k), tol=0.0, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            W = model.fit_transform(X)
            elapsed = time.perf_counter() - t0
        H = model.components_
        times.append(elapsed)
        errors.append(float(model.reconstruction_err_) / x_norm)
        if elapsed >= horizon or k >= 20000:
            break
        k = max(k + 1, np.floor(k * 1.6))
    # More iterations cannot take less time; when noise says otherwise, credit the
    # shorter run's iteration count with the later, faster time (favours sklearn).
    t = np.minimum.accumulate(np.array(times)[::-1])[::-1]
    return Curve(t, np.array(errors), W, H)


def _own_curve(X: MatrixLike, r: int, solver: str, horizon: float, seed: int) -> Curve:
    x_norm = np.sqrt(squared_norm(X))
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    if solver == "exterior":
        W0, H0, _ = exterior_point(X, r, rng)
        res = exterior_solve(
            X, W0, H0, max_iter=10**7, tol=0.0, time_limit=horizon,
            t_offset=time.perf_counter() - t0,
        )  # fmt: skip
    else:
        W0, H0 = nndsvd(X, r, rng, fill="mean")
        res = hals_solve(
            X, W0, H0, max_iter=10**7, tol=0.0, time_limit=horizon, inner=False,
            t_offset=time.perf_counter() - t0,
        )  # fmt: skip
    errors = np.array(res.trace.errors) / x_norm
    # The trace uses the cheap expanded formula; the final point is checked exactly.
    errors[-1] = np.sqrt(exact_squared_error(X, res.W, res.H)) / x_norm
    return Curve(np.array(res.trace.times), errors, res.W, res.H)


def measure_curve(method: str, X: MatrixLike, r: int, horizon: float, seed: int) -> Curve:
    """Trace ``method`` (a key of :data:`METHODS`) on ``X`` at rank ``r`` up to ``horizon`` s."""
    library, solver, init = METHODS[method]
    with threadpool_limits(1):
        if library == "sklearn":
            return _sklearn_curve(X, r, solver, init, horizon, seed)
        return _own_curve(X, r, solver, horizon, seed)
