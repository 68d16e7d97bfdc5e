"""Choose the learning rates of the lk-losses experiment on validation seeds and windows.

Every loss and draft gets the same 3-value grid; the criterion is the mean acceptance
rate on validation windows (the last 15% of the training text) over validation seeds
100 and 101, which the experiment's verdicts never read. Prints the scores and the
chosen rates, to copy into ``TUNED_LR`` in ``lk_losses/experiment.py``. Run:

    uv run python packages/lk-losses/benchmarks/tune_lk_losses.py [--scale default]
"""

from __future__ import annotations

import argparse
import json

from lk_losses.experiment import tune


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="default", choices=["smoke", "default", "full"])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    best, scores = tune(args.scale, args.device)
    print(json.dumps({"scores": scores, "best": best}, indent=2))


if __name__ == "__main__":
    main()
