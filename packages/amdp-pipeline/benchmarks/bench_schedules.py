"""Benchmark: simulated bubble fraction and throughput of the schedules, S = 2..16.

Unit costs F = 1, B = 2 (a backward costs about two forwards), m = S and m = 4S
minibatches per step, 8 steps. Also the Emulator's cost against plain single-process
gradient accumulation on the same 4-stage MLP (interleaved, ``compare_times``): the price
of exact schedule semantics on one process.

Run: ``uv run python packages/amdp-pipeline/benchmarks/bench_schedules.py``; the output
is committed as ``bench_schedules.txt`` beside this file.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from amdp_pipeline import Emulator, make_schedule, simulate
from icml26_core.timing import compare_times

METHODS = ("gpipe", "1f1b", "2bw", "pipedream", "amdp")


def sim_table() -> list[str]:
    lines = [
        "| S | m | schedule | K | bubble | steady throughput | vs 1F1B | peak act. | max gap |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in (2, 4, 8, 16):
        for m in (s, 4 * s):
            base = None
            for method in METHODS:
                sch = make_schedule(s, None, m, {"F": 1, "B": 2}, method=method, n_steps=8)
                r = simulate(sch)
                base = r if method == "1f1b" else base
                ratio = r.steady_throughput / base.steady_throughput if base else float("nan")
                lines.append(
                    f"| {s} | {m} | {method} | {sch.n_pipelines} | {r.bubble_fraction:.3f} | "
                    f"{r.steady_throughput:.4f} | {ratio:.2f} | {max(r.peak_activations)} | "
                    f"{r.max_gap} |"
                )
    return lines


def emulator_overhead() -> str:
    torch.manual_seed(0)
    stages = [torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh()) for _ in range(4)]
    data = [(torch.randn(32, 64), torch.randn(32, 64)) for _ in range(16)]
    sched = make_schedule(4, 1, 4, method="1f1b", n_steps=4)

    def emulated() -> None:
        Emulator(stages, sched, lambda p: torch.optim.SGD(p, lr=1e-3), F.mse_loss).run(data)

    model = torch.nn.Sequential(*stages)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def plain() -> None:
        for t in range(4):
            opt.zero_grad()
            for x, y in data[4 * t : 4 * t + 4]:
                (F.mse_loss(model(x), y) / 4).backward()
            opt.step()

    cmp = compare_times(plain, emulated, repeats=9, names=("plain", "Emulator 1F1B"))
    ev = cmp.speedup()
    return (
        f"Emulator (1F1B, 4 stages, 16 minibatches) vs plain gradient accumulation: "
        f"median {cmp.median_b * 1e3:.2f} ms vs {cmp.median_a * 1e3:.2f} ms "
        f"(plain is faster by the ratio): {ev.summary()}"
    )


if __name__ == "__main__":
    torch.set_num_threads(1)
    print("Simulated schedules (F = 1, B = 2 time units, 8 steps)")
    print("\n".join(sim_table()))
    print()
    print(emulator_overhead())
