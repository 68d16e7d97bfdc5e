"""Step time of Adam (Euclidean), the Wasserstein natural gradient and the calibrated
optimizer on Sinkhorn matching with a linear map, and geomloss against POT's log-domain
Sinkhorn at equal accuracy, all in one run.

Problem: n source and n target points in d dimensions (Gaussian, isotropic, so kappa is
low and the calibrated optimizer takes Adam steps after its first estimate), map
``T_W(x) = x W``, Sinkhorn divergence with blur 0.05, float64, one torch thread.

Each round times, in a rotating order, one Adam step, one calibrated step (``every =
10``: its estimate is on the untimed warm-up step), one natural-gradient step and one
kappa estimate alone (20 Lanczos products, what the calibrated optimizer adds every 10
steps). Ratios are of medians over the paired rounds with bootstrap 95% CIs
(:meth:`icml26_core.timing.TimeComparison.speedup`); "calibrated, amortized" is the
calibrated step plus a tenth of the round's estimate, against the same round's Adam step.

    uv run python packages/geometry-misalignment/benchmarks/bench_steps.py [--full]

The default grid is n = 200, d in 16, 64 (2 shared CPU cores); ``--full`` is the
issue's grid (n in 500, 2000, 5000; d in 16, 64); ``--ns`` and ``--ds`` pick other
sizes, ``--no-pot`` skips the geomloss/POT comparison; each timed call's seconds go to
stderr as it ends (the results to stdout).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch
from geometry_misalignment import CalibratedOptimizer, WassersteinNaturalGradient
from geometry_misalignment import sinkhorn_divergence as sd
from icml26_core.timing import TimeComparison, compare_times


def problem(n: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.randn(n, d, generator=g, dtype=torch.float64) + 0.5
    return x, y


def steppers(n: int, d: int) -> dict[str, object]:
    x, y = problem(n, d)
    out: dict[str, object] = {}
    for method in ("adam", "calibrated", "wng"):
        W = torch.eye(d, dtype=torch.float64).requires_grad_(True)
        if method == "adam":
            opt = torch.optim.Adam([W], lr=1e-2)

            def fn(opt=opt, W=W) -> None:
                opt.zero_grad()
                sd(x @ W, y, 0.05).backward()
                opt.step()

        else:
            opt = (
                WassersteinNaturalGradient([W])
                if method == "wng"
                else CalibratedOptimizer([W], every=10, lr=1e-2)
            )

            def fn(opt=opt, W=W) -> None:
                opt.step(lambda: (sd(x @ W, y, 0.05), x @ W))

        out[method] = fn
        if method == "calibrated":
            est_W = W

            def est(opt=opt, W=est_W) -> None:
                with torch.enable_grad():
                    opt._estimate(x @ W)

            out["estimate"] = est
            out["calibrated_opt"] = opt
    return out


def rounds(fns: dict[str, object], names: list[str], repeats: int) -> dict[str, list[float]]:
    for k in names:  # warm-up (the calibrated optimizer's first step estimates kappa)
        t0 = time.perf_counter()
        fns[k]()
        print(f"  warm-up {k}: {time.perf_counter() - t0:.2f} s", file=sys.stderr, flush=True)
    times: dict[str, list[float]] = {k: [] for k in names}
    for i in range(repeats):
        order = names[i % len(names) :] + names[: i % len(names)]
        for k in order:
            t0 = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - t0)
            print(f"  round {i + 1} {k}: {times[k][-1]:.2f} s", file=sys.stderr, flush=True)
    return times


def ratio(a: list[float], b: list[float], names: tuple[str, str]) -> str:
    ev = TimeComparison(names, tuple(a), tuple(b), 1, torch.get_num_threads()).speedup()
    if not np.isfinite(ev.effect):
        # too few rounds for the core's bootstrap: the ratio of medians and each round's
        # paired ratio, no CI
        per = ", ".join(f"{x / y:.3f}" for x, y in zip(a, b, strict=True))
        return f"{np.median(a) / np.median(b):.3f} (no CI, {len(a)} rounds; per round {per})"
    # speedup = median(b) / median(a); the time ratio a / b is its inverse
    return f"{1 / ev.effect:.3f} [{1 / ev.ci_high:.3f}, {1 / ev.ci_low:.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ns", type=int, nargs="*", help="override the n grid")
    ap.add_argument("--ds", type=int, nargs="*", help="override the d grid (16, 64)")
    ap.add_argument("--pot-repeats", type=int, default=5)
    ap.add_argument(
        "--no-pot", action="store_true", help="skip the geomloss vs POT comparison (n = 200)"
    )
    args = ap.parse_args()
    torch.set_num_threads(1)
    ns = tuple(args.ns) if args.ns else ((500, 2000, 5000) if args.full else (200,))
    print(
        f"torch {torch.__version__}, 1 thread, float64, blur 0.05, 1 warm-up + "
        f"{args.repeats} rounds of one step each (rotating order); time ratio = "
        "median(method) / median(Adam), bootstrap 95% CI over paired rounds"
    )
    names = ["adam", "calibrated", "wng", "estimate"]
    for n in ns:
        for d in tuple(args.ds) if args.ds else (16, 64):
            x, _ = problem(n, d)
            kappa = float(torch.linalg.cond(x.T @ x / n))
            fns = steppers(n, d)
            t = rounds(fns, names, args.repeats)
            opt = fns["calibrated_opt"]
            amort = [c + e / 10 for c, e in zip(t["calibrated"], t["estimate"], strict=True)]
            med = {k: 1e3 * float(np.median(v)) for k, v in t.items()}
            print(
                f"n = {n:5d}, d = {d:2d}: kappa(G) = {kappa:.1f} (threshold 10; calibrated "
                f"preconditioning: {opt.preconditioning}); ms per step: Adam {med['adam']:.1f}, "
                f"calibrated {med['calibrated']:.1f}, WNG {med['wng']:.1f}, one estimate "
                f"{med['estimate']:.1f}",
                flush=True,
            )
            print(
                f"n = {n:5d}, d = {d:2d}: time ratio to Adam: calibrated "
                f"{ratio(t['calibrated'], t['adam'], ('calibrated', 'Adam'))}, calibrated "
                f"amortized {ratio(amort, t['adam'], ('calibrated+', 'Adam'))}, WNG "
                f"{ratio(t['wng'], t['adam'], ('WNG', 'Adam'))}",
                flush=True,
            )
    if args.no_pot:
        return
    # geomloss vs POT at equal accuracy (|value error| <= 1e-4 on this problem, see tests)
    import os

    for key in ("JAX", "TENSORFLOW", "CUPY"):
        os.environ.setdefault(f"POT_BACKEND_DISABLE_{key}", "1")
    import ot

    rng = np.random.default_rng(0)
    n, d, blur = 200, 16, 0.5
    xa, ya = rng.standard_normal((n, d)), rng.standard_normal((n, d)) + 0.3
    xt, yt = torch.tensor(xa), torch.tensor(ya)
    a = np.full(n, 1 / n)

    def pot_value(stop: float = 1e-9) -> float:
        """The debiased divergence from three POT log-domain solves (entropic OT value)."""
        v = []
        for p, q in ((xa, ya), (xa, xa), (ya, ya)):
            M = ot.dist(p, q) / 2
            P = ot.sinkhorn(a, a, M, blur**2, method="sinkhorn_log", stopThr=stop, numItermax=20000)
            mask = P > 0
            kl = float(np.sum(P[mask] * np.log(P[mask] / np.outer(a, a)[mask])))
            v.append(float(np.sum(P * M)) + blur**2 * kl)
        return v[0] - (v[1] + v[2]) / 2

    # Equal accuracy: the reference is POT converged (stopThr 1e-12); geomloss at scaling
    # 0.99 has some error e; POT gets the loosest stopThr whose error is at most e.
    ref = pot_value(1e-12)
    err_geo = abs(float(sd(xt, yt, blur, scaling=0.99)) - ref)
    stop, err_pot = 1e-12, 0.0
    for s_ in (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10):
        e_ = abs(pot_value(s_) - ref)
        if e_ <= err_geo:
            stop, err_pot = s_, e_
            break

    def geo() -> None:
        sd(xt, yt, blur, scaling=0.99)

    c = compare_times(
        geo, lambda: pot_value(stop), repeats=args.pot_repeats, names=("geomloss", "POT")
    )
    ev = c.speedup()
    print(
        f"Sinkhorn divergence n = {n}, d = {d}, blur {blur}: error against POT converged "
        f"(stopThr 1e-12): geomloss (scaling 0.99) {err_geo:.1e}, POT sinkhorn_log at the "
        f"loosest stopThr as accurate ({stop:g}) {err_pot:.1e}; geomloss {1e3 * c.median_a:.1f} "
        f"ms, POT (3 problems) {1e3 * c.median_b:.1f} ms; POT / geomloss = {ev.effect:.2f} "
        f"[{ev.ci_low:.2f}, {ev.ci_high:.2f}], {args.pot_repeats} interleaved rounds",
        flush=True,
    )


if __name__ == "__main__":
    main()
