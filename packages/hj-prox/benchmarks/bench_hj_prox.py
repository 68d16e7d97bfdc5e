"""Benchmark: HJ-Prox call time (numpy, torch) vs a cvxpy prox solve, and PGD-HJ vs pyproximal.

    uv run --with pyproximal==0.13.0 python packages/hj-prox/benchmarks/bench_hj_prox.py [--quick]

1. Time of one batched call ``hj_prox(lam ||.||_1, x)`` for ``x`` of shape (points, d),
   N samples, numpy and torch (CPU) backends, interleaved with
   :func:`icml26_core.timing.compare_times`; beside it one cvxpy + CLARABEL solve of the
   same prox for one point (what a user without a closed form would otherwise call).
2. Lasso on diabetes (lam = 0.1 lam_max): time until the relative objective gap is
   <= 1e-2 for our proximal gradient with HJ-Prox (delta = 1e-3, N = 1000) and for
   pyproximal's ``ProximalGradient`` with its exact ``L1`` prox (the peer), both at step
   1/L; ratio of medians from interleaved rounds.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from hj_prox import HJProx, hj_prox, proximal_gradient
from hj_prox._data import load_regression
from icml26_core.timing import compare_times


def _l1(y):
    return np.abs(y).sum(-1)


def part1(quick: bool) -> None:
    import cvxpy as cp
    import torch

    torch.set_num_threads(1)
    print("# 1. one batched HJ-prox call of lam ||.||_1, t = 0.1, delta = 0.01 (seconds)")
    print(
        f"{'points':>7} {'d':>4} {'N':>6} {'numpy s':>9} {'torch s':>9} "
        f"{'torch/numpy [95% CI]':>24}"
    )
    cases = (
        [(1000, 100, 1000)]
        if quick
        else [(1000, 10, 1000), (1000, 100, 100), (1000, 100, 1000), (100, 100, 10000)]
    )
    for m, d, n in cases:
        x = np.random.default_rng(0).standard_normal((m, d))
        xt = torch.from_numpy(x)
        c = compare_times(
            lambda x=x, n=n: hj_prox(_l1, x, 0.1, 0.01, n, rng=0),
            lambda xt=xt, n=n: hj_prox(lambda y: y.abs().sum(-1), xt, 0.1, 0.01, n, rng=0),
            repeats=3 if quick else 5,
            names=("numpy", "torch"),
        )
        ev = c.speedup()
        print(
            f"{m:>7} {d:>4} {n:>6} {c.median_a:>9.3f} {c.median_b:>9.3f} "
            f"{ev.effect:>8.2f} [{ev.ci_low:.2f}, {ev.ci_high:.2f}]"
        )
    d = 100
    v = np.random.default_rng(0).standard_normal(d)
    z = cp.Variable(d)
    t0 = time.perf_counter()
    reps = 3 if quick else 10
    for _ in range(reps):
        cp.Problem(cp.Minimize(0.1 * cp.norm1(z) + cp.sum_squares(z - v) / 2)).solve(
            solver="CLARABEL"
        )
    per = (time.perf_counter() - t0) / reps
    print(
        f"# cvxpy + CLARABEL, one point, d = {d}: {per:.4f} s per prox "
        f"({1000 * per:.1f} s for 1000 points, solved one by one)"
    )


def part2(quick: bool) -> None:
    import pylops
    import pyproximal

    A, b = load_regression("diabetes")
    n, d = A.shape
    lam = 0.1 * np.max(np.abs(A.T @ b)) / n
    L = float(np.linalg.eigvalsh(A.T @ A / n).max())

    def F(x):
        r = A @ x - b
        return float(r @ r / (2 * n) + lam * np.abs(x).sum())

    import cvxpy as cp

    xv = cp.Variable(d)
    cp.Problem(cp.Minimize(cp.sum_squares(A @ xv - b) / (2 * n) + lam * cp.norm1(xv))).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    fs = F(np.asarray(xv.value))
    target = fs * (1 + 1e-2)
    grad = lambda x: A.T @ (A @ x - b) / n  # noqa: E731

    # iterations each needs to reach the target (measured once, then timed at that count)
    hj = HJProx(lambda y: lam * np.abs(y).sum(-1), delta=1e-3, n_samples=1000, rng=0)
    r = proximal_gradient(grad, hj, np.zeros(d), 1 / L, max_iter=2000, tol=0.0, objective=F)
    k_hj = int(np.argmax(r.history["objective"] <= target)) + 1
    fq = pyproximal.L2(Op=pylops.MatrixMult(A / np.sqrt(n)), b=b / np.sqrt(n))
    fg = pyproximal.L1(sigma=lam)
    hist = []
    pyproximal.optimization.primal.ProximalGradient(
        fq, fg, np.zeros(d), tau=1 / L, niter=2000, callback=lambda x: hist.append(F(x))
    )
    k_py = int(np.argmax(np.array(hist) <= target)) + 1

    def run_hj():
        h = HJProx(lambda y: lam * np.abs(y).sum(-1), delta=1e-3, n_samples=1000, rng=1)
        proximal_gradient(grad, h, np.zeros(d), 1 / L, max_iter=k_hj, tol=0.0)

    def run_py():
        pyproximal.optimization.primal.ProximalGradient(fq, fg, np.zeros(d), tau=1 / L, niter=k_py)

    c = compare_times(run_hj, run_py, repeats=3 if quick else 7, names=("PGD-HJ", "pyproximal"))
    ev = c.speedup()
    print("# 2. Lasso on diabetes (d = 10), time to relative gap 1e-2 at step 1/L")
    print(f"PGD-HJ (delta = 1e-3, N = 1000): {k_hj} iterations, {c.median_a:.4f} s")
    print(f"pyproximal ProximalGradient (exact L1 prox): {k_py} iterations, {c.median_b:.4f} s")
    print(
        f"t(PGD-HJ) / t(pyproximal) = {1 / ev.effect:.1f} [95% CI {1 / ev.ci_high:.1f}, "
        f"{1 / ev.ci_low:.1f}]"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    print(f"# load average {os.getloadavg()[0]:.1f} at start; torch on 1 thread")
    part1(a.quick)
    part2(a.quick)
