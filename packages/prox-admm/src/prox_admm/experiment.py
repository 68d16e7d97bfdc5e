"""Experiment ``prox-admm``: convergence of proximal ADMM on block anti-upper triangular problems.

Four parts, every verdict decided by the core's claim builders:

1. **Nonconvex**: MCP-penalized non-negative least squares on four real regression sets
   (diabetes, star98, autompg, boston_housing; standardized), items = data set x MCP
   concavity gamma in {1.5, 3} x lambda in {0.05, 0.2} lambda_max. Ours in two splits:
   ``consensus`` (inside our assumption; rho from the documented condition,
   :func:`prox_admm.theory.suggest_rho`) and ``copies`` (the issue's split
   ``[[I, 0, -I], [I, -I, 0]]``, outside it; rho tuned on validation items, lambda =
   0.1 lambda_max, that no verdict reads). Reference: the best of 20 restarts of
   proximal gradient (MCP-then-clip prox). Beside it: proximal gradient from the same
   start as ours, skglm's ``MCPRegression(positive=True)`` (the reference library), and
   the floor (stop at once: beta = 0).
2. **Strongly convex, four linear-rate scenarios** (our reading of the abstract's four):
   S1 all f_i strongly convex; S2 only the last block strongly convex (the others
   convex, rank-deficient), its anti-diagonal block of full column rank; S3 smooth and
   strongly convex with linearized proximal terms (gradient steps); S4 a single coupling
   row. Random quadratics and real ones (diabetes, a random third of the rows per
   block), 5 seeds each; rho tuned per scenario and source on 3 validation seeds.
   The rate is the fitted slope of log KKT residual per iteration.
3. **Convex QP with slack blocks**: box-constrained elastic net on the four data sets
   (two penalty levels), against cvxpy with CLARABEL (interior point, tight tolerances;
   the reference) and OSQP (an ADMM QP solver, tight tolerances, polished).
4. **Chen, He, Ye & Yuan's example**: direct 3-block ADMM vs proximal ADMM with the
   generic rule ``tau_i = rho (m - 1) ||A_i||^2`` (:func:`prox_admm.theory.jacobi_tau`,
   not tuned on this example), from 10 random starts; the spectral radius of the
   iteration map for the issue's tau grid beside it.

Thresholds (the issue's, fixed before any run): KKT residual 1e-6 (absolute, on
standardized data), relative objective margins 1e-6 (convex, vs CLARABEL) and 1% (vs the
multi-start reference), fitted rate < 1 with R^2 > 0.95. All numpy work runs on one BLAS
thread.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table
from scipy.stats import linregress

from prox_admm.admm import Linearized, ProximalADMM
from prox_admm.baselines import multistart_prox_gradient, prox_gradient_mcp
from prox_admm.blocks import quadratic
from prox_admm.matrix import BlockMatrix
from prox_admm.problems import (
    chen_example,
    elastic_net_box,
    mcp_nonneg_objective,
    mcp_nonneg_regression,
)
from prox_admm.theory import (
    check_assumptions,
    descent_certificate,
    iteration_spectral_radius,
    jacobi_tau,
    suggest_rho,
)

DATASETS = ("diabetes", "star98", "autompg", "boston_housing")
KKT_TARGET = 1e-6
"""The issue's KKT threshold (absolute residuals on standardized data)."""
SOLVE_TOL = 1e-8
"""Our stopping tolerance: two orders below the threshold the claim reads."""
CONVEX_MARGIN = 1e-6
"""'Convex objectives match cvxpy within 1e-6 relative' (the issue's margin)."""
NONCONVEX_MARGIN = 0.01
"""'Nonconvex objectives within 1% of the multi-start reference' (the issue's margin)."""
R2_MIN = 0.95
"""'Fitted linear rate < 1 with R^2 > 0.95' (the issue's threshold)."""
RHO_GRID = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
"""Penalties tried on validation items/seeds where no documented condition applies."""
SCENARIOS = {
    "S1": "all f_i strongly convex",
    "S2": "only the last block strongly convex, anti-diagonal blocks of full column rank",
    "S3": "smooth + strongly convex, linearized proximal terms",
    "S4": "single coupling row (3 blocks)",
}


def _standardized(name: str) -> tuple[np.ndarray, np.ndarray]:
    from icml26_core.datasets import load_tabular

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y, _ = load_tabular(name)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    sd = X.std(axis=0)
    keep = sd > 0
    X = (X[:, keep] - X[:, keep].mean(axis=0)) / sd[keep]
    y = (y - y.mean()) / y.std()
    return X, y


