"""The headline experiment of deepwalk-sgns: `icml26 run deepwalk-sgns`.

Small-norm SGNS trajectories on stochastic block models and on six real graphs, with
the alignment of W with the target subspace of the linearised matrix M recorded every
10 steps; gensim's Word2Vec on the same walks, the spectral embedding of M and NetMF as
baselines for cluster recovery, a random embedding as the floor. Every threshold is the
issue's except the informative-energy bound of claim 1 (ours, README).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from icml26_core import Claim, Experiment, Result, RunContext, Table
from icml26_core.stats import bootstrap_band

from .graph import largest_component, random_walks, sbm_graph
from .sgns import DeepWalkSGNS
from .theory import (
    cluster_ari,
    energy,
    netmf_embedding,
    sgns_matrix,
    spectral_embedding,
    target_subspace,
)

P_IN = 0.1
P_OUTS = (0.01, 0.02, 0.04, 0.06, 0.08)
INITS = (1e-3, 1e-1, 1.0)
REAL = ("karate", "les_miserables", "florentine", "davis", "minnesota", "stdlib_imports")
WINDOW, NEGATIVE, DIM, LR, BATCH = 5, 5, 16, 0.02, 1024
WALK_LENGTH, WALKS_PER_NODE, EPOCHS = 40, 10, 3
GAP_MIN = 1.5  # claim 4's spectral gap assumption (the issue's)
SBM_SEED0 = 100  # SBM graphs 100, 101, ...; graph seed 1 was the prototype's (validation)


def _median(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _spearman_of(x: np.ndarray, y: np.ndarray):
    """A statistic of row indices: Spearman's rho between x and y over those rows."""
    from scipy.stats import rankdata

    def stat(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = np.moveaxis(np.asarray(idx), axis, -1).astype(np.int64)
        rx = rankdata(x[idx], axis=-1)
        ry = rankdata(y[idx], axis=-1)
        rx = rx - rx.mean(axis=-1, keepdims=True)
        ry = ry - ry.mean(axis=-1, keepdims=True)
        den = np.sqrt((rx**2).sum(-1) * (ry**2).sum(-1))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, (rx * ry).sum(-1) / den, np.nan)

    return stat


def _informative(W: np.ndarray, basis: np.ndarray) -> float:
    """Energy of W without its first-eigenvector part, in span(u_2..u_r)."""
    u1 = basis[:, :1]
    Wp = W - u1 @ (u1.T @ W)
    return energy(Wp, basis[:, 1:])


def _batch(n: int) -> int:
    """Pairs per step: 1024 at n = 400 and proportional to n below (capped at 1024).

    The update is a sum over the batch with a per-pair lr, so a node's step grows with
    batch / n; keeping batch / n at the SBM's 2.56 keeps the tiny graphs (15 to 77
    nodes) as stable as the SBM and gives each graph about 1450 steps per epoch.
    """
    return int(min(BATCH, int(np.ceil(BATCH * n / 400))))


