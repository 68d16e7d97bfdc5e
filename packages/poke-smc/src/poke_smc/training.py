"""The reference training recipe of masked diffusion LMs (MDLM / LLaDA).

For a clean sequence ``x0``, draw a masking ratio ``t ~ U(eps, 1]``, mask every
maskable position independently with probability ``t`` and train the model to predict
the masked tokens: the loss is ``(1/t) * sum_{i masked} -log p(x0_i | x_t)`` divided by
the number of maskable positions, averaged over the batch (LLaDA's Eq. 3; MDLM's
continuous-time bound for the linear schedule). It is an upper bound on the negative
log-likelihood per token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from icml26_core.validation import check_float, check_int

from poke_smc.model import model_device

__all__ = ["TrainHistory", "masked_diffusion_loss", "train_masked_diffusion"]


def masked_diffusion_loss(
    model: Any,
    x0: torch.Tensor,
    maskable: torch.Tensor | None = None,
    *,
    generator: torch.Generator | None = None,
    eps: float = 1e-3,
) -> torch.Tensor:
    """The weighted masked cross-entropy of one batch (a scalar to minimise).

    Args:
        model: A masked diffusion LM (``tokens -> logits``, ``mask_token_id``).
        x0: int64 ``(B, L)`` clean sequences.
        maskable: bool ``(B, L)`` positions that may be masked (all if None; e.g. only
            the answer in supervised fine-tuning).
        generator: Random source of the ratios and masks.
        eps: Smallest masking ratio (keeps ``1/t`` bounded).

    Returns:
        A float scalar tensor (nats per maskable token).

    Raises:
        ValueError: On shape mismatches, a row with nothing maskable, or ``eps`` outside
            ``(0, 1)``.
    """
    if x0.ndim != 2:
        raise ValueError(f"x0 must have shape (B, L), got {tuple(x0.shape)}")
    if maskable is None:
        maskable = torch.ones_like(x0, dtype=torch.bool)
    if maskable.shape != x0.shape:
        raise ValueError(f"maskable {tuple(maskable.shape)} must match x0 {tuple(x0.shape)}")
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps!r}")
    n_maskable = maskable.sum(-1)
    if (n_maskable == 0).any():
        raise ValueError("every row of maskable needs at least one True")
    dev = generator.device if generator is not None else x0.device
    b, length = x0.shape
    t = (eps + (1 - eps) * torch.rand(b, 1, generator=generator, device=dev)).to(x0.device)
    u = torch.rand(b, length, generator=generator, device=dev).to(x0.device)
    masked = (u < t) & maskable
    x_t = torch.where(masked, int(model.mask_token_id), x0)
    logits = model(x_t)
    nll = F.cross_entropy(logits.float().transpose(1, 2), x0, reduction="none")
    per_row = (nll * masked / t).sum(-1) / n_maskable
    return per_row.mean()


@dataclass
class TrainHistory:
    """Losses recorded by :func:`train_masked_diffusion`.

    Attributes:
        steps: Optimizer steps taken.
        loss: Training loss of each step.
        seconds: Wall time of the training loop.
    """

    steps: int = 0
    loss: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def final_loss(self, last: int = 50) -> float:
        """Mean training loss of the last ``last`` steps."""
        return float(np.mean(self.loss[-last:])) if self.loss else float("nan")


def train_masked_diffusion(
    model: torch.nn.Module,
    batches: Callable[[int], tuple[np.ndarray, np.ndarray]],
    steps: int,
    *,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    warmup: int = 100,
    grad_clip: float = 1.0,
    seed: int = 0,
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
) -> TrainHistory:
    """Train a masked diffusion LM with AdamW, linear warm-up and cosine decay.

    Args:
        model: The model (trained in place, on its own device).
        batches: ``batches(step) -> (x0, maskable)`` numpy arrays ``(B, L)`` (e.g.
            ``lambda s: task.train_batch(128, rng)``).
        steps: Optimizer steps.
        lr: Peak learning rate.
        weight_decay: AdamW weight decay.
        warmup: Warm-up steps (clipped to ``steps``).
        grad_clip: Gradient-norm clip (0 for none).
        seed: Seed of the masking noise.
        progress: Optional ``progress(iterable, description)`` wrapper (a progress bar).

    Returns:
        A :class:`TrainHistory`.

    Raises:
        ValueError: If ``steps < 1`` or ``lr <= 0``.
    """
    import time

    check_int("steps", steps, low=1)
    check_float("lr", lr, low=0.0, low_inclusive=False)
    check_float("weight_decay", weight_decay, low=0.0)
    check_int("warmup", warmup, low=0)
    device = model_device(model)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    warm = max(1, min(warmup, steps))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + np.cos(np.pi * (step - warm) / max(1, steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    history = TrainHistory()
    model.train()
    t0 = time.perf_counter()
    it: Iterable[int] = range(steps)
    if progress is not None:
        it = progress(it, "training")
    for step in it:
        x0, maskable = batches(step)
        x0_t = torch.as_tensor(x0, device=device)
        m_t = torch.as_tensor(maskable, device=device)
        loss = masked_diffusion_loss(model, x0_t, m_t, generator=gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        sched.step()
        history.loss.append(float(loss.detach()))
        history.steps += 1
    history.seconds = time.perf_counter() - t0
    model.eval()
    return history
