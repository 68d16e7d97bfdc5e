"""Training of denoisers on patches of real images (bundled with scikit-image, MNIST)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from icml26_core.validation import check_float
from torch import nn

from lipschitz_denoiser._validation import check_positive_int

__all__ = ["train_denoiser", "training_patches"]


def training_patches(
    names: Sequence[str],
    patch_size: int,
    n_patches: int,
    *,
    mnist_fraction: float = 0.0,
    rng: np.random.Generator | int | None = 0,
) -> np.ndarray:
    """Random gray patches of bundled real images, optionally mixed with MNIST digits.

    Args:
        names: Names for ``icml26_core.datasets.load_image`` (converted to gray).
        patch_size: Side of the square patches, in pixels (<= 28 if MNIST is mixed in).
        n_patches: Number of patches, >= 1.
        mnist_fraction: Fraction in [0, 1) of patches that are random crops of real
            MNIST digits (``icml26_core.datasets.load_mnist``).
        rng: Generator or seed.

    Returns:
        float32 array (n_patches, patch_size, patch_size) in [0, 1], shuffled.

    Raises:
        ValueError: If ``names`` is empty, ``mnist_fraction`` is outside [0, 1) or the
            patch does not fit.
    """
    from icml26_core.datasets import image_patches, load_image, load_mnist

    check_positive_int(patch_size, "patch_size")
    check_positive_int(n_patches, "n_patches")
    if not names:
        raise ValueError("names must list at least one image")
    if not (0.0 <= mnist_fraction < 1.0):
        raise ValueError(f"mnist_fraction must lie in [0, 1), got {mnist_fraction!r}")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    n_mnist = round(mnist_fraction * n_patches)
    images = [load_image(name, as_gray=True) for name in names]
    parts = [image_patches(images, patch_size, n_patches - n_mnist, rng=gen).astype(np.float32)]
    if n_mnist:
        if patch_size > 28:
            raise ValueError(f"patch_size must be <= 28 to mix in MNIST digits, got {patch_size}")
        X, _ = load_mnist()
        digits = X[gen.choice(len(X), size=n_mnist, replace=False)].reshape(-1, 28, 28)
        parts.append(image_patches(list(digits), patch_size, n_mnist, rng=gen).astype(np.float32))
    out = np.concatenate(parts)
    return out[gen.permutation(len(out))]


def train_denoiser(
    model: nn.Module,
    patches: np.ndarray | torch.Tensor,
    *,
    sigma: float | tuple[float, float] = (0.0, 0.1),
    steps: int = 300,
    batch_size: int = 16,
    lr: float = 2e-3,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Callable | None = None,
    penalty: Callable | None = None,
    penalty_weight: float = 0.0,
) -> list[float]:
    """Train a denoiser with the mean squared error on Gaussian-noised patches.

    Each step draws ``batch_size`` patches (cycling through a seeded permutation),
    a noise level per patch (uniform in ``sigma`` if a range is given) and white
    Gaussian noise; Adam with a cosine learning-rate decay.

    Args:
        model: A denoiser ``model(x, sigma)`` (modified in place, left in eval mode).
        patches: Clean patches (P, H, W) or (P, C, H, W), values in [0, 1]; not modified.
        sigma: Fixed noise level or ``(low, high)`` range, intensity units of [0, 1]
            images (sigma 25 on [0, 255] is 25 / 255).
        steps: Optimiser steps, >= 1.
        batch_size: Patches per step, >= 1.
        lr: Adam's initial learning rate.
        seed: Seed of the batches and the noise.
        device: Where to train.
        progress: Optional wrapper ``progress(iterable, description)`` (e.g.
            ``RunContext.progress``) for a progress bar.
        penalty: Optional regulariser ``penalty(model, clean, noisy, sigma) -> scalar``
            added to the loss with ``penalty_weight`` (e.g.
            :func:`lipschitz_denoiser.deepinv_compat.jacobian_penalty`, the soft
            Lipschitz constraint of Pesquet et al. 2021).
        penalty_weight: Its weight, >= 0.

    Returns:
        The training loss (MSE, without the penalty) of every step.

    Raises:
        TypeError: On arguments of the wrong type.
        ValueError: If ``patches`` has the wrong shape or NaN, or ``sigma`` is negative.
    """
    check_positive_int(steps, "steps")
    check_positive_int(batch_size, "batch_size")
    check_float("lr", lr, low=0.0, low_inclusive=False)
    check_float("penalty_weight", penalty_weight, low=0.0)
    data = torch.as_tensor(
        np.asarray(patches) if not isinstance(patches, torch.Tensor) else patches
    )
    if data.ndim == 3:
        data = data.unsqueeze(1)
    if data.ndim != 4 or data.shape[0] < 1:
        raise ValueError(
            f"patches must be (P, H, W) or (P, C, H, W), got shape {tuple(data.shape)}"
        )
    if not bool(torch.isfinite(data).all()):
        raise ValueError("patches contain NaN or inf")
    lo, hi = (sigma, sigma) if isinstance(sigma, (int, float)) else tuple(sigma)
    if not (0 <= lo <= hi and math.isfinite(hi)):
        raise ValueError(f"sigma must be >= 0 (a float or a (low, high) range), got {sigma!r}")
    dev = torch.device(device)
    model.to(dev).train()
    dtype = next(model.parameters()).dtype
    data = data.to(device=dev, dtype=dtype)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=lr * 0.05)
    order = torch.randperm(data.shape[0], generator=gen)
    pos = 0
    losses: list[float] = []
    iterator = range(steps) if progress is None else progress(range(steps), "training")
    for _ in iterator:
        if pos + batch_size > len(order):
            order, pos = torch.randperm(data.shape[0], generator=gen), 0
        idx = order[pos : pos + batch_size]
        pos += batch_size
        clean = data[idx]
        s = (lo + (hi - lo) * torch.rand(len(idx), generator=gen)).to(dev, dtype)
        noise = torch.randn(clean.shape, generator=gen).to(dev, dtype) * s.reshape(-1, 1, 1, 1)
        noisy = clean + noise
        out = model(noisy, s)
        loss = torch.mean((out - clean) ** 2)
        total = loss
        if penalty is not None and penalty_weight > 0:
            total = loss + penalty_weight * penalty(model, clean, noisy, s)
        opt.zero_grad()
        total.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
