"""Decentralized AUC maximization on real data: the problem the experiment runs.

Linear scores ``h = w . x`` on standardized features, ``n`` nodes, each with an equal
share of the training rows; the heterogeneous split gives node ``i`` a share of the
positives proportional to ``i + 1`` (sorted shares) and fills it with negatives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from compressed_dsgda.losses import AUCMarginMinMax, roc_auc
from compressed_dsgda.optim import CompressedDSGDA

__all__ = [
    "AUCData",
    "Method",
    "Trace",
    "load_auc_data",
    "primal_stationarity",
    "run_auc",
    "run_pesg",
    "run_pooled",
]


@dataclass(frozen=True)
class AUCData:
    """A binary task split into train and test, standardized on train."""

    name: str
    X_train: Any  # float32 (N, d)
    y_train: Any  # float32 (N,)
    X_test: Any
    y_test: Any

    @property
    def p(self) -> float:
        """Fraction of positives in the training data."""
        return float(self.y_train.mean())


def load_auc_data(name: str, *, test_fraction: float = 0.25, split_seed: int = 12345) -> AUCData:
    """``"mnist"`` (MNIST-5k, digit 0 vs rest), ``"breast_cancer"``, ``"digits"`` (0 vs rest).

    Features are centred on the training rows (and standardized, except MNIST's pixels),
    then scaled so that the mean squared row norm on train is 1; the split is stratified
    and fixed by ``split_seed``.
    """
    if name == "mnist":
        from icml26_core.datasets import load_mnist

        X, y = load_mnist()
        y = (y == 0).astype(np.float32)
    else:
        from icml26_core.datasets import load_tabular

        X, y, _ = load_tabular(name)
        y = np.asarray(y)
        y = (y == 0).astype(np.float32) if name == "digits" else (y > 0.5).astype(np.float32)
        if name == "breast_cancer":  # sklearn: 0 = malignant (the minority): make it positive
            y = 1.0 - y
    X = np.asarray(X, dtype=np.float64)
    rng = np.random.default_rng(split_seed)
    test = np.zeros(len(y), bool)
    for c in (0.0, 1.0):  # stratified
        idx = np.flatnonzero(y == c)
        test[rng.choice(idx, round(test_fraction * len(idx)), replace=False)] = True
    mu, sd = X[~test].mean(0), X[~test].std(0)
    if name == "mnist":  # pixels: centre only (rare pixels would blow up when standardized)
        sd = np.ones_like(sd)
    sd[sd < 1e-8] = 1.0
    Z = (X - mu) / sd
    Z = (Z / np.sqrt(np.mean(np.sum(Z[~test] ** 2, axis=1)))).astype(np.float32)  # mean ||x||^2 = 1
    t = torch.from_numpy
    return AUCData(name, t(Z[~test]), t(y[~test]), t(Z[test]), t(y[test]))


def heterogeneous_shards(y: Any, n: int, seed: int = 0) -> Any:
    """Equal-size shards, int64 (n, m): node ``i`` gets a ``(i+1)/sum`` share of the positives."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    pos, neg = rng.permutation(np.flatnonzero(y > 0.5)), rng.permutation(np.flatnonzero(y < 0.5))
    m = len(y) // n
    share = np.arange(1, n + 1) / np.arange(1, n + 1).sum()
    counts = np.minimum(np.floor(share * len(pos)).astype(int), m)
    for i in range(n - 1, -1, -1):  # the positives left by the rounding, to the last nodes
        extra = min(m - counts[i], len(pos) - counts.sum())
        counts[i] += max(extra, 0)
    shards, p0, n0 = [], 0, 0
    for i in range(n):
        k = counts[i]
        rows = np.concatenate([pos[p0 : p0 + k], neg[n0 : n0 + m - k]])
        p0, n0 = p0 + k, n0 + m - k
        shards.append(rows)
    return torch.as_tensor(np.stack(shards), dtype=torch.int64)


@dataclass(frozen=True)
class Method:
    """One configuration of :class:`CompressedDSGDA` (or of a baseline built from it)."""

    name: str
    compressor: Any
    momentum: float = 0.9
    tracking: bool = True
    error_feedback: bool = True
    gamma: float | None = None


@dataclass
class Trace:
    """What one run measured."""

    steps: list[int] = field(default_factory=list)
    auc: list[float] = field(default_factory=list)  # mean over nodes of each node's test AUC
    auc_avg_model: list[float] = field(default_factory=list)  # test AUC of the average model
    bits: list[float] = field(default_factory=list)  # mean bits sent per node so far
    consensus: list[float] = field(default_factory=list)  # primal consensus error
    final_auc: float = float("nan")
    final_auc_avg_model: float = float("nan")
    final_consensus: float = float("nan")
    bits_per_node: float = float("nan")
    final_stationarity: float = float("nan")  # ||grad_x f(x_bar, y*(x_bar))|| at the end
    diverged: bool = False

    def steps_to(self, target: float) -> float:
        """First evaluated step whose AUC reaches ``target`` (inf if never)."""
        for s, a in zip(self.steps, self.auc, strict=True):
            if a >= target:
                return float(s)
        return float("inf")


def _test_auc(data: AUCData, w: Any) -> float:
    return roc_auc(data.X_test @ w, data.y_test)


def primal_stationarity(data: AUCData, w: Any, a: Any, b: Any, margin: float = 1.0) -> float:
    """``||grad_x f(x, y*(x))||`` of the pooled training objective at ``x = (w, a, b)``.

    ``f`` is the mean over the training rows of
    :func:`~compressed_dsgda.losses.auc_margin_objective` (with equal-size shards, the
    average of the nodes' objectives). It is a concave quadratic in ``alpha``, so
    ``y*(x) = m + E[p h [y=0] - (1-p) h [y=1]] / (p(1-p))`` in closed form, and by
    Danskin's theorem the norm is that of the gradient of ``max_alpha f(x, alpha)``.

    Args:
        data: The task (its training rows).
        w: Weights, float (d,).
        a: The primal scalar ``a`` (a 0-d tensor or a float).
        b: The primal scalar ``b``, likewise.
        margin: ``m``.

    Returns:
        The Euclidean norm over ``(w, a, b)``, a float.
    """
    from compressed_dsgda.losses import auc_margin_objective

    p = data.p
    w = torch.as_tensor(w, dtype=torch.float32).detach().clone().requires_grad_(True)
    a = torch.as_tensor(a, dtype=torch.float32).detach().clone().requires_grad_(True)
    b = torch.as_tensor(b, dtype=torch.float32).detach().clone().requires_grad_(True)
    h = data.X_train @ w
    pos = (data.y_train > 0.5).to(h.dtype)
    with torch.no_grad():
        alpha = margin + torch.mean(p * h * (1 - pos) - (1 - p) * h * pos) / (p * (1 - p))
    f = auc_margin_objective(h, data.y_train, a, b, alpha, p, margin).mean()
    gw, ga, gb = torch.autograd.grad(f, (w, a, b))
    return float(torch.sqrt((gw**2).sum() + ga**2 + gb**2))


def run_auc(
    data: AUCData,
    method: Method,
    W: Any,
    *,
    steps: int,
    seed: int,
    lr_primal: float,
    lr_dual: float,
    batch: int = 16,
    eval_every: int = 50,
) -> Trace:
    """Decentralized AUC maximization with one method; evaluates every ``eval_every`` steps."""
    from icml26_core.decentralized import SimulatedNetwork

    net = SimulatedNetwork(W, seed=seed)
    n = net.n_nodes
    d = data.X_train.shape[1]
    shards = heterogeneous_shards(data.y_train, n, seed=0)
    w = torch.zeros(n, d, requires_grad=True)
    loss = AUCMarginMinMax(p=data.p, n_nodes=n)
    opt = CompressedDSGDA(
        [w, *loss.primal_parameters()],
        loss.dual_parameters(),
        net,
        method.compressor,
        lr_primal=lr_primal,
        lr_dual=lr_dual,
        momentum=method.momentum,
        gamma=method.gamma,
        tracking=method.tracking,
        error_feedback=method.error_feedback,
    )
    gen = torch.Generator().manual_seed(10_000 + seed)
    m = shards.shape[1]
    trace = Trace()
    for t in range(1, steps + 1):
        rows = torch.gather(shards, 1, torch.randint(0, m, (n, batch), generator=gen))
        try:
            h = torch.einsum("nbd,nd->nb", data.X_train[rows], w)
            f = loss(h, data.y_train[rows])
            opt.zero_grad()
            f.backward()
            opt.step()
        except ValueError:  # NaN/inf gradients: diverged
            trace.diverged = True
            break
        if t % eval_every == 0 or t == steps:
            w_bar = w.detach().mean(0)
            if not bool(torch.isfinite(w_bar).all()):
                trace.diverged = True
                break
            trace.steps.append(t)
            trace.auc.append(float(np.mean([_test_auc(data, wi) for wi in w.detach()])))
            trace.auc_avg_model.append(_test_auc(data, w_bar))
            trace.bits.append(float(np.mean(net.bits_sent)))
            trace.consensus.append(net.consensus_error(w.detach()))
    if trace.diverged:
        trace.final_auc = trace.final_auc_avg_model = 0.5
        trace.final_consensus = float("inf")
    else:
        trace.final_auc = trace.auc[-1]
        trace.final_auc_avg_model = trace.auc_avg_model[-1]
        trace.final_consensus = trace.consensus[-1]
        trace.final_stationarity = primal_stationarity(
            data, w.detach().mean(0), loss.a.detach().mean(), loss.b.detach().mean()
        )
    trace.bits_per_node = float(np.mean(net.bits_sent))
    return trace


def run_pooled(
    data: AUCData,
    *,
    steps: int,
    seed: int,
    lr_primal: float,
    lr_dual: float,
    batch: int = 16,
    n_nodes: int = 8,
    momentum: float = 0.9,
) -> tuple[float, float]:
    """Single-machine momentum SGDA on the pooled data (batch ``n_nodes * batch``).

    Returns:
        ``(test AUC, primal stationarity)`` at the end.
    """
    d = data.X_train.shape[1]
    w = torch.zeros(d, requires_grad=True)
    loss = AUCMarginMinMax(p=data.p)
    prim, dual = [w, *loss.primal_parameters()], loss.dual_parameters()
    bufs = [torch.zeros_like(p) for p in prim + dual]
    gen = torch.Generator().manual_seed(20_000 + seed)
    N = data.X_train.shape[0]
    for _ in range(steps):
        rows = torch.randint(0, N, (n_nodes * batch,), generator=gen)
        f = loss(data.X_train[rows] @ w, data.y_train[rows])
        grads = torch.autograd.grad(f, prim + dual)
        with torch.no_grad():
            for k, (p, g) in enumerate(zip(prim + dual, grads, strict=True)):
                bufs[k] = momentum * bufs[k] + (1 - momentum) * g
                if k < len(prim):
                    p -= lr_primal * bufs[k]
                else:
                    p += lr_dual * bufs[k]
    return _test_auc(data, w.detach()), primal_stationarity(data, w, loss.a, loss.b)


def run_pesg(
    data: AUCData,
    *,
    steps: int,
    seed: int,
    lr: float,
    batch: int = 16,
    n_nodes: int = 8,
) -> float:
    """LibAUC 2.0.1's ``PESG`` on ``AUCMLoss`` (v1, margin 1, ``imratio = p``), pooled data.

    The same linear model ``h = w . x`` (passed through a sigmoid, as LibAUC's own
    examples do: a monotone map, so the test AUC is that of ``w . x``), the same minibatch
    stream size (``n_nodes * batch`` rows a step) and number of steps as the
    decentralized runs; PESG's other settings are its defaults (momentum 0.9, epoch decay
    2e-3, weight decay 1e-5, gradient clip 1). PESG draws its reference point from the
    global torch generator: it is seeded from ``seed`` inside a forked RNG state.

    Returns:
        The test AUC at the end.

    Raises:
        ImportError: If LibAUC is not installed (``pip install "compressed-dsgda[peers]"``).
    """
    try:
        from libauc.losses import AUCMLoss
        from libauc.optimizers import PESG
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the LibAUC reference needs libauc: pip install 'compressed-dsgda[peers]'"
        ) from e
    d = data.X_train.shape[1]
    N = data.X_train.shape[0]
    gen = torch.Generator().manual_seed(20_000 + seed)  # the pooled SGDA's row stream
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(30_000 + seed)
        w = torch.zeros(d, requires_grad=True)
        loss_fn = AUCMLoss(margin=1.0, imratio=data.p, device=torch.device("cpu"))
        opt = PESG([w], loss_fn=loss_fn, lr=lr, verbose=False, device=torch.device("cpu"))
        for _ in range(steps):
            rows = torch.randint(0, N, (n_nodes * batch,), generator=gen)
            pred = torch.sigmoid(data.X_train[rows] @ w)
            loss = loss_fn(pred, data.y_train[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _test_auc(data, w.detach())
