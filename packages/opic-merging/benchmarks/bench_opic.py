"""Fitness evaluations per minute: the cached top-K scorer against a full forward.

`uv run python packages/opic-merging/benchmarks/bench_opic.py` (output: bench_opic.txt).
SmolLM2-135M-Instruct, one thread, task vectors on the top K decoder layers (random
perturbations of the base: the cost does not depend on their values), the ICL prompts
of a default OPIC fit (3 tasks x 6 queries x 4 shots). Both scorers are timed
interleaved by ``icml26_core.timing.compare_times``; the merge itself (writing
theta_0 + sum lambda tau into the model) is timed apart. mergekit is not a workspace
dependency (see the README), so the merge is not timed against it here.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import opic_merging as om
import torch
from icml26_core.lm import load_smollm2
from icml26_core.timing import compare_times
from opic_merging._data import INSTRUCTIONS, split_task
from opic_merging._lm import CachedScorer

torch.set_num_threads(1)
K = int(sys.argv[1]) if len(sys.argv) > 1 else 2
model, tok = load_smollm2()
model.eval()
names = [
    n for n, _ in model.named_parameters() if any(f"layers.{i}." in n for i in range(30 - K, 30))
]
params = dict(model.named_parameters())
g = torch.Generator().manual_seed(0)
tvs = [
    om.TaskVector({n: 1e-3 * torch.randn(params[n].shape, generator=g) for n in names}, f"t{i}")
    for i in range(3)
]
pairs = []
for t in ("capital", "region", "sentiment"):
    items = split_task(t, 0, 0, 30)["test"][:30]
    for q in range(6):
        demo = "".join(f"Input: {x}\nOutput: {y}\n" for x, y in items[q + 1 : q + 5])
        pairs.append((f"{INSTRUCTIONS[t]}\n{demo}Input: {items[q][0]}\nOutput:", " " + items[q][1]))
cached = CachedScorer(model, tok, pairs, names)
full = CachedScorer(model, tok, pairs, [n for n, _ in model.named_parameters()])
base = {n: params[n].detach().clone() for n in names}
rng = np.random.default_rng(0)


def weights():
    lam = rng.uniform(0, 1, 3)
    return {n: base[n] + sum(float(lam[i]) * tvs[i].delta[n] for i in range(3)) for n in names}


w = weights()
t0 = time.perf_counter()
for _ in range(5):
    weights()
merge_s = (time.perf_counter() - t0) / 5
cmp = compare_times(
    lambda: cached.score(w),
    lambda: full.score(w),
    repeats=5,
    warmup=1,
    names=("cached top-K", "full forward"),
)
ev = cmp.speedup(at_least=1.0)
lines = [
    f"SmolLM2-135M-Instruct, K = {K} merged layers, {len(pairs)} ICL prompts "
    f"({sum(b['ids'].numel() for b in cached.batches)} padded tokens), 1 thread",
    f"cached top-K: median {cmp.median_a:.3f} s per evaluation = "
    f"{60 / cmp.median_a:.1f} evaluations/min",
    f"full forward: median {cmp.median_b:.3f} s per evaluation = "
    f"{60 / cmp.median_b:.1f} evaluations/min",
    f"speed-up: {ev.summary()}",
    f"merge theta_0 + sum lambda tau over {len(names)} tensors: {merge_s * 1000:.1f} ms",
]
print("\n".join(lines))
