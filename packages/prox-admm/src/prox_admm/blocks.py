"""Blocks f_i of the objective: what the solver may call for each one.

A :class:`Block` carries whatever of ``f``, ``grad``, ``prox`` and ``solve`` the user has;
the solver picks the subproblem solver from what is there (closed form for quadratics, a
prox step, a user solver, or a gradient step). Ready blocks: :func:`quadratic`,
:func:`least_squares`, :func:`zero`, and the penalties :func:`mcp`, :func:`scad`,
:func:`l1`, :func:`box` (each optionally restricted to a box, e.g. ``x >= 0``), whose
proximal maps are exact and vectorized.

Conventions: ``prox(v, t) = argmin_x f(x) + ||x - v||^2 / (2 t)`` for ``t > 0``; an
indicator's ``f`` returns ``inf`` outside its set. ``curvature`` is a lower bound on the
curvature of f (``f - curvature/2 ||x||^2`` is convex): the strong-convexity modulus of a
strongly convex f, ``0`` for a convex one, ``-1/gamma`` for MCP, ``-1/(a - 1)`` for SCAD.
``lipschitz`` is the Lipschitz constant of ``grad`` (None: not smooth or unknown).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from icml26_core.validation import check_float

from prox_admm._ops import sym_extreme_eigs

Array = np.ndarray


@dataclass
class Subproblem:
    """The smooth part of one block's subproblem, handed to a user ``solve``.

    The block update is ``argmin_x f(x) + 0.5 x^T M x + c^T x``, where ``M = sum_k rho_k
    A_ki^T A_ki + P_i`` (symmetric positive semidefinite) and ``c`` collects the
    multipliers, the other blocks and the proximal centre.

    Attributes:
        x_k: The block's current value, shape ``(d,)`` (a good warm start).
        c: Linear coefficient, shape ``(d,)``.
        matvec: ``x -> M @ x``.
        M: ``M`` itself when it could be formed (dense or sparse array), else None.
    """

    x_k: Array
    c: Array
    matvec: Callable[[Array], Array]
    M: Any = None

    def value(self, x: Array) -> float:
        """``0.5 x^T M x + c^T x`` (without f)."""
        return float(0.5 * x @ self.matvec(x) + self.c @ x)


@dataclass
class Block:
    """One block f_i of the objective sum_i f_i(x_i).

    Args:
        f: ``f(x) -> float`` (``inf`` outside the domain). Needed for objectives and
            for checking descent; optional for solving.
        grad: ``grad(x) -> array``, shape ``(d,)``, for smooth f.
        prox: ``prox(v, t) -> array``: ``argmin_x f(x) + ||x - v||^2 / (2t)``.
        solve: ``solve(sub: Subproblem) -> array``: exact minimizer of
            ``f(x) + 0.5 x^T M x + c^T x`` (see :class:`Subproblem`).
        lipschitz: Lipschitz constant of ``grad`` (None if not smooth or unknown).
        curvature: Lower bound of f's curvature: > 0 strongly convex, 0 convex, < 0
            weakly convex (nonconvex), e.g. ``-1/gamma`` for MCP.
        name: Label in reports.
        Q: For a quadratic ``0.5 x^T Q x + q^T x + c0``: Q (dense or sparse, symmetric).
        q: Its linear term.
        c0: Its constant.

    Raises:
        TypeError: If a given callable is not callable.
        ValueError: If no way to update the block is given (none of grad, prox, solve, Q).

    Example:
        >>> import numpy as np
        >>> b = mcp(lam=0.5, gamma=3.0, nonneg=True)
        >>> b.prox(np.array([-1.0, 0.2, 1.0, 4.0]), 1.0)
        array([0.  , 0.  , 0.75, 4.  ])
    """

    f: Callable[[Array], float] | None = None
    grad: Callable[[Array], Array] | None = None
    prox: Callable[[Array, float], Array] | None = None
    solve: Callable[[Subproblem], Array] | None = None
    lipschitz: float | None = None
    curvature: float = 0.0
    name: str = ""
    Q: Any = None
    q: Array | None = None
    c0: float = 0.0
    _info: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for nm in ("f", "grad", "prox", "solve"):
            v = getattr(self, nm)
            if v is not None and not callable(v):
                raise TypeError(f"Block.{nm} must be callable, got {type(v).__name__}")
        if self.grad is None and self.prox is None and self.solve is None and self.Q is None:
            raise ValueError(
                "Block needs at least one of grad, prox, solve or a quadratic Q to be updated"
            )
        self.curvature = check_float("curvature", self.curvature)
        if self.lipschitz is not None:
            self.lipschitz = check_float("lipschitz", self.lipschitz, low=0.0)

    @property
    def is_quadratic(self) -> bool:
        """Whether the block is a quadratic with known Q (closed-form updates)."""
        return self.Q is not None

    @property
    def smooth(self) -> bool:
        """Whether f has a gradient with a known Lipschitz constant."""
        return self.grad is not None and self.lipschitz is not None

    def value(self, x: Array) -> float:
        """``f(x)``, or NaN when f was not given."""
        return float("nan") if self.f is None else float(self.f(x))


def _quad_parts(Q: Any, q: Any, d: int | None) -> tuple[Any, Array, int]:
    from prox_admm._ops import SMALL

    if sp.issparse(Q) and max(Q.shape) <= SMALL:
        Q = Q.toarray()
    if sp.issparse(Q):
        Qm: Any = sp.csr_array(Q, dtype=np.float64)
        if not np.all(np.isfinite(Qm.data)):
            raise ValueError("Q holds NaN or inf")
        asym = abs(Qm - Qm.T)
        if asym.nnz and float(asym.max()) > 1e-10 * max(float(abs(Qm).max()), 1.0):
            raise ValueError("Q must be symmetric")
    else:
        Qm = np.asarray(Q, dtype=np.float64)
        if Qm.ndim == 0:
            if d is None:
                raise ValueError("a scalar Q needs the dimension d")
            Qm = float(Qm) * np.eye(d)
        if Qm.ndim != 2 or Qm.shape[0] != Qm.shape[1]:
            raise ValueError(f"Q must be a square matrix, got shape {Qm.shape}")
        if not np.all(np.isfinite(Qm)):
            raise ValueError("Q holds NaN or inf")
        if not np.allclose(Qm, Qm.T, atol=1e-10 * max(1.0, float(np.abs(Qm).max(initial=0)))):
            raise ValueError("Q must be symmetric")
    n = int(Qm.shape[0])
    qv = np.zeros(n) if q is None else np.asarray(q, dtype=np.float64).ravel()
    if qv.shape != (n,):
        raise ValueError(f"q must have shape ({n},) to match Q, got {qv.shape}")
    if not np.all(np.isfinite(qv)):
        raise ValueError("q holds NaN or inf")
    return Qm, qv, n


def quadratic(
    Q: Any, q: Any = None, c0: float = 0.0, *, d: int | None = None, name: str = ""
) -> Block:
    """The block ``f(x) = 0.5 x^T Q x + q^T x + c0``, updated in closed form.

    Args:
        Q: Symmetric matrix, shape ``(d, d)``, dense or scipy sparse (or a scalar with ``d``).
        q: Linear term, shape ``(d,)``; zeros if None.
        c0: Constant.
        d: Dimension, needed only when Q is a scalar.
        name: Label.

    Returns:
        The :class:`Block` (``lipschitz = ||Q||_2``, ``curvature = lambda_min(Q)``).

    Raises:
        ValueError: If Q is not square and symmetric, q does not match, or NaN/inf.
    """
    Qm, qv, n = _quad_parts(Q, q, d)
    lo, hi = sym_extreme_eigs(Qm, n)
    c0 = float(c0)

    def f(x: Array) -> float:
        return float(0.5 * x @ (Qm @ x) + qv @ x + c0)

    def grad(x: Array) -> Array:
        return np.asarray(Qm @ x + qv, dtype=np.float64)

    return Block(f=f, grad=grad, lipschitz=max(hi, 0.0), curvature=lo, name=name, Q=Qm, q=qv, c0=c0)


def zero(d: int, name: str = "0") -> Block:
    """The block ``f = 0`` on R^d (a quadratic with Q = 0)."""
    return quadratic(sp.csr_array((d, d)), np.zeros(d), name=name)


def least_squares(X: Any, y: Any, scale: float = 1.0, ridge: float = 0.0, name: str = "") -> Block:
    """``f(x) = (scale / 2) ||X x - y||^2 + (ridge / 2) ||x||^2`` as a quadratic block.

    Args:
        X: Design matrix, shape ``(n, d)``, dense or sparse.
        y: Targets, shape ``(n,)``.
        scale: Weight of the data fit (e.g. ``1/n_total`` for a mean squared error).
        ridge: L2 weight, >= 0.
        name: Label.
    """
    scale = check_float("scale", scale, low=0.0, low_inclusive=False)
    ridge = check_float("ridge", ridge, low=0.0)
    Xm = sp.csr_array(X, dtype=np.float64) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    yv = np.asarray(y, dtype=np.float64).ravel()
    if Xm.ndim != 2 or yv.shape != (Xm.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,), got {Xm.shape} and {yv.shape}")
    G = Xm.T @ Xm
    Q = scale * G + ridge * (sp.eye_array(Xm.shape[1]) if sp.issparse(G) else np.eye(Xm.shape[1]))
    return quadratic(Q, -scale * (Xm.T @ yv), 0.5 * scale * float(yv @ yv), name=name)


# --------------------------------------------------------------------- penalties


def _bounds(lower: Any, upper: Any) -> tuple[Any, Any]:
    lo = -np.inf if lower is None else lower
    hi = np.inf if upper is None else upper
    if np.any(np.asarray(lo) > np.asarray(hi)):
        raise ValueError("lower must not exceed upper")
    return lo, hi


def _in_box(x: Array, lo: Any, hi: Any) -> bool:
    return bool(np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12))


def _prox_even_separable(
    v: Array,
    t: float,
    pen: Callable[[Array], Array],
    cands: Callable[[Array, float], list[Array]],
    lo: Any,
    hi: Any,
) -> Array:
    """Exact prox of an even separable penalty, nondecreasing in |x|, on a box containing 0.

    For ``v_j >= 0`` the minimizer lies in ``[0, hi_j]`` (a negative point is beaten by 0),
    for ``v_j < 0`` in ``[lo_j, 0]``; by symmetry we work with ``|v|`` and the bound on its
    side. ``cands`` gives, for each smooth piece of the penalty, its ends and its stationary
    point where it is convex; clipped to ``[0, bound]`` and joined by the bound itself, they
    contain the minimizer, which is picked by value.
    """
    v = np.asarray(v, dtype=np.float64)
    a = np.abs(v)
    s = np.where(v < 0, -1.0, 1.0)
    bound = np.where(
        v < 0,
        -np.broadcast_to(np.asarray(lo, dtype=np.float64), v.shape),
        np.broadcast_to(np.asarray(hi, dtype=np.float64), v.shape),
    )
    C = list(cands(a, float(t)))
    fin = np.isfinite(bound)
    if np.any(fin):
        C.append(np.where(fin, bound, 0.0))
    Cm = np.clip(np.stack(C), 0.0, bound)
    obj = pen(Cm) + (Cm - a) ** 2 / (2.0 * t)
    return s * Cm[np.argmin(obj, axis=0), np.arange(a.size)]


def _check_box(lo: Any, hi: Any) -> None:
    if np.any(np.asarray(lo) > 0) or np.any(np.asarray(hi) < 0):
        raise ValueError("the box of a penalty block must contain 0")


def mcp(
    lam: float,
    gamma: float,
    *,
    nonneg: bool = False,
    lower: Any = None,
    upper: Any = None,
    name: str = "MCP",
) -> Block:
    """Minimax concave penalty ``sum_j MCP_{lam, gamma}(x_j)``, optionally on a box.

    ``MCP(x) = lam |x| - x^2 / (2 gamma)`` for ``|x| <= gamma lam`` and ``gamma lam^2 / 2``
    beyond (Zhang, 2010). Weakly convex with curvature ``-1/gamma``. The prox is exact for
    every ``t > 0`` (best of the stationary points and the region ends); with a box that
    contains 0 (``nonneg=True`` is ``[0, inf)``) it is the clipped prox ("MCP then clip").

    Args:
        lam: Penalty level, > 0.
        gamma: Concavity, > 0 (the usual range is > 1; 3 is common).
        nonneg: Restrict to ``x >= 0`` (overrides ``lower`` with 0).
        lower: Lower bounds (scalar or array), containing 0 with ``upper``.
        upper: Upper bounds.
        name: Label.

    Returns:
        The :class:`Block` (``f`` is ``inf`` outside the box).

    Raises:
        ValueError: If ``lam <= 0``, ``gamma <= 0``, or the box excludes 0.
    """
    lam = check_float("lam", lam, low=0.0, low_inclusive=False)
    gamma = check_float("gamma", gamma, low=0.0, low_inclusive=False)
    lo, hi = _bounds(0.0 if nonneg else lower, upper)
    _check_box(lo, hi)
    gl = gamma * lam

    def pen(a: Array) -> Array:
        a = np.abs(a)
        return np.where(a <= gl, lam * a - a * a / (2 * gamma), 0.5 * gamma * lam * lam)

    def cands(a: Array, t: float) -> list[Array]:
        out = [np.zeros_like(a), np.full_like(a, gl), np.maximum(a, gl)]
        den = 1.0 - t / gamma
        if den > 0:
            out.append(np.clip((a - t * lam) / den, 0.0, gl))
        return out

    def prox(v: Array, t: float) -> Array:
        return _prox_even_separable(v, t, pen, cands, lo, hi)

    def f(x: Array) -> float:
        return float(np.sum(pen(x))) if _in_box(x, lo, hi) else float("inf")

    return Block(
        f=f,
        prox=prox,
        curvature=-1.0 / gamma,
        name=name,
        _info={"kind": "mcp", "lam": lam, "gamma": gamma, "lower": lo, "upper": hi},
    )


def scad(
    lam: float,
    a: float = 3.7,
    *,
    nonneg: bool = False,
    lower: Any = None,
    upper: Any = None,
    name: str = "SCAD",
) -> Block:
    """Smoothly clipped absolute deviation penalty (Fan & Li, 2001), optionally on a box.

    ``SCAD(x) = lam |x|`` for ``|x| <= lam``; ``(2 a lam |x| - x^2 - lam^2) / (2 (a - 1))``
    for ``lam < |x| <= a lam``; ``lam^2 (a + 1) / 2`` beyond. Curvature ``-1/(a - 1)``.
    Exact prox for every ``t > 0``; with a box containing 0, the clipped prox.

    Args:
        lam: Penalty level, > 0.
        a: Shape, > 2 (3.7 is Fan & Li's choice).
        nonneg: Restrict to ``x >= 0``.
        lower: Lower bounds.
        upper: Upper bounds.
        name: Label.

    Raises:
        ValueError: If ``lam <= 0``, ``a <= 2`` or the box excludes 0.
    """
    lam = check_float("lam", lam, low=0.0, low_inclusive=False)
    a = check_float("a", a, low=2.0, low_inclusive=False)
    lo, hi = _bounds(0.0 if nonneg else lower, upper)
    _check_box(lo, hi)

    def pen(x: Array) -> Array:
        x = np.abs(x)
        mid = (2 * a * lam * x - x * x - lam * lam) / (2 * (a - 1))
        return np.where(x <= lam, lam * x, np.where(x <= a * lam, mid, 0.5 * lam * lam * (a + 1)))

    def cands(v: Array, t: float) -> list[Array]:
        out = [
            np.zeros_like(v),
            np.full_like(v, lam),
            np.full_like(v, a * lam),
            np.clip(v - t * lam, 0.0, lam),
            np.maximum(v, a * lam),
        ]
        den = 1.0 - t / (a - 1)
        if den > 0:
            out.append(np.clip((v - t * a * lam / (a - 1)) / den, lam, a * lam))
        return out

    def prox(v: Array, t: float) -> Array:
        return _prox_even_separable(v, t, pen, cands, lo, hi)

    def f(x: Array) -> float:
        return float(np.sum(pen(x))) if _in_box(x, lo, hi) else float("inf")

    return Block(
        f=f,
        prox=prox,
        curvature=-1.0 / (a - 1.0),
        name=name,
        _info={"kind": "scad", "lam": lam, "a": a, "lower": lo, "upper": hi},
    )


def l1(lam: float, *, lower: Any = None, upper: Any = None, name: str = "l1") -> Block:
    """``lam ||x||_1``, optionally on a box containing 0; prox: soft threshold then clip."""
    lam = check_float("lam", lam, low=0.0)
    lo, hi = _bounds(lower, upper)
    _check_box(lo, hi)

    def prox(v: Array, t: float) -> Array:
        v = np.asarray(v, dtype=np.float64)
        return np.clip(np.sign(v) * np.maximum(np.abs(v) - t * lam, 0.0), lo, hi)

    def f(x: Array) -> float:
        return float(lam * np.sum(np.abs(x))) if _in_box(x, lo, hi) else float("inf")

    return Block(
        f=f,
        prox=prox,
        curvature=0.0,
        name=name,
        _info={"kind": "l1", "lam": lam, "lower": lo, "upper": hi},
    )


def box(lower: Any = None, upper: Any = None, *, name: str = "box") -> Block:
    """Indicator of ``lower <= x <= upper``; prox: projection (clip)."""
    lo, hi = _bounds(lower, upper)

    def prox(v: Array, t: float) -> Array:
        return np.clip(np.asarray(v, dtype=np.float64), lo, hi)

    def f(x: Array) -> float:
        return 0.0 if _in_box(x, lo, hi) else float("inf")

    return Block(
        f=f, prox=prox, curvature=0.0, name=name, _info={"kind": "box", "lower": lo, "upper": hi}
    )


def nonneg(name: str = "x >= 0") -> Block:
    """Indicator of the non-negative orthant; prox: ``max(v, 0)``."""
    return box(0.0, None, name=name)
