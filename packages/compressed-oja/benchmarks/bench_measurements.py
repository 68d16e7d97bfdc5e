"""Scalar measurements to reach sin^2 <= 0.01, and wall time per sample.

Run: ``uv run python packages/compressed-oja/benchmarks/bench_measurements.py``; it
writes ``results.md`` beside itself.

1. Measurements: full Oja reads d scalars a sample, the compressed schemes 2. Theory
   (the abstract's rates): adaptive needs about d times more samples than full Oja at
   d/2 times fewer measurements each, so about the same total (target: a ratio in
   [0.2, 5]); non-adaptive needs about d times more measurements than adaptive.
2. Time per sample of ``CompressedOjaPCA.partial_fit`` (a Python loop over rows, the
   hardware-facing path) and of the compiled simulator, against scikit-learn's
   ``IncrementalPCA.partial_fit`` (fully observed, batches of 1000), interleaved.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
from compressed_oja import CompressedOjaPCA
from compressed_oja._kernels import METHOD_CODES, simulate
from compressed_oja.schedules import DIMENSION_POWER
from icml26_core.timing import compare_times
from sklearn.decomposition import IncrementalPCA

D, LAM1, LAM2, TARGET, SEEDS = 16, 2.0, 1.0, 0.01, 10


def samples_to_target(method: str) -> np.ndarray:
    gap = LAM1 - LAM2
    t0 = D ** DIMENSION_POWER[method] * LAM1 / gap
    T = int(200 * t0)
    cps = np.unique(np.geomspace(1, T, 400).astype(np.int64))
    scale = np.full(D, np.sqrt(LAM2))
    scale[0] = np.sqrt(LAM1)
    truth = np.eye(D)[0]
    rng = np.random.default_rng(0)
    out = []
    for s in range(SEEDS):
        w0 = rng.standard_normal(D)
        w0 /= np.linalg.norm(w0)
        errs = simulate(
            METHOD_CODES[method],
            np.empty((0, D)),
            scale,
            w0,
            truth,
            T,
            t0,
            2 / gap,
            cps,
            np.random.default_rng(s),
        )
        below = np.flatnonzero(errs <= TARGET)
        out.append(cps[below[0]] if below.size else np.nan)
    return np.array(out, dtype=float)


def main() -> None:
    lines = [
        "# compressed-oja benchmark",
        "",
        f"Machine: {platform.processor() or platform.machine()}, numpy {np.__version__}.",
        "",
        f"## Scalar measurements to reach sin^2 <= {TARGET} (spiked covariance, d = {D}, "
        f"lambda1 = {LAM1:g}, lambda2 = {LAM2:g}, theory schedule, {SEEDS} seeds)",
        "",
        "| scheme | measurements per sample | median samples | median measurements |",
        "|---|---|---|---|",
    ]
    meas = {}
    for method, per in (("full", D), ("adaptive", 2), ("nonadaptive", 2)):
        t = samples_to_target(method)
        meas[method] = np.nanmedian(t) * per
        lines.append(f"| {method} | {per} | {np.nanmedian(t):.0f} | {meas[method]:.0f} |")
    lines += [
        "",
        f"- adaptive / full measurements: {meas['adaptive'] / meas['full']:.2f} (theory: about 1; "
        "target [0.2, 5])",
        f"- non-adaptive / adaptive measurements: {meas['nonadaptive'] / meas['adaptive']:.1f} "
        f"(theory: about d = {D})",
        "",
    ]

    rng = np.random.default_rng(1)
    n = 5000
    X = rng.standard_normal((n, D)) * np.sqrt(np.r_[LAM1, np.full(D - 1, LAM2)])
    ours = CompressedOjaPCA(eigengap=LAM1 - LAM2, random_state=0)
    ipca = IncrementalPCA(n_components=1)
    cmp = compare_times(
        lambda: ours.partial_fit(X),
        lambda: [ipca.partial_fit(X[i : i + 1000]) for i in range(0, n, 1000)],
        repeats=7,
        names=("CompressedOjaPCA", "IncrementalPCA"),
    )
    truth = np.eye(D)[0]
    w0 = np.ones(D) / np.sqrt(D)
    sim = compare_times(
        lambda: simulate(
            1, X, np.ones(D), w0, truth, n, 512.0, 2.0, np.array([n]), np.random.default_rng(0)
        ),
        lambda: [ipca.partial_fit(X[i : i + 1000]) for i in range(0, n, 1000)],
        repeats=7,
        names=("simulate (numba)", "IncrementalPCA"),
    )
    us = 1e6 / n
    lines += [
        f"## Wall time per sample (d = {D}, {n} rows a call, median of 7 interleaved rounds)",
        "",
        "| implementation | us per sample | ratio to IncrementalPCA |",
        "|---|---|---|",
        f"| CompressedOjaPCA.partial_fit (adaptive, Python loop) | {cmp.median_a * us:.2f} | "
        f"{cmp.median_a / cmp.median_b:.2f} |",
        f"| compiled simulator (adaptive) | {sim.median_a * us:.2f} | "
        f"{sim.median_a / sim.median_b:.2f} |",
        f"| IncrementalPCA.partial_fit (full rows, batches of 1000) | {cmp.median_b * us:.2f} "
        "| 1 |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    (Path(__file__).parent / "results.md").write_text(text)


if __name__ == "__main__":
    main()
