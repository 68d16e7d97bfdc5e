"""Step time of Adam (Euclidean), the Wasserstein natural gradient and the calibrated
optimizer on Sinkhorn matching with a linear map, and geomloss against POT's log-domain
Sinkhorn at equal accuracy.

Problem: n source and n target points in d dimensions (Gaussian, isotropic, so kappa is
low and the calibrated optimizer takes Adam steps after its first estimate), map
``T_W(x) = x W``, Sinkhorn divergence with blur 0.05, float64, one torch thread. Times
are interleaved in one process after a warm-up (:func:`icml26_core.timing.compare_times`)
and reported as ratios of medians with bootstrap 95% CIs.

    uv run python packages/geometry-misalignment/benchmarks/bench_steps.py [--full]

The default grid is n = 200, d in 16, 64 (2 shared CPU cores); ``--full`` is the
issue's grid (n in 500, 2000, 5000; d in 16, 64), minutes per point on a loaded CPU.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from geometry_misalignment import CalibratedOptimizer, WassersteinNaturalGradient
from geometry_misalignment import sinkhorn_divergence as sd
from icml26_core.timing import compare_times


def stepper(method: str, n: int, d: int, steps: int):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.randn(n, d, generator=g, dtype=torch.float64) + 0.5
    W = torch.eye(d, dtype=torch.float64).requires_grad_(True)
    if method == "adam":
        opt = torch.optim.Adam([W], lr=1e-2)
    elif method == "wng":
        opt = WassersteinNaturalGradient([W])
    else:
        opt = CalibratedOptimizer([W], every=10, lr=1e-2)

    def closure():
        out = x @ W
        return sd(out, y, 0.05), out

    def fn():
        for _ in range(steps):
            if method == "adam":
                opt.zero_grad()
                loss = sd(x @ W, y, 0.05)
                loss.backward()
                opt.step()
            else:
                opt.step(closure)

    return fn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10, help="steps per timed round")
    ap.add_argument("--ns", type=int, nargs="*", help="override the n grid")
    args = ap.parse_args()
    torch.set_num_threads(1)
    ns = tuple(args.ns) if args.ns else ((500, 2000, 5000) if args.full else (200,))
    steps = args.steps
    print(
        f"torch {torch.__version__}, 1 thread, float64, blur 0.05, {args.repeats} interleaved "
        f"rounds of {steps} steps; ratio = median(other) / median(Adam)"
    )
    for n in ns:
        for d in (16, 64):
            x = torch.randn(n, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
            kappa = float(torch.linalg.cond(x.T @ x / n))
            print(f"n = {n:5d}, d = {d:2d}: kappa(G) = {kappa:.1f} (threshold 10)", flush=True)
            adam = stepper("adam", n, d, steps)
            for m in ("calibrated", "wng"):
                c = compare_times(stepper(m, n, d, steps), adam, repeats=args.repeats)
                ev = c.speedup()
                print(
                    f"n = {n:5d}, d = {d:2d}: Adam {1e3 * c.median_b / steps:7.1f} ms/step, "
                    f"{m:10s} {1e3 * c.median_a / steps:7.1f} ms/step, time ratio "
                    f"{1 / ev.effect:.3f} [{1 / ev.ci_high:.3f}, {1 / ev.ci_low:.3f}]",
                    flush=True,
                )
    # geomloss vs POT at equal accuracy (|value error| <= 1e-4 on this problem, see tests)
    import ot

    rng = np.random.default_rng(0)
    n, d, blur = 200, 16, 0.5
    xa, ya = rng.standard_normal((n, d)), rng.standard_normal((n, d)) + 0.3
    xt, yt = torch.tensor(xa), torch.tensor(ya)
    a = np.full(n, 1 / n)

    def pot():
        for p, q in ((xa, ya), (xa, xa), (ya, ya)):
            M = ot.dist(p, q) / 2
            ot.sinkhorn(a, a, M, blur**2, method="sinkhorn_log", stopThr=1e-9, numItermax=5000)

    def geo():
        sd(xt, yt, blur, scaling=0.99)

    c = compare_times(geo, pot, repeats=args.repeats, names=("geomloss", "POT"))
    ev = c.speedup()
    print(
        f"Sinkhorn divergence n = {n}, d = {d}, blur {blur}: geomloss (scaling 0.99) "
        f"{1e3 * c.median_a:.1f} ms, POT sinkhorn_log (3 problems, stopThr 1e-9) "
        f"{1e3 * c.median_b:.1f} ms; POT / geomloss = {ev.effect:.2f} [{ev.ci_low:.2f}, "
        f"{ev.ci_high:.2f}]"
    )


if __name__ == "__main__":
    main()
