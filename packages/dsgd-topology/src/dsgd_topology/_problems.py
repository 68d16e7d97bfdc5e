"""The experiment's two problems: softmax regression on MNIST-5k and a noisy quadratic.

Both run every node stacked on dimension 0 through :class:`~dsgd_topology.SimulatedDSGD`
(numpy, float32 for MNIST). Internal to the experiment; not public API.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    zeta: np.ndarray  # (n, 7850) local-gradient biases at the final average
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
