"""Time to embed a graph: DeepWalkSGNS (numpy) against gensim Word2Vec on the same walks.

Both sides: 10 walks of 40 nodes per node, window 5, 5 negatives, d = 16, one epoch,
and each timed call starts from the graph (walks, pairs or sentences, training). Ours:
batches of 1024 pairs, lr 0.02, one BLAS thread. gensim: ``Word2Vec(sg=1, hs=0,
negative=5, window=5, min_count=1, epochs=1, workers=w)`` on our walks as strings, for
w = 1 and 2 (gensim shrinks each window to a uniform 1..5, so it trains on about 60% of
our pairs per epoch: the pairs column says how many each side saw). Times:
``compare_times`` (interleaved rounds after a warm-up, one process), the ratio of
medians with its bootstrap CI. Reproducibility: two fits with one seed, compared bit
for bit.

    uv run python packages/deepwalk-sgns/benchmarks/speed.py          # stdlib_imports, SBM n=1000
    uv run python packages/deepwalk-sgns/benchmarks/speed.py --quick  # stdlib_imports only
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from deepwalk_sgns import DeepWalkSGNS, random_walks, sbm_graph
from deepwalk_sgns.experiment import _real_graph
from icml26_core import Claim
from icml26_core.timing import compare_times
from threadpoolctl import threadpool_limits


def ours(adj, seed=0):
    return DeepWalkSGNS(dim=16, epochs=1, record_every=0, seed=seed).fit(adj, target=None)


def gensim_fit(adj, workers, seed=0):
    from gensim.models import Word2Vec

    walks = random_walks(adj, 40, 10, seed=seed)
    return Word2Vec(
        [list(map(str, w)) for w in walks],
        vector_size=16,
        window=5,
        sg=1,
        hs=0,
        negative=5,
        min_count=1,
        workers=workers,
        seed=seed,
        epochs=1,
    )


def gensim_embedding(model, n):
    return np.stack([model.wv[str(i)] for i in range(n)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    graphs = {"stdlib_imports": _real_graph("stdlib_imports")}
    if not args.quick:
        graphs["sbm n=1000"] = sbm_graph((250,) * 4, 0.05, 0.005, seed=0)[0]
    print(f"cpus: {os.cpu_count()}, load: {os.getloadavg()[0]:.1f}")
    print(
        "| graph | n | ours pairs | gensim | gensim words | median ours s | median gensim s "
        "| gensim / ours [95% CI] | verdict: within 3x |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with threadpool_limits(limits=1):
        for name, adj in graphs.items():
            n = adj.shape[0]
            a, b = ours(adj, 1), ours(adj, 1)
            same = np.array_equal(a.embedding_, b.embedding_)
            g1 = gensim_embedding(gensim_fit(adj, 2, 1), n)
            g2 = gensim_embedding(gensim_fit(adj, 2, 1), n)
            print(
                f"<!-- {name}: ours bit-identical over two seeded fits: {same}; "
                f"gensim workers=2: {np.array_equal(g1, g2)} -->"
            )
            for workers in (1, 2):
                c = compare_times(
                    lambda adj=adj: ours(adj),
                    lambda adj=adj, w=workers: gensim_fit(adj, w),
                    repeats=args.repeats,
                    warmup=1,
                    names=("DeepWalkSGNS", f"gensim w={workers}"),
                )
                claim = Claim.faster(
                    "within 3x of gensim",
                    c.times_a,
                    c.times_b,
                    at_least=1 / 3,
                    names=("DeepWalkSGNS", "gensim"),
                    paired=True,
                )
                e = claim.evidence
                m = gensim_fit(adj, workers)
                print(
                    f"| {name} | {n} | {a.n_pairs_} | workers={workers} | "
                    f"{m.corpus_total_words} | {c.median_a:.2f} | {c.median_b:.2f} | "
                    f"{e.effect:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}] | {claim.verdict} |"
                )


if __name__ == "__main__":
    main()
