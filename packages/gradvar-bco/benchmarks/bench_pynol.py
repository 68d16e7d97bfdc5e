"""Time per round and regret at equal rounds: gradvar-bco against PyNOL's BGDTwoPoint.

The sequence: f_t(x) = 1/2 ||x - c_t||^2 on the unit ball in R^5, c_t on a slow
reflected random walk (small V_T), T = 2000 rounds, 10 seeds, the same c_t and step
size for both BGD implementations. Run (PyNOL imports ``multiprocess`` without
declaring it, so it is added by hand):

    uv run --with pynol-xzp==0.1.0 --with multiprocess \
        python packages/gradvar-bco/benchmarks/bench_pynol.py

Times are interleaved in one process (``icml26_core.timing.compare_times``).
"""

from __future__ import annotations

import numpy as np
from gradvar_bco import Ball, TwoPointOptimisticBCO
from icml26_core.timing import compare_times

D_DIM, T, SEEDS = 5, 2000, 10


def walk(seed: int) -> np.ndarray:
    r = np.random.default_rng(seed)
    c = np.empty((T, D_DIM))
    cur = np.full(D_DIM, 0.3 / np.sqrt(D_DIM))
    for t in range(T):
        cur = np.clip(cur + 0.002 * r.standard_normal(D_DIM), -0.4, 0.4)
        c[t] = cur
    return c


CS = np.stack([walk(s) for s in range(SEEDS)])  # (seeds, T, d)
U = CS.mean(axis=1)  # best fixed point in hindsight
ETA = 2.0 / (2.0 * np.sqrt(D_DIM * T))  # D / (G sqrt(d T)), G = 2
DELTA = 0.05


def loss(x, c):
    return 0.5 * np.sum((x - c) ** 2, axis=-1)


def regret(total, s):
    return total - loss(U[s], CS[s]).sum()


def pynol_bgd(seeds=range(SEEDS)):
    from pynol.environment.domain import Ball as PBall
    from pynol.environment.environment import Environment
    from pynol.learner.base import BGDTwoPoint
    from pynol.online_learning import online_learning

    out = []
    for s in seeds:
        funcs = [lambda x, c=c: 0.5 * float(np.sum((x - c) ** 2)) for c in CS[s]]
        learner = BGDTwoPoint(PBall(D_DIM, 1.0), ETA, DELTA, prior=np.zeros(D_DIM), seed=s)
        _, lo, _, _ = online_learning(T, Environment(func_sequence=funcs, full_info=False), learner)
        out.append(regret(lo.sum(), s))
    return np.array(out)


def ours(optimistic: bool, step):
    learner = TwoPointOptimisticBCO(
        Ball(D_DIM), DELTA, step, optimistic=optimistic, lipschitz=2.0, n_runs=SEEDS, seed=0
    )
    total = np.zeros(SEEDS)
    for t in range(T):
        x1, x2 = learner.ask()
        f1, f2 = loss(x1, CS[:, t]), loss(x2, CS[:, t])
        learner.tell(f1, f2)
        total += 0.5 * (f1 + f2)
    return np.array([regret(total[s], s) for s in range(SEEDS)])


def main() -> None:
    r_pynol = pynol_bgd()
    r_bgd = ours(False, ETA)
    r_ours = ours(True, "adaptive")
    print(f"d = {D_DIM}, T = {T}, {SEEDS} seeds; regret mean (sd):")
    for name, r in (
        ("pynol BGDTwoPoint", r_pynol),
        ("ours, BGD (same step)", r_bgd),
        ("ours, adaptive optimistic", r_ours),
    ):
        print(f"  {name:28s} {r.mean():9.3f} ({r.std(ddof=1):.3f})")
    c = compare_times(
        lambda: ours(True, "adaptive"),
        pynol_bgd,
        repeats=3,
        warmup=0,
        names=("ours, adaptive (10 seeds vectorized)", "pynol BGDTwoPoint (10 seeds, one by one)"),
    )
    ta, tb = np.median(c.times_a), np.median(c.times_b)
    print(f"time for {T} rounds x {SEEDS} seeds (median of 3, interleaved):")
    print(
        f"  ours {ta:.3f} s ({1e6 * ta / (T * SEEDS):.1f} us per run-round), "
        f"pynol {tb:.3f} s ({1e6 * tb / (T * SEEDS):.1f} us per run-round); "
        f"pynol / ours = {tb / ta:.1f}x"
    )


if __name__ == "__main__":
    main()