def _one_run(adj, basis, labels, init, seed, dim, max_steps, record_every) -> dict[str, Any]:
    """One SGNS trajectory: energies every ``record_every`` steps, W at the two peaks."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return _one_run_inner(adj, basis, labels, init, seed, dim, max_steps, record_every)


def _one_run_inner(adj, basis, labels, init, seed, dim, max_steps, record_every):
    state = {"e": (-1.0, 0, None), "i": (-1.0, 0, None), "steps": [], "E": [], "I": []}

    def cb(step: int, W: np.ndarray, C: np.ndarray) -> None:
        e, i = energy(W, basis), _informative(W, basis)
        state["steps"].append(step)
        state["E"].append(e)
        state["I"].append(i)
        if e > state["e"][0]:
            state["e"] = (e, step, W.copy() if labels is not None else None)
        if i > state["i"][0]:
            state["i"] = (i, step, W.copy() if labels is not None else None)

    t0 = time.process_time()
    model = DeepWalkSGNS(
        dim=dim,
        walk_length=WALK_LENGTH,
        walks_per_node=WALKS_PER_NODE,
        window=WINDOW,
        negative=NEGATIVE,
        init_scale=init,
        lr=LR,
        batch_size=_batch(adj.shape[0]),
        epochs=EPOCHS,
        max_steps=max_steps,
        record_every=record_every,
        seed=seed,
    ).fit(adj, target=None, callback=cb)
    out = {
        "cpu_s": time.process_time() - t0,
        "steps": np.array(state["steps"]),
        "energy": np.array(state["E"]),
        "info": np.array(state["I"]),
        "peak_energy": state["e"][0],
        "peak_energy_step": state["e"][1],
        "peak_info": state["i"][0],
        "peak_info_step": state["i"][1],
        "final_energy": state["E"][-1],
        "final_info": state["I"][-1],
        "n_steps": model.n_steps_,
    }
    if labels is not None:
        out["ari_peak"] = cluster_ari(state["i"][2], labels)
        out["ari_energy_peak"] = cluster_ari(state["e"][2], labels)
        out["ari_end"] = cluster_ari(model.embedding_, labels)
    return out


def _gensim(adj, basis, labels, seed, dim) -> dict[str, Any]:
    """Gensim Word2Vec(sg=1, hs=0, negative=5, window=5, workers=1) on the same walks."""
    from gensim.models import Word2Vec

    walks = random_walks(adj, WALK_LENGTH, WALKS_PER_NODE, seed=seed)
    t0 = time.process_time()
    model = Word2Vec(
        [list(map(str, w)) for w in walks],
        vector_size=dim,
        window=WINDOW,
        sg=1,
        hs=0,
        negative=NEGATIVE,
        min_count=1,
        workers=1,
        seed=seed,
        epochs=1,
    )
    W = np.stack([model.wv[str(i)] for i in range(adj.shape[0])]).astype(np.float64)
    return {
        "cpu_s": time.process_time() - t0,
        "ari": cluster_ari(W, labels),
        "energy": energy(W, basis),
        "info": _informative(W, basis),
    }


def _real_graph(name: str) -> sp.csr_array:
    from icml26_core.datasets import load_graph

    g = load_graph(name)
    A = sp.csr_array(g.adjacency(), dtype=np.float64)
    if g.directed:
        A = ((A + A.T) / 2).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    cc = largest_component(A)
    return sp.csr_array(A[cc][:, cc])


def _parallel(jobs, n_jobs):
    if n_jobs == 1:
        return [f(*a) for f, a in jobs]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs)(delayed(f)(*a) for f, a in jobs)


def run(ctx: RunContext) -> Result:
    """Measure the four claims at ``ctx.scale`` and decide them on the core's builders."""
    from threadpoolctl import threadpool_limits

    # one BLAS/OpenMP thread per process: small matrices, and the runs are parallel
    with threadpool_limits(limits=1):
        return _run(ctx)


