"""Short-answer tasks from data that ships in registry packages (no download).

- ``capital``: country -> capital city (``countryinfo``'s per-country JSON files).
- ``region``: country -> region (Africa, Americas, Asia, Europe, Oceania), same source.
- ``sentiment``: word -> positive / negative (``vaderSentiment``'s ``vader_lexicon.txt``:
  alphabetic entries with a mean valence of at least 1.5 in magnitude).

The core's datasets module has none of these; they live here until another package
needs them.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

__all__ = ["INSTRUCTIONS", "load_task", "split_task"]

INSTRUCTIONS = {
    "capital": "Give the capital city of the country.",
    "region": "Give the region of the country: Africa, Americas, Asia, Europe or Oceania.",
    "sentiment": "Say whether the word is positive or negative.",
}


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"the task data needs the package {name!r}: pip install 'opic-merging[repro]'"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _countries() -> list[dict[str, str]]:
    folder = _package_dir("countryinfo") / "data"
    out = []
    for path in sorted(folder.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        name, cap, reg = d.get("name"), d.get("capital"), d.get("region")
        if isinstance(cap, list):  # a few countries list several capitals: keep the first
            cap = cap[0] if cap else None
        if name and cap and reg and name.isascii() and cap.isascii():
            out.append({"name": name, "capital": cap, "region": reg})
    return out


def load_task(task: str) -> list[tuple[str, str]]:
    """``(input, answer)`` pairs of one task, in a fixed order."""
    if task in ("capital", "region"):
        return [(c["name"], c[task]) for c in _countries()]
    if task == "sentiment":
        path = _package_dir("vaderSentiment") / "vader_lexicon.txt"
        pairs = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split("\t")
            if len(parts) < 2 or not parts[0].isalpha() or not parts[0].islower():
                continue
            v = float(parts[1])
            if abs(v) >= 1.5:
                pairs.append((parts[0], "positive" if v > 0 else "negative"))
        return pairs
    raise ValueError(f"unknown task {task!r}; tasks: {', '.join(INSTRUCTIONS)}")


def split_task(
    task: str, n_train: int, n_val: int, n_test: int, seed: int = 12345
) -> dict[str, list[tuple[str, str]]]:
    """Disjoint train / validation / test items of ``task`` by a fixed permutation.

    For ``sentiment`` the test and validation items are balanced (half positive).
    """
    pairs = load_task(task)
    rng = np.random.default_rng(seed)
    order = [pairs[i] for i in rng.permutation(len(pairs))]
    if task == "sentiment":
        pos = [p for p in order if p[1] == "positive"]
        neg = [p for p in order if p[1] == "negative"]
        test = pos[: n_test // 2] + neg[: n_test - n_test // 2]
        val = (
            pos[n_test // 2 : n_test // 2 + n_val // 2]
            + neg[n_test - n_test // 2 :][: n_val - n_val // 2]
        )
        used = set(test) | set(val)
        train = [p for p in order if p not in used][:n_train]
        return {"train": train, "val": val, "test": test}
    if n_train + n_val + n_test > len(order):
        raise ValueError(
            f"task {task!r} has {len(order)} items, asked for {n_train + n_val + n_test}"
        )
    return {
        "test": order[:n_test],
        "val": order[n_test : n_test + n_val],
        "train": order[n_test + n_val : n_test + n_val + n_train],
    }
