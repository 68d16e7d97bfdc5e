"""SPF against torch.optim-style SGD, Adam and the LSTM optimizer at d = 512, in one run.

Trains SPF (width 64) and the LSTM optimizer at d = 64 on the camera and coins rows
(a short training: 10 epochs), then, on the page rows resampled to d = 512 (m = 128,
K = 64 steps, noise 0.1), measures

- time per step, interleaved against online SGD (``compare_times``; one stream, one
  thread): the ratio SPF / SGD (the issue's target: <= 3x);
- the mean relative tracking error over 5 streams: the ratio SPF / SGD (target <= 0.8x).

SGD's and Adam's steps are the experiment's grids' best on the training images.
Run: ``uv run python packages/stochastic-path-follower/benchmarks/bench_spf.py``.
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch
from icml26_core import stats
from icml26_core.timing import compare_times
from stochastic_path_follower import (
    DriftingLeastSquares,
    LSTMOptimizer,
    StochasticPathFollower,
    tracking_error,
)
from stochastic_path_follower.baselines import OnlineAdam, OnlineSGD
from stochastic_path_follower.experiment import (
    ADAM_GRID_LS,
    NOISE,
    SGD_GRID,
    TRAIN_IMAGES,
    _tune,
    image_rows,
)


def main() -> None:
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    K, d = 64, 512
    train = [DriftingLeastSquares(image_rows(n, 64), m=16, noise=NOISE) for n in TRAIN_IMAGES]
    tune = [DriftingLeastSquares(image_rows(n, 64)[:K], m=16, noise=NOISE) for n in TRAIN_IMAGES]
    fit = {"epochs": 10, "episodes": 8, "unroll": 48, "seed": 0}
    spf = StochasticPathFollower(width=64).fit(train, **fit)
    lstm = LSTMOptimizer().fit(train, **fit)
    sgd = OnlineSGD(_tune(OnlineSGD, SGD_GRID, tune, "cpu")[0])
    adam = OnlineAdam(_tune(OnlineAdam, ADAM_GRID_LS, tune, "cpu")[0])
    test = DriftingLeastSquares(image_rows("page", d)[:K], m=d // 4, noise=NOISE)
    xs = test.reference_path()
    methods = {"SPF": spf, "online SGD": sgd, "online Adam": adam, "LSTM optimizer": lstm}
    err = {}
    for name, m in methods.items():
        with torch.no_grad():
            err[name] = [
                float(tracking_error(m.rollout(test, 1, torch.Generator().manual_seed(s)), xs)[0])
                for s in range(5)
            ]
    lines = [
        f"d = {d}, m = {d // 4}, K = {K}, page rows, noise {NOISE}; trained at d = 64 "
        f"({fit['epochs']} epochs); torch {torch.__version__}, 1 thread; "
        f"load average {os.getloadavg()[0]:.1f}",
        "",
        f"{'method':<16} {'ms/step':>9} {'ms/step / SGD':>14} {'error':>8} {'error / SGD':>12}",
    ]

    def roll(m):
        def f():
            with torch.no_grad():
                m.rollout(test, 1, torch.Generator().manual_seed(0))

        return f

    for name, m in methods.items():
        if name == "online SGD":
            continue
        c = compare_times(roll(m), roll(sgd), repeats=5, names=(name, "SGD"))
        ev = stats.ratio_of_medians(c.times_b, c.times_a, paired=True, names=("SGD", name))
        e_ratio = np.mean(err[name]) / np.mean(err["online SGD"])
        lines.append(
            f"{name:<16} {c.median_a / K * 1e3:9.3f} {c.median_a / c.median_b:14.2f} "
            f"{np.mean(err[name]):8.4f} {e_ratio:12.3f}"
        )
        lines.append(
            f"  time ratio {name} / SGD: {ev.effect:.3g} [95% CI {ev.ci_low:.3g}, "
            f"{ev.ci_high:.3g}], paired over {ev.n} interleaved rounds"
        )
    lines.append(
        f"{'online SGD':<16} {'':>9} {'1':>14} {np.mean(err['online SGD']):8.4f} {'1':>12}"
    )
    lines.append(f"wall {time.perf_counter() - t0:.1f} s, CPU {time.process_time():.1f} s")
    out = "\n".join(lines)
    print(out)
    with open(os.path.join(os.path.dirname(__file__), "bench_spf.txt"), "w") as fh:
        fh.write(out + "\n")


if __name__ == "__main__":
    main()
