"""TD(0) with exponential steps against LSTD and against a per-seed Python loop.

1. Error at an equal number of samples and time per update against LSTD (the
   sample-solution reference, O(k^2) per sample: a rank-one update of A_hat and b_hat
   per sample, one solve at the end), one seed, k in {8, 64, 256} random features on
   Taxi-v4 (i.i.d. samples, gamma = 0.9).
2. Batched over 32 seeds (one ``LinearTD`` with a batch dimension) against a Python
   loop over the seeds.

Times are interleaved in one process after a warm-up
(:func:`icml26_core.timing.compare_times`), reported as a ratio of medians with its
bootstrap 95% CI.

    uv run python packages/td-expstep/benchmarks/bench_td.py [--steps 3000] [--repeats 5]
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
from icml26_core.timing import compare_times
from td_expstep import (
    ExponentialSchedule,
    IIDSampler,
    LinearTD,
    mrp_from_env,
    random_features,
    td_fixed_point,
)


def lstd_incremental(phi, r, phi2, gamma):
    """LSTD the way a user writes it per sample: rank-one updates, then one solve."""
    k = phi.shape[-1]
    a, b = 1e-8 * np.eye(k), np.zeros(k)
    for t in range(len(r)):
        a += np.outer(phi[t], phi[t] - gamma * phi2[t])
        b += r[t] * phi[t]
    return np.linalg.solve(a, b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    T, gamma = args.steps, 0.9
    P, r, mu = mrp_from_env(gym.make("Taxi-v4"))
    rng = np.random.default_rng(0)
    print(f"i.i.d. samples from Taxi-v4, T = {T}, gamma = {gamma}")
    print(f"{'k':>3} {'TD rel. error':>14} {'LSTD rel. error':>16}   TD speed-up over LSTD")
    for k in (8, 64, 256):
        Phi = random_features(len(r), k, rng)
        theta_star = td_fixed_point(Phi, P, r, mu, gamma)
        s, s2 = IIDSampler(mu, P).sample((T,), rng)
        phi, phi2, rew = Phi[s], Phi[s2], r[s]
        out = {}

        def td(phi=phi, rew=rew, phi2=phi2, k=k, out=out):
            out["td"] = LinearTD(k, gamma, ExponentialSchedule(0.5, T)).fit((phi, rew, phi2)).theta_

        def ls(phi=phi, rew=rew, phi2=phi2, out=out):
            out["lstd"] = lstd_incremental(phi, rew, phi2, gamma)

        cmp = compare_times(td, ls, repeats=args.repeats, names=("TD", "LSTD"))
        errs = [
            float(np.sum((out[m] - theta_star) ** 2) / np.sum(theta_star**2))
            for m in ("td", "lstd")
        ]
        print(f"{k:>3} {errs[0]:>14.3g} {errs[1]:>16.3g}   {cmp.speedup().summary()}")
    print("errors: ||theta_T - theta*||^2 / ||theta*||^2, one seed")

    n_seeds, k = 32, 8
    Phi = random_features(len(r), k, rng)
    s, s2 = IIDSampler(mu, P).sample((T, n_seeds), rng)
    phi, phi2, rew = Phi[s], Phi[s2], r[s]

    def batched():
        LinearTD(k, gamma, ExponentialSchedule(0.5, T)).fit((phi, rew, phi2))

    def loop():
        for i in range(n_seeds):
            LinearTD(k, gamma, ExponentialSchedule(0.5, T)).fit((phi[:, i], rew[:, i], phi2[:, i]))

    cmp = compare_times(batched, loop, repeats=args.repeats, names=("batched", "per-seed loop"))
    print(
        f"\n{n_seeds} seeds, k = {k}: speed-up of batched over the loop: {cmp.speedup().summary()}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