def _run(ctx: RunContext) -> Result:
    n_seeds = ctx.pick(smoke=3, default=5, full=10)
    block = ctx.pick(smoke=40, default=100, full=250)
    p_outs = ctx.pick(smoke=(0.01, 0.08), default=P_OUTS)
    inits = ctx.pick(smoke=(1e-3, 1.0), default=(1e-3, 1.0), full=INITS)
    real = ctx.pick(smoke=("karate", "florentine"), default=REAL)
    max_steps = ctx.pick(smoke=300, default=1200, full=4000)
    rec = 10
    n_jobs = 1 if ctx.scale == "smoke" else min(2, os.cpu_count() or 1)
    seeds = list(range(n_seeds))
    K = 4
    res = Result()
    t_start = time.perf_counter()

    # -- SBM sweep ------------------------------------------------------------------------
    graphs: dict[tuple[float, int], dict[str, Any]] = {}
    for p_out in ctx.progress(p_outs, "SBM graphs and targets"):
        for s in seeds:
            adj, y = sbm_graph((block,) * K, P_IN, p_out, seed=SBM_SEED0 + s)
            cc = largest_component(adj)
            adj, y = sp.csr_array(adj[cc][:, cc]), y[cc]
            M = sgns_matrix(adj, WINDOW, NEGATIVE)
            t = target_subspace(M, rank=K)
            rng = np.random.default_rng(10**6 + s)
            graphs[p_out, s] = {
                "adj": adj,
                "y": y,
                "target": t,
                "spectral": cluster_ari(spectral_embedding(M, DIM), y),
                "netmf": cluster_ari(netmf_embedding(adj, DIM, WINDOW, NEGATIVE), y),
                "floor": cluster_ari(rng.standard_normal((adj.shape[0], DIM)), y),
            }
    jobs = [
        (_one_run, (g["adj"], g["target"].basis, g["y"], init, s, DIM, max_steps, rec))
        for (p_out, s), g in graphs.items()
        for init in inits
    ]
    keys = [(p_out, s, init) for (p_out, s) in graphs for init in inits]
    ctx.log(f"{len(jobs)} SGNS runs on SBM graphs")
    sbm = dict(zip(keys, _parallel(jobs, n_jobs), strict=True))
    gjobs = [
        (_gensim, (g["adj"], g["target"].basis, g["y"], s, DIM)) for (_, s), g in graphs.items()
    ]
    gen = dict(zip(graphs, _parallel(gjobs, n_jobs), strict=True))
    res.data["sbm_seconds"] = time.perf_counter() - t_start

    def col(metric, p_out, init):
        return np.array([sbm[p_out, s, init][metric] for s in seeds])

    sbm_table = Table(
        f"SBM, K = {K} blocks of {block}, p_in = {P_IN}: alignment with the rank-{K} target "
        "(median over graphs/seeds) and k-means ARI (mean)",
        [
            "p_out",
            "method",
            "gap ratio",
            "peak energy",
            "peak informative",
            "step of peak",
            "final energy",
            "ARI at peak",
            "ARI at end",
            "n",
        ],
    )
    small = inits[0]
    for p_out in p_outs:
        gap = float(np.median([graphs[p_out, s]["target"].gap_ratio for s in seeds]))
        n_nodes = graphs[p_out, 0]["adj"].shape[0]
        for init in inits:
            sbm_table.add_row(
                p_out=p_out,
                method=f"SGNS, init {init:g}",
                **{
                    "gap ratio": gap,
                    "peak energy": float(np.median(col("peak_energy", p_out, init))),
                    "peak informative": float(np.median(col("peak_info", p_out, init))),
                    "step of peak": int(np.median(col("peak_info_step", p_out, init))),
                    "final energy": float(np.median(col("final_energy", p_out, init))),
                    "ARI at peak": float(col("ari_peak", p_out, init).mean()),
                    "ARI at end": float(col("ari_end", p_out, init).mean()),
                },
                n=n_seeds,
            )
        gs = [gen[p_out, s] for s in seeds]
        sbm_table.add_row(
            p_out=p_out,
            method="gensim Word2Vec (same walks, 1 epoch)",
            **{
                "gap ratio": gap,
                "peak energy": None,
                "peak informative": None,
                "step of peak": None,
                "final energy": float(np.median([g["energy"] for g in gs])),
                "ARI at peak": None,
                "ARI at end": float(np.mean([g["ari"] for g in gs])),
            },
            n=n_seeds,
        )
        for label, key in (
            ("spectral embedding of M", "spectral"),
            ("NetMF closed form", "netmf"),
            ("floor: random embedding", "floor"),
        ):
            sbm_table.add_row(
                p_out=p_out,
                method=label,
                **{
                    "gap ratio": gap,
                    "peak energy": K / n_nodes if key == "floor" else None,
                    "peak informative": (K - 1) / (n_nodes - 1) if key == "floor" else None,
                    "step of peak": None,
                    "final energy": None,
                    "ARI at peak": None,
                    "ARI at end": float(np.mean([graphs[p_out, s][key] for s in seeds])),
                },
                n=n_seeds,
            )

    # -- real graphs ----------------------------------------------------------------------
    t_real = time.perf_counter()
    targets: dict[str, Any] = {}
    adjs: dict[str, sp.csr_array] = {}
    for name in ctx.progress(real, "real graphs and targets"):
        A = _real_graph(name)
        d = min(DIM, A.shape[0] // 2)
        adjs[name] = A
        targets[name] = (target_subspace(sgns_matrix(A, WINDOW, NEGATIVE), max_rank=min(d, 20)), d)
    rjobs = [
        (_one_run, (adjs[nm], targets[nm][0].basis, None, init, s, targets[nm][1], max_steps, rec))
        for nm in real
        for s in seeds
        for init in inits
    ]
    rkeys = [(nm, s, init) for nm in real for s in seeds for init in inits]
    realres = dict(zip(rkeys, _parallel(rjobs, n_jobs), strict=True))
    res.data["real_seconds"] = time.perf_counter() - t_real

    real_table = Table(
        "Real graphs (largest component): alignment with the target of M (median over seeds)",
        [
            "graph",
            "n",
            "d",
            "r",
            "gap ratio",
            "init",
            "peak energy",
            "peak informative",
            "step of peak",
            "final informative",
            "chance r/n",
            "seeds",
        ],
    )
    for nm in real:
        t, d = targets[nm]
        n_nodes = adjs[nm].shape[0]
        for init in inits:
            rr = [realres[nm, s, init] for s in seeds]
            real_table.add_row(
                graph=nm,
                n=n_nodes,
                d=d,
                r=t.rank,
                **{"gap ratio": t.gap_ratio},
                init=f"{init:g}",
                **{
                    "peak energy": float(np.median([r["peak_energy"] for r in rr])),
                    "peak informative": float(np.median([r["peak_info"] for r in rr])),
                    "step of peak": int(np.median([r["peak_info_step"] for r in rr])),
                    "final informative": float(np.median([r["final_info"] for r in rr])),
                    "chance r/n": t.chance,
                },
                seeds=n_seeds,
            )
    res.tables = [sbm_table, real_table]

    # -- claims ---------------------------------------------------------------------------
    sep = [p for p in p_outs if p <= 0.02]
    c1 = []
    for p_out in sep:
        c1.append(
            Claim.from_evidence(
                f"p_out = {p_out:g}: median peak energy in the rank-{K} target >= 0.9",
                "BCa bootstrap CI of the median over graphs/seeds lies above 0.9",
                bootstrap_band(
                    [col("peak_energy", p_out, small)],
                    _median,
                    low=0.9,
                    effect_name="median peak energy ||U^T W||^2/||W||^2",
                    test="BCa bootstrap over SBM graphs (one seed each)",
                ),
                {"p_out": p_out, "init": small},
            )
        )
        c1.append(
            Claim.from_evidence(
                f"p_out = {p_out:g}: median peak informative energy >= 0.5 (ours)",
                "BCa bootstrap CI of the median lies above 0.5 (first eigenvector removed)",
                bootstrap_band(
                    [col("peak_info", p_out, small)],
                    _median,
                    low=0.5,
                    effect_name="median peak energy of (I - u1 u1^T) W in span(u2..uK)",
                    test="BCa bootstrap over SBM graphs (one seed each)",
                ),
                {"p_out": p_out, "init": small},
            )
        )
    res.claims.append(
        Claim.all_of(
            f"Alignment: on SBMs with p_out <= 0.02, small-init (init {small:g}) SGNS reaches "
            f"peak energy >= 0.9 in the rank-{K} target, and not only through the degree "
            "direction (informative energy >= 0.5).",
            c1,
        )
    )

    c2 = []
    for metric, label in (("peak_energy", "peak energy"), ("peak_info", "peak informative")):
        a = [sbm[p, s, small][metric] for p in p_outs for s in seeds]
        b = [sbm[p, s, inits[-1]][metric] for p in p_outs for s in seeds]
        a += [realres[nm, s, small][metric] for nm in real for s in seeds]
        b += [realres[nm, s, inits[-1]][metric] for nm in real for s in seeds]
        a, b = np.array(a), np.array(b)
        tie = np.isclose(a, b, rtol=1e-9, atol=1e-12)
        wins, draws = int(((a > b) & ~tie).sum()), int(tie.sum())
        c2.append(
            Claim.win_rate(
                f"{label}: init {small:g} > init {inits[-1]:g} in >= 80% of (graph, seed) pairs",
                wins,
                draws,
                a.size - wins - draws,
                threshold=0.8,
                names=(f"init {small:g}", f"init {inits[-1]:g}"),
            )
        )
    res.claims.append(
        Claim.all_of(
            f"Small initialisation aligns better: the peak energy at init {small:g} exceeds "
            f"the one at init {inits[-1]:g} in at least 80% of (graph, seed) pairs.",
            c2,
        )
    )

    c3 = []
    for p_out in sep:
        ours = col("ari_peak", p_out, small)
        gens = np.array([gen[p_out, s]["ari"] for s in seeds])
        c3.append(
            Claim.from_evidence(
                f"p_out = {p_out:g}: mean ARI at the peak >= 0.9",
                "BCa bootstrap CI of the mean ARI lies above 0.9",
                bootstrap_band(
                    [ours],
                    _mean,
                    low=0.9,
                    effect_name="mean k-means ARI at the peak of the informative energy",
                    test="BCa bootstrap over SBM graphs",
                ),
                {"p_out": p_out},
            )
        )
        c3.append(
            Claim.non_inferior(
                f"p_out = {p_out:g}: ARI at the peak >= gensim's ARI - 0.05",
                ours,
                gens,
                margin=0.05,
                names=("SGNS at the peak", "gensim"),
                metric="k-means ARI",
            )
        )
    px = np.array([p for p in p_outs for _ in seeds], dtype=float)
    ay = np.array([sbm[p, s, small]["ari_peak"] for p in p_outs for s in seeds])
    c3.append(
        Claim.from_evidence(
            "ARI falls with p_out: Spearman(ARI at the peak, p_out) <= -0.8 over the sweep",
            "BCa bootstrap CI (over (p_out, graph) points) of Spearman's rho lies below -0.8",
            bootstrap_band(
                [np.arange(px.size, dtype=float)],
                _spearman_of(px, ay),
                high=-0.8,
                effect_name="Spearman rho(ARI at the peak, p_out)",
                test="BCa bootstrap over (p_out, graph) points",
            ),
            {"p_out": px.tolist(), "ari": ay.tolist()},
        )
    )
    res.claims.append(
        Claim.all_of(
            "Cluster recovery: on SBMs with p_out <= 0.02 the embedding at its peak recovers "
            "the blocks (ARI >= 0.9, within 0.05 of gensim), and recovery degrades as p_out grows.",
            c3,
        )
    )

    c4, unmet = [], []
    for nm in real:
        t, _ = targets[nm]
        if t.gap_ratio < GAP_MIN:
            unmet.append(f"{nm} (gap {t.gap_ratio:.2f})")
            continue
        chance = (t.rank - 1) / (adjs[nm].shape[0] - 1)
        ratio = np.array([realres[nm, s, small]["peak_info"] / chance for s in seeds])
        c4.append(
            Claim.from_evidence(
                f"{nm} (gap {t.gap_ratio:.2f}, r = {t.rank}): peak informative energy >= 3x chance",
                "BCa bootstrap CI of the median over seeds of peak / chance lies above 3",
                bootstrap_band(
                    [ratio],
                    _median,
                    low=3.0,
                    effect_name="median peak informative energy / ((r - 1)/(n - 1))",
                    test="BCa bootstrap over seeds",
                ),
                {"graph": nm},
            )
        )
    statement = (
        f"Spectral gap: every real graph with gap ratio >= {GAP_MIN} reaches a peak "
        "informative energy of at least 3x chance at small init"
        + (f"; assumption not met (not tested): {', '.join(unmet)}." if unmet else ".")
    )
    if c4:
        res.claims.append(Claim.all_of(statement, c4))
    else:
        res.claims.append(
            Claim.check(
                statement, "no graph meets the gap assumption", {"unmet": unmet}, lambda v: None
            )
        )
    res.data["gap_not_met"] = unmet
    res.data["cpu_s_sgns_runs"] = float(
        sum(r["cpu_s"] for r in sbm.values()) + sum(r["cpu_s"] for r in realres.values())
    )
    res.data["cpu_s_gensim_runs"] = float(sum(g["cpu_s"] for g in gen.values()))
    res.notes.append(
        f"SGNS: d = {DIM}, T = {WINDOW}, k = {NEGATIVE}, noise ~ degree, lr {LR} per pair, "
        f"batch min({BATCH}, 2.56 n) pairs, {WALKS_PER_NODE} walks of {WALK_LENGTH} per node, "
        "at most "
        f"{EPOCHS} epochs and {max_steps} steps; energy recorded every {rec} steps. "
        "'Informative' energy: W with its first-eigenvector (degree) part removed, in "
        "span(u2..ur); the peak and its ARI are taken at that energy's peak. "
        f"SBM graph seeds {SBM_SEED0}..{SBM_SEED0 + n_seeds - 1}; k-means ARI on raw rows."
    )
    res.data["trajectories"] = {
        f"sbm p_out={p} init={i:g}": {
            "step": sbm[p, 0, i]["steps"].tolist(),
            "energy": sbm[p, 0, i]["energy"].tolist(),
            "info": sbm[p, 0, i]["info"].tolist(),
        }
        for p in p_outs
        for i in inits
    }
    _figure(ctx, sbm, realres, p_outs, inits, real)
    return res


def _figure(ctx, sbm, realres, p_outs, inits, real) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    p0 = p_outs[0]
    for init in inits:
        r = sbm[p0, 0, init]
        axes[0].plot(r["steps"], r["energy"], label=f"energy, init {init:g}")
        axes[0].plot(r["steps"], r["info"], ls="--", label=f"informative, init {init:g}")
    axes[0].set(title=f"SBM p_out = {p0:g}, seed 0", xlabel="step", ylabel="alignment")
    axes[0].legend(fontsize=7)
    for p in p_outs:
        r = sbm[p, 0, inits[0]]
        axes[1].plot(r["steps"], r["info"], label=f"p_out {p:g}")
    axes[1].set(title=f"SBM, init {inits[0]:g}: informative energy", xlabel="step")
    axes[1].legend(fontsize=7)
    for nm in real:
        r = realres[nm, 0, inits[0]]
        axes[2].plot(r["steps"], r["info"], label=nm)
    axes[2].set(title=f"real graphs, init {inits[0]:g}: informative energy", xlabel="step")
    axes[2].legend(fontsize=7)
    ctx.save_figure(fig, "alignment_vs_step")


EXPERIMENT = Experiment(
    name="deepwalk-sgns",
    title=(
        "DeepWalk with negative sampling: small-init trajectories align with a fixed "
        "low-rank matrix"
    ),
    claim=(
        "From a small-norm initialisation, SGNS DeepWalk embeddings align with the column space "
        "of a fixed low-rank matrix (under a spectral gap), and on SBMs they recover the blocks."
    ),
    run=run,
)
