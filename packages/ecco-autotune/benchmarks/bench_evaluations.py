"""Evaluations per second: serial vs 2 concurrent tool runs (interleaved rounds).

Run: ``uv run python packages/ecco-autotune/benchmarks/bench_evaluations.py``; the output
is committed as ``bench_evaluations.txt``. Each call evaluates the same 4 fixed random
pass sequences on SHA-256 (8 KB input) with a fresh evaluator (no cache), so both sides
compile, check and run callgrind 4 times. The peer, CompilerGym, no longer installs
(it pins ``gym<0.21``; CompilerGym #796), so there is no side-by-side library timing.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time

import numpy as np
from ecco_autotune import PASSES, Evaluator, Program, Toolchain
from ecco_autotune.search import _Tracker
from icml26_core.timing import compare_times


def main() -> None:
    tc = Toolchain.check()
    prog = Program.builtin("sha256", input_bytes=8192)
    rng = np.random.default_rng(0)
    seqs = [tuple(PASSES[i] for i in rng.integers(0, len(PASSES), 20)) for _ in range(4)]
    Evaluator(tc).base(prog)  # warm the file system cache

    def batch(workers: int):
        def go():
            with tempfile.TemporaryDirectory() as d:
                ev = Evaluator(tc, workdir=d)
                ev.base(prog)
                _Tracker(ev, prog, len(seqs), workers).run(seqs)

        return go

    t0 = time.perf_counter()
    c = compare_times(batch(2), batch(1), repeats=5, warmup=0, names=("2 workers", "serial"))
    s = c.speedup()
    n = len(seqs)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"ecco-autotune {n} evaluations per call (opt + llc + link + run + callgrind), "
        f"{len(c.times_a)} interleaved rounds; LLVM {tc.llvm_major}",
        f"2 workers : {c.median_a:6.2f} s per call = {n / c.median_a:5.2f} evaluations/s",
        f"serial    : {c.median_b:6.2f} s per call = {n / c.median_b:5.2f} evaluations/s",
        f"speed-up of 2 workers over serial: {s.summary()}",
        f"(measured {time.strftime('%Y-%m-%d')} in {time.perf_counter() - t0:.0f} s under "
        f"load: {load.split('load')[-1].strip()}; {os.cpu_count()} shared CPU cores)",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
