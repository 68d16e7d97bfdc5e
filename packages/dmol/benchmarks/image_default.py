"""The image task of ``icml26 run dmol`` alone, at default scale, with claim 2's rule.

Same code, config, splits (2000..2004) and seeds as the image task of the default run;
prints every method's test accuracy, the DMoL per-depth accuracies, the growth events,
claim 2's verdict (the experiment's ``Claim.non_inferior``, margin 1 point) and the CPU
seconds of the task: the image task measured on its own, without the other two.

    uv run python packages/dmol/benchmarks/image_default.py
"""

from __future__ import annotations

import time

import numpy as np
import torch
from dmol import experiment
from icml26_core import Claim, RunContext


def main() -> None:
    torch.set_num_threads(1)
    cfg = experiment.CONFIG["default"]["image"]
    print(f"config: {cfg}", flush=True)
    t0 = time.process_time()
    out = experiment._image_task(RunContext("default"), torch.device("cpu"))
    cpu = time.process_time() - t0
    for m, v in out["acc"].items():
        print(
            f"{m}: mean {np.mean(v):.4f} min {min(v):.4f} "
            f"CPU ms/step {1e3 * np.mean(out['cpu'][m]):.1f} n {len(v)}  {v}"
        )
    print(f"DMoL grown 4 -> 8, then cut to 4: mean {np.mean(out['truncated']):.4f}")
    pd = np.asarray(out["per_depth"]).mean(0)
    print("DMoL accuracy by exit depth: " + ", ".join(f"{a:.4f}" for a in pd))
    print(f"max relative rise of the trained objective, images: {max(out['rises']):.4f}")
    grows = [e for e in out["events"] if e["change"] > 0]
    jump = max(abs(e["after"] - e["before"]) for e in grows)
    print(f"growth events {len(grows)}, max |after - before| {jump:.3g}")
    claim = Claim.non_inferior(
        "Images: DMoL matches or beats BP (accuracy at least BP's minus 1 point).",
        out["acc"]["DMoL"],
        out["acc"]["BP"],
        margin=0.01,
        names=("DMoL", "BP"),
        metric="MNIST-5k test accuracy",
    )
    print(f"claim 2: {claim.verdict.upper()}: {claim.summary()}")
    print(f"rule: {claim.rule}")
    print(f"CPU of the image task: {cpu:.1f} s")


if __name__ == "__main__":
    main()
