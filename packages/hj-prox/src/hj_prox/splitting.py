"""Operator-splitting solvers with a pluggable proximal operator.

Every prox argument is a callable ``prox(x, t) -> array``: an exact one
(:mod:`hj_prox.prox`, pyproximal's ``.prox``, copt's ``prox``) or an
:class:`hj_prox.HJProx` estimate, so a non-proximable term is swapped in without
changing the algorithm. Iterates are numpy arrays of shape ``(d,)`` (any shape works
for the element-wise algorithms; PDHG needs ``K @ x``).

Each solver returns a :class:`SplitResult`. ``tol`` stops on the relative fixed-point
residual ``||u_{k+1} - u_k|| / max(1, ||u_k||)`` of the algorithm's state ``u`` (the
iterate, or the governing sequence ``z`` of DRS/Davis-Yin, or ``(x, y)`` of PDHG). With a
Monte Carlo prox the residual stalls at the noise level unless the prox follows a
:class:`hj_prox.Schedule` whose errors are summable; ``converged`` is then False after
``max_iter``, which is the honest answer.

References:
    Rockafellar (1976), proximal point; Beck and Teboulle (2009), FISTA; Lions and
    Mercier (1979), Douglas-Rachford; Davis and Yin (2017), three-operator splitting;
    Chambolle and Pock (2011), primal-dual hybrid gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

__all__ = [
    "SplitResult",
    "davis_yin",
    "douglas_rachford",
    "pdhg",
    "proximal_gradient",
    "proximal_point",
]

Prox = Callable[[np.ndarray, float], np.ndarray]


@dataclass
class SplitResult:
    """What a splitting solver returns.

    Attributes:
        x: The final primal iterate, shape of ``x0``.
        history: Per-iteration arrays: ``"residual"`` (relative fixed-point residual),
            ``"n_fevals"`` (cumulative), and ``"objective"`` when an objective was given.
        n_fevals: Evaluations of the functions behind Monte Carlo proxes (each
            prox's ``n_fevals`` counter, e.g. :class:`~hj_prox.HJProx`; exact proxes
            count 0). Gradient calls and objective monitoring are not counted.
        converged: Whether the residual fell to ``tol`` within ``max_iter``.
        n_iter: Iterations run.
        state: Final auxiliary variables (``z`` of DRS/Davis-Yin, ``y`` of PDHG, ...).
    """

    x: np.ndarray
    history: dict[str, np.ndarray]
    n_fevals: int
    converged: bool
    n_iter: int = 0
    state: dict[str, np.ndarray] = field(default_factory=dict)


def _check_prox(name: str, p: Any) -> None:
    if not callable(p):
        raise TypeError(f"{name} must be a callable prox(x, t), got {type(p).__name__}")


def _x0(x0: Any) -> np.ndarray:
    x = np.array(x0, dtype=float, copy=True)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"x0 must be a non-empty finite array, got shape {x.shape}")
    return x


def _counter(proxes: Sequence[Any]) -> Callable[[], int]:
    start = [int(getattr(p, "n_fevals", 0)) for p in proxes]

    def count() -> int:
        return sum(int(getattr(p, "n_fevals", 0)) - s for p, s in zip(proxes, start, strict=True))

    return count


class _Log:
    def __init__(self, objective: Callable[[np.ndarray], float] | None, count: Callable[[], int]):
        if objective is not None and not callable(objective):
            raise TypeError(f"objective must be callable or None, got {type(objective).__name__}")
        self.objective = objective
        self.count = count
        self.res: list[float] = []
        self.obj: list[float] = []
        self.fe: list[int] = []

    def step(self, new: np.ndarray, old: np.ndarray, x: np.ndarray) -> float:
        r = float(np.linalg.norm(new - old) / max(1.0, float(np.linalg.norm(old))))
        self.res.append(r)
        self.fe.append(self.count())
        if self.objective is not None:
            self.obj.append(float(self.objective(x)))
        return r

    def result(self, x: np.ndarray, tol: float, **state: np.ndarray) -> SplitResult:
        h = {"residual": np.array(self.res), "n_fevals": np.array(self.fe, dtype=np.int64)}
        if self.objective is not None:
            h["objective"] = np.array(self.obj)
        conv = bool(self.res) and self.res[-1] <= tol
        return SplitResult(x, h, self.count(), conv, len(self.res), dict(state))


def _common(max_iter: Any, tol: Any) -> tuple[int, float]:
    return check_int("max_iter", max_iter, low=1), check_float("tol", tol, low=0.0)


def proximal_point(
    prox_f: Prox,
    x0: Any,
    t: float = 1.0,
    *,
    max_iter: int = 500,
    tol: float = 1e-8,
    objective: Callable[[np.ndarray], float] | None = None,
) -> SplitResult:
    """Proximal point method: ``x_{k+1} = prox_{t f}(x_k)``.

    Args:
        prox_f: ``prox(x, t)`` of ``f``.
        x0: Start, shape ``(d,)``.
        t: Step ``> 0``.
        max_iter: Iterations ``>= 1``.
        tol: Stop when the relative residual ``<= tol``.
        objective: Optional ``F(x)`` recorded per iteration.

    Returns:
        A :class:`SplitResult`.

    Raises:
        ValueError: On a bad ``x0``, ``t``, ``max_iter`` or ``tol``.
        TypeError: If ``prox_f`` is not callable.

    Example:
        >>> from hj_prox import prox_l1
        >>> proximal_point(prox_l1, np.array([3.0, -0.5]), t=1.0).n_iter  # 3 -> 2 -> 1 -> 0 -> 0
        4
    """
    _check_prox("prox_f", prox_f)
    t = check_float("t", t, low=0.0, low_inclusive=False)
    max_iter, tol = _common(max_iter, tol)
    x = _x0(x0)
    log = _Log(objective, _counter([prox_f]))
    for _ in range(max_iter):
        xn = np.asarray(prox_f(x, t), dtype=float)
        r = log.step(xn, x, xn)
        x = xn
        if r <= tol:
            break
    return log.result(x, tol)


def proximal_gradient(
    grad_f: Callable[[np.ndarray], np.ndarray],
    prox_g: Prox,
    x0: Any,
    step: float,
    *,
    accelerated: bool = False,
    max_iter: int = 500,
    tol: float = 1e-8,
    objective: Callable[[np.ndarray], float] | None = None,
) -> SplitResult:
    """Proximal gradient (ISTA) or, with ``accelerated``, FISTA, for ``f + g``.

    ``x_{k+1} = prox_{s g}(v_k - s grad f(v_k))`` with ``v_k = x_k`` (ISTA) or the
    Nesterov point ``v_k = x_k + (tau_{k-1} - 1)/tau_k (x_k - x_{k-1})`` (FISTA).

    Args:
        grad_f: Gradient of the smooth part, ``(d,) -> (d,)``.
        prox_g: ``prox(x, t)`` of the non-smooth part.
        x0: Start, shape ``(d,)``.
        step: Step ``s > 0`` (``1/L`` for an ``L``-smooth ``f``).
        accelerated: FISTA momentum.
        max_iter: Iterations ``>= 1``.
        tol: Stop when the relative residual ``<= tol``.
        objective: Optional ``F(x)`` recorded per iteration.

    Returns:
        A :class:`SplitResult`.

    Raises:
        ValueError: On a bad argument.
        TypeError: If ``grad_f`` or ``prox_g`` is not callable.

    Example:
        >>> from hj_prox import prox_l1
        >>> r = proximal_gradient(lambda x: x - 2.0, prox_l1, np.zeros(1), step=1.0)
        >>> r.x, r.converged  # argmin (x - 2)^2 / 2 + |x|
        (array([1.]), True)
    """
    _check_prox("grad_f", grad_f)
    _check_prox("prox_g", prox_g)
    s = check_float("step", step, low=0.0, low_inclusive=False)
    max_iter, tol = _common(max_iter, tol)
    x = _x0(x0)
    v, tk = x.copy(), 1.0
    log = _Log(objective, _counter([prox_g]))
    for _ in range(max_iter):
        xn = np.asarray(prox_g(v - s * np.asarray(grad_f(v)), s), dtype=float)
        if accelerated:
            tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * tk * tk))
            v = xn + ((tk - 1.0) / tn) * (xn - x)
            tk = tn
        else:
            v = xn
        r = log.step(xn, x, xn)
        x = xn
        if r <= tol:
            break
    return log.result(x, tol)


def douglas_rachford(
    prox_f: Prox,
    prox_g: Prox,
    x0: Any,
    t: float = 1.0,
    *,
    relax: float = 1.0,
    max_iter: int = 500,
    tol: float = 1e-8,
    objective: Callable[[np.ndarray], float] | None = None,
) -> SplitResult:
    """Douglas-Rachford splitting for ``f + g``.

    ``x_k = prox_{t f}(z_k)``, ``y_k = prox_{t g}(2 x_k - z_k)``,
    ``z_{k+1} = z_k + relax (y_k - x_k)``; ``x_k`` converges to a minimizer.

    Args:
        prox_f: ``prox(x, t)`` of ``f``.
        prox_g: ``prox(x, t)`` of ``g``.
        x0: Start of ``z``, shape ``(d,)``.
        t: Step ``> 0``.
        relax: Relaxation in ``(0, 2)``.
        max_iter: Iterations ``>= 1``.
        tol: Stop when the relative residual ``<= tol`` (residual of ``z``).
        objective: Optional ``F(x)`` recorded per iteration at ``x_k``.

    Returns:
        A :class:`SplitResult` with ``x = x_k`` and ``state = {"z", "y"}``.

    Raises:
        ValueError: On a bad argument.
        TypeError: If a prox is not callable.

    Example:
        >>> from hj_prox import prox_l1
        >>> quad = lambda v, t: (v + 2.0 * t) / (1.0 + t)  # prox of (x - 2)^2 / 2
        >>> np.round(douglas_rachford(quad, prox_l1, np.zeros(1)).x, 6)
        array([1.])
    """
    _check_prox("prox_f", prox_f)
    _check_prox("prox_g", prox_g)
    t = check_float("t", t, low=0.0, low_inclusive=False)
    relax = check_float(
        "relax", relax, low=0.0, high=2.0, low_inclusive=False, high_inclusive=False
    )
    max_iter, tol = _common(max_iter, tol)
    z = _x0(x0)
    log = _Log(objective, _counter([prox_f, prox_g]))
    x = y = z
    for _ in range(max_iter):
        x = np.asarray(prox_f(z, t), dtype=float)
        y = np.asarray(prox_g(2.0 * x - z, t), dtype=float)
        zn = z + relax * (y - x)
        r = log.step(zn, z, x)
        z = zn
        if r <= tol:
            break
    return log.result(x, tol, z=z, y=y)


def davis_yin(
    prox_f: Prox,
    prox_g: Prox,
    grad_h: Callable[[np.ndarray], np.ndarray],
    x0: Any,
    step: float,
    *,
    relax: float = 1.0,
    max_iter: int = 500,
    tol: float = 1e-8,
    objective: Callable[[np.ndarray], float] | None = None,
) -> SplitResult:
    """Davis-Yin three-operator splitting for ``f + g + h`` (``h`` smooth).

    ``x_g = prox_{s g}(z)``, ``x_f = prox_{s f}(2 x_g - z - s grad h(x_g))``,
    ``z <- z + relax (x_f - x_g)``; ``x_g`` converges to a minimizer for
    ``s < 2 / L_h`` (convex case).

    Args:
        prox_f: ``prox(x, t)`` of the first non-smooth part.
        prox_g: ``prox(x, t)`` of the second, applied first: its output is the returned
            iterate (a projection keeps it feasible).
        grad_h: Gradient of the smooth part.
        x0: Start of ``z``, shape ``(d,)``.
        step: Step ``s > 0``.
        relax: Relaxation in ``(0, 2)``.
        max_iter: Iterations ``>= 1``.
        tol: Stop when the relative residual ``<= tol`` (residual of ``z``).
        objective: Optional ``F(x)`` recorded per iteration at ``x_g``.

    Returns:
        A :class:`SplitResult` with ``x = x_g`` and ``state = {"z", "x_f"}``.

    Raises:
        ValueError: On a bad argument.
        TypeError: If a prox or ``grad_h`` is not callable.

    Example:
        >>> from hj_prox import prox_l1, prox_nonneg
        >>> r = davis_yin(prox_l1, prox_nonneg, lambda x: x + 2.0, np.zeros(1), step=1.0)
        >>> r.x  # argmin (x + 2)^2 / 2 + |x| over x >= 0
        array([0.])
    """
    _check_prox("prox_f", prox_f)
    _check_prox("prox_g", prox_g)
    _check_prox("grad_h", grad_h)
    s = check_float("step", step, low=0.0, low_inclusive=False)
    relax = check_float(
        "relax", relax, low=0.0, high=2.0, low_inclusive=False, high_inclusive=False
    )
    max_iter, tol = _common(max_iter, tol)
    z = _x0(x0)
    log = _Log(objective, _counter([prox_f, prox_g]))
    xg = xf = z
    for _ in range(max_iter):
        xg = np.asarray(prox_g(z, s), dtype=float)
        xf = np.asarray(prox_f(2.0 * xg - z - s * np.asarray(grad_h(xg)), s), dtype=float)
        zn = z + relax * (xf - xg)
        r = log.step(zn, z, xg)
        z = zn
        if r <= tol:
            break
    return log.result(xg, tol, z=z, x_f=xf)


def _opnorm(K: Any, d: int, iters: int = 100) -> float:
    v = np.random.default_rng(0).standard_normal(d)
    v /= np.linalg.norm(v)
    s = 0.0
    for _ in range(iters):
        w = K.T @ (K @ v)
        s = float(np.linalg.norm(w))
        if s == 0.0:
            return 0.0
        v = w / s
    return float(np.sqrt(s))


def pdhg(
    prox_f: Prox,
    prox_g: Prox,
    K: Any,
    x0: Any,
    y0: Any = None,
    *,
    tau: float | None = None,
    sigma: float | None = None,
    theta: float = 1.0,
    max_iter: int = 500,
    tol: float = 1e-8,
    objective: Callable[[np.ndarray], float] | None = None,
) -> SplitResult:
    """Primal-dual hybrid gradient (Chambolle-Pock) for ``min_x f(x) + g(K x)``.

    ``y_{k+1} = prox_{sigma g*}(y_k + sigma K xbar_k)``,
    ``x_{k+1} = prox_{tau f}(x_k - tau K' y_{k+1})``,
    ``xbar_{k+1} = x_{k+1} + theta (x_{k+1} - x_k)``. The dual prox comes from
    ``prox_g`` by Moreau's identity, ``prox_{sigma g*}(v) = v - sigma prox_{g/sigma}(v/sigma)``,
    so a Monte Carlo prox of ``g`` plugs in directly.

    Args:
        prox_f: ``prox(x, t)`` of ``f``.
        prox_g: ``prox(v, t)`` of ``g`` (not of its conjugate).
        K: Linear map with ``K @ x`` and ``K.T @ y`` (numpy array, scipy sparse matrix
            or ``LinearOperator``), shape ``(m, d)``.
        x0: Primal start ``(d,)``.
        y0: Dual start ``(m,)``, zeros by default.
        tau: Primal step; ``tau sigma ||K||^2 < 1`` is needed; by default
            ``0.99 / ||K||`` (``||K||`` by 100 power iterations).
        sigma: Dual step; by default ``0.99 / ||K||``.
        theta: Extrapolation in ``[0, 1]``.
        max_iter: Iterations ``>= 1``.
        tol: Stop when the relative residual ``<= tol`` (residual of ``(x, y)``).
        objective: Optional ``F(x)`` recorded per iteration.

    Returns:
        A :class:`SplitResult` with ``state = {"y"}``.

    Raises:
        ValueError: On a bad argument or mismatched shapes.
        TypeError: If a prox is not callable or ``K`` has no ``@``/``.T``.

    Example:
        >>> from hj_prox import prox_l1
        >>> quad = lambda v, t: (v + 2.0 * t) / (1.0 + t)
        >>> r = pdhg(quad, prox_l1, np.eye(1), np.zeros(1), max_iter=2000, tol=1e-12)
        >>> np.round(r.x, 6)
        array([1.])
    """
    _check_prox("prox_f", prox_f)
    _check_prox("prox_g", prox_g)
    if not hasattr(K, "T") or not hasattr(K, "shape"):
        raise TypeError(f"K must support K @ x, K.T @ y and .shape, got {type(K).__name__}")
    x = _x0(x0)
    m, d = K.shape
    if x.shape != (d,):
        raise ValueError(f"x0 must have shape ({d},) to match K {K.shape}, got {x.shape}")
    y = np.zeros(m) if y0 is None else _x0(y0)
    if y.shape != (m,):
        raise ValueError(f"y0 must have shape ({m},) to match K {K.shape}, got {y.shape}")
    if tau is None or sigma is None:
        nk = _opnorm(K, d)
        tau = 0.99 / nk if tau is None else tau
        sigma = 0.99 / nk if sigma is None else sigma
    tau = check_float("tau", tau, low=0.0, low_inclusive=False)
    sigma = check_float("sigma", sigma, low=0.0, low_inclusive=False)
    theta = check_float("theta", theta, low=0.0, high=1.0)
    max_iter, tol = _common(max_iter, tol)
    log = _Log(objective, _counter([prox_f, prox_g]))
    xbar = x.copy()
    for _ in range(max_iter):
        v = y + sigma * np.asarray(K @ xbar)
        yn = v - sigma * np.asarray(prox_g(v / sigma, 1.0 / sigma), dtype=float)
        xn = np.asarray(prox_f(x - tau * np.asarray(K.T @ yn), tau), dtype=float)
        xbar = xn + theta * (xn - x)
        r = log.step(np.concatenate([xn, yn]), np.concatenate([x, y]), xn)
        x, y = xn, yn
        if r <= tol:
            break
    return log.result(x, tol, y=y)
