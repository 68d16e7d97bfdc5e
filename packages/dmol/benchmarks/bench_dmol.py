"""Time per step and peak activation memory: DMoL vs end-to-end BP, same blocks.

Run: ``uv run python packages/dmol/benchmarks/bench_dmol.py`` (output beside it in
``bench_dmol.txt``). For each net (the experiment's MNIST CNN, ``cnn_net`` with 8
channels at 7x7 and flattened heads, on an MNIST-shaped batch of 64; plain GCN on the
core's ``stdlib_imports`` graph) and depth 8 / 16 / 32:

- time per training step, DMoL (``DMoLTrainer.step``) and BP (``BPTrainer.step``),
  interleaved in one process (``icml26_core.timing.compare_times``), as the ratio of
  medians with its CI;
- peak activation memory: the largest total size of the tensors autograd keeps for
  backward that are alive at once (``torch.autograd.graph.saved_tensors_hooks``), a
  device-independent count of bytes. DMoL frees a block's graph after its own backward,
  so it keeps about one block's activations; BP keeps all of them until its backward.
"""

from __future__ import annotations

import sys
import weakref
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from dmol import BPTrainer, DMoLTrainer, cnn_net, gcn_net, normalized_adjacency
from icml26_core.datasets import load_graph
from icml26_core.timing import compare_times


class SavedBytes:
    """Track the bytes of tensors that autograd saves for backward, alive at once."""

    def __init__(self) -> None:
        self.alive = 0
        self.peak = 0

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        if t.is_sparse:  # the graph's adjacency: an input, not an activation
            return t
        size = t.numel() * t.element_size()
        self.alive += size
        self.peak = max(self.peak, self.alive)
        holder = _Holder(t)
        weakref.finalize(holder, self._free, size)
        return holder  # type: ignore[return-value]

    def _free(self, size: int) -> None:
        self.alive -= size

    @staticmethod
    def unpack(holder: _Holder) -> torch.Tensor:
        return holder.t if isinstance(holder, _Holder) else holder


class _Holder:
    __slots__ = ("__weakref__", "t")

    def __init__(self, t: torch.Tensor) -> None:
        self.t = t


def peak_saved(step) -> int:
    """Peak bytes of saved activations during one call of ``step``."""
    meter = SavedBytes()
    with torch.autograd.graph.saved_tensors_hooks(meter.pack, meter.unpack):
        step()
    return meter.peak


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    lines = [f"# bench_dmol: torch {torch.__version__}, 1 thread", ""]
    x = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))
    g = load_graph("stdlib_imports")
    gx = torch.tensor(g.x, dtype=torch.float32).to_sparse()
    gy = torch.tensor(g.y, dtype=torch.long)
    adj = normalized_adjacency(torch.tensor(g.edge_index, dtype=torch.long), g.num_nodes)
    tr = torch.tensor(np.random.default_rng(0).permutation(g.num_nodes)[: g.num_nodes // 5])

    def gloss(z, t):
        return F.cross_entropy(z[tr], t[tr])

    cases = {
        "CNN (MNIST batch 64, 8 ch, 7x7)": (
            lambda d: cnn_net(1, 8, 10, d, pool=7),  # the experiment's image net
            F.cross_entropy,
            (x, y),
        ),
        "GCN (stdlib_imports, width 64)": (
            lambda d: gcn_net(g.x.shape[1], 64, 13, d),
            gloss,
            (gx, gy, adj),
        ),
    }
    header = (
        f"{'net':32s} {'depth':>5s} {'DMoL ms':>8s} {'BP ms':>8s} {'time DMoL/BP [95% CI]':>24s}"
        f" {'act MiB DMoL':>12s} {'act MiB BP':>10s} {'mem DMoL/BP':>11s}"
    )
    lines.append(header)
    for name, (make, loss, args) in cases.items():
        for depth in (8, 16, 32):
            opt = lambda p: torch.optim.Adam(p, lr=1e-3)  # noqa: E731
            dm = DMoLTrainer(make(depth), loss, opt)
            bp = BPTrainer(make(depth), loss, opt)
            mem_d = peak_saved(lambda dm=dm, args=args: dm.step(*args))
            mem_b = peak_saved(lambda bp=bp, args=args: bp.step(*args))
            c = compare_times(
                lambda dm=dm, args=args: dm.step(*args),
                lambda bp=bp, args=args: bp.step(*args),
                repeats=7,
                warmup=1,
                names=("DMoL", "BP"),
            )
            ev = c.speedup()  # median(BP) / median(DMoL); its inverse is DMoL's slow-down
            ratio, lo, hi = 1 / ev.effect, 1 / ev.ci_high, 1 / ev.ci_low
            line = (
                f"{name:32s} {depth:5d} {1e3 * c.median_a:8.2f} {1e3 * c.median_b:8.2f} "
                f"{ratio:7.2f} [{lo:5.2f}, {hi:5.2f}]       "
                f"{mem_d / 2**20:12.2f} {mem_b / 2**20:10.2f} {mem_d / mem_b:11.2f}"
            )
            print(line, flush=True)
            lines.append(line)
    out = Path(__file__).with_suffix(".txt")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
