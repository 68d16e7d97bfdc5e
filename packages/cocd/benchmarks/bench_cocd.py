"""Time per step of CoCD: vmap-batched probes against a Python loop of closure calls,
and CoCD against BCCD and SPSA (all batched), at d = 2,410 / 25,450 / 270,310.

Models: MLP 64-32-10 (digits' input size), MLP 784-32-10 and MLP 784-340-10 (MNIST's),
batch 64 of random inputs, k = 32 (33 queries per step), float32, one torch thread.
The chunked variant evaluates the 33 probes ``--chunk`` at a time
(``batched_loss(..., chunk_size=)``), so that only that many copies' activations are alive.
Times are interleaved in one process after a warm-up
(:func:`icml26_core.timing.compare_times`) and reported as ratios of medians with their
bootstrap 95% CIs.

    uv run python packages/cocd/benchmarks/bench_cocd.py [--repeats 7] [--chunk 8]
"""

from __future__ import annotations

import argparse

import cocd
import torch
import torch.nn.functional as F
from cocd.experiment import _head_probes
from icml26_core.timing import compare_times
from torch import nn

SIZES = {"2,410": (64, 32), "25,450": (784, 32), "270,310": (784, 340)}


def setup(d_in: int, hidden: int, make, chunk_size=None):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, 10))
    xb, yb = torch.rand(64, d_in), torch.randint(0, 10, (64,))
    opt = make(model.parameters())
    batched = cocd.batched_loss(model, F.cross_entropy, xb, yb, chunk_size=chunk_size)

    def closure():
        return F.cross_entropy(model(xb), yb)

    closure.batch = (xb, yb)
    return opt, closure, batched


def head_probes(d_in: int, hidden: int, xb, yb):
    """A batched closure whose ``probe_coordinates`` does rank-one coordinate probes.

    The experiment's model-aware path (``cocd.experiment._head_probes``): the MLP's
    activations at ``x`` once, then each probe's change in one hidden unit or output.
    """

    def f(X):  # dense rows are not used by CoCD's forward differences here
        raise NotImplementedError

    f.probe_coordinates = lambda x, idx, h: _head_probes(xb, x, idx, h, d_in, hidden, yb)
    return f


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=5, help="steps per timed call")
    ap.add_argument("--chunk", type=int, default=8, help="chunk_size of the chunked vmap")
    args = ap.parse_args()
    torch.set_num_threads(1)
    n = args.steps
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread, k = 32, batch 64, "
        f"{args.repeats} interleaved rounds of {n} steps; ratio = median(B) / median(A)"
    )
    for label, (d_in, hidden) in SIZES.items():
        opt, closure, batched = setup(d_in, hidden, lambda p: cocd.CoCD(p, lr=1e-4))
        c = compare_times(
            lambda opt=opt, batched=batched: [opt.step(batched_closure=batched) for _ in range(n)],
            lambda opt=opt, closure=closure: [opt.step(closure) for _ in range(n)],
            repeats=args.repeats,
            names=("vmap", "loop"),
        )
        ev = c.speedup()
        print(
            f"d = {label:>7}: CoCD vmap {1e3 * c.median_a / n:7.2f} ms/step "
            f"({33 * n / c.median_a:8.0f} queries/s), loop {1e3 * c.median_b / n:7.2f} ms/step; "
            f"vmap speed-up {ev.effect:.2f} [95% CI {ev.ci_low:.2f}, {ev.ci_high:.2f}]"
        )
        optr, closurer, _ = setup(d_in, hidden, lambda p: cocd.CoCD(p, lr=1e-4))
        fr = head_probes(d_in, hidden, *closurer.batch)
        cr = compare_times(
            lambda opt=optr, fr=fr: [opt.step(batched_closure=fr) for _ in range(n)],
            lambda opt=optr, closure=closurer: [opt.step(closure) for _ in range(n)],
            repeats=args.repeats,
            names=("rank-one probes", "loop"),
        )
        evr = cr.speedup()
        print(
            f"             CoCD rank-one probes (probe_coordinates) {1e3 * cr.median_a / n:7.2f} "
            f"ms/step, loop {1e3 * cr.median_b / n:7.2f} ms/step; speed-up "
            f"{evr.effect:.2f} [95% CI {evr.ci_low:.2f}, {evr.ci_high:.2f}]"
        )
        optc, closurec, batchedc = setup(
            d_in, hidden, lambda p: cocd.CoCD(p, lr=1e-4), chunk_size=args.chunk
        )
        cc = compare_times(
            lambda opt=optc, b=batchedc: [opt.step(batched_closure=b) for _ in range(n)],
            lambda opt=optc, closure=closurec: [opt.step(closure) for _ in range(n)],
            repeats=args.repeats,
            names=("vmap chunked", "loop"),
        )
        evc = cc.speedup()
        print(
            f"             CoCD vmap chunk_size={args.chunk} {1e3 * cc.median_a / n:7.2f} ms/step, "
            f"loop {1e3 * cc.median_b / n:7.2f} ms/step; chunked vmap speed-up "
            f"{evc.effect:.2f} [95% CI {evc.ci_low:.2f}, {evc.ci_high:.2f}]"
        )
        for name, make in (
            ("BCCD", lambda p: cocd.BCCD(p, lr=1e-4)),
            ("SPSA", lambda p: cocd.SPSA(p, lr=1e-6, n_directions=32)),
        ):
            o2, _, b2 = setup(d_in, hidden, make)
            c2 = compare_times(
                lambda opt=opt, batched=batched: [
                    opt.step(batched_closure=batched) for _ in range(n)
                ],
                lambda o2=o2, b2=b2: [o2.step(batched_closure=b2) for _ in range(n)],
                repeats=args.repeats,
                names=("CoCD", name),
            )
            e2 = c2.speedup()
            print(
                f"             {name} (vmap) {1e3 * c2.median_b / n:7.2f} ms/step; "
                f"{name} / CoCD time {e2.effect:.2f} [95% CI {e2.ci_low:.2f}, {e2.ci_high:.2f}]"
            )


if __name__ == "__main__":
    main()
