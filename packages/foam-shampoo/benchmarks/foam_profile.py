"""Where FOAM's step time goes, against fixed f=10, on one 512 x 512 weight: 40 steps of
the benchmark's gradient stream (``A Z B``, decaying spectrum), one thread, float32.
Prints CPU ms per step (process time), the optimizer's own wall-clock split
(``profile=True``: statistics / roots / apply, ms per step) and the eigendecompositions;
"FOAM, old error" drops the kept factor so the staleness error falls back to the two
n x n products (the version before the O(n^2) error).

    uv run python packages/foam-shampoo/benchmarks/foam_profile.py
"""

from __future__ import annotations

import time

import foam_shampoo.optim as O
import torch
from foam_shampoo import FOAM, Shampoo


def main() -> None:
    torch.set_num_threads(1)
    n, steps = 512, 40
    gen = torch.Generator().manual_seed(0)
    decay = torch.logspace(0, -2, n)
    A = torch.linalg.qr(torch.randn(n, n, generator=gen))[0] * decay
    B = torch.linalg.qr(torch.randn(n, n, generator=gen))[0] * decay
    stream = [A @ torch.randn(n, n, generator=gen) @ B.T for _ in range(steps)]

    def go(make):
        p = torch.zeros(n, n, requires_grad=True)
        o = make([p])
        t0 = time.process_time()
        for g in stream:
            p.grad = g
            o.step()
        cpu = (time.process_time() - t0) / steps * 1e3
        split = {k: round(v / steps * 1e3, 1) for k, v in o.timings.items()}
        return cpu, split, o.eigendecompositions()

    print("f=10", go(lambda p: Shampoo(p, lr=1e-3, precondition_frequency=10, profile=True)))
    print("FOAM new", go(lambda p: FOAM(p, lr=1e-3, profile=True)))
    orig = O.Shampoo._decompose

    def old(self, st, k, g, step):
        orig(self, st, k, g, step)
        st.pop(f"ref_{k}", None)

    O.Shampoo._decompose = old
    print("FOAM old error", go(lambda p: FOAM(p, lr=1e-3, profile=True)))


if __name__ == "__main__":
    main()
