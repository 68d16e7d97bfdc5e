"""Time per epoch: our compiled SAG/SAGA against scikit-learn's (Cython) on the same data.

Run: uv run python packages/sag-saga-iag/benchmarks/bench_epoch_time.py [--epochs 200]

Both sides fit the same objective with tol=0 for a fixed number of epochs (scikit-learn
stops at max_iter with a ConvergenceWarning, ours never stops early with tol=0); the
ratio is ours / scikit-learn of the wall time per epoch, best of 3 fits.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sag_saga_iag import SAGALogisticRegression, SAGLogisticRegression, SAGRidge
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
    return out


def _per_epoch(est, X, y, epochs):
    best = np.inf
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            est.fit(X, y)
            t = time.perf_counter() - t0
        best = min(best, t / int(np.max(est.n_iter_)))
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=200)
    E = parser.parse_args().epochs
    SAGLogisticRegression(max_iter=2).fit(
        np.eye(4), [0, 1, 0, 1]
    )  # compile once, outside the timing
    rows = []
    for name, task, X, y in _data():
        if task == "logistic":
            pairs = [
                (
                    "SAG",
                    SAGLogisticRegression(C=1.0, tol=0.0, max_iter=E, random_state=0),
                    LogisticRegression(C=1.0, solver="sag", tol=0.0, max_iter=E, random_state=0),
                ),
                (
                    "SAGA",
                    SAGALogisticRegression(C=1.0, tol=0.0, max_iter=E, random_state=0),
                    LogisticRegression(C=1.0, solver="saga", tol=0.0, max_iter=E, random_state=0),
                ),
            ]
        else:
            pairs = [
                (
                    "SAG",
                    SAGRidge(alpha=1.0, tol=0.0, max_iter=E, random_state=0),
                    Ridge(alpha=1.0, solver="sag", tol=0.0, max_iter=E, random_state=0),
                )
            ]
        for method, ours, theirs in pairs:
            t_ours = _per_epoch(ours, X, y, E)
            t_sk = _per_epoch(theirs, X, y, E)
            rows.append((name, X.shape, method, 1e3 * t_ours, 1e3 * t_sk, t_ours / t_sk))
    print(
        f"{'data':22s} {'n x d':>12s} {'method':6s} {'ours ms/ep':>11s} "
        f"{'sklearn ms/ep':>14s} {'ratio':>6s}"
    )
    for name, shape, method, a, b, r in rows:
        print(
            f"{name:22s} {f'{shape[0]} x {shape[1]}':>12s} {method:6s} {a:11.3f} {b:14.3f} {r:6.2f}"
        )


if __name__ == "__main__":
    main()
