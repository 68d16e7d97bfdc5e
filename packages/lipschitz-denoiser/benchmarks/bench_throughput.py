"""Denoising throughput (megapixels/s) of PermutationDenoiser vs the DnCNN baseline, one run.

Equal depth and width, inference (no grad), circular padding in both. Ours adds
the per-forward weight normalisation (a few sums over the kernel) and MaxMin in
place of ReLU. Median of ``--repeats`` timings; the ratio is ours / DnCNN.

    uv run python packages/lipschitz-denoiser/benchmarks/bench_throughput.py \
        [--size 256] [--batch 4] [--threads 1] [--device cpu]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from icml26_core.device import synchronize, torch_device
from lipschitz_denoiser import DnCNN, PermutationDenoiser


def megapixels_per_s(model, x, sigma, repeats, device):
    with torch.no_grad():
        model(x, sigma)  # warm-up
        times = []
        for _ in range(repeats):
            synchronize(device)
            t0 = time.perf_counter()
            model(x, sigma)
            synchronize(device)
            times.append(time.perf_counter() - t0)
    return x.numel() / 1e6 / float(np.median(times))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch_device(args.device)
    x = torch.rand(args.batch, 1, args.size, args.size, device=device)
    print(f"{'depth':>5} {'width':>5} {'ours MP/s':>10} {'DnCNN MP/s':>10} {'ratio':>6}")
    for depth, width in ((5, 16), (8, 32), (17, 64)):
        ours = PermutationDenoiser(1, width, depth).to(device).eval()
        cnn = DnCNN(1, width, depth).to(device).eval()
        a = megapixels_per_s(ours, x, 0.1, args.repeats, device)
        b = megapixels_per_s(cnn, x, 0.1, args.repeats, device)
        print(f"{depth:>5} {width:>5} {a:>10.3f} {b:>10.3f} {a / b:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
