"""Step time and state memory on the LM of the experiment, beside the peers.

One optimizer step (gradients fixed, so only the step is timed) on the parameters of
``tiny_llama("1M")`` (1,033,344 parameters, the LM of ``icml26 run mplus-adam``): M+Adam
(bf16 master, fp32 moments, as in the experiment; and with bf16 moments, its default on
bf16 parameters) against ``torch.optim.AdamW`` on fp32
parameters (fp32 master), torch-optimi's ``AdamW(kahan_sum=True)`` on bf16 parameters
and torchao's ``_AdamW(bf16_stochastic_round=True)`` on bf16 parameters (a
``torch.compile``-d step; compiled before the timing). All single-tensor (no foreach),
one thread. Times are interleaved in one process after a warm-up
(:func:`icml26_core.timing.compare_times`): ratio of medians with its bootstrap 95% CI.
Memory: bytes per parameter of the weights (master + Kahan compensation buffer) and of
the rest of the state (moments), from :func:`mplus_adam.state_bytes`.

    uv run python packages/mplus-adam/benchmarks/bench_lm_step.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import torch
from icml26_core.lm import tiny_llama
from icml26_core.timing import compare_times
from mplus_adam import MPlusAdam, state_bytes

KINDS = (
    "AdamW fp32",
    "M+Adam bf16",
    "M+Adam bf16, bf16 mom.",
    "optimi Kahan bf16",
    "torchao SR bf16",
)


def _params(dtype: torch.dtype) -> list[torch.Tensor]:
    model = tiny_llama("1M", vocab_size=256, seed=0, max_seq_len=64)
    gen = torch.Generator().manual_seed(0)
    ps = [p.detach().to(dtype).requires_grad_(True) for p in model.parameters()]
    for p in ps:
        p.grad = (1e-3 * torch.randn(p.shape, generator=gen)).to(dtype)
    return ps


def _make(kind: str) -> torch.optim.Optimizer:
    if kind == "AdamW fp32":
        return torch.optim.AdamW(_params(torch.float32), lr=1e-3, foreach=False)
    if kind == "M+Adam bf16":
        return MPlusAdam(
            _params(torch.bfloat16), lr=1e-3, master_format="bf16", moment_dtype=torch.float32
        )
    if kind == "M+Adam bf16, bf16 mom.":  # moments in the parameters' dtype (the default)
        return MPlusAdam(_params(torch.bfloat16), lr=1e-3, master_format="bf16")
    if kind == "optimi Kahan bf16":
        import optimi

        return optimi.AdamW(_params(torch.bfloat16), lr=1e-3, kahan_sum=True, foreach=False)
    if kind == "torchao SR bf16":
        from torchao.optim import _AdamW

        return _AdamW(_params(torch.bfloat16), lr=1e-3, bf16_stochastic_round=True)
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def _bytes(opt: torch.optim.Optimizer) -> tuple[int, int]:
    b = state_bytes(opt)
    comp = sum(
        v.numel() * v.element_size()
        for st in opt.state.values()
        for name, v in st.items()
        if isinstance(v, torch.Tensor) and name == "kahan_comp"
    )
    return b["master"] + comp, b["state"] - comp


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    opts = {k: _make(k) for k in KINDS}
    for o in opts.values():
        o.step()  # build the state (and compile torchao's step)
    n = sum(p.numel() for g in opts["AdamW fp32"].param_groups for p in g["params"])
    print(
        f"one optimizer step, tiny_llama('1M'): {n:,} parameters, {args.repeats} interleaved "
        "rounds, 1 thread"
    )
    print(
        f"{'optimizer':24s} {'weights B/param':>16s} {'state B/param':>14s} {'total B/param':>14s}"
    )
    for k, o in opts.items():
        w, s = _bytes(o)
        print(f"{k:24s} {w / n:16.3f} {s / n:14.3f} {(w + s) / n:14.3f}")
    pairs = [("M+Adam bf16", o) for o in ("AdamW fp32", "optimi Kahan bf16", "torchao SR bf16")]
    pairs.append(("M+Adam bf16, bf16 mom.", "AdamW fp32"))
    for ours, other in pairs:
        tc = compare_times(
            opts[ours].step, opts[other].step, repeats=args.repeats, warmup=2, names=(ours, other)
        )
        print(
            f"step time {ours} / {other}: {tc.median_a / tc.median_b:.2f}x "
            f"({tc.median_a * 1e3:.2f} ms vs {tc.median_b * 1e3:.2f} ms; "
            f"speed-up evidence: {tc.speedup().summary()})"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{time.process_time() - cpu0:.2f} s CPU, {time.perf_counter() - wall0:.2f} s wall, "
        f"peak RSS {peak:.0f} MiB, load average {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
