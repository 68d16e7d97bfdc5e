"""The reliability-weighted cross-entropy of DREAM, and the GCE baseline loss."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from icml26_core.validation import check_choice, check_float
from torch import nn

__all__ = ["DREAMLoss", "dream_loss", "gce_loss"]

REDUCTIONS = ("mean", "sum", "none")


def _check(logits: torch.Tensor, y: torch.Tensor) -> None:
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError(
            f"logits must be a float torch.Tensor, got {getattr(logits, 'dtype', type(logits))}"
        )
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"y must be an integer torch.Tensor, got {type(y).__name__}")
    if logits.ndim != 2:
        raise ValueError(f"logits must be (N, C), got shape {tuple(logits.shape)}")
    if y.ndim != 1 or y.shape[0] != logits.shape[0]:
        raise ValueError(f"y must be ({logits.shape[0]},), got shape {tuple(y.shape)}")
    if y.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"y must be an integer tensor, got {y.dtype}")
    C = logits.shape[1]
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= C):
        raise ValueError(
            f"y must lie in 0..{C - 1} (logits' classes), got [{int(y.min())}, {int(y.max())}]"
        )


def dream_loss(
    logits: torch.Tensor, y: torch.Tensor, weights: Any = None, reduction: str = "mean"
) -> torch.Tensor:
    """Reliability-weighted cross-entropy ``w_v * CE(logits_v, y_v)``.

    With ``reduction="mean"`` it is ``sum_v w_v CE_v / N``; DREAM's weights have mean 1
    (``w_v = s_v / mean(s)``), so all-ones weights give ``F.cross_entropy`` exactly. The
    weights are treated as constants (detached): the model is not trained to move them.

    Args:
        logits: float (N, C) unnormalized scores.
        y: int64 (N,) observed (possibly noisy) labels.
        weights: float (N,) nonnegative weights, or None for all ones.
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (the (N,) weighted losses).

    Returns:
        The loss, a scalar (or (N,) with ``"none"``).

    Raises:
        TypeError: If ``logits`` is not a float tensor or ``y`` not an integer tensor.
        ValueError: On shape mismatch, ``y`` outside ``0..C-1``, negative or non-finite
            weights, or an unknown reduction.
    """
    reduction = check_choice("reduction", reduction, REDUCTIONS)
    _check(logits, y)
    ce = F.cross_entropy(logits, y.long(), reduction="none")
    if weights is not None:
        w = torch.as_tensor(weights, dtype=ce.dtype, device=ce.device).detach()
        if w.shape != ce.shape:
            raise ValueError(f"weights must be ({ce.shape[0]},), got shape {tuple(w.shape)}")
        if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
            raise ValueError("weights must be finite and nonnegative")
        ce = ce * w
    if reduction == "none":
        return ce
    return ce.sum() if reduction == "sum" else ce.mean()


class DREAMLoss(nn.Module):
    """``nn.Module`` form of :func:`dream_loss`: ``DREAMLoss()(logits, y, weights)``."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = check_choice("reduction", reduction, REDUCTIONS)

    def forward(self, logits: torch.Tensor, y: torch.Tensor, weights: Any = None) -> torch.Tensor:
        """See :func:`dream_loss`."""
        return dream_loss(logits, y, weights, self.reduction)


def gce_loss(
    logits: torch.Tensor, y: torch.Tensor, q: float = 0.7, reduction: str = "mean"
) -> torch.Tensor:
    """Generalized cross-entropy ``(1 - p_y^q) / q`` (Zhang & Sabuncu, NeurIPS 2018).

    ``q -> 0`` recovers cross-entropy, ``q = 1`` the MAE; the paper's default is 0.7.

    Args:
        logits: float (N, C).
        y: int64 (N,).
        q: Exponent in (0, 1].
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        The loss.

    Raises:
        TypeError: If ``logits`` is not a float tensor or ``y`` not an integer tensor.
        ValueError: On shape mismatch, ``y`` outside ``0..C-1``, ``q`` outside (0, 1]
            or an unknown reduction.
    """
    q = check_float("q", q, low=0.0, high=1.0, low_inclusive=False)
    reduction = check_choice("reduction", reduction, REDUCTIONS)
    _check(logits, y)
    p = F.softmax(logits, dim=1).gather(1, y.long()[:, None]).squeeze(1)
    loss = (1.0 - p.clamp_min(1e-12) ** q) / q
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