def _rel_gap(a: float, ref: float) -> float:
    return (a - ref) / abs(ref) if np.isfinite(a) and np.isfinite(ref) else float("nan")


# --------------------------------------------------------------------- part 1


def _nonconvex(ctx: RunContext, data: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    gammas = ctx.pick(smoke=(3.0,), default=(1.5, 3.0))
    grid = ctx.pick(smoke=(0.3, 1.0, 3.0), default=RHO_GRID)
    lam_fracs = ctx.pick(smoke=(0.05, 0.2), default=(0.05, 0.2), full=(0.02, 0.05, 0.2, 0.4))
    n_starts = ctx.pick(smoke=5, default=20)
    use_skglm = ctx.scale != "smoke"
    max_iter = ctx.pick(smoke=5000, default=20000)

    def lam_of(X: np.ndarray, y: np.ndarray, frac: float) -> float:
        return frac * float(np.max(np.abs(X.T @ y))) / X.shape[0]

    # rho of the copies split (no documented condition applies): validation items only
    val = [(nm, g, 0.1) for nm in data for g in gammas]
    best_rho, best_med = grid[0], np.inf
    for rho in grid:
        its = []
        for nm, g, fr in val:
            X, y = data[nm]
            pr = mcp_nonneg_regression(X, y, lam_of(X, y, fr), g, split="copies")
            r = pr.solver(rho=rho, max_iter=max_iter, tol=SOLVE_TOL).solve()
            its.append(r.n_iter if r.converged else np.inf)
        med = float(np.median(its))
        if med < best_med:
            best_rho, best_med = rho, med
    items = [(nm, g, fr) for nm in data for g in gammas for fr in lam_fracs]
    out: dict[str, Any] = {"items": [], "copies_rho": best_rho}
    for nm, g, fr in ctx.progress(items, "nonconvex MCP items"):
        X, y = data[nm]
        lam = lam_of(X, y, fr)
        row: dict[str, Any] = {"data": nm, "gamma": g, "lam/lam_max": fr, "lam": lam}
        pc = mcp_nonneg_regression(X, y, lam, g, split="consensus")
        rho_c, cert = suggest_rho(pc.blocks, pc.A, pc.b)
        t0 = time.perf_counter()
        rc = pc.solver(rho=rho_c, max_iter=max_iter, tol=SOLVE_TOL).solve()
        row["consensus"] = {
            "objective": pc.objective(pc.solution(rc.x)),
            "kkt": rc.kkt,
            "iters": rc.n_iter,
            "time": time.perf_counter() - t0,
            "rho": rho_c,
            "certificate": cert.ok,
            "full_column_rank": check_assumptions(pc.A).whole_full_column_rank,
        }
        merit = cert.merit(rc)
        inc = np.diff(merit)[0:]  # iteration 1 -> 2 onwards
        scale = np.maximum(np.abs(merit[1:]), 1.0)
        row["consensus"]["merit_max_rel_increase"] = float(np.max(inc / scale)) if inc.size else 0.0
        pp = mcp_nonneg_regression(X, y, lam, g, split="copies")
        t0 = time.perf_counter()
        rp = pp.solver(rho=best_rho, max_iter=max_iter, tol=SOLVE_TOL).solve()
        row["copies"] = {
            "objective": pp.objective(pp.solution(rp.x)),
            "kkt": rp.kkt,
            "iters": rp.n_iter,
            "time": time.perf_counter() - t0,
            "rho": best_rho,
            "certificate": False,
            "full_column_rank": check_assumptions(pp.A).whole_full_column_rank,
        }
        t0 = time.perf_counter()
        pg = prox_gradient_mcp(X, y, lam, g, max_iter=max_iter, tol=SOLVE_TOL)
        row["PG"] = {
            "objective": pg.objective,
            "iters": pg.n_iter,
            "time": time.perf_counter() - t0,
        }
        t0 = time.perf_counter()
        ms = multistart_prox_gradient(
            X, y, lam, g, n_starts=n_starts, seed=ctx.seed, max_iter=max_iter, tol=SOLVE_TOL
        )
        row["PG multistart"] = {
            "objective": ms.objective,
            "iters": ms.n_iter,
            "time": time.perf_counter() - t0,
            "n_starts": ms.n_starts,
        }
        if use_skglm:
            from skglm import MCPRegression

            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sk = MCPRegression(
                    alpha=lam, gamma=g, positive=True, fit_intercept=False, tol=1e-10, max_iter=200
                ).fit(X, y)
            row["skglm"] = {
                "objective": mcp_nonneg_objective(X, y, lam, g, sk.coef_),
                "time": time.perf_counter() - t0,
            }
        row["floor"] = {"objective": mcp_nonneg_objective(X, y, lam, g, np.zeros(X.shape[1]))}
        out["items"].append(row)
    return out


# --------------------------------------------------------------------- part 2


def _scenario_problem(
    scen: str, seed: int, source: str, real: tuple[np.ndarray, np.ndarray]
) -> tuple:
    rng = np.random.default_rng(
        10_000 * (1 + list(SCENARIOS).index(scen)) + seed + (5000 if source != "random" else 0)
    )
    Xd, yd = real
    d = 8 if source == "random" else Xd.shape[1]
    m, p = 3, (1 if scen == "S4" else 2)
    parts = np.array_split(rng.permutation(len(yd)), m)
    blocks = []
    for i in range(m):
        strong = scen != "S2" or i == m - 1
        if source == "random":
            M = rng.standard_normal((d, d if strong else d // 2))
            Q = M @ M.T / d + (0.1 * np.eye(d) if strong else 0.0)
            q = rng.standard_normal(d)
        else:
            Xi, yi = Xd[parts[i]].copy(), yd[parts[i]]
            if not strong:
                Xi[:, d // 2 :] = 0.0  # convex, not strongly: half the coordinates unseen
            Q = Xi.T @ Xi / len(yi) + (0.1 * np.eye(d) if strong else 0.0)
            q = -Xi.T @ yi / len(yi)
        blocks.append(quadratic(Q, q, name=f"f_{i}"))
    Ab = {(k, j): rng.standard_normal((d, d)) / np.sqrt(d) for k in range(p) for j in range(m - k)}
    A = BlockMatrix(Ab, ([d] * p, [d] * m))
    xf = [rng.standard_normal(d) for _ in range(m)]
    b = A.residuals(xf, [np.zeros(d)] * p)
    prox = Linearized() if scen == "S3" else None
    return blocks, A, b, prox


def _fit_rate(kkt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Window: from iteration 1 until the KKT residual first drops below 1e-10 (or the end)."""
    below = np.flatnonzero(kkt <= 1e-10)
    end = int(below[0]) + 1 if below.size else kkt.size
    end = max(end, min(kkt.size, 10))
    it = np.arange(1, end + 1, dtype=float)
    return it, kkt[:end]


def _strongly_convex(ctx: RunContext, real: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    n_seeds = ctx.pick(smoke=1, default=5, full=20)
    n_val = ctx.pick(smoke=1, default=3)
    grid = ctx.pick(smoke=(1.0, 3.0), default=RHO_GRID)
    max_iter = 20000
    out: dict[str, Any] = {}
    for scen in ctx.progress(list(SCENARIOS), "strongly convex scenarios"):
        for source in ("random", "diabetes"):
            best_rho, best_med = grid[0], np.inf
            for rho in grid:
                its = []
                for vs in range(n_val):
                    bl, A, b, pt = _scenario_problem(scen, 1_000_000 + vs, source, real)
                    r = ProximalADMM(
                        bl, A, b, rho=rho, prox_terms=pt, max_iter=5000, tol=1e-10
                    ).solve()
                    its.append(r.n_iter if r.converged else np.inf)
                med = float(np.median(its))
                if med < best_med:
                    best_rho, best_med = rho, med
            runs = []
            for seed in range(n_seeds):
                bl, A, b, pt = _scenario_problem(scen, seed, source, real)
                solver = ProximalADMM(
                    bl, A, b, rho=best_rho, prox_terms=pt, max_iter=max_iter, tol=1e-11
                )
                x0 = [np.zeros(dd) for dd in A.col_sizes]
                floor = max(
                    float(np.linalg.norm(np.concatenate(A.residuals(x0, b)))),
                    float(
                        np.linalg.norm(
                            np.concatenate([blk.grad(x) for blk, x in zip(bl, x0, strict=True)])
                        )
                    ),
                )
                t0 = time.perf_counter()
                r = solver.solve()
                el = time.perf_counter() - t0
                it, k = _fit_rate(r.history["kkt"])
                fit = linregress(it, np.log(np.maximum(k, 1e-300)))
                rep = check_assumptions(A, b)
                runs.append(
                    {
                        "seed": seed,
                        "rho": best_rho,
                        "kkt": r.kkt,
                        "iters": r.n_iter,
                        "time": el,
                        "converged": r.converged,
                        "rate": float(np.exp(fit.slope)),
                        "r2": float(fit.rvalue**2),
                        "x": it.tolist(),
                        "y": k.tolist(),
                        "floor_kkt": floor,
                        "certificate": descent_certificate(solver).ok,
                        "full_column_rank": rep.whole_full_column_rank,
                        "anti_diag_fcr": all(rr.full_column_rank for rr in rep.rows),
                    }
                )
            out[(scen, source)] = runs
    return out


# --------------------------------------------------------------------- part 3


def _cvxpy_enet(
    X: np.ndarray,
    y: np.ndarray,
    alpha: float,
    l1r: float,
    lo: np.ndarray,
    hi: np.ndarray,
    solver: str,
) -> tuple[np.ndarray, float]:
    import cvxpy as cp

    n, d = X.shape
    beta = cp.Variable(d)
    obj = (
        cp.sum_squares(X @ beta - y) / (2 * n)
        + alpha * l1r * cp.norm1(beta)
        + alpha * (1 - l1r) / 2 * cp.sum_squares(beta)
    )
    prob = cp.Problem(cp.Minimize(obj), [beta >= lo, beta <= hi])
    t0 = time.perf_counter()
    if solver == "CLARABEL":
        prob.solve(
            solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500
        )
    else:
        prob.solve(solver="OSQP", eps_abs=1e-10, eps_rel=1e-10, max_iter=1_000_000, polish=True)
    return np.asarray(beta.value, dtype=np.float64), time.perf_counter() - t0


def _enet_value(X: np.ndarray, y: np.ndarray, alpha: float, l1r: float, beta: np.ndarray) -> float:
    r = X @ beta - y
    return float(
        r @ r / (2 * X.shape[0])
        + alpha * l1r * np.abs(beta).sum()
        + alpha * (1 - l1r) / 2 * beta @ beta
    )


def _convex_qp(ctx: RunContext, data: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    fracs = ctx.pick(smoke=(0.05,), default=(0.01, 0.1))
    grid = ctx.pick(smoke=(0.3, 1.0, 3.0), default=RHO_GRID)
    l1r = 0.5
    max_iter = ctx.pick(smoke=20000, default=50000)

    def setting(X: np.ndarray, y: np.ndarray, frac: float) -> tuple[float, np.ndarray, np.ndarray]:
        alpha = frac * float(np.max(np.abs(X.T @ y))) / (X.shape[0] * l1r)
        ols = np.linalg.lstsq(X, y, rcond=None)[0]
        c = 0.5 * float(np.max(np.abs(ols)))
        return alpha, -c * np.ones(X.shape[1]), c * np.ones(X.shape[1])

    best_rho, best_med = grid[0], np.inf
    for rho in grid:  # validation: penalty level 0.03 (read by no verdict)
        its = []
        for nm in data:
            X, y = data[nm]
            alpha, lo, hi = setting(X, y, 0.03)
            pr = elastic_net_box(X, y, alpha, l1r, lo, hi)
            r = pr.solver(rho=rho, max_iter=max_iter, tol=SOLVE_TOL).solve()
            its.append(r.n_iter if r.converged else np.inf)
        med = float(np.median(its))
        if med < best_med:
            best_rho, best_med = rho, med
    items = []
    for nm in ctx.progress(list(data), "convex QPs"):
        X, y = data[nm]
        for frac in fracs:
            alpha, lo, hi = setting(X, y, frac)
            pr = elastic_net_box(X, y, alpha, l1r, lo, hi)
            t0 = time.perf_counter()
            r = pr.solver(rho=best_rho, max_iter=max_iter, tol=SOLVE_TOL).solve()
            el = time.perf_counter() - t0
            beta = pr.solution(r.x)
            row: dict[str, Any] = {
                "data": nm,
                "alpha/alpha_max": frac,
                "ours": {
                    "objective": _enet_value(X, y, alpha, l1r, beta),
                    "kkt": r.kkt,
                    "iters": r.n_iter,
                    "time": el,
                    "rho": best_rho,
                    "full_column_rank": check_assumptions(pr.A).whole_full_column_rank,
                    "active_bounds": int(np.sum(np.isclose(np.abs(beta), hi))),
                },
            }
            for solver in ("CLARABEL", "OSQP"):
                b_ref, t_ref = _cvxpy_enet(X, y, alpha, l1r, lo, hi, solver)
                viol = float(max(np.max(lo - b_ref), np.max(b_ref - hi), 0.0))
                row[solver] = {
                    "objective": _enet_value(X, y, alpha, l1r, b_ref),
                    "time": t_ref,
                    "box_violation": viol,
                }
            row["floor"] = {"objective": _enet_value(X, y, alpha, l1r, np.zeros(X.shape[1]))}
            items.append(row)
    return {"items": items, "rho": best_rho}


# --------------------------------------------------------------------- part 4


def _chen(ctx: RunContext) -> dict[str, Any]:
    n_starts = ctx.pick(smoke=2, default=10)
    iters = 3000
    prob = chen_example()
    rule = jacobi_tau(prob.A, 1.0)
    grid: list[tuple[str, Any]] = [
        ("0 (direct)", 0.0),
        ("0.5", 0.5),
        ("1", 1.0),
        ("2", 2.0),
        ("5", 5.0),
        ("10", 10.0),
        ("rule (6, 12, 18)", rule),
    ]
    x0s = [np.random.default_rng(ctx.seed + 100 + s).standard_normal(3) for s in range(n_starts)]
    rows = []
    runs: dict[str, list[dict[str, float]]] = {}
    for label, tau in grid:
        solver = prob.solver(
            rho=1.0,
            prox_terms=tau if isinstance(tau, list) else float(tau),
            max_iter=iters,
            tol=0.0,
        )
        rad, _ = iteration_spectral_radius(solver)
        starts = x0s if label.startswith(("0 ", "rule")) else x0s[: ctx.pick(smoke=0, default=1)]
        res = []
        for x0 in starts:
            r = solver.solve(x0)
            k0 = float(np.linalg.norm(prob.A.to_dense() @ x0))
            res.append({"kkt0": k0, "kkt": r.kkt, "iters": r.n_iter, "diverged": r.diverged})
        runs[label] = res
        rows.append(
            {
                "tau": label,
                "spectral radius": rad,
                "kkt": float(np.median([q["kkt"] for q in res])) if res else None,
                "n": len(res),
            }
        )
    return {"rows": rows, "runs": runs, "iters": iters, "rule": rule}


# --------------------------------------------------------------------- run


def run(ctx: RunContext) -> Result:
    """Measure every part at ``ctx.scale`` and decide the claims with the core's builders."""
    from threadpoolctl import threadpool_limits

    names = ctx.pick(smoke=("diabetes",), default=DATASETS)
    with threadpool_limits(1):
        data = {nm: _standardized(nm) for nm in names}
        nc = _nonconvex(ctx, data)
        sc = _strongly_convex(ctx, data["diabetes"])
        qp = _convex_qp(ctx, data)
        ch = _chen(ctx)
    return _report(ctx, nc, sc, qp, ch)


def _report(ctx: RunContext, nc: dict, sc: dict, qp: dict, ch: dict) -> Result:
    tables: list[Table] = []
    claims: list[Claim] = []
    # ---- part 1 tables
    items = nc["items"]
    ref = np.array([it["PG multistart"]["objective"] for it in items])
    methods = ["consensus", "copies", "PG", "PG multistart", "skglm", "floor"]
    labels = {
        "consensus": "ours, consensus split (rho from our condition)",
        "copies": f"ours, copies split (rho = {nc['copies_rho']:g}, tuned on validation)",
        "PG": "proximal gradient, same start (0)",
        "PG multistart": "reference: best of PG restarts",
        "skglm": "skglm MCPRegression(positive=True)",
        "floor": "floor: stop at once (beta = 0)",
    }
    t1 = Table(
        f"Nonconvex: MCP non-negative regression on {len({it['data'] for it in items})} data sets "
        f"x gamma x lambda ({len(items)} items)",
        [
            "method",
            "mean rel. gap to ref.",
            "max rel. gap",
            "max KKT",
            "median iterations",
            "total time (s)",
            "n",
        ],
        note="rel. gap = (F - F_ref) / F_ref, F_ref the best of the proximal-gradient restarts; "
        "KKT: max of "
        "primal and dual residual (absolute, standardized data)",
    )
    gaps: dict[str, np.ndarray] = {}
    for m in methods:
        vals = [it[m] for it in items if m in it]
        if not vals:
            continue
        obj = np.array([v["objective"] for v in vals])
        g = (obj - ref[: len(obj)]) / np.abs(ref[: len(obj)])
        gaps[m] = g
        t1.add_row(
            **{
                "method": labels[m],
                "mean rel. gap to ref.": float(np.mean(g)),
                "max rel. gap": float(np.max(g)),
                "max KKT": float(np.max([v["kkt"] for v in vals])) if "kkt" in vals[0] else None,
                "median iterations": float(np.median([v["iters"] for v in vals]))
                if "iters" in vals[0]
                else None,
                "total time (s)": float(np.sum([v["time"] for v in vals]))
                if "time" in vals[0]
                else None,
                "n": len(vals),
            }
        )
    tables.append(t1)
    t1b = Table(
        "Nonconvex, per item: objective F of each method",
        [
            "data",
            "gamma",
            "lam/lam_max",
            "ref. F",
            "consensus",
            "copies",
            "PG",
            "skglm",
            "floor",
            "rho (consensus)",
            "iters (consensus)",
        ],
    )
    for it in items:
        t1b.add_row(
            **{
                "data": it["data"],
                "gamma": it["gamma"],
                "lam/lam_max": it["lam/lam_max"],
                "ref. F": it["PG multistart"]["objective"],
                "consensus": it["consensus"]["objective"],
                "copies": it["copies"]["objective"],
                "PG": it["PG"]["objective"],
                "skglm": it.get("skglm", {}).get("objective"),
                "floor": it["floor"]["objective"],
                "rho (consensus)": it["consensus"]["rho"],
                "iters (consensus)": it["consensus"]["iters"],
            }
        )
    tables.append(t1b)
    # ---- part 2 table
    t2 = Table(
        "Strongly convex scenarios: fitted linear rate of the KKT residual (per iteration)",
        [
            "scenario",
            "data",
            "rho",
            "median rate",
            "max rate",
            "min R^2",
            "max KKT",
            "median iterations",
            "floor KKT (stop at once)",
            "certificate holds",
            "whole A full col. rank",
            "n",
        ],
        note="rate = exp(slope of log KKT on iteration), fitted from iteration 1 until KKT <= "
        "1e-10; rho tuned "
        "on validation seeds; 'certificate' is our nonconvex descent condition at that rho "
        "(informative only)",
    )
    for (scen, source), runs in sc.items():
        t2.add_row(
            **{
                "scenario": f"{scen}: {SCENARIOS[scen]}",
                "data": source,
                "rho": runs[0]["rho"],
                "median rate": float(np.median([r["rate"] for r in runs])),
                "max rate": float(np.max([r["rate"] for r in runs])),
                "min R^2": float(np.min([r["r2"] for r in runs])),
                "max KKT": float(np.max([r["kkt"] for r in runs])),
                "median iterations": float(np.median([r["iters"] for r in runs])),
                "floor KKT (stop at once)": float(np.median([r["floor_kkt"] for r in runs])),
                "certificate holds": f"{sum(r['certificate'] for r in runs)}/{len(runs)}",
                "whole A full col. rank": any(r["full_column_rank"] for r in runs),
                "n": len(runs),
            }
        )
    tables.append(t2)
    # ---- part 3 table
    qitems = qp["items"]
    clar = np.array([it["CLARABEL"]["objective"] for it in qitems])
    t3 = Table(
        f"Convex QP with slack blocks: box-constrained elastic net ({len(qitems)} items)",
        [
            "method",
            "mean rel. gap to CLARABEL",
            "max |rel. gap|",
            "max KKT",
            "median iterations",
            "median time (s)",
            "max box violation",
            "n",
        ],
        note=f"ours: copies split (beta, L1 copy, box copy), rho = {qp['rho']:g} tuned on "
        "validation items; "
        "CLARABEL and OSQP through cvxpy (tolerances 1e-12 / 1e-10, OSQP polished); times include "
        "cvxpy's "
        "compilation",
    )
    for m in ("ours", "CLARABEL", "OSQP", "floor"):
        obj = np.array([it[m]["objective"] for it in qitems])
        g = (obj - clar) / np.abs(clar)
        t3.add_row(
            **{
                "method": {
                    "ours": "ours (proximal ADMM)",
                    "floor": "floor: stop at once (beta = 0)",
                }.get(m, f"cvxpy + {m}"),
                "mean rel. gap to CLARABEL": float(np.mean(g)),
                "max |rel. gap|": float(np.max(np.abs(g))),
                "max KKT": float(np.max([it[m]["kkt"] for it in qitems])) if m == "ours" else None,
                "median iterations": float(np.median([it[m]["iters"] for it in qitems]))
                if m == "ours"
                else None,
                "median time (s)": float(np.median([it[m]["time"] for it in qitems]))
                if m != "floor"
                else None,
                "max box violation": float(np.max([it[m]["box_violation"] for it in qitems]))
                if m in ("CLARABEL", "OSQP")
                else (0.0 if m == "ours" else None),
                "n": len(qitems),
            }
        )
    tables.append(t3)
    # ---- part 4 table
    t4 = Table(
        f"Chen et al.'s example (rho = 1, {ch['iters']} iterations, P_i = tau_i I)",
        ["tau", "spectral radius", "median KKT", "n"],
        note="spectral radius of the affine iteration map (< 1: converges); KKT: after the "
        "iterations; the rule "
        "tau_i = rho (m - 1) ||A_i||^2 is fixed in advance, not tuned here; floor: the KKT at the "
        "start "
        f"(median {np.median([q['kkt0'] for q in ch['runs']['0 (direct)']]):.3g})",
    )
    for r in ch["rows"]:
        t4.add_row(
            **{
                "tau": r["tau"],
                "spectral radius": r["spectral radius"],
                "median KKT": r["kkt"],
                "n": r["n"],
            }
        )
    tables.append(t4)

    # ---- claims
    kkts, n_fcr = [], 0
    for it in items:
        for m in ("consensus", "copies"):
            kkts.append(it[m]["kkt"])
            n_fcr += not it[m]["full_column_rank"]
    for runs in sc.values():
        for r in runs:
            kkts.append(r["kkt"])
            n_fcr += not r["full_column_rank"]
    for it in qitems:
        kkts.append(it["ours"]["kkt"])
        n_fcr += not it["ours"]["full_column_rank"]
    for q in ch["runs"]["rule (6, 12, 18)"]:
        kkts.append(q["kkt"])
    kkts_a = np.array(kkts)
    claims.append(
        Claim.check(
            "Proximal ADMM reaches a KKT residual below 1e-6 on every problem, including those "
            "whose whole "
            "constraint matrix lacks full column rank",
            f"max KKT residual over all {kkts_a.size} runs of ours (both MCP splits, the strongly "
            "convex scenarios, "
            "the QPs, Chen's example with the rule's tau) < 1e-6, and at least one of them "
            "without full column rank",
            {
                "runs": int(kkts_a.size),
                "max KKT": float(np.max(kkts_a)),
                "runs without full column rank": int(n_fcr),
                "runs above 1e-6": int(np.sum(kkts_a >= KKT_TARGET)),
            },
            lambda v: v["max KKT"] < KKT_TARGET and v["runs without full column rank"] > 0,
        )
    )
    for scen in SCENARIOS:
        runs = [r for source in ("random", "diabetes") for r in sc[(scen, source)]]
        worst = max(runs, key=lambda r: r["rate"])
        from icml26_core.stats import loglog_slope

        ups = [
            loglog_slope(
                r["x"], r["y"], expected=0.0, tol=0.0, alternative="less", scale="semilogy"
            ).ci_high
            for r in runs
        ]
        claims.append(
            Claim.all_of(
                f"Linear convergence, scenario {scen} ({SCENARIOS[scen]}; our reading of the "
                "abstract's scenarios)",
                [
                    Claim.slope(
                        f"{scen}, slowest of the {len(runs)} instances: rate < 1",
                        worst["x"],
                        worst["y"],
                        expected=0.0,
                        tol=0.0,
                        alternative="less",
                        scale="semilogy",
                        metric="log KKT residual per iteration",
                    ),
                    Claim.check(
                        f"{scen}, every instance: rate < 1 and a log-linear curve",
                        f"on each of the {len(runs)} instances the 95% CI of the slope lies below "
                        f"0 and R^2 > {R2_MIN}",
                        {
                            "max CI upper end of the slope": float(np.max(ups)),
                            "max rate": float(np.max([r["rate"] for r in runs])),
                            "min R^2": float(np.min([r["r2"] for r in runs])),
                            "n": len(runs),
                        },
                        lambda v: v["max CI upper end of the slope"] < 0 and v["min R^2"] > R2_MIN,
                    ),
                ],
                rule=f"random and diabetes quadratics, {len(runs)} instances: the slowest "
                "instance's fitted slope of log "
                "KKT per iteration has its 95% CI below 0 (rate < 1), and so has every "
                "instance's, each fit "
                f"with R^2 > {R2_MIN}",
            )
        )
    ours_q = np.array([it["ours"]["objective"] for it in qitems])
    claims.append(
        Claim.non_inferior(
            "Convex objectives match cvxpy (CLARABEL) within 1e-6 relative",
            ours_q,
            clar,
            margin=CONVEX_MARGIN,
            log_ratio=True,
            higher_is_better=False,
            names=("proximal ADMM", "CLARABEL"),
            metric="elastic-net objective",
        )
    )
    ours_nc = np.array([it["consensus"]["objective"] for it in items])
    claims.append(
        Claim.non_inferior(
            "Nonconvex objectives within 1% of the multi-start reference (consensus split, rho "
            "from our condition)",
            ours_nc,
            ref,
            margin=NONCONVEX_MARGIN,
            log_ratio=True,
            higher_is_better=False,
            names=("proximal ADMM", "best of PG restarts"),
            metric="MCP objective F",
        )
    )
    merit_inc = [it["consensus"]["merit_max_rel_increase"] for it in items]
    certs = [it["consensus"]["certificate"] for it in items]
    claims.append(
        Claim.check(
            "Ours: under our assumption and our parameter condition the merit function decreases "
            "monotonically "
            "(nonconvex MCP runs)",
            "on every consensus-split run (certificate holds at the chosen rho) the merit Phi^t = "
            "L(x^t, lam^t) + "
            "sum_i gamma_i ||x_i^t - x_i^{t-1}||^2 never increases from iteration 1 on (relative "
            "increase <= 1e-10)",
            {
                "runs": len(items),
                "certificate holds": int(sum(certs)),
                "max relative increase": float(np.max(merit_inc)),
            },
            lambda v: v["certificate holds"] == v["runs"] and v["max relative increase"] <= 1e-10,
        )
    )
    direct = ch["runs"]["0 (direct)"]
    prox = ch["runs"]["rule (6, 12, 18)"]
    claims.append(
        Claim.check(
            "Direct ADMM diverges on Chen's example while proximal ADMM converges",
            f"from each of {len(direct)} random starts, after {ch['iters']} iterations: direct "
            "ADMM's KKT residual "
            "> 1e6 times its start, proximal ADMM's (tau from the fixed rule) < 1e-6",
            {
                "starts": len(direct),
                "min growth (direct)": float(min(q["kkt"] / q["kkt0"] for q in direct)),
                "max KKT (proximal)": float(max(q["kkt"] for q in prox)),
                "spectral radius direct": ch["rows"][0]["spectral radius"],
                "spectral radius proximal": ch["rows"][-1]["spectral radius"],
            },
            lambda v: v["min growth (direct)"] > 1e6 and v["max KKT (proximal)"] < KKT_TARGET,
        )
    )
    notes = [
        "The paper's assumption and its four scenarios are not in the abstract: the assumption (R "
        "+ S), the "
        "parameter condition and the scenario definitions are ours (README, 'Design').",
        f"Nonconvex reference: best of {items[0]['PG multistart'].get('n_starts', '')} "
        "proximal-gradient restarts "
        "per item; nonconvex convergence is to stationary points, so objectives are compared, not "
        "iterates.",
        "Timing is not a claim here; see benchmarks/ for time to KKT 1e-6 against OSQP and "
        "CLARABEL.",
    ]
    data = {
        "nonconvex": items,
        "copies_rho": nc["copies_rho"],
        "qp": qitems,
        "qp_rho": qp["rho"],
        "chen": {"rows": ch["rows"], "runs": ch["runs"], "rule": ch["rule"]},
        "strongly_convex": {
            f"{s}/{src}": [{k: v for k, v in r.items() if k not in ("x", "y")} for r in runs]
            for (s, src), runs in sc.items()
        },
    }
    return Result(tables=tables, claims=claims, notes=notes, data=data)


EXPERIMENT = Experiment(
    name="prox-admm",
    title="Proximal ADMM for problems with block anti-upper triangular constraints (ICML 2026)",
    claim="proximal multi-block ADMM converges (KKT < 1e-6) without full column rank of the whole "
    "constraint "
    "matrix, linearly in four strongly convex scenarios, matching cvxpy and a multi-start "
    "nonconvex reference",
    run=run,
)
