"""PASO's rounds and wall time against sequential ``torch.optim.Adam``, per window and backend.

Digits MLP 64-128-10, Adam lr 1e-3, batch 64, ``T`` steps (default 200), tol 1e-9, one
torch thread. For each window ``P`` and backend (``vmap``, ``serial``) the PASO run and the
sequential ``torch.optim.Adam`` run (the peer) are timed interleaved in one process after
a warm-up (:func:`icml26_core.timing.compare_times`); the table gives ``T / rounds`` and
the wall-time ratio PASO / sequential (median, with the bootstrap 95% CI of the speed-up).
A second part times the parallel piece alone: the gradients of 8 window rows in one
``vmap`` call against 8 single-gradient calls. Targets of the issue: ``T / rounds >= 3``
at P = 8 and vmap wall time <= 0.6x sequential.

    uv run python packages/paso-optim/benchmarks/bench_paso.py [--steps 200] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
from icml26_core.datasets import load_tabular
from icml26_core.timing import compare_times
from paso_optim import PASO
from torch import nn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    X, y, _ = load_tabular("digits")
    X = torch.tensor(X / 16.0, dtype=torch.float32)
    y = torch.tensor(y, dtype=torch.long)

    def batch_fn(t: int):
        idx = torch.randint(0, len(y), (64,), generator=torch.Generator().manual_seed(t))
        return X[idx], y[idx]

    def loss_fn(model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def make():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))

    T = args.steps

    def sequential():
        m = make()
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        for t in range(T):
            opt.zero_grad(set_to_none=True)
            loss_fn(m, batch_fn(t)).backward()
            opt.step()

    print(f"digits MLP, Adam lr 1e-3, T = {T}, tol = 1e-9, 1 thread, load {os.getloadavg()[0]:.1f}")
    print(
        f"{'P':>3} {'backend':>7} {'rounds':>6} {'T/rounds':>8} {'grads':>6} "
        f"{'time PASO/seq':>13}  speed-up seq/PASO [95% CI]"
    )
    for P in (1, 4, 8, 16):
        for backend in ("vmap", "serial"):
            res = PASO(
                make(), loss_fn, batch_fn, "adam", lr=1e-3, window=P, tol=1e-9, backend=backend
            ).run(T)
            cmp = compare_times(
                lambda P=P, backend=backend: PASO(
                    make(), loss_fn, batch_fn, "adam", lr=1e-3, window=P, tol=1e-9, backend=backend
                ).run(T),
                sequential,
                repeats=args.repeats,
                warmup=1,
                names=("PASO", "sequential"),
            )
            ev = cmp.speedup()
            ratio = np.median(cmp.times_a) / np.median(cmp.times_b)
            print(
                f"{P:>3} {backend:>7} {res.rounds:>6} {res.step_reduction:>8.2f} "
                f"{res.grad_evals:>6} {ratio:>13.2f}  {ev.effect:.2f} "
                f"[{ev.ci_low:.2f}, {ev.ci_high:.2f}]"
            )
    # the parallel piece alone: 8 gradients in one vmap call vs one by one
    p = PASO(make(), loss_fn, batch_fn, "adam", lr=1e-3, window=8)
    Xw = p.flat_params().unsqueeze(0).repeat(8, 1)
    ts = list(range(8))
    p_serial = PASO(make(), loss_fn, batch_fn, "adam", lr=1e-3, window=8, backend="serial")
    cmp = compare_times(
        lambda: p.grad_fn(Xw, ts),
        lambda: p_serial.grad_fn(Xw, ts),
        repeats=4 * args.repeats,
        warmup=2,
        names=("vmap", "serial"),
    )
    ev = cmp.speedup()
    print(
        f"8 window gradients: vmap {1e3 * np.median(cmp.times_a):.2f} ms, one by one "
        f"{1e3 * np.median(cmp.times_b):.2f} ms, speed-up {ev.effect:.2f} "
        f"[{ev.ci_low:.2f}, {ev.ci_high:.2f}]"
    )


if __name__ == "__main__":
    main()
