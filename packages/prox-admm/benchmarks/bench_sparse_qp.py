"""Time to KKT 1e-6 on sparse QPs: proximal ADMM against OSQP and CLARABEL, and the 2-block merge.

Problem (banded, so every solver's sparse factorization stays cheap up to n = 1e5)::

    min 0.5 x^T Q x + q^T x   s.t.   -1 <= C x <= 1,   -0.5 <= x <= 0.5,

``Q = D^T D + diag(u)`` (D first differences, u ~ U(0.1, 1)), ``q ~ N(0, 1)``, C with n/2
rows and 3 nonzeros each within a band of width 10. Ours: :func:`prox_admm.qp_with_slacks`
with the two constraint groups as two block rows (blocks x, s_box, s_C), each row with
its own penalty. The 2-block merge: one stacked row ``[C; I] x - s = 0`` with one penalty
(OSQP's form). Penalties for both are tuned on a validation instance (n = 1000, another
seed) from the same grid, by iterations to the tolerance.

Times: ``compare_times`` (interleaved rounds after a warm-up, one process, one BLAS
thread), the ratio of medians with its bootstrap CI. Each timed call starts from the
data (ours: the factorization in ``ProximalADMM(...)`` and the solve; OSQP: ``setup``
and ``solve``; CLARABEL: ``DefaultSolver`` and ``solve``) so every side pays for its
factorization. Stopping rules differ (ours: 2-norms of the primal and dual residuals
<= 1e-6; OSQP: ``eps_abs = 1e-6, eps_rel = 0`` on inf-norms, adaptive rho, no polish;
CLARABEL: its defaults, 1e-8), so the table also gives one common measure of each
answer: ``max(||dist(C_all x, [l, u])||_2, ||Q x + q + C_all^T y||_2)``.

    uv run python packages/prox-admm/benchmarks/bench_sparse_qp.py            # n = 1e3, 1e4, 1e5
    uv run python packages/prox-admm/benchmarks/bench_sparse_qp.py --quick    # n = 1e3
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import scipy.sparse as sp
from icml26_core.timing import compare_times
from prox_admm import qp_with_slacks
from threadpoolctl import threadpool_limits

TOL = 1e-6
GRID = (0.3, 1.0, 3.0, 10.0)


def make_qp(n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    D = sp.diags_array([np.ones(n - 1), -np.ones(n - 1)], offsets=[0, 1], shape=(n - 1, n))
    Q = sp.csc_array(D.T @ D + sp.diags_array(rng.uniform(0.1, 1.0, n)))
    q = 3.0 * rng.standard_normal(n)
    m = n // 2
    rows = np.repeat(np.arange(m), 3)
    centre = np.repeat(rng.integers(0, n - 10, m), 3)
    cols = centre + np.concatenate([rng.choice(10, 3, replace=False) for _ in range(m)])
    C = sp.csr_array((rng.standard_normal(3 * m), (rows, cols)), shape=(m, n))
    C.sum_duplicates()
    return {"Q": Q, "q": q, "C": C, "lC": -1.0, "uC": 1.0, "lx": -0.5, "ux": 0.5, "n": n, "m": m}


def stacked(p: dict) -> tuple:
    n, m = p["n"], p["m"]
    A = sp.vstack([p["C"], sp.eye_array(n)]).tocsc()
    lo = np.concatenate([np.full(m, p["lC"]), np.full(n, p["lx"])])
    hi = np.concatenate([np.full(m, p["uC"]), np.full(n, p["ux"])])
    return A, lo, hi


def common_kkt(p: dict, x: np.ndarray, y: np.ndarray) -> float:
    A, lo, hi = stacked(p)
    ax = A @ x
    primal = np.linalg.norm(np.maximum(ax - hi, 0.0) + np.maximum(lo - ax, 0.0))
    dual = np.linalg.norm(p["Q"] @ x + p["q"] + A.T @ y)
    return float(max(primal, dual))


def ours(p: dict, rho: tuple[float, float], merged: bool = False, max_iter: int = 20000):
    if merged:
        A, lo, hi = stacked(p)
        prob = qp_with_slacks(p["Q"], p["q"], [(A, lo, hi)])
        solver = prob.solver(rho=rho[0], max_iter=max_iter, tol=TOL, record_objective=False)
    else:
        groups = [
            (p["C"], p["lC"], p["uC"]),
            (sp.eye_array(p["n"], format="csr"), p["lx"], p["ux"]),
        ]
        prob = qp_with_slacks(p["Q"], p["q"], groups)
        solver = prob.solver(rho=list(rho), max_iter=max_iter, tol=TOL, record_objective=False)
    res = solver.solve()
    y = np.concatenate(res.lam)
    return res, prob.solution(res.x), y


def osqp_solve(p: dict):
    import osqp

    A, lo, hi = stacked(p)
    s = osqp.OSQP()
    s.setup(
        sp.csc_matrix(sp.triu(p["Q"])),
        p["q"],
        sp.csc_matrix(A),
        lo,
        hi,
        eps_abs=TOL,
        eps_rel=0.0,
        polishing=False,
        verbose=False,
        max_iter=200000,
    )
    r = s.solve()
    return r, np.asarray(r.x), np.asarray(r.y)


def clarabel_solve(p: dict):
    import clarabel

    A, lo, hi = stacked(p)
    G = sp.vstack([A, -A]).tocsc()
    h = np.concatenate([hi, -lo])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    s = clarabel.DefaultSolver(
        sp.csc_matrix(sp.triu(p["Q"])),
        p["q"],
        sp.csc_matrix(G),
        h,
        [clarabel.NonnegativeConeT(G.shape[0])],
        settings,
    )
    r = s.solve()
    z = np.asarray(r.z)
    k = A.shape[0]
    return r, np.asarray(r.x), z[:k] - z[k:]


def ratio_text(c) -> str:
    """``t_ours / t_other`` (ratio of medians) with its bootstrap CI where there are >= 5 rounds."""
    r = c.median_a / c.median_b
    e = c.speedup()  # t_other / t_ours, paired rounds
    if np.isfinite(e.ci_low) and np.isfinite(e.ci_high) and e.ci_low > 0:
        return f"{r:.2f} [{1 / e.ci_high:.2f}, {1 / e.ci_low:.2f}]"
    return f"{r:.2f} ({len(c.times_a)} rounds)"


def tune(merged: bool) -> tuple[float, float]:
    p = make_qp(1000, seed=12345)  # validation instance, not timed
    best, best_it = (1.0, 1.0), np.inf
    pairs = [(r, r) for r in GRID] if merged else [(a, b) for a in GRID for b in GRID]
    for rho in pairs:
        res, _, _ = ours(p, rho, merged, max_iter=2000)
        it = res.n_iter if res.converged else np.inf
        if it < best_it:
            best, best_it = rho, it
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    ns = [1000] if args.quick else args.ns
    print(f"# load average {os.getloadavg()[0]:.1f} at start; one BLAS thread; tolerance {TOL:g}")
    with threadpool_limits(1):
        rho_rows, rho_merged = tune(False), tune(True)
        print(
            "# penalties tuned on a validation instance (n = 1000): per row (C, box) = "
            f"{rho_rows}, "
            f"merged = {rho_merged[0]}"
        )
        print(
            f"{'n':>7} {'solver':>22} {'iters':>7} {'KKT (common)':>13} {'median s':>9} "
            f"{'t / t_OSQP [95% CI]':>24} {'t / t_CLARABEL [95% CI]':>26}"
        )
        for n in ns:
            p = make_qp(n, seed=n)
            t0 = time.perf_counter()
            r2, x2, y2 = ours(p, rho_merged, merged=True)
            t_merged = time.perf_counter() - t0
            r3, x3, y3 = ours(p, rho_rows)
            ro, xo, yo = osqp_solve(p)
            rc, xc, yc = clarabel_solve(p)
            # the cold runs above are the warm-up; n = 1e5 gets 3 rounds (too few for a CI)
            reps = args.repeats if n < 100000 else 3
            vs_o = compare_times(
                lambda p=p: ours(p, rho_rows),
                lambda p=p: osqp_solve(p),
                repeats=reps,
                warmup=0,
                names=("ours", "OSQP"),
            )
            vs_c = compare_times(
                lambda p=p: ours(p, rho_rows),
                lambda p=p: clarabel_solve(p),
                repeats=reps,
                warmup=0,
                names=("ours", "CLARABEL"),
            )
            ro_txt, rc_txt = ratio_text(vs_o), ratio_text(vs_c)
            print(
                f"{n:>7} {'ours (rows apart)':>22} {r3.n_iter:>7} {common_kkt(p, x3, y3):>13.2e} "
                f"{vs_o.median_a:>9.3f} {ro_txt:>24} {rc_txt:>26}",
                flush=True,
            )
            print(
                f"{n:>7} {'ours, merged to 2':>22} {r2.n_iter:>7} {common_kkt(p, x2, y2):>13.2e} "
                f"{t_merged:>9.3f} {'(one cold run)':>24} {'':>26}",
                flush=True,
            )
            print(
                f"{n:>7} {'OSQP':>22} {ro.info.iter:>7} {common_kkt(p, xo, yo):>13.2e} "
                f"{vs_o.median_b:>9.3f} {'1':>24} {'':>26}",
                flush=True,
            )
            print(
                f"{n:>7} {'CLARABEL':>22} {rc.iterations:>7} {common_kkt(p, xc, yc):>13.2e} "
                f"{vs_c.median_b:>9.3f} {'':>24} {'1':>26}",
                flush=True,
            )
            gap = abs(
                0.5 * x3 @ (p["Q"] @ x3) + p["q"] @ x3 - (0.5 * xc @ (p["Q"] @ xc) + p["q"] @ xc)
            )
            print(
                f"# n = {n}: |objective(ours) - objective(CLARABEL)| = {gap:.2e}; load "
                f"{os.getloadavg()[0]:.1f}"
            )


if __name__ == "__main__":
    main()
