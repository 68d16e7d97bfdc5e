"""Acquisition optimization time: PBGI (root solve + implicit gradient) vs BoTorch's LogEI.

Both are maximized with BoTorch's optimize_acqf at equal restarts and raw samples on
the same fitted GP (Ackley, 30 Sobol points). Prints the median wall and CPU time of
each and the ratio PBGI / LogEI. Run: uv run python packages/bo-stopping/benchmarks/bench_acqf.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from bo_stopping import PBGI, LogEIPC, fit_gp
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.optim import optimize_acqf
from botorch.test_functions import Ackley
from botorch.utils.sampling import draw_sobol_samples


def measure(acqf, bounds, restarts, raw, repeats):
    walls, cpus = [], []
    for r in range(repeats):
        torch.manual_seed(r)
        w, c = time.perf_counter(), time.process_time()
        optimize_acqf(acqf, bounds, q=1, num_restarts=restarts, raw_samples=raw)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dim", type=int, default=4)
    p.add_argument("--restarts", type=int, default=8)
    p.add_argument("--raw", type=int, default=256)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    torch.set_num_threads(1)
    f = Ackley(dim=a.dim, negate=True, dtype=torch.float64)
    bounds = f.bounds.double()
    X = draw_sobol_samples(bounds=bounds, n=30, q=1, seed=0).squeeze(1)
    Y = f(X)
    model = fit_gp(X, Y, bounds)

    def cost(Z):
        return 0.02 * torch.exp(Z[..., 0] / 32.768)

    acqfs = {
        "LogEI (BoTorch)": LogExpectedImprovement(model, best_f=Y.max()),
        "LogEIPC": LogEIPC(model, best_f=Y.max(), cost=cost),
        "PBGI": PBGI(model, cost=cost),
    }
    for acqf in acqfs.values():  # warm up
        optimize_acqf(acqf, bounds, q=1, num_restarts=1, raw_samples=8)
    res = {k: measure(v, bounds, a.restarts, a.raw, a.repeats) for k, v in acqfs.items()}
    base_w, base_c = res["LogEI (BoTorch)"]
    print(
        f"optimize_acqf, d={a.dim}, {a.restarts} restarts, {a.raw} raw samples, "
        f"median of {a.repeats}"
    )
    print(
        f"{'acquisition':18s} {'wall s':>8s} {'cpu s':>8s} {'wall ratio':>10s} {'cpu ratio':>10s}"
    )
    for k, (w, c) in res.items():
        print(f"{k:18s} {w:8.3f} {c:8.3f} {w / base_w:10.2f} {c / base_c:10.2f}")


if __name__ == "__main__":
    main()
