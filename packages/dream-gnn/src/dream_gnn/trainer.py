"""DREAM: dual-standard anchors, semantic homogeneity and dynamic re-weighting."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from icml26_core.validation import check_float, check_int
from torch import nn

from dream_gnn.losses import dream_loss, gce_loss
from dream_gnn.ppr import personalized_pagerank

__all__ = ["DREAMTrainer", "fit_classifier"]


def _forward(
    model: nn.Module, x: torch.Tensor, ei: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    out = model(x, ei)
    if isinstance(out, tuple):
        return out[0], out[1]
    return out, out  # a model without a hidden output: its logits are the embedding


def _inputs(data: Any, train_mask: Any, noisy_y: Any, val_mask: Any, device: torch.device):
    for attr in ("x", "edge_index"):
        if getattr(data, attr, None) is None:
            raise ValueError(f"data must have {attr!r} (a torch_geometric Data)")
    x = data.x
    ei = data.edge_index
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or not x.is_floating_point():
        raise ValueError(
            f"data.x must be a float tensor (num_nodes, num_features), got "
            f"{getattr(x, 'dtype', type(x).__name__)} {tuple(getattr(x, 'shape', ()))}"
        )
    if not isinstance(ei, torch.Tensor) or ei.dtype not in (torch.int64, torch.int32):
        raise ValueError(
            f"data.edge_index must be an int64 tensor (2, E), got "
            f"{getattr(ei, 'dtype', type(ei).__name__)}"
        )
    x = x.to(device)
    ei = ei.to(device)
    n = x.shape[0]
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"data.edge_index must be (2, E), got {tuple(ei.shape)}")
    if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= n):
        raise ValueError(
            f"data.edge_index must lie in 0..{n - 1}, got [{int(ei.min())}, {int(ei.max())}]"
        )
    y = torch.as_tensor(noisy_y).to(device)
    if y.shape != (n,) or y.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"noisy_y must be int (num_nodes={n},), got {y.dtype} {tuple(y.shape)}")
    y = y.long()
    masks = []
    for name, m in (("train_mask", train_mask), ("val_mask", val_mask)):
        if m is None:
            masks.append(None)
            continue
        m = torch.as_tensor(m).to(device)
        if m.shape != (n,) or m.dtype != torch.bool:
            raise ValueError(
                f"{name} must be bool (num_nodes={n},), got {m.dtype} {tuple(m.shape)}"
            )
        masks.append(m)
    if int(masks[0].sum()) == 0:
        raise ValueError("train_mask selects no node")
    return x, ei, y, masks[0], masks[1]


class _Loop:
    """Full-batch Adam training with best-validation-accuracy checkpoint selection."""

    def __init__(self, model: nn.Module, lr: float, weight_decay: float) -> None:
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        self.best_acc = -1.0
        self.best_state: dict[str, torch.Tensor] | None = None
        self.best_epoch = -1
        self.history: list[float] = []

    def step(self, x, ei, mask, y, loss_of: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]):
        self.model.train()
        self.opt.zero_grad()
        logits, _ = _forward(self.model, x, ei)
        loss = loss_of(logits[mask], y[mask])
        loss.backward()
        self.opt.step()
        return float(loss.detach())

    def validate(self, epoch: int, x, ei, val_mask, y) -> None:
        if val_mask is None:
            return
        self.model.eval()
        with torch.no_grad():
            logits, _ = _forward(self.model, x, ei)
        acc = float((logits[val_mask].argmax(1) == y[val_mask]).float().mean())
        self.history.append(acc)
        if acc > self.best_acc:
            self.best_acc, self.best_epoch = acc, epoch
            self.best_state = copy.deepcopy(self.model.state_dict())

    def finish(self) -> None:
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        self.model.eval()


def _check_model(name: str, model: Any) -> torch.device:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(model).__name__}")
    p = next(model.parameters(), None)
    if p is None:
        raise ValueError(f"{name} has no parameters to train")
    return p.device


def _check_dtype(x: torch.Tensor, model: nn.Module, name: str = "model") -> None:
    p = next(model.parameters())
    if x.dtype != p.dtype:
        raise ValueError(
            f"data.x is {x.dtype} but {name}'s parameters are {p.dtype}: cast one "
            f"(data.x.to({p.dtype}) or {name}.to({x.dtype}))"
        )


def _check_seed(seed: Any) -> int | None:
    return None if seed is None else check_int("seed", seed, low=0)


def fit_classifier(
    model: nn.Module,
    data: Any,
    train_mask: Any,
    y: Any,
    epochs: int = 200,
    *,
    loss: str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = "ce",
    val_mask: Any = None,
    lr: float = 0.01,
    weight_decay: float = 5e-4,
    seed: int | None = 0,
) -> nn.Module:
    """Train ``model`` on ``y[train_mask]`` with plain cross-entropy, GCE or a given loss.

    The baselines of the experiment: the same loop, optimizer and checkpoint selection
    as :class:`DREAMTrainer` (Adam, full batch, the epoch with the best accuracy on
    ``y[val_mask]`` is restored), without the re-weighting.

    Args:
        model: Module with ``model(x, edge_index) -> logits`` or ``(logits, hidden)``.
        data: ``torch_geometric.data.Data`` with ``x`` and ``edge_index``.
        train_mask: bool (num_nodes,) labelled nodes.
        y: int (num_nodes,) labels (noisy ones are fine).
        epochs: Number of full-batch steps.
        loss: ``"ce"``, ``"gce"`` (q = 0.7) or ``f(logits, y) -> scalar``.
        val_mask: bool (num_nodes,) validation nodes for checkpoint selection, or None
            (keep the last epoch).
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        seed: ``torch.manual_seed`` before training (dropout), or None.

    Returns:
        ``model``, trained in place and set to eval mode.

    Raises:
        TypeError: If ``model`` is not an ``nn.Module``.
        ValueError: On ``data``, masks or labels of the wrong dtype or shape,
            ``edge_index`` out of range, ``data.x`` of another dtype than the model, an
            unknown ``loss``, or ``epochs``/``lr``/``weight_decay``/``seed`` out of range.
    """
    epochs = check_int("epochs", epochs, low=1)
    device = _check_model("model", model)
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    weight_decay = check_float("weight_decay", weight_decay, low=0.0)
    seed = _check_seed(seed)
    x, ei, yy, tm, vm = _inputs(data, train_mask, y, val_mask, device)
    _check_dtype(x, model)
    if loss == "ce":
        loss_of: Callable = lambda lg, t: F.cross_entropy(lg, t)  # noqa: E731
    elif loss == "gce":
        loss_of = gce_loss
    elif callable(loss):
        loss_of = loss
    else:
        raise ValueError(f"loss must be 'ce', 'gce' or a callable; got {loss!r}")
    if seed is not None:
        torch.manual_seed(seed)
    loop = _Loop(model, lr, weight_decay)
    for epoch in range(epochs):
        loop.step(x, ei, tm, yy, loss_of)
        loop.validate(epoch, x, ei, vm, yy)
    loop.finish()
    return model


class DREAMTrainer:
    """Train a GNN under label noise with reliability weights from dual-standard anchors.

    After ``warmup`` epochs of cross-entropy, and then every ``every`` epochs, each
    labelled node ``v`` gets anchors among the *other* labelled nodes by two standards:

    - node proximity: the ``k_proximity`` nodes whose hidden embeddings (the model's
      second output) are closest to ``v``'s in cosine similarity;
    - graph topology: the ``k_topology`` nodes with the largest personalized PageRank
      from ``v`` (restart probability ``ppr_alpha``; computed once per graph, cached).

    Its semantic homogeneity ``s_v`` is the anchors' mean predicted probability of
    ``v``'s observed label (weighted by each anchor's confidence, its top probability,
    with ``confidence_weighted``). The loss until the next re-evaluation is
    ``mean_v w_v CE(logits_v, y_v)`` with ``w_v = s_v / mean(s)``. With ``relabel``, the
    ``relabel_fraction`` of labelled nodes with the lowest ``s_v`` take their anchors'
    majority label (the argmax of the anchors' mean probabilities) for the next epochs
    (recomputed from the observed labels at every re-evaluation, never cumulative).

    The details beyond the abstract (which probabilities, the normalization, the
    schedule) are ours; the authors' code is not public.

    Args:
        model: Module with ``model(x, edge_index) -> (logits, hidden)`` (or ``logits``,
            which then also serve as the embedding), e.g. :class:`dream_gnn.GCN`.
        k_proximity: Anchors by embedding similarity (0 turns the standard off).
        k_topology: Anchors by personalized PageRank (0 turns the standard off).
        ppr_alpha: Restart probability of the PageRank walk, in (0, 1).
        warmup: Epochs of plain cross-entropy before the first re-evaluation.
        every: Epochs between re-evaluations.
        relabel: Relabel the least homogeneous nodes.
        relabel_fraction: Fraction relabelled, in (0, 1).
        confidence_weighted: Weight anchors by their confidence.
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        seed: ``torch.manual_seed`` at the start of :meth:`fit` (dropout), or None.

    Attributes:
        train_idx_: int64 (L,) the labelled nodes, in increasing order.
        reliability_: float32 (L,) the last weights ``w_v`` (ones before the first
            re-evaluation), aligned with ``train_idx_``.
        homogeneity_: float32 (L,) the last ``s_v``.
        anchors_: int64 (L, k_proximity + k_topology) node ids of each node's anchors at
            the last re-evaluation (proximity ones first); None if ``warmup >= epochs``.
        labels_: int64 (num_nodes,) the labels trained on last (after relabelling).
        best_epoch_: Epoch restored by checkpoint selection (-1 without ``val_mask``).
        history_: Validation accuracy per epoch.
    """

    def __init__(
        self,
        model: nn.Module,
        k_proximity: int = 10,
        k_topology: int = 10,
        ppr_alpha: float = 0.15,
        warmup: int = 50,
        every: int = 10,
        relabel: bool = False,
        relabel_fraction: float = 0.1,
        confidence_weighted: bool = False,
        lr: float = 0.01,
        weight_decay: float = 5e-4,
        seed: int | None = 0,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.model = model
        self.k_proximity = check_int("k_proximity", k_proximity, low=0)
        self.k_topology = check_int("k_topology", k_topology, low=0)
        if self.k_proximity + self.k_topology == 0:
            raise ValueError("k_proximity + k_topology must be >= 1 (one standard at least)")
        self.ppr_alpha = check_float(
            "ppr_alpha", ppr_alpha, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
        )
        self.warmup = check_int("warmup", warmup, low=0)
        self.every = check_int("every", every, low=1)
        if not isinstance(relabel, bool):
            raise TypeError(f"relabel must be a bool, got {relabel!r}")
        self.relabel = relabel
        self.relabel_fraction = check_float(
            "relabel_fraction",
            relabel_fraction,
            low=0.0,
            high=1.0,
            low_inclusive=False,
            high_inclusive=False,
        )
        self.confidence_weighted = bool(confidence_weighted)
        self.lr = check_float("lr", lr, low=0.0, low_inclusive=False)
        self.weight_decay = check_float("weight_decay", weight_decay, low=0.0)
        self.seed = _check_seed(seed)

    def _topology_anchors(self, ei: torch.Tensor, n: int, idx: np.ndarray) -> torch.Tensor:
        if self.k_topology == 0:
            return torch.empty((idx.size, 0), dtype=torch.long)
        ppr = personalized_pagerank(ei.cpu().numpy(), n, self.ppr_alpha, sources=idx)[:, idx]
        np.fill_diagonal(ppr, -np.inf)  # never the node itself
        # ties (e.g. nodes the walk never reaches) go to the smaller index: stable sort
        order = np.argsort(-ppr, axis=1, kind="stable")[:, : self.k_topology]
        return torch.from_numpy(order.astype(np.int64))

    def _reevaluate(self, x, ei, y_obs, idx_t, topo):
        """Anchors (positions in idx), homogeneity and weights from the current model."""
        self.model.eval()
        with torch.no_grad():
            logits, h = _forward(self.model, x, ei)
            p = F.softmax(logits[idx_t], dim=1)  # (L, C)
            parts = []
            if self.k_proximity:
                z = F.normalize(h[idx_t].float(), dim=1)
                sim = z @ z.T
                sim.fill_diagonal_(-torch.inf)
                parts.append(torch.topk(sim, self.k_proximity, dim=1).indices.cpu())
            parts.append(topo)
            anchors = torch.cat(parts, dim=1).to(p.device)  # (L, k)
            pa = p[anchors]  # (L, k, C)
            if self.confidence_weighted:
                c = pa.max(dim=2).values
                mean_pa = (pa * c[..., None]).sum(1) / c.sum(1, keepdim=True)
            else:
                mean_pa = pa.mean(dim=1)  # (L, C)
            labels = y_obs[idx_t].clone()
            if self.relabel:
                s0 = mean_pa.gather(1, labels[:, None]).squeeze(1)
                m = round(self.relabel_fraction * labels.numel())
                low = torch.argsort(s0, stable=True)[:m]
                labels[low] = mean_pa[low].argmax(1)
            s = mean_pa.gather(1, labels[:, None]).squeeze(1)
            w = s / s.mean().clamp_min(1e-12)
        return anchors, s, w, labels

    def fit(
        self, data: Any, train_mask: Any, noisy_y: Any, epochs: int = 200, *, val_mask: Any = None
    ) -> DREAMTrainer:
        """Train ``self.model`` in place.

        Args:
            data: ``torch_geometric.data.Data`` with ``x`` float (N, F) and
                ``edge_index`` int64 (2, E).
            train_mask: bool (N,) labelled nodes.
            noisy_y: int (N,) observed labels (read on ``train_mask`` and ``val_mask``).
            epochs: Total epochs, warm-up included.
            val_mask: bool (N,) nodes whose observed labels select the checkpoint (the
                epoch of best accuracy), or None to keep the last epoch.

        Returns:
            self.

        Raises:
            ValueError: On masks or labels of the wrong dtype or shape, ``data.x`` not
                float or of another dtype than the model, ``edge_index`` not integer or
                out of range, labels outside the model's classes, ``k_proximity`` or
                ``k_topology`` >= the number of labelled nodes, or a class of the
                model's output with no labelled node.
        """
        epochs = check_int("epochs", epochs, low=1)
        device = _check_model("model", self.model)
        x, ei, y, tm, vm = _inputs(data, train_mask, noisy_y, val_mask, device)
        _check_dtype(x, self.model)
        n = x.shape[0]
        idx = np.flatnonzero(tm.cpu().numpy())
        L = idx.size
        for name, k in (("k_proximity", self.k_proximity), ("k_topology", self.k_topology)):
            if k >= L:
                raise ValueError(f"{name}={k} must be < the number of labelled nodes ({L})")
        idx_t = torch.from_numpy(idx).to(device)
        if self.seed is not None:
            torch.manual_seed(self.seed)
        loop = _Loop(self.model, self.lr, self.weight_decay)
        with torch.no_grad():
            C = _forward(self.model.eval(), x, ei)[0].shape[1]
        y_lab = y[idx_t]
        if int(y_lab.min()) < 0 or int(y_lab.max()) >= C:
            raise ValueError(
                f"noisy_y[train_mask] must lie in 0..{C - 1} (the model's {C} classes), "
                f"got [{int(y_lab.min())}, {int(y_lab.max())}]"
            )
        missing = sorted(set(range(C)) - set(y_lab.tolist()))
        if missing:
            raise ValueError(f"classes {missing} have no labelled node in noisy_y[train_mask]")
        topo = self._topology_anchors(ei, n, idx)
        w = torch.ones(L, device=device)
        s = torch.ones(L, device=device)
        labels = y.clone()
        anchors: torch.Tensor | None = None
        y_train = y.clone()
        for epoch in range(epochs):
            if epoch >= self.warmup and (epoch - self.warmup) % self.every == 0:
                anchors, s, w, lab = self._reevaluate(x, ei, y, idx_t, topo)
                labels = y.clone()
                labels[idx_t] = lab
                y_train = labels
            wt = w
            loop.step(x, ei, tm, y_train, lambda lg, t, wt=wt: dream_loss(lg, t, wt))
            loop.validate(epoch, x, ei, vm, y)
        loop.finish()
        self.train_idx_ = torch.from_numpy(idx)
        self.reliability_ = w.detach().float().cpu()
        self.homogeneity_ = s.detach().float().cpu()
        self.anchors_ = None if anchors is None else self.train_idx_[anchors.cpu()]
        self.labels_ = labels.cpu()
        self.best_epoch_ = loop.best_epoch
        self.history_ = loop.history
        return self

    def predict(self, data: Any) -> torch.Tensor:
        """int64 (N,) predicted classes of the trained model (eval mode).

        Raises:
            ValueError: If ``data`` has no ``x`` or ``edge_index``.
        """
        device = _check_model("model", self.model)
        for attr in ("x", "edge_index"):
            if getattr(data, attr, None) is None:
                raise ValueError(f"data must have {attr!r} (a torch_geometric Data)")
        self.model.eval()
        with torch.no_grad():
            logits, _ = _forward(self.model, data.x.to(device), data.edge_index.to(device))
        return logits.argmax(1).cpu()
