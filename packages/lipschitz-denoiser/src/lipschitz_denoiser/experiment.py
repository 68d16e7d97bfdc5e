"""Experiment ``lipschitz-denoiser``: a certified nonexpansive denoiser vs softly constrained ones.

Trains three denoisers of equal depth and width (ours, DnCNN, DnCNN with spectral
normalisation) on patches of bundled real images and MNIST digits, evaluates
Gaussian denoising (sigma 15 and 25 on [0, 255]) on held-out bundled images
(never used in training) beside TV (scikit-image) and BM3D, certifies and probes
every Lipschitz constant, and runs plug-and-play forward-backward (and
Douglas-Rachford for ours) on Gaussian deblurring, motion deblurring and 2x
super-resolution, recording the fixed-point residual per iteration.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table

from lipschitz_denoiser.certify import certify_lipschitz
from lipschitz_denoiser.models import DnCNN, PermutationDenoiser
from lipschitz_denoiser.operators import Blur, Downsample, gaussian_kernel, motion_kernel
from lipschitz_denoiser.pnp import pnp_douglas_rachford, pnp_forward_backward
from lipschitz_denoiser.training import train_denoiser, training_patches

TRAIN_IMAGES = (
    "astronaut", "brick", "grass", "gravel", "moon", "page", "text",
    "coffee", "rocket", "immunohistochemistry", "cell",
)  # fmt: skip
TEST_IMAGES = ("camera", "coins", "chelsea")  # held out: never cut into training patches
TV_TUNING_IMAGE = "astronaut"  # a training image: TV's weight is tuned there, not on test data
NOISE_LEVELS = (15, 25)  # on [0, 255]
OURS, CNN, SN = "ours (permutation, Lip<=1)", "DnCNN", "DnCNN + spectral norm"
RHO = 0.98  # our bound on the network branch: D is a strict contraction (PnP-FB contracts)
PNP_SIGMA = 0.02  # noise level given to the denoisers inside PnP (intensity units)
MEASUREMENT_NOISE = 0.01
# Adam learning rates: ours picked by final training loss from {2.5e-4, 5e-4, 1e-3, 2e-3, 5e-3}
# (300 steps, default scale); the baselines keep 2e-3, at which they train well.
LEARNING_RATE = {OURS: 5e-4, CNN: 2e-3, SN: 2e-3}


def _center_crop(img: np.ndarray, size: int | None) -> np.ndarray:
    if size is None:
        h, w = img.shape
        return img[: h - h % 4, : w - w % 4]  # multiples of 4: 2x SR needs even sizes
    h, w = img.shape
    r, c = (h - size) // 2, (w - size) // 2
    return img[r : r + size, c : c + size]


def _as_batch(img: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(img, dtype=torch.float32)[None, None]


def _metrics(clean: np.ndarray, est: np.ndarray) -> tuple[float, float]:
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    est = np.clip(est, 0.0, 1.0)
    return (
        float(peak_signal_noise_ratio(clean, est, data_range=1.0)),
        float(structural_similarity(clean, est, data_range=1.0)),
    )


def _bm3d_denoiser():
    try:
        import bm3d

        bm3d.bm3d(np.zeros((16, 16)), sigma_psd=0.1)  # the package imports but may not run
    except Exception as err:  # the registry package is optional: report why it is absent
        return None, f"BM3D unavailable ({type(err).__name__}: {err})"
    return (lambda noisy, s: np.asarray(bm3d.bm3d(noisy, sigma_psd=s))), ""


def _tune_tv(image: np.ndarray, sigma: float, rng: np.random.Generator) -> float:
    from skimage.restoration import denoise_tv_chambolle

    noisy = image + sigma * rng.standard_normal(image.shape)
    grid = (0.01, 0.02, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24)
    scores = [_metrics(image, denoise_tv_chambolle(noisy, weight=w))[0] for w in grid]
    return grid[int(np.argmax(scores))]


def _build_models(features: int, depth: int) -> dict[str, torch.nn.Module]:
    return {
        OURS: PermutationDenoiser(1, features, depth, lipschitz=RHO),
        CNN: DnCNN(1, features, depth),
        SN: DnCNN(1, features, depth, spectral_norm=True),
    }


def _denoise(model: torch.nn.Module, noisy: np.ndarray, sigma: float, device: str) -> np.ndarray:
    with torch.no_grad():
        out = model(_as_batch(noisy).to(device), sigma)
    return out[0, 0].double().cpu().numpy()


def _run(ctx: RunContext) -> Result:
    from icml26_core.datasets import load_image
    from skimage.restoration import denoise_tv_chambolle

    device = ctx.device
    features = ctx.pick(8, 16, 64)
    depth = ctx.pick(4, 5, 12)
    steps = ctx.pick(15, 300, 20000)
    batch = ctx.pick(8, 8, 64)
    patch = ctx.pick(24, 28, 40)
    crop = ctx.pick(40, 96, None)
    pnp_crop = ctx.pick(32, 64, None)
    pnp_images = ctx.pick(1, 2, 3)
    pnp_iters = ctx.pick(8, 40, 200)
    search_steps = ctx.pick(10, 60, 300)
    search_starts = ctx.pick(2, 4, 16)
    rng = ctx.rng(0)
    notes: list[str] = []

    # -- training ---------------------------------------------------------------------
    patches = training_patches(
        TRAIN_IMAGES, patch, steps * batch, mnist_fraction=ctx.pick(0.1, 0.1, 0.0), rng=rng
    )
    models = _build_models(features, depth)
    train_time: dict[str, float] = {}
    final_loss: dict[str, float] = {}
    for i, (name, model) in enumerate(models.items()):
        ctx.log(f"training {name}: {steps} steps of {batch} patches {patch}x{patch}")
        torch.manual_seed(ctx.seed + i)
        t0 = time.perf_counter()
        losses = train_denoiser(
            model, patches, sigma=(0.0, 30 / 255), steps=steps, batch_size=batch,
            lr=LEARNING_RATE[name], seed=ctx.seed, device=device, progress=ctx.progress,
        )  # fmt: skip
        train_time[name] = time.perf_counter() - t0
        final_loss[name] = float(np.mean(losses[-max(1, steps // 10) :]))
    n_params = {n: sum(p.numel() for p in m.parameters()) for n, m in models.items()}

    # -- Gaussian denoising on held-out images -----------------------------------------------
    tests = {n: _center_crop(load_image(n, as_gray=True), crop) for n in TEST_IMAGES}
    bm3d_fn, bm3d_note = _bm3d_denoiser() if ctx.scale != "smoke" else (None, "")
    if ctx.scale == "smoke":
        notes.append("BM3D is skipped at smoke scale (seconds per image); it runs at default/full.")
    if bm3d_note:
        notes.append(bm3d_note)
    tv_weight = {
        s: _tune_tv(_center_crop(load_image(TV_TUNING_IMAGE, as_gray=True), crop or 256),
                    s / 255, ctx.rng(1))
        for s in NOISE_LEVELS
    }  # fmt: skip
    methods = [*models, "TV (Chambolle)"] + (["BM3D"] if bm3d_fn else [])
    den_scores: dict[tuple[str, int], list[tuple[float, float]]] = {}
    jobs = [(img, s) for img in tests for s in NOISE_LEVELS]
    for img_name, s in ctx.progress(jobs, "denoising"):
        clean = tests[img_name]
        sigma = s / 255
        noisy = clean + sigma * ctx.rng(100 + s).standard_normal(clean.shape)
        for name in methods:
            if name in models:
                est = _denoise(models[name], noisy, sigma, device)
            elif name == "BM3D":
                est = bm3d_fn(noisy, sigma)
            else:
                est = denoise_tv_chambolle(noisy, weight=tv_weight[s])
            den_scores.setdefault((name, s), []).append(_metrics(clean, est))
    den_table = Table(
        title=f"Gaussian denoising, mean over held-out images {list(TEST_IMAGES)} "
        f"({'full size' if crop is None else f'{crop}x{crop} centre crops'})",
        columns=["method", "PSNR s=15", "SSIM s=15", "PSNR s=25", "SSIM s=25", "parameters"],
        note="PSNR in dB, SSIM in [0, 1] (scikit-image); noise sigma on [0, 255]; "
        "the three networks receive sigma as an input channel (trained on sigma ~ U[0, 30/255]).",
    )
    mean_psnr: dict[str, dict[str, float]] = {}
    for name in methods:
        row: dict[str, object] = {"method": name, "parameters": n_params.get(name)}
        for s in NOISE_LEVELS:
            vals = np.array(den_scores[(name, s)])
            row[f"PSNR s={s}"], row[f"SSIM s={s}"] = (
                float(vals[:, 0].mean()),
                float(vals[:, 1].mean()),
            )
            mean_psnr.setdefault(name, {})[f"denoise s={s}"] = float(vals[:, 0].mean())
        den_table.add_row(**row)

    # -- Lipschitz certificates and adversarial search -------------------------------------
    lip_table = Table(
        title="Lipschitz constants (l2, fixed sigma = 25/255): certificate vs adversarial search",
        columns=[
            "method", "certified bound", "lattice bound", "empirical lower bound",
            "reflection bound (2D-I)", "pair exceeds certificate",
        ],
        note="certified: ours = Schur bound per layer (any lattice), DnCNN = 1 + product of "
        "exact per-layer norms; lattice: exact per-layer norms on the search lattice; "
        "empirical: best ratio ||D(x)-D(y)||/||x-y|| found by Adam on pairs (float64).",
    )  # fmt: skip
    certs = {}
    size = ctx.pick(24, 32, 64)
    starts = torch.as_tensor(
        np.stack([_center_crop(t, size) for t in tests.values()])[:, None], dtype=torch.float64
    )
    noise_gen = torch.Generator().manual_seed(3)
    starts = starts + 25 / 255 * torch.randn(starts.shape, generator=noise_gen, dtype=torch.float64)
    starts = starts.repeat(max(1, math.ceil(search_starts / len(starts))), 1, 1, 1)[:search_starts]
    for name, model in ctx.progress(list(models.items()), "certifying"):
        cert = certify_lipschitz(
            model.cpu(), (size, size), inputs=starts, sigma=25 / 255,
            steps=search_steps, lr=0.01, seed=ctx.seed,
        )  # fmt: skip
        model.to(device)
        certs[name] = cert
        lip_table.add_row(
            method=name,
            **{
                "certified bound": cert.certified_bound,
                "lattice bound": cert.lattice_bound,
                "empirical lower bound": cert.empirical_lower_bound,
                "reflection bound (2D-I)": cert.reflection_bound,
                "pair exceeds certificate": not cert.consistent,
            },
        )

    # -- plug-and-play reconstruction -----------------------------------------------------
    tasks = {
        "Gaussian deblur": Blur(gaussian_kernel(9, 1.6)),
        "motion deblur": Blur(motion_kernel(9, 30.0)),
        "2x super-resolution": Downsample(2),
    }
    pnp_table = Table(
        title=f"Plug-and-play reconstruction ({pnp_iters} iterations, measurement noise "
        f"{MEASUREMENT_NOISE}, denoiser sigma {PNP_SIGMA}), mean over "
        f"{pnp_images} held-out image(s)",
        columns=[
            "task", "method", "PSNR", "SSIM", "first residual", "last residual",
            "residual ratio", "distance between starts",
        ],
        note="residual: RMS of x_{k+1} - x_k (z for DR); distance: RMS difference of the final "
        "iterates started from A^T y / ||A||^2 and from uniform noise.",
    )  # fmt: skip
    curves: dict[str, dict[str, list[float]]] = {}
    pnp_names = list(tests)[:pnp_images]
    converged_ours: list[bool] = []
    start_gap_ours: list[float] = []
    ratio_cnn: list[float] = []
    pnp_jobs = [(t, m) for t in tasks for m in [*models, "ours (DR)"]]
    for task, method in ctx.progress(pnp_jobs, "plug-and-play"):
        op = tasks[task].to(device)
        model = models[OURS if method == "ours (DR)" else method]

        def denoiser(x, model=model):
            return model(x, PNP_SIGMA)

        psnrs, ssims, firsts, lasts, gaps = [], [], [], [], []
        for k, img_name in enumerate(pnp_names):
            clean = _center_crop(tests[img_name], pnp_crop)
            x_true = _as_batch(clean).to(device)
            gen = torch.Generator().manual_seed(ctx.seed + 10 * k)
            y = op(x_true)
            y = y + MEASUREMENT_NOISE * torch.randn(y.shape, generator=gen).to(device)
            x_rand = torch.rand(x_true.shape, generator=gen).to(device)
            if method == "ours (DR)":
                runs = [pnp_douglas_rachford(y, op, denoiser, gamma=1.0, iters=pnp_iters, x0=x0)
                        for x0 in (None, x_rand)]  # fmt: skip
            else:
                runs = [pnp_forward_backward(y, op, denoiser, iters=pnp_iters, x0=x0)
                        for x0 in (None, x_rand)]  # fmt: skip
            res = runs[0]
            p, s = _metrics(clean, res.x[0, 0].double().cpu().numpy())
            psnrs.append(p)
            ssims.append(s)
            firsts.append(res.residuals[0])
            lasts.append(res.residuals[-1])
            gaps.append(float((runs[0].x - runs[1].x).pow(2).mean().sqrt()))
            if k == 0:
                curves.setdefault(task, {})[method] = res.residuals
        ratio = float(np.max(np.array(lasts) / np.maximum(firsts, 1e-30)))
        pnp_table.add_row(
            task=task, method=method, PSNR=float(np.mean(psnrs)), SSIM=float(np.mean(ssims)),
            **{"first residual": float(np.mean(firsts)), "last residual": float(np.max(lasts)),
               "residual ratio": ratio, "distance between starts": float(np.max(gaps))},
        )  # fmt: skip
        if method in models:
            mean_psnr[method][task] = float(np.mean(psnrs))
        if method == OURS:
            converged_ours.append(ratio <= 1e-3)
            start_gap_ours.append(float(np.max(gaps)))
        if method == CNN:
            ratio_cnn.append(ratio)

    # -- figure -----------------------------------------------------------------------
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(4.2 * len(curves), 3.4), sharey=True)
    for ax, (task, by_method) in zip(np.atleast_1d(axes), curves.items(), strict=True):
        for method, res in by_method.items():
            ax.semilogy(np.arange(1, len(res) + 1), res, label=method)
        ax.set_title(task)
        ax.set_xlabel("iteration")
        ax.grid(True, which="both", alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("fixed-point residual (RMS)")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.suptitle(f"Plug-and-play fixed-point residual ({pnp_names[0]})")
    ctx.save_figure(fig, "pnp_residuals")

    # -- claims -----------------------------------------------------------------------
    ours_cert = certs[OURS]
    claims = [
        Claim.check(
            "Our denoiser is globally nonexpansive: certified Lipschitz bound <= 1, "
            "and no pair found by the adversarial search exceeds it",
            "certified bound <= 1 and empirical lower bound <= certified bound (1e-9 rel.)",
            {
                "certified bound": ours_cert.certified_bound,
                "empirical lower bound": ours_cert.empirical_lower_bound,
            },
            lambda v: (
                v["certified bound"] <= 1.0
                and v["empirical lower bound"] <= v["certified bound"] * (1 + 1e-9)
            ),
        ),
        Claim.check(
            "Our reconstruction quality is competitive with the softly constrained baseline",
            "on every task (denoising s=15, s=25, each PnP task) our mean PSNR >= the "
            "spectral-norm DnCNN's - 1 dB",
            {
                f"{task}: ours - SN (dB)": mean_psnr[OURS][task] - mean_psnr[SN][task]
                for task in mean_psnr[OURS]
            },
            lambda v: all(d >= -1.0 for d in v.values()),
        ),
        Claim.check(
            "Our plug-and-play iterations are contractive, hence converge (to one point "
            "from any start); the unconstrained denoiser's need not",
            "ours (FB): last/first residual <= 1e-3 on every task and image, and final "
            "iterates from two starts within 1e-3 RMS",
            {
                "ours converged on all tasks": all(converged_ours),
                "ours max distance between starts": max(start_gap_ours),
                "DnCNN max residual ratio (for comparison)": max(ratio_cnn),
            },
            lambda v: (
                v["ours converged on all tasks"] and v["ours max distance between starts"] <= 1e-3
            ),
        ),
    ]
    train_table = Table(
        title=f"Training ({steps} Adam steps, batch {batch}, {patch}x{patch} patches, "
        f"sigma ~ U[0, 30/255]; depth {depth}, width {features})",
        columns=["method", "final train MSE", "train time (s)", "parameters"],
    )
    for name in models:
        train_table.add_row(
            method=name,
            **{
                "final train MSE": final_loss[name],
                "train time (s)": train_time[name],
                "parameters": n_params[name],
            },
        )
    notes.append(f"TV weights tuned on a training image ({TV_TUNING_IMAGE}): {tv_weight}")
    notes.append(
        f"ours: theta = {float(models[OURS].theta.detach()):.3f}, rho = {RHO}; "
        f"contraction factor of PnP-FB <= certified bound {ours_cert.certified_bound:.4f}"
    )
    return Result(
        tables=[den_table, lip_table, pnp_table, train_table],
        claims=claims,
        notes=notes,
        data={"pnp_residuals": curves, "tv_weight": tv_weight,
              "layer_bounds": {n: c.layer_bounds for n, c in certs.items()},
              "layer_norms": {n: c.layer_norms for n, c in certs.items()}},
    )  # fmt: skip


EXPERIMENT = Experiment(
    name="lipschitz-denoiser",
    title="Nonexpansive denoisers from permutations of the image lattice, with convergent "
    "plug-and-play reconstruction (ICML 2026)",
    claim="A denoiser with certified global Lipschitz bound <= 1 is competitive (within 1 dB "
    "PSNR) with a spectrally normalised CNN and makes plug-and-play reconstruction converge",
    run=_run,
)
