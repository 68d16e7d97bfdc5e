"""CPU cost per step of every task-A method at the default MLP (196-128-64-10 on pooled
images) and at the issue's 784-512-256-10 (full images): 12 steps of batch 128 each,
the first two (the first eigendecompositions) left out, one torch thread, CPU process
time. The ratio of the sums is what task A's default run would cost more at the issue's
size (the run's task-A share, tuning and sweeps included, scales with it).

    uv run python packages/foam-shampoo/benchmarks/task_a_cost.py
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from foam_shampoo import experiment as E


def main() -> None:
    torch.set_num_threads(1)
    tot = {}
    for pool, hidden in ((2, (128, 64)), (1, (512, 256))):
        data = E._data(pool)
        X, y = data["Xtr"], data["ytr"]
        s = 0.0
        for name, (grid, make) in E._methods(0.1, 0.01).items():
            model = E._mlp(X.shape[1], hidden, 0)
            opt = make(model.parameters(), 1e-2 if grid != "ungrafted" else 1.0)
            gen = torch.Generator().manual_seed(0)
            ts = []
            for _ in range(12):
                idx = torch.randint(0, 4000, (128,), generator=gen)
                t0 = time.process_time()
                opt.zero_grad()
                F.cross_entropy(model(X[idx]), y[idx]).backward()
                try:
                    opt.step()
                except RuntimeError:
                    break
                ts.append(time.process_time() - t0)
            ms = 1e3 * sum(ts[2:]) / max(1, len(ts[2:]))  # skip the first two (first eighs)
            s += ms
            print(X.shape[1], name, f"{ms:.1f} ms CPU/step", flush=True)
        tot[X.shape[1]] = s
        print(X.shape[1], "sum over methods", f"{s:.0f} ms", flush=True)
    print("ratio", tot[784] / tot[196])


if __name__ == "__main__":
    main()
