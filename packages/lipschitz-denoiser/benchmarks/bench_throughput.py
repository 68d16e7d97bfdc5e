"""Denoising throughput of PermutationDenoiser vs deepinv's DnCNN of the same depth and width.

Inference (no grad, eval mode) on ``--batch`` images of ``--size`` pixels, timed with
``icml26_core.timing.compare_times`` (A and B interleaved in one process, same threads,
after a warm-up), reported as the ratio of medians with its bootstrap CI. Ours runs
with its cached bounds (eval mode); deepinv's DnCNN is blind, ours takes sigma as an
input channel.

    uv run python packages/lipschitz-denoiser/benchmarks/bench_throughput.py \
        [--size 128] [--batch 2] [--threads 1] [--device cpu]
"""

from __future__ import annotations

import argparse

import torch
from icml26_core.device import torch_device
from icml26_core.timing import compare_times
from lipschitz_denoiser import PermutationDenoiser


def main() -> int:
    import deepinv

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--configs",
        default="5x16,8x32",
        help="depth x width pairs (17x64 needs minutes of eigensolves on CPU)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch_device(args.device)
    x = torch.rand(args.batch, 1, args.size, args.size, device=device)
    print(
        f"{'depth':>5} {'width':>5} {'ours MP/s':>10} {'DnCNN MP/s':>10} "
        f"{'speed ours/DnCNN [95% CI]':>28}"
    )
    for depth, width in (tuple(int(v) for v in c.split("x")) for c in args.configs.split(",")):
        ours = PermutationDenoiser(1, width, depth).to(device).eval()
        cnn = deepinv.models.DnCNN(1, 1, depth=depth, nf=width, pretrained=None).to(device).eval()
        with torch.no_grad():
            ours(x, 0.1)  # fills the cached bounds (one eigensolve per layer)
            cmp = compare_times(lambda o=ours: o(x, 0.1), lambda c=cnn: c(x, 0.1),
                                repeats=args.repeats, warmup=2, names=("ours", "DnCNN"),
                                device=device)  # fmt: skip
        ev = cmp.speedup()
        mp = x.numel() / 1e6
        print(
            f"{depth:>5} {width:>5} {mp / cmp.median_a:>10.3f} {mp / cmp.median_b:>10.3f} "
            f"{ev.effect:>12.2f} [{ev.ci_low:.2f}, {ev.ci_high:.2f}]"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
