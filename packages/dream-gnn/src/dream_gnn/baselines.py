"""Noisy-label baselines for node classification: co-teaching, cleanlab, correct & smooth.

Each one trains with the same full-batch Adam loop and the same checkpoint selection
(best accuracy on the *noisy* validation labels) as :func:`dream_gnn.fit_classifier` and
:class:`dream_gnn.DREAMTrainer`, so a comparison differs only in what the method adds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from icml26_core.validation import check_choice, check_float, check_int
from torch import nn

from dream_gnn.trainer import (
    _check_dtype,
    _check_model,
    _check_seed,
    _forward,
    _inputs,
    _Loop,
    fit_classifier,
)

__all__ = [
    "cleanlab_filter",
    "correct_and_smooth",
    "coteaching",
    "forget_rate_schedule",
    "small_loss_selection",
]


def forget_rate_schedule(
    epochs: int, forget_rate: float, num_gradual: int = 10, exponent: float = 1.0
) -> np.ndarray:
    """Co-teaching's forget rate per epoch (Han et al. 2018, their R(T) = 1 - rate).

    The rate grows from 0 to ``forget_rate`` as ``forget_rate * (t / num_gradual) **
    exponent`` over the first ``num_gradual`` epochs (linearly for ``exponent=1``, as in
    the paper's ``T_k = 10``) and stays at ``forget_rate`` afterwards.

    Args:
        epochs: Number of epochs (>= 1).
        forget_rate: Final fraction of small-loss-rejected nodes, in [0, 1) (the paper
            uses the noise rate).
        num_gradual: Epochs of the ramp (``T_k``), >= 1.
        exponent: Shape of the ramp (> 0).

    Returns:
        float64 (epochs,) forget rates, the one at epoch ``t`` in position ``t``.

    Raises:
        ValueError: If an argument is out of its range.
        TypeError: If an argument is not a number.
    """
    epochs = check_int("epochs", epochs, low=1)
    forget_rate = check_float("forget_rate", forget_rate, low=0.0, high=1.0, high_inclusive=False)
    num_gradual = check_int("num_gradual", num_gradual, low=1)
    exponent = check_float("exponent", exponent, low=0.0, low_inclusive=False)
    t = np.arange(epochs, dtype=float)
    return forget_rate * np.minimum(t / num_gradual, 1.0) ** exponent


def small_loss_selection(losses: torch.Tensor, forget_rate: float) -> torch.Tensor:
    """Indices of the ``round((1 - forget_rate) * n)`` smallest losses (at least one).

    Args:
        losses: float (n,) per-node losses.
        forget_rate: Fraction dropped, in [0, 1).

    Returns:
        int64 (m,) positions into ``losses``, smallest loss first (ties: lower index).

    Raises:
        TypeError: If ``losses`` is not a tensor.
        ValueError: If ``losses`` is not a non-empty 1-D tensor or ``forget_rate`` is
            outside [0, 1).
    """
    forget_rate = check_float("forget_rate", forget_rate, low=0.0, high=1.0, high_inclusive=False)
    if not isinstance(losses, torch.Tensor):
        raise TypeError(f"losses must be a torch.Tensor, got {type(losses).__name__}")
    if losses.ndim != 1 or losses.numel() == 0:
        raise ValueError(f"losses must be a non-empty 1-D tensor, got {tuple(losses.shape)}")
    keep = max(1, round((1.0 - forget_rate) * losses.numel()))
    return torch.argsort(losses.detach(), stable=True)[:keep]


def coteaching(
    model: nn.Module,
    peer: nn.Module,
    data: Any,
    train_mask: Any,
    y: Any,
    epochs: int = 200,
    *,
    forget_rate: float = 0.4,
    num_gradual: int = 10,
    exponent: float = 1.0,
    val_mask: Any = None,
    lr: float = 0.01,
    weight_decay: float = 5e-4,
    seed: int | None = 0,
) -> nn.Module:
    """Co-teaching (Han et al., NeurIPS 2018) with two GNNs, full batch.

    At every epoch each network ranks the labelled nodes by its own cross-entropy and
    hands the ``1 - forget_rate(t)`` fraction with the smallest loss to its peer, which
    takes one Adam step on them (:func:`forget_rate_schedule`, :func:`small_loss_selection`).
    The checkpoint of ``model`` with the best accuracy on ``y[val_mask]`` is restored
    (the peer keeps its own best); ``model`` is the one to report.

    Args:
        model: First network, ``model(x, edge_index) -> logits`` or ``(logits, hidden)``.
        peer: Second network of the same output shape (its own initialization).
        data: ``torch_geometric.data.Data`` with ``x`` float (N, F), ``edge_index`` (2, E).
        train_mask: bool (N,) labelled nodes.
        y: int (N,) observed (noisy) labels.
        epochs: Full-batch steps of each network.
        forget_rate: Final fraction of labelled nodes dropped per epoch, in [0, 1)
            (the paper sets it to the noise rate).
        num_gradual: Epochs over which the rate ramps up (the paper's ``T_k``).
        exponent: Ramp shape (1 = linear, the paper's).
        val_mask: bool (N,) nodes whose observed labels select the checkpoint, or None.
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        seed: ``torch.manual_seed`` before training (dropout), or None.

    Returns:
        ``model``, trained in place and in eval mode.

    Raises:
        TypeError: If ``model`` or ``peer`` is not an ``nn.Module``.
        ValueError: If ``peer is model``, on ``data``/masks/labels of the wrong dtype or
            shape, or ``epochs``, ``forget_rate``, ``lr`` or ``seed`` out of range.
    """
    device = _check_model("model", model)
    _check_model("peer", peer)
    if peer is model:
        raise ValueError("peer must be a second network, not model itself")
    rates = forget_rate_schedule(epochs, forget_rate, num_gradual, exponent)
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    weight_decay = check_float("weight_decay", weight_decay, low=0.0)
    seed = _check_seed(seed)
    x, ei, yy, tm, vm = _inputs(data, train_mask, y, val_mask, device)
    _check_dtype(x, model)
    _check_dtype(x, peer, "peer")
    idx = torch.nonzero(tm).squeeze(1)
    if seed is not None:
        torch.manual_seed(seed)
    loops = (_Loop(model, lr, weight_decay), _Loop(peer, lr, weight_decay))
    for epoch in range(epochs):
        logits = []
        for lp in loops:
            lp.model.train()
            lp.opt.zero_grad()
            logits.append(_forward(lp.model, x, ei)[0][idx])
        losses = [F.cross_entropy(lg, yy[idx], reduction="none") for lg in logits]
        picks = [small_loss_selection(ls, float(rates[epoch])) for ls in losses]
        for me, other in ((0, 1), (1, 0)):
            losses[me][picks[other]].mean().backward()
            loops[me].opt.step()
        for lp in loops:
            lp.validate(epoch, x, ei, vm, yy)
    for lp in loops:
        lp.finish()
    return model


def cleanlab_filter(
    make_model: Callable[[], nn.Module],
    data: Any,
    train_mask: Any,
    y: Any,
    epochs: int = 200,
    *,
    folds: int = 3,
    val_mask: Any = None,
    seed: int = 0,
    filter_by: str = "prune_by_noise_rate",
) -> tuple[np.ndarray, np.ndarray]:
    """Labelled nodes cleanlab keeps, from cross-validated GNN probabilities.

    The labelled nodes are split into ``folds`` random folds; for each one a fresh
    ``make_model()`` is trained with cross-entropy (:func:`fit_classifier`) on the other
    folds and predicts the held-out fold (transductive: the whole graph is seen, only
    the held-out labels are not). ``cleanlab.filter.find_label_issues`` on these
    out-of-fold probabilities flags the likely label errors. Retrain on the kept mask
    (e.g. ``fit_classifier(model, data, keep, y)``) for the baseline.

    Args:
        make_model: Returns a fresh untrained model (called ``folds`` times).
        data: ``torch_geometric.data.Data`` with ``x`` and ``edge_index``.
        train_mask: bool (N,) labelled nodes.
        y: int (N,) observed (noisy) labels.
        epochs: Epochs of each fold model.
        folds: Number of cross-validation folds (>= 2).
        val_mask: bool (N,) checkpoint-selection nodes of each fold model, or None.
        seed: Seed of the fold split and of each fold model's training.
        filter_by: ``find_label_issues``'s method (cleanlab's default).

    Returns:
        ``(keep, pred_probs)``: bool (N,) the labelled nodes not flagged (False
        elsewhere) and float (L, C) the out-of-fold probabilities of the labelled nodes
        in increasing node order.

    Raises:
        ImportError: If cleanlab is not installed (``pip install "dream-gnn[repro]"``).
        TypeError: If ``make_model`` is not a function (a model instance, say).
        ValueError: On a mask or labels of the wrong dtype or shape, ``folds`` < 2 or
            more than the labelled nodes, a negative ``seed`` or an unknown ``filter_by``.
    """
    try:
        from cleanlab.filter import find_label_issues
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError('cleanlab_filter needs cleanlab: pip install "dream-gnn[repro]"') from e
    if not callable(make_model) or isinstance(make_model, nn.Module):
        raise TypeError(
            "make_model must be a function returning a fresh model (e.g. lambda: GCN(...)), "
            f"got {type(make_model).__name__}"
        )
    folds = check_int("folds", folds, low=2)
    seed = check_int("seed", seed, low=0)
    filter_by = check_choice(
        "filter_by",
        filter_by,
        (
            "prune_by_noise_rate",
            "prune_by_class",
            "both",
            "confident_learning",
            "predicted_neq_given",
            "low_normalized_margin",
            "low_self_confidence",
        ),
    )
    tm = torch.as_tensor(train_mask).cpu()
    if tm.dtype != torch.bool or tm.ndim != 1:
        raise ValueError(
            f"train_mask must be a bool (num_nodes,) mask, got {tm.dtype} {tuple(tm.shape)}"
        )
    yy = torch.as_tensor(y).cpu()
    if yy.dtype not in (torch.int64, torch.int32) or yy.shape != tm.shape:
        raise ValueError(
            f"y must be int ({tm.numel()},) like train_mask, got {yy.dtype} {tuple(yy.shape)}"
        )
    yy = yy.long()
    idx = torch.nonzero(tm).squeeze(1).numpy()
    if idx.size < folds:
        raise ValueError(f"folds={folds} must be <= the number of labelled nodes ({idx.size})")
    rng = np.random.default_rng(seed)
    fold_of = rng.permutation(np.arange(idx.size) % folds)
    probs: np.ndarray | None = None
    for f in range(folds):
        fit_mask = torch.zeros_like(tm)
        fit_mask[torch.from_numpy(idx[fold_of != f])] = True
        model = make_model()
        fit_classifier(model, data, fit_mask, yy, epochs, val_mask=val_mask, seed=seed + f)
        device = next(model.parameters()).device
        with torch.no_grad():
            logits, _ = _forward(model, data.x.to(device), data.edge_index.to(device))
        p = F.softmax(logits, dim=1).cpu().numpy()
        if probs is None:
            probs = np.zeros((idx.size, p.shape[1]))
        probs[fold_of == f] = p[idx[fold_of == f]]
    assert probs is not None
    issues = find_label_issues(yy.numpy()[idx], probs, filter_by=filter_by)
    keep = np.zeros(tm.numel(), dtype=bool)
    keep[idx[~issues]] = True
    return keep, probs


def correct_and_smooth(
    y_soft: torch.Tensor,
    y: Any,
    train_mask: Any,
    edge_index: torch.Tensor,
    *,
    num_correction_layers: int = 50,
    correction_alpha: float = 1.0,
    num_smoothing_layers: int = 50,
    smoothing_alpha: float = 0.8,
    autoscale: bool = True,
    scale: float = 1.0,
) -> torch.Tensor:
    """PyG's ``CorrectAndSmooth`` (Huang et al., ICLR 2021) on a base predictor's output.

    The layer counts and alphas are PyG's example's (``examples/correct_and_smooth.py``);
    ``autoscale`` (the paper's "autoscale" variant) is PyG's constructor default, since
    the example's fixed ``scale=20`` is tuned for ogbn-products. Nothing is tuned here.
    The observed labels of ``train_mask`` are what the residuals are corrected towards
    and what smoothing clamps, so noisy labels propagate too.

    Args:
        y_soft: float (N, C) base probabilities (e.g. a GCN's softmax).
        y: int (N,) observed labels (read on ``train_mask``).
        train_mask: bool (N,) labelled nodes.
        edge_index: int64 (2, E) graph.
        num_correction_layers: Propagation steps of the residual correction.
        correction_alpha: Its propagation weight (1 - restart).
        num_smoothing_layers: Propagation steps of the final smoothing.
        smoothing_alpha: Its propagation weight.
        autoscale: Scale the corrected residual automatically (else by ``scale``).
        scale: Fixed residual scale when ``autoscale`` is False.

    Returns:
        float (N, C) corrected and smoothed scores (``y_soft`` is not modified).

    Raises:
        ValueError: If ``y_soft`` is not a float (N, C) tensor, ``y``/``train_mask`` are
            not int/bool (N,), ``y[train_mask]`` lies outside ``0..C-1``,
            ``edge_index`` is not an integer (2, E) tensor within the node range, or a
            layer count or alpha is out of range.
    """
    from torch_geometric.nn.models import CorrectAndSmooth

    if not isinstance(y_soft, torch.Tensor) or y_soft.ndim != 2 or not y_soft.is_floating_point():
        raise ValueError(
            "y_soft must be a float torch.Tensor (num_nodes, num_classes), got "
            f"{getattr(y_soft, 'dtype', type(y_soft).__name__)} "
            f"{tuple(getattr(y_soft, 'shape', ()))}"
        )
    n, C = y_soft.shape
    tm = torch.as_tensor(train_mask, device=y_soft.device)
    if tm.dtype != torch.bool or tm.shape != (n,):
        raise ValueError(f"train_mask must be bool ({n},), got {tm.dtype} {tuple(tm.shape)}")
    yy = torch.as_tensor(y, device=y_soft.device)
    if yy.dtype not in (torch.int64, torch.int32) or yy.shape != (n,):
        raise ValueError(f"y must be int ({n},), got {yy.dtype} {tuple(yy.shape)}")
    yy = yy.long()
    if tm.any() and (int(yy[tm].min()) < 0 or int(yy[tm].max()) >= C):
        raise ValueError(
            f"y[train_mask] must lie in 0..{C - 1} (y_soft's classes), "
            f"got [{int(yy[tm].min())}, {int(yy[tm].max())}]"
        )
    if not isinstance(edge_index, torch.Tensor) or edge_index.dtype not in (
        torch.int64,
        torch.int32,
    ):
        raise ValueError(
            "edge_index must be an int64 torch.Tensor (2, E), got "
            f"{getattr(edge_index, 'dtype', type(edge_index).__name__)}"
        )
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must be (2, E), got {tuple(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(
            f"edge_index must lie in 0..{n - 1}, "
            f"got [{int(edge_index.min())}, {int(edge_index.max())}]"
        )
    num_correction_layers = check_int("num_correction_layers", num_correction_layers, low=0)
    num_smoothing_layers = check_int("num_smoothing_layers", num_smoothing_layers, low=0)
    correction_alpha = check_float("correction_alpha", correction_alpha, low=0.0, high=1.0)
    smoothing_alpha = check_float("smoothing_alpha", smoothing_alpha, low=0.0, high=1.0)
    scale = check_float("scale", scale)
    post = CorrectAndSmooth(
        num_correction_layers,
        correction_alpha,
        num_smoothing_layers,
        smoothing_alpha,
        autoscale=autoscale,
        scale=scale,
    )
    with torch.no_grad():
        out = post.correct(y_soft, yy[tm], tm, edge_index)
        out = post.smooth(out, yy[tm], tm, edge_index)
    return out
