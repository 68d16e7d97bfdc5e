"""The experiment's problems: softmax regression and an MLP on MNIST-5k, a noisy quadratic.

All run every node stacked on dimension 0 through :class:`~dsgd_topology.SimulatedDSGD`:
softmax regression in numpy (default scale, CPU), the MLP (and, at full scale, softmax
regression too) in torch on any device, with the per-node forward and backward passes
batched by ``torch.func.vmap``. Internal to the experiment; not public API.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsgd_topology.dsgd import SimulatedDSGD
from dsgd_topology.topologies import MixingSchedule

N_CLASSES = 10


@dataclass
class Softmax:
    """Softmax regression ``p = softmax(x^T Theta)`` with a bias column, Theta (785, 10)."""

    X: np.ndarray  # (N, 785) float32, last column 1
    y: np.ndarray  # (N,) int64

    def __post_init__(self) -> None:
        self.Y = np.eye(N_CLASSES, dtype=np.float32)[self.y]

    def probs(self, Z: np.ndarray) -> np.ndarray:
        Z = Z - Z.max(axis=-1, keepdims=True)
        P = np.exp(Z)
        return P / P.sum(axis=-1, keepdims=True)

    def loss_acc(self, theta: np.ndarray, idx: np.ndarray) -> tuple[float, float]:
        """Mean cross-entropy and accuracy of one model on rows ``idx``."""
        Z = (self.X[idx] @ theta).astype(np.float64)
        Z = Z - Z.max(axis=1, keepdims=True)
        lse = np.log(np.exp(Z).sum(axis=1))
        yi = self.y[idx]
        loss = float(np.mean(lse - Z[np.arange(idx.size), yi]))
        acc = float(np.mean(Z.argmax(axis=1) == yi))
        return loss, acc

    def grad(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Full gradient of the mean loss on rows ``idx``, (785, 10)."""
        P = self.probs(self.X[idx] @ theta)
        return self.X[idx].T @ (P - self.Y[idx]) / idx.size

    def noise_variance(self, theta: np.ndarray, idx: np.ndarray, batch: int) -> float:
        """``E||g_B - grad||^2`` of a minibatch of ``batch`` rows drawn with replacement."""
        Xi = self.X[idx]
        R = self.probs(Xi @ theta) - self.Y[idx]
        per_sample = np.sum(Xi.astype(np.float64) ** 2, axis=1) * np.sum(
            R.astype(np.float64) ** 2, axis=1
        )
        g = (Xi.T @ R / idx.size).astype(np.float64)
        return float((per_sample.mean() - np.sum(g * g)) / batch)

    def stacked_grads(self, Theta: np.ndarray, batches: np.ndarray) -> np.ndarray:
        """Minibatch gradients of every node: Theta (n, 785, 10), batches (n, B) rows."""
        Xs = self.X[batches]  # (n, B, 785)
        P = self.probs(Xs @ Theta)
        return np.swapaxes(Xs, 1, 2) @ (P - self.Y[batches]) / batches.shape[1]


@dataclass
class RunTrace:
    """What one D-SGD run measured."""

    consensus: float  # mean over the second half of the run
    eval_steps: list[int]
    losses: list[float]  # averaged-model training loss at eval_steps
    final_loss: float  # mean over the evaluations in the last tenth of the run
    test_acc: float
    sigma2: float  # measured per-node minibatch-noise variance at the final average
    zeta: np.ndarray | None  # (n, P) local-gradient biases at the final average
    bits_per_node_step: float


