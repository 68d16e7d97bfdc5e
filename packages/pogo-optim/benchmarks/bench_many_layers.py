"""Many small orthogonal layers: one stacked update (foreach) vs a loop per parameter.

A model with ``--layers`` separate ``size x size`` orthogonal weights (e.g. 200 layers
of 64x64) is stepped by POGO with ``foreach=True`` (same-shape parameters stacked into
one batched call), POGO with ``foreach=False`` (a Python loop per parameter, what
0.1.0 did), and the authors' ``pogo-torch`` (a loop per parameter). Gradients are
fixed; only ``optimizer.step()`` is timed, interleaved with ``compare_times`` (A B B A
..., after a warm-up), and each ratio comes with its bootstrap interval.

    uv run python packages/pogo-optim/benchmarks/bench_many_layers.py
    uv run python packages/pogo-optim/benchmarks/bench_many_layers.py --device cuda \
        --layers 200 1000 --sizes 64 256 --out results/bench_many_layers.md
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
from icml26_core.device import resolve_device
from icml26_core.timing import compare_times
from pogo_optim import POGO, random_stiefel


def _model(layers: int, size: int, device: str) -> list[torch.nn.Parameter]:
    gen = torch.Generator().manual_seed(0)
    params = [
        torch.nn.Parameter(random_stiefel(size, size, generator=gen, device=device))
        for _ in range(layers)
    ]
    for p in params:
        p.grad = torch.randn(p.shape, generator=gen).to(device) / size
    return params


def _authors(params, lr):
    from pogo import POGO as AuthorsPOGO
    from pogo import base

    # the release wants (batch, p, n) tensors: give it (1, size, size) views of new leaves
    leaves = [torch.nn.Parameter(p.detach()[None].clone()) for p in params]
    for q, p in zip(leaves, params, strict=True):
        q.grad = p.grad[None].clone()
    return AuthorsPOGO(leaves, base.VectorAdam(), lr)


def compare(layers: int, size: int, device: str, repeats: int = 9) -> list[dict]:
    """Time POGO foreach against the loop and pogo-torch; one row per comparison."""
    stacked = POGO(_model(layers, size, device), lr=0.01, foreach=True)
    rows = []
    rivals = {
        "POGO, loop per parameter (foreach=False)": POGO(
            _model(layers, size, device), lr=0.01, foreach=False
        )
    }
    try:
        rivals["pogo-torch (authors), loop per parameter"] = _authors(
            _model(layers, size, device), 0.01
        )
    except ImportError:
        pass
    for name, other in rivals.items():
        cmp = compare_times(
            stacked.step,
            other.step,
            repeats=repeats,
            warmup=2,
            names=("POGO foreach", name),
            device=device,
        )
        ev = cmp.speedup()
        rows.append(
            {
                "layers": layers,
                "size": size,
                "device": device,
                "method": name,
                "ms_per_step": 1e3 * cmp.median_b,
                "foreach_ms_per_step": 1e3 * cmp.median_a,
                "speedup": ev.effect,
                "ci": (ev.ci_low, ev.ci_high),
                "evidence": ev.summary(),
            }
        )
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    out = [
        "| layers x size | device | method | ms/step | POGO foreach ms/step | speed-up of foreach "
        "[95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['layers']} x {r['size']}x{r['size']} | {r['device']} | {r['method']} | "
            f"{r['ms_per_step']:.3g} | {r['foreach_ms_per_step']:.3g} | {r['speedup']:.3g} "
            f"[{r['ci'][0]:.3g}, {r['ci'][1]:.3g}] |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--layers", type=int, nargs="+", default=[200])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    ap.add_argument("--out", default=None, help="also write the table to this file")
    args = ap.parse_args(argv)
    device = resolve_device(args.device)
    if device == "cpu":
        torch.set_num_threads(args.threads)
    rows = [r for n in args.layers for k in args.sizes for r in compare(n, k, device, args.repeats)]
    text = markdown(rows)
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    footer = f"(torch {torch.__version__}, {torch.get_num_threads()} threads{load})"
    print(text)
    print(footer)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n\n" + footer + "\n")


if __name__ == "__main__":
    sys.exit(main())
