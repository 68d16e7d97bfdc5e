"""Cost of the entropy stream over a plain forward pass, and of CPD's per-token update.

Run: ``uv run python packages/cpd-online/benchmarks/bench_stream.py`` (output in
``bench_stream.txt`` beside this file). One torch thread; A and B interleaved
(``icml26_core.timing.compare_times``) so machine load hits both alike.

1. ``EntropyStream.stream_batch`` (system-prompt KV computed once, entropies and
   surprisals to numpy) against a plain ``model(input_ids)`` forward of the same
   templated prompts, right-padded, batch 8: SmolLM2-135M-Instruct, 16 prompts
   (8 AdvBench behaviours + a GCG suffix, 8 benign instructions).
2. Per-token update of :class:`cpd_online.CUSUMDetector` against river's
   ``drift.PageHinkley`` (the peer), 20,000 standardized values.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import torch
from cpd_online import CUSUMDetector, EntropyStream
from icml26_core.datasets.prompts import benign_instructions, load_prompts
from icml26_core.lm import load_smollm2
from icml26_core.timing import compare_times
from river.drift import PageHinkley


def main() -> None:
    torch.set_num_threads(1)
    model, tok = load_smollm2()
    adv, gcg = load_prompts("advbench"), load_prompts("gcg_suffixes")
    benign = [p for p in benign_instructions(520, seed=0) if len(p) <= 250][:8]
    prompts = [f"{adv[i]} {gcg[i % len(gcg)]}" for i in range(8)] + benign
    es = EntropyStream(model, tok, batch_size=8)
    encoded = [es.encode(p)[0] for p in prompts]
    n_tokens = sum(e.size for e in encoded)

    def plain() -> None:
        with torch.no_grad():
            for c in range(0, len(encoded), 8):
                chunk = encoded[c : c + 8]
                width = max(e.size for e in chunk)
                x = torch.zeros((len(chunk), width), dtype=torch.long)
                mask = torch.zeros_like(x)
                for j, e in enumerate(chunk):
                    x[j, : e.size] = torch.from_numpy(e)
                    mask[j, : e.size] = 1
                model(input_ids=x, attention_mask=mask)

    lines = [
        f"python {sys.version.split()[0]}, torch {torch.__version__}, 1 thread, "
        f"load average {os.getloadavg()[0]:.1f} at start",
        "",
    ]
    c = compare_times(
        lambda: es.stream_batch(prompts), plain, repeats=5, names=("EntropyStream", "plain forward")
    )
    ratio = c.median_a / c.median_b
    lines += [
        f"1. {len(prompts)} prompts, {n_tokens} templated tokens, batch 8, 5 interleaved rounds",
        f"   EntropyStream.stream_batch: median {c.median_a:.3f} s "
        f"({n_tokens / c.median_a:.0f} tokens/s)",
        f"   plain forward:              median {c.median_b:.3f} s "
        f"({n_tokens / c.median_b:.0f} tokens/s)",
        f"   stream / forward = {ratio:.3f} (overhead {100 * (ratio - 1):+.1f}%; target < +5%)",
        f"   {c.speedup().summary()} (speed-up of the stream over the plain forward)",
        "",
    ]
    z = np.random.default_rng(0).normal(0, 1, 20_000).tolist()

    def cusum() -> None:
        det = CUSUMDetector(k=0.0, h=1e9)
        for v in z:
            det.update(v)

    def ph() -> None:
        det = PageHinkley(min_instances=5, threshold=1e9, mode="up")
        for v in z:
            det.update(v)

    t = compare_times(cusum, ph, repeats=7, names=("CUSUMDetector", "river PageHinkley"))
    lines += [
        f"2. per-token update, {len(z)} values, 7 interleaved rounds",
        f"   CUSUMDetector.update:   {1e6 * t.median_a / len(z):.2f} us/token",
        f"   river PageHinkley.update: {1e6 * t.median_b / len(z):.2f} us/token",
        f"   {t.speedup().summary()} (speed-up of CUSUMDetector over PageHinkley)",
        f"   forward pass per token (plain, above): {1e6 * c.median_b / n_tokens:.0f} us",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(__file__).with_name("bench_stream.txt").write_text(text)


if __name__ == "__main__":
    main()
