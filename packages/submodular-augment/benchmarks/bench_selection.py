"""Greedy facility-location selection: ours (lazy and plain) against apricot and submodlib.

    uv run --with apricot-select==0.6.1 --with submodlib-py==0.0.3 \
        python packages/submodular-augment/benchmarks/bench_selection.py [--quick]

For n = 10, 100, 1000 candidates with a random nonnegative similarity matrix (n, n)
(cosine of Gaussian features, clipped at 0), each library picks k = min(10, n)
elements by greedy facility location on the same precomputed matrix; the picks are
compared, then the calls are timed interleaved (``compare_times``) and the ratio of
median times (peer / ours) is printed with its CI. One thread, CPU.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np
from icml26_core.timing import compare_times
from submodular_augment import FacilityLocationGain, greedy_select


def _matrix(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, 16))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return np.clip(x @ x.T, 0.0, 1.0)


def ours(sim: np.ndarray, k: int, lazy: bool = True) -> list[int]:
    return greedy_select(FacilityLocationGain(sim), budget=k, lazy=lazy).indices


def apricot_pick(sim: np.ndarray, k: int) -> list[int]:
    from apricot import FacilityLocationSelection

    sel = FacilityLocationSelection(k, metric="precomputed", optimizer="naive", verbose=False)
    sel.fit(sim)
    return [int(i) for i in sel.ranking]


def submodlib_pick(sim: np.ndarray, k: int) -> list[int]:
    from submodlib import FacilityLocationFunction

    f = FacilityLocationFunction(n=sim.shape[0], mode="dense", sijs=sim, separate_rep=False)
    out = f.maximize(
        budget=k,
        optimizer="NaiveGreedy",
        stopIfZeroGain=False,
        stopIfNegativeGain=False,
        verbose=False,
    )
    return [int(i) for i, _ in out]


def main(quick: bool) -> None:
    sizes = (10, 100) if quick else (10, 100, 1000)
    repeats = 3
    print(f"# greedy facility location, k = min(10, n - 1), 1 thread; {time.strftime('%Y-%m-%d')}")
    print(f"# load average at start: {os.getloadavg()[0]:.1f}")
    peers = {"apricot": apricot_pick, "submodlib": submodlib_pick}
    for n in sizes:
        sim = _matrix(n)
        k = min(10, n - 1)
        mine = ours(sim, k)
        plain = ours(sim, k, lazy=False)
        print(f"n={n}: ours (lazy) picks {mine[:5]}..., plain greedy agrees: {mine == plain}")
        c = compare_times(
            lambda sim=sim, k=k: ours(sim, k, False),
            lambda sim=sim, k=k: ours(sim, k),
            repeats=repeats,
            names=("plain", "lazy"),
        )
        print(
            f"  lazy vs plain: median {c.median_b * 1e3:.2f} ms vs {c.median_a * 1e3:.2f} ms; "
            f"ratio plain/lazy = {c.median_a / c.median_b:.2f}"
        )
        for name, pick in peers.items():
            try:
                theirs = pick(sim, k)
            except ImportError as exc:
                print(f"  {name}: not installed ({exc})")
                continue
            c = compare_times(
                lambda p=pick, sim=sim, k=k: p(sim, k),
                lambda sim=sim, k=k: ours(sim, k),
                repeats=repeats,
                names=(name, "ours"),
            )
            print(
                f"  {name}: same first pick {theirs[0] == mine[0]}, same set "
                f"{sorted(theirs) == sorted(mine)}; median {c.median_a * 1e3:.2f} ms vs ours "
                f"{c.median_b * 1e3:.2f} ms; ratio {name}/ours = {c.median_a / c.median_b:.2f}"
            )


if __name__ == "__main__":
    main("--quick" in sys.argv)
