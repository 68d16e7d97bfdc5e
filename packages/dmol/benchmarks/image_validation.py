"""Choose the default image net on a validation split that claim 2 never reads.

Runs the image task of the experiment (BP and DMoL only) on split seed 9000 (the
claim's splits are 2000..2004; torch seeds 7000.. instead of 0..4) for each candidate
configuration given as ``width,pool,batch,epochs,lr`` and prints the validation
accuracy (1000 held-out images of that split) and the CPU seconds per run.

    uv run python packages/dmol/benchmarks/image_validation.py 16,7,64,3,1e-3 ...
"""

from __future__ import annotations

import sys
import time

import torch
from dmol import experiment
from icml26_core import RunContext


def main(argv: list[str]) -> None:
    torch.set_num_threads(1)
    for spec in argv:
        w, pool, batch, epochs, lr = spec.split(",")
        cfg = {
            "arch": "cnn",
            "n": (4000, 1000),
            "epochs": int(epochs),
            "seeds": 1,
            "width": int(w),
            "pool": int(pool),
            "batch": int(batch),
            "lr": float(lr),
            "split_seed": 9000,
            "methods": ("BP", "DMoL"),
        }
        experiment.CONFIG["default"]["image"] = cfg
        t0 = time.process_time()
        out = experiment._image_task(RunContext("default"), torch.device("cpu"))
        cpu = time.process_time() - t0
        acc = {m: round(v[0], 4) for m, v in out["acc"].items()}
        ms = {m: round(1e3 * v[0], 1) for m, v in out["cpu"].items()}
        print(
            f"width {w} pool {pool} batch {batch} epochs {epochs} lr {lr}: val acc {acc}, "
            f"CPU ms/step {ms}, CPU {cpu:.1f} s for both",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
