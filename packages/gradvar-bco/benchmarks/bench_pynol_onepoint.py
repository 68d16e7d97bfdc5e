"""Regret at equal rounds and time per round: our one-point BGD against PyNOL's BGDOnePoint.

The check of our baseline: the same update (Flaxman, Kalai & McMahan 2005) with the
same step and delta must give the same regret in distribution. Linear losses
f_t(x) = <l_t, x> on the unit ball in R^5 (PyNOL has no box), l_t a slow random walk,
T = 2000 rounds, 10 seeds. Run (PyNOL imports ``multiprocess`` without declaring it):

    uv run --with pynol-xzp==0.1.0 --with multiprocess \
        python packages/gradvar-bco/benchmarks/bench_pynol_onepoint.py

Times are interleaved in one process (``icml26_core.timing.compare_times``).
"""

from __future__ import annotations

import numpy as np
from gradvar_bco import Ball, OnePointGradientDescent
from icml26_core.timing import compare_times

D_DIM, T, SEEDS = 5, 2000, 10
DELTA = 0.3
ETA = 2.0 * DELTA / (D_DIM * 2.0 * np.sqrt(T))  # OGD D / (G sqrt T), D = 2, G = d max|f| / delta


def walk(seed: int) -> np.ndarray:
    r = np.random.default_rng(seed)
    l0 = r.uniform(-1, 1, D_DIM)
    return l0 + np.cumsum(r.normal(0.0, 1e-3, (T, D_DIM)), axis=0)


LS = np.stack([walk(s) for s in range(SEEDS)])  # (seeds, T, d)
BEST = -np.linalg.norm(LS.sum(axis=1), axis=-1)  # min over the unit ball of <sum l, x>


def pynol_bgd(seeds=range(SEEDS)) -> np.ndarray:
    from pynol.environment.domain import Ball as PBall
    from pynol.environment.environment import Environment
    from pynol.learner.base import BGDOnePoint
    from pynol.online_learning import online_learning

    out = []
    for s in seeds:
        funcs = [lambda x, lt=lt: float(lt @ x) for lt in LS[s]]
        learner = BGDOnePoint(PBall(D_DIM, 1.0), ETA, DELTA, prior=np.zeros(D_DIM), seed=s)
        _, lo, _, _ = online_learning(T, Environment(func_sequence=funcs, full_info=False), learner)
        out.append(lo.sum() - BEST[s])
    return np.array(out)


def ours() -> np.ndarray:
    learner = OnePointGradientDescent(Ball(D_DIM), DELTA, ETA, n_runs=SEEDS, seed=0)
    total = np.zeros(SEEDS)
    for t in range(T):
        y = np.sum(LS[:, t] * learner.ask(), axis=-1)
        learner.tell(y)
        total += y
    return total - BEST


def main() -> None:
    r_pynol, r_ours = pynol_bgd(), ours()
    print(
        f"d = {D_DIM}, T = {T}, {SEEDS} seeds, delta = {DELTA}, eta = {ETA:.4g}; regret mean (sd):"
    )
    for name, r in (("pynol BGDOnePoint", r_pynol), ("ours, OnePointGradientDescent", r_ours)):
        print(f"  {name:30s} {r.mean():9.2f} ({r.std(ddof=1):.2f})")
    c = compare_times(
        ours,
        pynol_bgd,
        repeats=3,
        warmup=0,
        names=("ours (10 seeds vectorized)", "pynol BGDOnePoint (10 seeds, one by one)"),
    )
    ta, tb = np.median(c.times_a), np.median(c.times_b)
    print(f"time for {T} rounds x {SEEDS} seeds (median of 3, interleaved):")
    print(f"  ours {ta:.3f} s, pynol {tb:.3f} s; pynol / ours = {tb / ta:.1f}x")


if __name__ == "__main__":
    main()
