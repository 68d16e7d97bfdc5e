"""Cost of L0L1Warmup against torch's LambdaLR, and of estimate_constants.

1. Per training step: one AdamW step of ``tiny_llama("1M")`` on 8 x 64 bytes followed by
   ``L0L1Warmup.step(loss)`` (over a cosine base) against the same step followed by the
   cosine ``LambdaLR.step()`` (the peer: what ``cosine_schedule`` returns, as
   ``transformers.get_cosine_schedule_with_warmup`` does). Target: < 5% overhead.
2. The scheduler alone: 1000 ``step`` calls of each on a 2-group optimizer.
3. ``estimate_constants``: one Hessian-vector product (eager attention, double backward)
   against one training step, and the HVPs one checkpoint costs.

Times are interleaved in one process after a warm-up
(:func:`icml26_core.timing.compare_times`), ratio of medians with its bootstrap 95% CI,
one thread.

    uv run python packages/l0l1-warmup/benchmarks/bench_warmup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import math
import os

import numpy as np
import torch
from icml26_core.datasets import load_text
from icml26_core.lm import cosine_schedule, lm_loss, sample_batch, tiny_llama
from icml26_core.timing import compare_times
from l0l1_warmup import L0L1Warmup, estimate_constants, snapshot, top_eigenvalue


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    tokens = torch.as_tensor(load_text("shakespeare").tokens("train").astype(np.int64))
    gen = torch.Generator().manual_seed(0)
    batch = sample_batch(tokens, 8, 64, gen)

    def setup(kind: str):
        torch.manual_seed(0)
        model = tiny_llama("1M", vocab_size=256)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95))
        base = cosine_schedule(opt, warmup_steps=0, total_steps=10**6)
        if kind == "ours":
            return model, opt, L0L1Warmup(opt, 0.3, base_scheduler=base, initial_loss=math.log(256))
        return model, opt, base

    def stepper(kind: str):
        model, opt, sched = setup(kind)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            loss = lm_loss(model, batch)
            loss.backward()
            opt.step()
            if kind == "ours":
                sched.step(float(loss.detach()))
            else:
                sched.step()

        return step

    print(f"torch {torch.__version__}, 1 thread, load {os.getloadavg()[0]:.1f}")
    c = compare_times(
        stepper("ours"),
        stepper("lambda"),
        repeats=args.repeats,
        warmup=2,
        names=("L0L1Warmup", "LambdaLR"),
    )
    ev = c.speedup()
    print("1. training step + scheduler step (tiny_llama 1M, AdamW, 8 x 64)")
    print(
        f"   L0L1Warmup {1e3 * c.median_a:.1f} ms, LambdaLR {1e3 * c.median_b:.1f} ms, "
        f"time ratio ours/LambdaLR = {1 / ev.effect:.3f} "
        f"[95% CI {1 / ev.ci_high:.3f}, {1 / ev.ci_low:.3f}], n = {ev.n}"
    )

    params = [torch.nn.Parameter(torch.zeros(4)) for _ in range(2)]
    opt = torch.optim.SGD([{"params": [p]} for p in params], lr=0.1)
    ours = L0L1Warmup(
        opt, 0.3, base_scheduler=cosine_schedule(opt, warmup_steps=0, total_steps=10**6)
    )
    opt2 = torch.optim.SGD([{"params": [p]} for p in params], lr=0.1)
    lam = cosine_schedule(opt2, warmup_steps=0, total_steps=10**6)
    opt.step()  # after the schedulers are built: no step-order warning
    opt2.step()

    def ours_1000() -> None:
        for _ in range(1000):
            ours.step(2.0)

    def lambda_1000() -> None:
        for _ in range(1000):
            lam.step()

    c2 = compare_times(
        ours_1000, lambda_1000, repeats=args.repeats, warmup=1, names=("L0L1Warmup", "LambdaLR")
    )
    print("2. scheduler step alone (2 groups)")
    print(
        f"   L0L1Warmup {1e3 * c2.median_a:.2f} us, LambdaLR {1e3 * c2.median_b:.2f} us per step "
        f"(ratio {c2.median_a / c2.median_b:.2f})"
    )

    torch.manual_seed(0)
    model = tiny_llama("1M", vocab_size=256, attn_implementation="eager")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95))
    small = sample_batch(tokens, 4, 64, gen)
    snaps = []
    for t in range(3):
        opt.zero_grad()
        lm_loss(model, small).backward()
        opt.step()
        snaps.append(snapshot(model, opt, step=t + 1))

    def one_hvp() -> None:
        top_eigenvalue(model, lm_loss, [small], iters=1)

    def one_step() -> None:
        opt.zero_grad(set_to_none=True)
        lm_loss(model, batch).backward()
        opt.step()

    c3 = compare_times(
        one_hvp,
        one_step,
        repeats=max(5, args.repeats // 2),
        warmup=1,
        names=("HVP (4 x 64)", "train step (8 x 64)"),
    )
    fit = estimate_constants(model, lm_loss, [small], snaps, iters=10, tol=1e-2)
    per_ck = fit.hvps / len(snaps)
    print("3. estimate_constants (eager attention)")
    print(
        f"   one HVP on 4 x 64: {1e3 * c3.median_a:.0f} ms = "
        f"{c3.median_a / c3.median_b:.2f} training steps of 8 x 64; "
        f"{per_ck:.1f} HVPs per checkpoint (plain + preconditioned, iters=10, tol=1e-2) = "
        f"{per_ck * c3.median_a / c3.median_b:.1f} training steps per checkpoint"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
