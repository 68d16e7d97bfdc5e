"""Time per optimizer iteration vs number of matrices: POGO against pogo-torch, geoopt, torch.

One run prints, for each matrix size and batch size, the median wall time of one
iteration (forward + backward + step on the batched Procrustes loss) of every
method and its ratio to ours, plus the peak CUDA memory on a GPU.

    uv run python packages/pogo-optim/benchmarks/bench_step_time.py            # CPU-sized
    uv run python packages/pogo-optim/benchmarks/bench_step_time.py --device cuda \
        --sizes 64 256 --batches 1 100 1000 5000

On a CPU, combinations above ``--max-gflop`` per product are skipped (and listed).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from icml26_core.device import peak_memory_bytes, resolve_device, synchronize
from pogo_optim._methods import methods
from pogo_optim._procrustes import loss_of
from rich.console import Console
from rich.table import Table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 100, 1000, 5000])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-gflop", type=float, default=2.0, help="CPU only; per matrix product")
    args = ap.parse_args()
    device = resolve_device(args.device)
    console = Console()
    specs = methods(sgd_lrs=(0.1,), adam_lrs=(1e-3,), vadam_lrs=(0.05,))
    ours = specs[0].name
    table = Table(title=f"ms per iteration on {device} ({torch.get_num_threads()} threads)")
    table.add_column("size x batch")
    for s in specs:
        table.add_column(s.name, justify="right")
    skipped = []
    for k in args.sizes:
        for batch in args.batches:
            gflop = 2 * batch * k**3 / 1e9
            if device == "cpu" and gflop > args.max_gflop:
                skipped.append(f"{k}x{k} x {batch}")
                continue
            g = torch.Generator().manual_seed(0)
            a = torch.randn(batch, k, 2 * k, generator=g).to(device) / k**0.5
            b = torch.randn(batch, k, 2 * k, generator=g).to(device) / k**0.5
            x0 = torch.linalg.qr(torch.randn(batch, k, k, generator=g))[0].to(device)
            loss_fn = loss_of(a, b)
            times, mem = {}, {}
            for spec in specs:
                runner = spec.build(x0, spec.lrs[0])
                runner.step(loss_fn)  # warm-up (and state creation)
                peak_memory_bytes(device, reset=True)
                samples = []
                for _ in range(args.reps):
                    synchronize(device)
                    t0 = time.perf_counter()
                    runner.step(loss_fn)
                    synchronize(device)
                    samples.append(time.perf_counter() - t0)
                times[spec.name] = float(np.median(samples))
                mem[spec.name] = peak_memory_bytes(device)
                del runner
            cells = []
            for s in specs:
                cell = f"{1e3 * times[s.name]:.2f} ({times[s.name] / times[ours]:.2f}x)"
                if mem[s.name] is not None:
                    cell += f" {mem[s.name] / 2**20:.0f} MiB"
                cells.append(cell)
            table.add_row(f"{k}x{k} x {batch}", *cells)
    console.print(table)
    console.print("(ratio = method's time / POGO's: > 1 means POGO is faster)")
    if skipped:
        console.print(
            f"skipped on CPU (> {args.max_gflop} GFLOP per product): {', '.join(skipped)}"
        )


if __name__ == "__main__":
    main()
