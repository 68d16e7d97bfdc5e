"""Step time and state memory of M+Adam against the optimizers a user would pick.

One optimizer step (gradients fixed, so only the step is timed) on the parameters of an
MLP 784-256-256-10 (269k parameters): M+Adam (bf16 master, fp32 moments) against
``torch.optim.AdamW`` on fp32 parameters (fp32 master) and against torch-optimi's
``AdamW(kahan_sum=True)`` on bf16 parameters; and M+Adam at fp8 (emulated: fp32 storage,
so its time is not an fp8 kernel's). Times are interleaved in one process after a warm-up
(:func:`icml26_core.timing.compare_times`), ratio of medians with its bootstrap 95% CI,
one thread. Memory: :func:`mplus_adam.state_bytes` (weights at their format's width).

    uv run python packages/mplus-adam/benchmarks/bench_step.py [--repeats 15]
"""

from __future__ import annotations

import argparse

import torch
from icml26_core.timing import compare_times
from mplus_adam import MPlusAdam, state_bytes


def _params(dtype: torch.dtype) -> list[torch.Tensor]:
    torch.manual_seed(0)
    shapes = [(256, 784), (256,), (256, 256), (256,), (10, 256), (10,)]
    ps = [(0.05 * torch.randn(s)).to(dtype).requires_grad_(True) for s in shapes]
    for p in ps:
        p.grad = (1e-3 * torch.randn(p.shape)).to(dtype)
    return ps


def _make(kind: str) -> torch.optim.Optimizer:
    if kind == "AdamW fp32":
        return torch.optim.AdamW(_params(torch.float32), lr=1e-3, foreach=False)
    if kind == "optimi Kahan bf16":
        import optimi

        return optimi.AdamW(_params(torch.bfloat16), lr=1e-3, kahan_sum=True, foreach=False)
    if kind == "M+Adam bf16":
        return MPlusAdam(
            _params(torch.bfloat16), lr=1e-3, master_format="bf16", moment_dtype=torch.float32
        )
    if kind == "M+Adam fp8 (emulated)":
        return MPlusAdam(_params(torch.float32), lr=1e-3, master_format="fp8_e4m3")
    raise ValueError(kind)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    opts = {
        k: _make(k)
        for k in ("AdamW fp32", "optimi Kahan bf16", "M+Adam bf16", "M+Adam fp8 (emulated)")
    }
    for o in opts.values():
        o.step()  # build the state
    print(f"one optimizer step, 269k parameters, {args.repeats} interleaved rounds, 1 thread")
    print(
        f"{'optimizer':24s} {'weights B/param':>16s} {'state B/param':>14s} {'total B/param':>14s}"
    )
    n = sum(p.numel() for g in opts["AdamW fp32"].param_groups for p in g["params"])
    for k, o in opts.items():
        b = state_bytes(o)
        comp = sum(
            v.numel() * v.element_size()
            for st in o.state.values()
            for name, v in st.items()
            if name == "kahan_comp"
        )
        print(
            f"{k:24s} {(b['master'] + comp) / n:16.3f} {(b['state'] - comp) / n:14.3f} "
            f"{b['total'] / n:14.3f}"
        )
    for other in ("AdamW fp32", "optimi Kahan bf16"):
        for ours in ("M+Adam bf16", "M+Adam fp8 (emulated)"):
            tc = compare_times(
                opts[ours].step,
                opts[other].step,
                repeats=args.repeats,
                warmup=2,
                names=(ours, other),
            )
            ratio = tc.median_a / tc.median_b
            print(
                f"step time {ours} / {other}: {ratio:.2f}x "
                f"({tc.median_a * 1e3:.2f} ms vs {tc.median_b * 1e3:.2f} ms; "
                f"speed-up evidence: {tc.speedup().summary()})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
