"""Our compiled SAG/SAGA against scikit-learn's (Cython): time per epoch, time to 1e-6.

Run: uv run python packages/sag-saga-iag/benchmarks/bench_vs_sklearn.py [--repeats 7]

Both sides fit the same objective (L2 logistic regression at C = 1, or ridge at
alpha = 1, intercept fitted) on dense tables and on a sparse TF-IDF matrix of
Shakespeare's speeches (CSR; ours with just-in-time updates, scikit-learn's with its own).

- epoch time: ``max_iter=E`` epochs with ``tol=0`` (neither stops early);
- time to 1e-6: the fewest epochs after which f - f* <= 1e-6 on the per-sample
  objective (f* from Newton's method, or L-BFGS-B on the sparse problem), found by
  doubling and bisection on each solver's own path (random_state=0), then timed.

Every pair is timed with :func:`icml26_core.timing.compare_times` (interleaved A B B A ...
after a warm-up, in one process), and reported as the speed-up median(sklearn) /
median(ours) with its bootstrap CI: above 1, ours is faster.
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
from icml26_core.timing import compare_times
from sag_saga_iag import (
    LinearModelProblem,
    SAGALogisticRegression,
    SAGLogisticRegression,
    SAGRidge,
    reference_optimum,
)
from sag_saga_iag.experiment import _speeches
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler


def _data():
    from icml26_core.datasets import load_tabular

    out = []
    X, y, _ = load_tabular("breast_cancer")
    out.append(("breast_cancer", "logistic", StandardScaler().fit_transform(X), y))
    X, y, _ = load_tabular("digits")
    out.append(
        ("digits (0-4 vs 5-9)", "logistic", StandardScaler().fit_transform(X), (y >= 5).astype(int))
    )
    for name in ("fair", "diamonds"):
        try:
            X, y, _ = load_tabular(name)
        except (ImportError, ValueError) as exc:
            print(f"skip {name}: {exc}")
            continue
        X = StandardScaler().fit_transform(X)
        if name == "fair":
            out.append((name, "logistic", X, (y > 0).astype(int)))
        else:
            out.append((name, "ridge", X, np.log(y)))
    X, y, desc = _speeches()
    out.append((desc, "logistic", X, y))
    return out


def _problem(task, X, y):
    n = X.shape[0]
    if task == "logistic":
        return LinearModelProblem(X, np.where(y == 1, 1.0, -1.0), alpha=1.0 / n, fit_intercept=True)
    return LinearModelProblem(X, y, loss="squared", alpha=1.0 / n, fit_intercept=True)


def _gap(prob, est, f_star):
    x = np.append(np.ravel(est.coef_), np.ravel(est.intercept_))
    return prob.value(x) - f_star


def _epochs_to(make, X, y, prob, f_star, target=1e-6, cap=4096):
    """Fewest epochs E with f - f* <= target on this solver's path (None beyond cap)."""

    def gap(E):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return _gap(prob, make(E).fit(X, y), f_star)

    hi = 1
    while gap(hi) > target:
        hi *= 2
        if hi > cap:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if gap(mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


def _fit(make, E, X, y):
    def f():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            make(E).fit(X, y)

    return f


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    SAGLogisticRegression(max_iter=2).fit(np.eye(4), [0, 1, 0, 1])  # compile outside timing
    rows = []
    for name, task, X, y in _data():
        prob = _problem(task, X, y)
        f_star = reference_optimum(prob)[1]
        if task == "logistic":
            pairs = [
                (
                    "SAG",
                    lambda E: SAGLogisticRegression(tol=0.0, max_iter=E, random_state=0),
                    lambda E: LogisticRegression(solver="sag", tol=0.0, max_iter=E, random_state=0),
                ),
                (
                    "SAGA",
                    lambda E: SAGALogisticRegression(tol=0.0, max_iter=E, random_state=0),
                    lambda E: LogisticRegression(
                        solver="saga", tol=0.0, max_iter=E, random_state=0
                    ),
                ),
            ]
        else:
            pairs = [
                (
                    "SAG",
                    lambda E: SAGRidge(tol=0.0, max_iter=E, random_state=0),
                    lambda E: Ridge(solver="sag", tol=0.0, max_iter=E, random_state=0),
                )
            ]
        E = max(5, min(args.epochs, 2_000_000 // X.shape[0]))
        for method, ours, theirs in pairs:
            c = compare_times(
                _fit(ours, E, X, y),
                _fit(theirs, E, X, y),
                repeats=args.repeats,
                names=("ours", "sklearn"),
            )
            ev = c.speedup()
            e_ours = _epochs_to(ours, X, y, prob, f_star)
            e_sk = _epochs_to(theirs, X, y, prob, f_star)
            if e_ours and e_sk:
                t = compare_times(
                    _fit(ours, e_ours, X, y),
                    _fit(theirs, e_sk, X, y),
                    repeats=args.repeats,
                    names=("ours", "sklearn"),
                )
                ev2 = t.speedup()
                target = (
                    f"{ev2.effect:.2f} [{ev2.ci_low:.2f}, {ev2.ci_high:.2f}]",
                    f"{t.median_a:.3g}",
                    f"{t.median_b:.3g}",
                )
            else:
                target = ("-", "-", "-")
            rows.append(
                (
                    name,
                    f"{X.shape[0]} x {X.shape[1]}",
                    method,
                    f"{1e3 * c.median_a / E:.3g}",
                    f"{1e3 * c.median_b / E:.3g}",
                    f"{ev.effect:.2f} [{ev.ci_low:.2f}, {ev.ci_high:.2f}]",
                    str(e_ours),
                    str(e_sk),
                    *target,
                )
            )
            print(rows[-1], flush=True)
    load1 = os.getloadavg()[0]
    print(
        f"\nload average {load0:.1f} -> {load1:.1f} on {os.cpu_count()} CPUs; "
        f"{args.repeats} interleaved rounds per pair\n"
    )
    print(
        "| data | n x d | method | ours ms/epoch | sklearn ms/epoch | epoch speed-up [95% CI] "
        "| epochs to 1e-6, ours | sklearn | speed-up to 1e-6 [95% CI] | ours (s) | sklearn (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
