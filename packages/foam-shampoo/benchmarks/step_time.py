"""Time per step of FOAM against our Shampoo f=1 and f=10, pytorch_optimizer's Shampoo
(f=1) and SOAP (f=10), and heavyball's SOAP (f=10, compile off), on one square weight
matrix of side n (so both factors are n x n).

Gradients are a fixed stream ``G_t = A Z_t B`` (Z_t Gaussian, A and B fixed with a
decaying spectrum), so the statistics settle as in training. Each optimizer first takes
``--warmup`` untimed steps; then every round times one block of ``--block`` steps of each
method, the methods in a rotated order each round (all of them under the same load, as
:func:`icml26_core.timing.compare_times` does for two). Ratios are median(other) /
median(FOAM) over the rounds, with the paired bootstrap 95% CI of
:func:`icml26_core.stats.ratio_of_medians`. One torch thread, float32, CPU.

    uv run python packages/foam-shampoo/benchmarks/step_time.py \
        [--sizes 256 784:20:5:6 1024:5:5:2 2048:2:5:1]

A size may carry its own ``:warmup:repeats:block`` (an f=1 step at n = 2048 costs seconds,
``pytorch_optimizer.Shampoo``'s SVDs more, so the large sizes take few, short rounds).
Besides the median ms/step (the ratios and their CIs are of medians) the output gives
the mean over all timed steps and the ratio of means: when a block is shorter than a
method's refresh period, the median block can miss the periodic ``eigh`` that the mean
counts. It also gives each method's eigendecompositions inside the timed
rounds (ours only): FOAM's cost per step follows how often it decomposes, which depends
on how settled the statistics are, i.e. on how many steps came before.
"""

from __future__ import annotations

import argparse
import time

import torch
from foam_shampoo import FOAM, Shampoo
from icml26_core.stats import ratio_of_medians


def methods():
    import heavyball
    import heavyball.utils
    from pytorch_optimizer import SOAP
    from pytorch_optimizer import Shampoo as POShampoo

    heavyball.utils.compile_mode = None  # compiling autotunes for minutes on CPU

    def hb_soap(p):
        return heavyball.SOAP(
            p, lr=1e-3, precondition_frequency=10, use_precond_schedule=False, weight_decay=0.0
        )

    return {
        "FOAM": lambda p: FOAM(p, lr=1e-3),
        "Shampoo f=1 (ours)": lambda p: Shampoo(p, lr=1e-3, precondition_frequency=1),
        "Shampoo f=10 (ours)": lambda p: Shampoo(p, lr=1e-3, precondition_frequency=10),
        "pytorch_optimizer Shampoo f=1": lambda p: POShampoo(p, lr=1e-3, momentum=0.9),
        "pytorch_optimizer SOAP f=10": lambda p: SOAP(p, lr=1e-3, weight_decay=0.0),
        "heavyball SOAP f=10": hb_soap,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--sizes",
        nargs="+",
        default=["256", "784:20:5:6", "1024:5:5:2", "2048:2:5:1"],
        help="n or n:warmup:repeats:block",
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--block", type=int, default=10, help="steps per timed block")
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread, float32; "
        "ratio = median(method) / median(FOAM) over the rounds (> 1: FOAM is faster), "
        "paired bootstrap 95% CI"
    )
    for spec in args.sizes:
        parts = [int(x) for x in str(spec).split(":")]
        bad = len(parts) not in (1, 4) or parts[0] < 1
        if len(parts) == 4:
            bad = bad or parts[1] < 0 or parts[2] < 1 or parts[3] < 1
        if bad:
            raise SystemExit(f"--sizes: expected n or n:warmup:repeats:block, got {spec!r}")
        n = parts[0]
        warmup, repeats, block = (
            parts[1:]
            if len(parts) == 4
            else (
                args.warmup,
                args.repeats,
                args.block,
            )
        )
        gen = torch.Generator().manual_seed(n)
        decay = torch.logspace(0, -2, n)
        A = torch.linalg.qr(torch.randn(n, n, generator=gen))[0] * decay
        B = torch.linalg.qr(torch.randn(n, n, generator=gen))[0] * decay

        def grad(gen=gen, A=A, B=B, n=n):
            return A @ torch.randn(n, n, generator=gen) @ B.T

        opts, params = {}, {}
        for name, make in methods().items():
            params[name] = torch.zeros(n, n, requires_grad=True)
            opts[name] = make([params[name]])
        for _ in range(warmup):
            g = grad()
            for name, opt in opts.items():
                params[name].grad = g
                opt.step()
        times: dict[str, list[float]] = {name: [] for name in opts}
        names = list(opts)
        before = {k: _eighs(o) for k, o in opts.items()}
        t_size = time.perf_counter()
        for r in range(repeats):
            stream = [grad() for _ in range(block)]
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                t0 = time.perf_counter()
                for g in stream:
                    params[name].grad = g
                    opts[name].step()
                times[name].append((time.perf_counter() - t0) / block)
        timed = repeats * block
        print(
            f"\nn = {n}: {warmup} warm-up steps, then {repeats} rounds of {block} steps "
            f"({timed} timed steps; timed phase {time.perf_counter() - t_size:.0f} s wall)"
        )
        print(
            f"  {'method':32s} {'ms/step':>10s} {'mean':>10s}  {'eighs timed':>11s}  "
            "ratio to FOAM [95% CI]  ratio of means"
        )
        mean_foam = sum(times["FOAM"]) / len(times["FOAM"])
        for name in names:
            ms = 1e3 * sorted(times[name])[len(times[name]) // 2]
            mean = sum(times[name]) / len(times[name])
            e = _eighs(opts[name])
            eighs = "-" if e is None else str(e - before[name])
            head = f"  {name:32s} {ms:10.2f} {1e3 * mean:10.2f}  {eighs:>11s}"
            if name == "FOAM":
                print(f"{head}  1")
                continue
            ev = ratio_of_medians(times["FOAM"], times[name], paired=True)
            ci = f"{ev.effect:.2f} [{ev.ci_low:.2f}, {ev.ci_high:.2f}]"
            print(f"{head}  {ci:22s}  {mean / mean_foam:.2f}")


def _eighs(opt) -> int | None:
    fn = getattr(opt, "eigendecompositions", None)
    return None if fn is None else int(fn())


if __name__ == "__main__":
    main()
