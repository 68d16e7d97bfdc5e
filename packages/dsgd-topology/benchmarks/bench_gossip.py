"""Gossip round vs all-reduce data parallel: bytes and time per step, N gloo processes.

Run: ``uv run python packages/dsgd-topology/benchmarks/bench_gossip.py`` (4 processes
started by :func:`icml26_core.decentralized.spawn_local`; writes ``results.md`` beside
this file), or the issue's full-scale timing run with 8 processes under ``torchrun``::

    uv run torchrun --standalone --nproc-per-node 8 \
        packages/dsgd-topology/benchmarks/bench_gossip.py --sizes 7850,50890

(writes ``results_world8.md``). Each process holds a parameter vector of ``P`` float32
(7850: the experiment's softmax regression; 50890: the full scale's 784-64-10 MLP; 1 M:
a small network). Per step, D-SGD does
one :meth:`GossipGroup.mix` (neighbour ``batch_isend_irecv``), all-reduce data parallel
does one ``all_reduce`` of the same vector (what ``DistributedDataParallel`` does with
the gradients). Both are timed interleaved in the same processes
(:func:`icml26_core.timing.compare_times`, after a warm-up), so machine load hits both.
Bytes (mean over the nodes): gossip's are counted by the group (the full-precision
vector to each out-neighbour);
all-reduce's are the ring algorithm's ``2 (n - 1) / n * P * 4`` per node (gloo's
algorithm choice may move more).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

NAMES = ("ring", "path", "star", "complete", "hypercube", "one_peer_exponential")
SIZES = (7850, 1_000_000)
REPEATS = 30


def _worker(
    rank: int, world: int, sizes: tuple[int, ...] = SIZES, repeats: int = REPEATS
) -> list[dict]:
    import torch
    import torch.distributed as dist
    from dsgd_topology import mixing_schedule
    from icml26_core.decentralized import GossipGroup
    from icml26_core.timing import compare_times

    rows = []
    for size in sizes:
        x = torch.randn(size, generator=torch.Generator().manual_seed(rank))
        for name in NAMES:
            sched = mixing_schedule(name, world)
            W0 = sched.W if sched.static else np.full((world, world), 1.0 / world)
            group = GossipGroup(W0)
            state = {"t": 0}

            def gossip(group=group, sched=sched, state=state, x=x):
                W = None if sched.static else sched(state["t"])
                state["t"] += 1
                return group.mix(x, W=W)

            def allreduce(x=x):
                y = x.clone()
                dist.all_reduce(y)
                return y / world

            c = compare_times(
                gossip, allreduce, repeats=repeats, warmup=3, names=(name, "all-reduce")
            )
            ev = c.speedup()
            rounds = max(1, group.rounds)
            mean_bits = float(group.gather_bits_sent().mean())  # collective
            rows.append(
                {
                    "size": size,
                    "topology": name,
                    "gossip_ms": 1e3 * c.median_a,
                    "allreduce_ms": 1e3 * c.median_b,
                    "speedup": ev.effect,
                    "ci": (ev.ci_low, ev.ci_high),
                    "gossip_bytes": mean_bits / 8 / rounds,
                    "allreduce_bytes": 2 * (world - 1) / world * size * 4,
                }
            )
    return rows


def _report(rows: list[dict], world: int, repeats: int, launcher: str) -> str:
    load = os.getloadavg()
    cpu = os.cpu_count()
    lines = [
        f"# Gossip (D-SGD) vs all-reduce (data parallel), {world} gloo processes on loopback",
        "",
        f"Started by {launcher}. {repeats} interleaved rounds after 3 warm-up rounds; median "
        "ms per step; speed-up = median(all-reduce) / median(gossip) with its 95% bootstrap "
        f"CI over paired rounds; bytes sent per node per step (mean over the {world} nodes; "
        "all-reduce: the ring algorithm's 2 (n-1)/n P 4). Machine: "
        f"{cpu} CPU cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} while "
        "it ran (shared machine).",
        "",
        "| P (float32) | topology | gossip ms | all-reduce ms | speed-up [95% CI] "
        "| gossip bytes | all-reduce bytes | bytes ratio |",
        "|---:|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']:,} | {r['topology']} | {r['gossip_ms']:.3f} | {r['allreduce_ms']:.3f} "
            f"| {r['speedup']:.2f} [{r['ci'][0]:.2f}, {r['ci'][1]:.2f}] | {r['gossip_bytes']:,.0f} "
            f"| {r['allreduce_bytes']:,.0f} | {r['gossip_bytes'] / r['allreduce_bytes']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=4, help="processes (spawn_local only)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="P values, commas")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--out", default=None, help="default results.md / results_worldN.md")
    args = parser.parse_args(argv)
    sizes = tuple(int(v) for v in args.sizes.split(","))
    if "WORLD_SIZE" in os.environ:  # started by torchrun: this process is one rank
        from icml26_core.decentralized import init_distributed

        rank, world = init_distributed("gloo")
        rows = _worker(rank, world, sizes, args.repeats)
        launcher = "torchrun"
        if rank != 0:
            return
    else:
        from icml26_core.decentralized import spawn_local

        world = args.world
        rows = spawn_local(_worker, world, args=(sizes, args.repeats), timeout_s=1200)[0]
        launcher = "spawn_local"
    text = _report(rows, world, args.repeats, launcher)
    name = args.out or ("results.md" if world == 4 else f"results_world{world}.md")
    Path(__file__).with_name(name).write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
