"""Forward+backward cost of the LK losses against torch's KL (``F.kl_div``), vocab 49152.

The abstract promises "no computational overhead"; the target is within 1.3x of KL.
Prints one table of median times and ratios. Run:

    uv run python packages/lk-losses/benchmarks/bench_lk_losses.py [--device cuda]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from icml26_core.device import synchronize, torch_device
from lk_losses import lk_loss


def kl_div(draft: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    logq = F.log_softmax(draft.float(), -1)
    logp = F.log_softmax(target.float(), -1)
    return F.kl_div(logq.flatten(0, 1), logp.flatten(0, 1), log_target=True, reduction="batchmean")


def measure(fn, draft, target, repeats: int) -> float:
    times = []
    for i in range(repeats + 2):
        d = draft.detach().requires_grad_()
        synchronize(draft.device)
        tic = time.perf_counter()
        fn(d, target).backward()
        synchronize(draft.device)
        if i >= 2:  # warm-up
            times.append(time.perf_counter() - tic)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=49152)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = parser.parse_args()
    dev = torch_device(args.device)
    dtype = getattr(torch, args.dtype)
    g = torch.Generator().manual_seed(0)
    shape = (args.batch, args.seq, args.vocab)
    draft = torch.randn(*shape, generator=g).to(dev, dtype)
    target = torch.randn(*shape, generator=g).to(dev, dtype)
    vals, idx = target.float().log_softmax(-1).topk(64, dim=-1)
    cases = {
        "F.kl_div (reference)": lambda d, t: kl_div(d, t),
        "lk_loss kl": lambda d, t: lk_loss(d, t, kind="kl"),
        "lk_loss tv": lambda d, t: lk_loss(d, t, kind="tv"),
        "lk_loss log_alpha": lambda d, t: lk_loss(d, t, kind="log_alpha"),
        "lk_loss hybrid": lambda d, t: lk_loss(d, t, kind="hybrid"),
        "lk_loss log_alpha, top-64 target": lambda d, t: lk_loss(d, (idx, vals)),
    }
    base = None
    print(f"shape {shape}, {args.dtype}, {dev}, median of {args.repeats}")
    print(f"{'loss':36s} {'ms':>9s} {'/ F.kl_div':>11s}")
    for name, fn in cases.items():
        t = measure(fn, draft, target, args.repeats)
        base = base or t
        print(f"{name:36s} {1e3 * t:9.2f} {t / base:11.2f}")


if __name__ == "__main__":
    main()
