"""Forward+backward cost of the LK losses against torch's KL (``F.kl_div``).

The abstract promises "no computational overhead"; the issue's target is within 1.3x
of ``F.kl_div`` with both log-softmaxes (what a KL distillation step computes). Each
loss is timed interleaved with ``F.kl_div`` in one process after a warm-up
(``icml26_core.timing.compare_times``), so machine load hits both alike; the table
gives the ratio of median times with its bootstrap CI. Run:

    uv run python packages/lk-losses/benchmarks/bench_lk_losses.py [--device cuda]
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from icml26_core.device import torch_device
from icml26_core.timing import compare_times
from lk_losses import lk_loss


def kl_div(draft: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    logq = F.log_softmax(draft.float(), -1)
    logp = F.log_softmax(target.float(), -1)
    return F.kl_div(
        logq.flatten(0, -2), logp.flatten(0, -2), log_target=True, reduction="batchmean"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--shapes", default="8x128x32000,8x128x2048", help="comma-separated batch x seq x vocab"
    )
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dev = torch_device(args.device)
    dtype = getattr(torch, args.dtype)
    print(
        f"{args.dtype}, {dev}, {args.threads} thread(s), median of {args.repeats} "
        "interleaved rounds after a warm-up"
    )
    print(
        f"{'shape':>16s} {'loss':24s} {'ms':>9s} {'F.kl_div ms':>12s} {'ratio':>6s} {'95% CI':>13s}"
    )
    for spec in args.shapes.split(","):
        shape = tuple(int(s) for s in spec.split("x"))
        g = torch.Generator().manual_seed(0)
        draft = torch.randn(*shape, generator=g).to(dev, dtype)
        target = torch.randn(*shape, generator=g).to(dev, dtype)
        vals, idx = target.float().log_softmax(-1).topk(64, dim=-1)
        cases = {
            "kl": lambda d, t: lk_loss(d, t, kind="kl"),
            "tv": lambda d, t: lk_loss(d, t, kind="tv"),
            "log_alpha": lambda d, t: lk_loss(d, t, kind="log_alpha"),
            "hybrid": lambda d, t: lk_loss(d, t, kind="hybrid"),
            "log_alpha, top-64 target": lambda d, t, i=idx, v=vals: lk_loss(d, (i, v)),
        }

        def step(fn, d=draft, t=target):
            x = d.detach().requires_grad_()
            fn(x, t).backward()

        for name, fn in cases.items():
            c = compare_times(
                lambda fn=fn: step(fn),
                lambda: step(kl_div),
                repeats=args.repeats,
                warmup=1,
                names=(name, "F.kl_div"),
                device=dev,
            )
            ev = c.speedup()  # median(F.kl_div) / median(loss): invert for the cost ratio
            print(
                f"{spec:>16s} {name:24s} {1e3 * c.median_a:9.2f} {1e3 * c.median_b:12.2f} "
                f"{c.median_a / c.median_b:6.2f} {1 / ev.ci_high:6.2f}-{1 / ev.ci_low:<6.2f}"
            )


if __name__ == "__main__":
    main()
