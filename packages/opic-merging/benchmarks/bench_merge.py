"""Merge time: our TIES / DARE-TIES / task arithmetic against mergekit 0.1.5's, one run.

`uv run python packages/opic-merging/benchmarks/bench_merge.py` (output: bench_merge.txt).
The tensors of SmolLM2-135M's top 2 decoder layers (18 tensors, 7.1M entries; shapes
taken from the model's config, values random: the cost does not depend on them), three
task vectors, one thread. Each pair is timed interleaved by
``icml26_core.timing.compare_times`` (ratio of medians with a bootstrap CI); both sides
return the merged tensors ``theta_0 + delta``. mergekit runs through
``opic_merging.mergekit_merge`` (its in-memory ``merge_state_dicts``).
"""

from __future__ import annotations

import os

import opic_merging as om
import torch
from icml26_core.timing import compare_times

torch.set_num_threads(1)
H, FF, KV = 576, 1536, 192  # SmolLM2-135M: hidden, MLP, key/value width
shapes = {
    "self_attn.q_proj.weight": (H, H),
    "self_attn.k_proj.weight": (KV, H),
    "self_attn.v_proj.weight": (KV, H),
    "self_attn.o_proj.weight": (H, H),
    "mlp.gate_proj.weight": (FF, H),
    "mlp.up_proj.weight": (FF, H),
    "mlp.down_proj.weight": (H, FF),
    "input_layernorm.weight": (H,),
    "post_attention_layernorm.weight": (H,),
}
g = torch.Generator().manual_seed(0)
base = {
    f"model.layers.{i}.{k}": torch.randn(s, generator=g) * 0.02
    for i in (28, 29)
    for k, s in shapes.items()
}
tvs = [
    om.TaskVector({k: 1e-3 * torch.randn(v.shape, generator=g) for k, v in base.items()}, f"t{j}")
    for j in range(3)
]
n_entries = sum(v.numel() for v in base.values())


def ours_ties():
    d = om.ties_merge(tvs, 0.2).delta
    return {k: base[k] + d[k] for k in base}


def ours_dare():
    d = om.dare_ties_merge(tvs, 0.5, seed=0).delta
    return {k: base[k] + d[k] for k in base}


cases = [
    ("TIES density 0.2", ours_ties, lambda: om.mergekit_merge(base, tvs, "ties", density=0.2)),
    (
        "DARE-TIES density 0.5",
        ours_dare,
        lambda: om.mergekit_merge(base, tvs, "dare_ties", density=0.5),
    ),
    (
        "task arithmetic",
        lambda: om.merge(base, tvs, [0.5, 0.5, 0.5]),
        lambda: om.mergekit_merge(base, tvs, "task_arithmetic", weight=0.5),
    ),
]
start = os.times()
lines = [
    f"{len(base)} tensors of SmolLM2-135M's top 2 layers ({n_entries / 1e6:.1f}M entries), "
    "3 task vectors, 1 thread, mergekit 0.1.5 vs opic_merging"
]
for label, fa, fb in cases:
    cmp = compare_times(fa, fb, repeats=7, warmup=1, names=("opic_merging", "mergekit"))
    ev = cmp.speedup(at_least=1.0)
    lines.append(
        f"{label}: ours median {cmp.median_a:.3f} s, mergekit {cmp.median_b:.3f} s; {ev.summary()}"
    )
end = os.times()
lines.append(
    f"wall {end.elapsed - start.elapsed:.1f} s, user {end.user - start.user:.1f} s, "
    f"sys {end.system - start.system:.1f} s; load average "
    + " ".join(f"{x:.2f}" for x in os.getloadavg())
)
print("\n".join(lines))