def run_softmax(
    problem: Softmax,
    shards: list[np.ndarray],
    schedule: MixingSchedule | None,
    *,
    steps: int,
    lr: float,
    batch: int,
    seed: int,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    eval_every: int,
    record_every: int = 5,
) -> RunTrace:
    """D-SGD (or, with ``schedule=None``, centralized SGD at batch ``n * batch``).

    The averaged model is evaluated every ``eval_every`` steps and, in the last tenth of
    the run, every ``eval_every // 4`` steps (the final loss is the mean of those).
    """
    n = len(shards)
    rng = np.random.default_rng(seed)
    d = problem.X.shape[1]
    sizes = np.array([s.size for s in shards])
    table = np.zeros((n, sizes.max()), dtype=np.int64)
    for i, s in enumerate(shards):
        table[i, : s.size] = s
    rows = np.arange(n)[:, None]
    central = schedule is None
    opt = None if central else SimulatedDSGD(schedule, lr=lr)
    Theta = np.zeros((n, d, N_CLASSES), dtype=np.float32)
    cons: list[float] = []
    eval_steps: list[int] = []
    losses: list[float] = []
    tail_from = steps - steps // 10
    tail_every = max(1, eval_every // 4)
    for t in range(steps + 1):
        if t % eval_every == 0 or t == steps or (t >= tail_from and t % tail_every == 0):
            theta_bar = Theta.mean(axis=0)
            eval_steps.append(t)
            losses.append(problem.loss_acc(theta_bar, train_idx)[0])
        if t == steps:
            break
        cols = (rng.random((n, batch)) * sizes[:, None]).astype(np.int64)
        batches = table[rows, cols]
        G = problem.stacked_grads(Theta, batches)
        if central:
            Theta = Theta - lr * G.mean(axis=0, keepdims=True)  # one model, batch n * B
        else:
            assert opt is not None
            Theta = opt.step(Theta, G)
            if t >= steps // 2 and t % record_every == 0:
                cons.append(opt.consensus_error(Theta))
    theta_bar = Theta.mean(axis=0)
    tail = [v for s, v in zip(eval_steps, losses, strict=True) if s >= tail_from]
    if all(s is shards[0] for s in shards):  # every node samples the same set: zeta = 0
        zeta = np.zeros((n, theta_bar.size))
        sigma2 = problem.noise_variance(theta_bar, shards[0], batch)
    else:
        grads = [problem.grad(theta_bar, s).astype(np.float64).ravel() for s in shards]
        zeta = np.stack(grads) - np.mean(grads, axis=0)
        sigma2 = float(np.mean([problem.noise_variance(theta_bar, s, batch) for s in shards]))
    bits = 0.0 if opt is None else float(np.mean(opt.network.bits_sent)) / steps
    return RunTrace(
        consensus=float(np.mean(cons)) if cons else 0.0,
        eval_steps=eval_steps,
        losses=losses,
        final_loss=float(np.mean(tail)),
        test_acc=problem.loss_acc(theta_bar, test_idx)[1],
        sigma2=sigma2,
        zeta=zeta,
        bits_per_node_step=bits,
    )


class TorchClassifier:
    """A ReLU MLP ``784 -> hidden... -> 10`` on MNIST rows, parameters as one flat vector.

    ``hidden=()`` is softmax regression (785 x 10 with the bias). Node ``i``'s
    parameters are row ``i`` of an (n, P) float32 tensor; :meth:`stacked_grads` runs
    every node's forward and backward pass at once with ``torch.func.vmap``.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, hidden: tuple[int, ...], device: str) -> None:
        import torch

        self.device = torch.device(device)
        self.X = torch.as_tensor(np.ascontiguousarray(X, dtype=np.float32), device=self.device)
        self.y = torch.as_tensor(np.asarray(y, dtype=np.int64), device=self.device)
        sizes = [self.X.shape[1], *hidden, N_CLASSES]
        self.layers = list(itertools.pairwise(sizes))
        self.n_params = sum(a * b + b for a, b in self.layers)

    def init(self, seed: int) -> Any:
        """One model (P,): zeros for softmax regression, else torch's default uniform."""
        import torch

        if len(self.layers) == 1:
            return torch.zeros(self.n_params, device=self.device)
        g = torch.Generator().manual_seed(int(seed))
        parts = []
        for a, b in self.layers:
            bound = 1.0 / math.sqrt(a)
            parts.append((torch.rand(a * b, generator=g) * 2 - 1) * bound)
            parts.append((torch.rand(b, generator=g) * 2 - 1) * bound)
        return torch.cat(parts).to(self.device)

    def logits(self, theta: Any, X: Any) -> Any:
        import torch

        h, offset = X, 0
        for j, (a, b) in enumerate(self.layers):
            W = theta[offset : offset + a * b].view(a, b)
            offset += a * b
            h = h @ W + theta[offset : offset + b]
            offset += b
            if j < len(self.layers) - 1:
                h = torch.relu(h)
        return h

    def loss(self, theta: Any, X: Any, y: Any) -> Any:
        import torch

        return torch.nn.functional.cross_entropy(self.logits(theta, X), y)

    def loss_acc(self, theta: Any, idx: np.ndarray) -> tuple[float, float]:
        """Mean cross-entropy and accuracy of one model (P,) on rows ``idx``."""
        import torch

        with torch.no_grad():
            rows = torch.as_tensor(idx, device=self.device)
            Z = self.logits(theta, self.X[rows]).double()
            yi = self.y[rows]
            loss = float(torch.nn.functional.cross_entropy(Z, yi))
            acc = float((Z.argmax(dim=1) == yi).double().mean())
        return loss, acc

    def stacked_grads(self, Theta: Any, batches: np.ndarray) -> Any:
        """Minibatch gradients of every node: Theta (n, P), batches (n, B) row indices."""
        import torch
        from torch.func import grad, vmap

        rows = torch.as_tensor(batches, device=self.device)
        return vmap(grad(self.loss))(Theta, self.X[rows], self.y[rows])

    def grad(self, theta: Any, idx: np.ndarray) -> np.ndarray:
        """Full gradient of the mean loss on rows ``idx``, float64 (P,)."""
        import torch
        from torch.func import grad

        rows = torch.as_tensor(idx, device=self.device)
        return grad(self.loss)(theta, self.X[rows], self.y[rows]).double().cpu().numpy()

    def noise_variance(self, theta: Any, idx: np.ndarray, batch: int, chunk: int = 256) -> float:
        """``E||g_B - grad||^2`` of a minibatch of ``batch`` rows drawn with replacement."""
        import torch
        from torch.func import grad, vmap

        def one(th: Any, x: Any, yy: Any) -> Any:
            return self.loss(th, x[None], yy[None])

        per_sample = vmap(grad(one), in_dims=(None, 0, 0))
        sq, total = 0.0, torch.zeros(self.n_params, dtype=torch.float64, device=self.device)
        for start in range(0, idx.size, chunk):
            rows = torch.as_tensor(idx[start : start + chunk], device=self.device)
            g = per_sample(theta, self.X[rows], self.y[rows]).double()
            sq += float((g * g).sum())
            total += g.sum(dim=0)
        mean = total / idx.size
        return float((sq / idx.size - float((mean * mean).sum())) / batch)


def run_torch(
    problem: TorchClassifier,
    shards: list[np.ndarray],
    schedule: MixingSchedule | None,
    *,
    steps: int,
    lr: float,
    batch: int,
    seed: int,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    eval_every: int,
    record_every: int = 5,
) -> RunTrace:
    """:func:`run_softmax` for a :class:`TorchClassifier` (stacked torch tensors, any device).

    Every node starts at the same model (``problem.init(seed)``); the minibatches are
    drawn as in :func:`run_softmax`.
    """
    import torch

    n = len(shards)
    rng = np.random.default_rng(seed)
    sizes = np.array([s.size for s in shards])
    table = np.zeros((n, sizes.max()), dtype=np.int64)
    for i, s in enumerate(shards):
        table[i, : s.size] = s
    rows = np.arange(n)[:, None]
    central = schedule is None
    opt = None if central else SimulatedDSGD(schedule, lr=lr)
    Theta = problem.init(seed)[None].repeat(n, 1)
    cons: list[float] = []
    eval_steps: list[int] = []
    losses: list[float] = []
    tail_from = steps - steps // 10
    tail_every = max(1, eval_every // 4)
    for t in range(steps + 1):
        if t % eval_every == 0 or t == steps or (t >= tail_from and t % tail_every == 0):
            eval_steps.append(t)
            losses.append(problem.loss_acc(Theta.mean(dim=0), train_idx)[0])
        if t == steps:
            break
        cols = (rng.random((n, batch)) * sizes[:, None]).astype(np.int64)
        with torch.no_grad():
            G = problem.stacked_grads(Theta, table[rows, cols])
            if central:
                Theta = Theta - lr * G.mean(dim=0, keepdim=True)  # one model, batch n * B
            else:
                assert opt is not None
                Theta = opt.step(Theta, G)
                if t >= steps // 2 and t % record_every == 0:
                    cons.append(opt.consensus_error(Theta))
    theta_bar = Theta.mean(dim=0)
    tail = [v for s, v in zip(eval_steps, losses, strict=True) if s >= tail_from]
    if all(s is shards[0] for s in shards):
        zeta = np.zeros((n, problem.n_params))
        sigma2 = problem.noise_variance(theta_bar, shards[0], batch)
    else:
        grads = [problem.grad(theta_bar, s) for s in shards]
        zeta = np.stack(grads) - np.mean(grads, axis=0)
        sigma2 = float(np.mean([problem.noise_variance(theta_bar, s, batch) for s in shards]))
    bits = 0.0 if opt is None else float(np.mean(opt.network.bits_sent)) / steps
    return RunTrace(
        consensus=float(np.mean(cons)) if cons else 0.0,
        eval_steps=eval_steps,
        losses=losses,
        final_loss=float(np.mean(tail)),
        test_acc=problem.loss_acc(theta_bar, test_idx)[1],
        sigma2=sigma2,
        zeta=zeta,
        bits_per_node_step=bits,
    )


def run_quadratic(
    schedule: MixingSchedule,
    *,
    steps: int,
    lr: float,
    mu: float,
    dim: int,
    noise_std: float,
    seed: int,
) -> float:
    """Mean consensus error over the second half of D-SGD on ``f(x) = mu/2 ||x||^2``.

    Every node's gradient is ``mu x_i + noise_std * N(0, I_dim)`` (homogeneous,
    ``sigma^2 = dim noise_std^2``); all nodes start at 0.
    """
    n = schedule.n
    rng = np.random.default_rng(seed)
    opt = SimulatedDSGD(schedule, lr=lr)
    X = np.zeros((n, dim))
    total, count = 0.0, 0
    for t in range(steps):
        G = mu * X + noise_std * rng.standard_normal((n, dim))
        X = opt.step(X, G)
        if t >= steps // 2:
            total += opt.consensus_error(X)
            count += 1
    return total / count
