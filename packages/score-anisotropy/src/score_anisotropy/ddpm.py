"""DDPM training and ancestral sampling, and the Wasserstein metrics of the experiment."""

from __future__ import annotations

import numpy as np
import torch
from icml26_core.validation import check_float, check_int
from torch import nn

from score_anisotropy.models import DDPMSchedule, _check_model
from score_anisotropy.sad import _check_data, _model_dim

__all__ = [
    "per_direction_wasserstein",
    "sample_ddpm",
    "sliced_w2",
    "train_ddpm",
    "w2_exact",
]


def _schedule(schedule: DDPMSchedule | None) -> DDPMSchedule:
    if schedule is None:
        return DDPMSchedule()
    if not isinstance(schedule, DDPMSchedule):
        raise TypeError(f"schedule must be a DDPMSchedule, got {type(schedule).__name__}")
    return schedule


def train_ddpm(
    model: nn.Module,
    X: np.ndarray | torch.Tensor,
    steps: int,
    schedule: DDPMSchedule | None = None,
    *,
    batch_size: int = 128,
    lr: float = 1e-3,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` in place on the eps-prediction loss ``|eps - model(x_s, s)|^2``.

    Adam with a constant learning rate; each step draws a batch of rows of ``X`` (with
    replacement), a uniform step and Gaussian noise.

    Args:
        model: eps-prediction network on the data's D.
        X: Training data, shape ``(n, D)``.
        steps: Optimizer steps.
        schedule: Noise schedule; ``DDPMSchedule()`` if None.
        batch_size: Rows per step.
        lr: Adam learning rate.
        seed: Seed of the batches, steps and noise.

    Returns:
        The loss (mean squared error per coordinate) at every step.

    Raises:
        TypeError: If ``model`` is not a module, ``X`` is not numeric or ``schedule`` is
            not a :class:`DDPMSchedule`.
        ValueError: On bad data, a D mismatch, ``steps < 0``, ``batch_size < 1``,
            ``lr <= 0``, a negative seed, or a model without trainable parameters.
    """
    _check_model(model)
    A = _check_data(X, None)
    A = _check_data(A, _model_dim(model, A))
    steps = check_int("steps", steps, low=0)
    batch_size = check_int("batch_size", batch_size, low=1)
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    seed = check_int("seed", seed, low=0)
    sch = _schedule(schedule)
    p = next(q for q in model.parameters() if q.requires_grad)
    data = torch.as_tensor(A, dtype=p.dtype, device=p.device)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam([q for q in model.parameters() if q.requires_grad], lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        rows = torch.randint(data.shape[0], (batch_size,), generator=g)
        s = torch.randint(sch.n_steps, (batch_size,), generator=g)
        eps = torch.randn(batch_size, data.shape[1], generator=g).to(data)
        xs = sch.add_noise(data[rows], s.to(p.device), eps)
        loss = torch.mean((model(xs, sch.time(s).to(data)) - eps) ** 2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


@torch.no_grad()
def sample_ddpm(
    model: nn.Module,
    n: int,
    schedule: DDPMSchedule | None = None,
    *,
    dim: int | None = None,
    seed: int = 0,
    batch_size: int = 1000,
) -> np.ndarray:
    """Ancestral DDPM sampling (posterior variance ``beta~_s``) from pure noise.

    Args:
        model: Trained eps-prediction network.
        n: Number of samples.
        schedule: The schedule it was trained with; ``DDPMSchedule()`` if None.
        dim: Data dimension; ``model.dim`` if None.
        seed: Seed of the initial noise and of every step's noise.
        batch_size: Samples per forward pass.

    Returns:
        Samples, shape ``(n, D)``, float64.

    Raises:
        TypeError: If ``model`` is not a module or ``schedule`` not a :class:`DDPMSchedule`.
        ValueError: If ``n``, ``batch_size`` or ``dim`` is below 1 or ``seed`` negative.
    """
    _check_model(model)
    n = check_int("n", n, low=1)
    seed = check_int("seed", seed, low=0)
    batch_size = check_int("batch_size", batch_size, low=1)
    sch = _schedule(schedule)
    d = check_int("dim", dim if dim is not None else getattr(model, "dim", None), low=1)
    p = next(q for q in model.parameters() if q.requires_grad)
    g = torch.Generator().manual_seed(seed)
    betas, ab = sch.betas, sch.alphas_bar
    model.eval()
    out = []
    for s0 in range(0, n, batch_size):
        m = min(batch_size, n - s0)
        x = torch.randn(m, d, generator=g, dtype=torch.float64)
        for s in range(sch.n_steps - 1, -1, -1):
            t = sch.time(torch.full((m,), s))
            eps = model(x.to(p), t.to(p)).to(torch.float64).cpu()
            mean = (x - betas[s] / (1 - ab[s]).sqrt() * eps) / (1 - betas[s]).sqrt()
            if s > 0:
                var = betas[s] * (1 - ab[s - 1]) / (1 - ab[s])
                x = mean + var.sqrt() * torch.randn(m, d, generator=g, dtype=torch.float64)
            else:
                x = mean
        out.append(x.numpy())
    model.train()
    return np.concatenate(out)


def w2_exact(A: np.ndarray, B: np.ndarray) -> float:
    """Exact W2 between two equal-size empirical measures (optimal assignment).

    ``sqrt(min_perm mean_i |a_i - b_perm(i)|^2)`` by ``scipy.optimize.linear_sum_assignment``.

    Args:
        A: Samples, shape ``(n, D)``.
        B: Samples, shape ``(n, D)``.

    Returns:
        The distance, in the data's units.

    Raises:
        ValueError: If A or B is not 2-D, non-finite, or their shapes differ.
        TypeError: If A or B is not numeric.
    """
    from scipy.optimize import linear_sum_assignment

    A = _check_data(A, None, "A")
    B = _check_data(B, A.shape[1], "B", " (the D of A)")
    if A.shape[0] != B.shape[0]:
        raise ValueError(f"A and B need equal sizes, got {A.shape[0]} and {B.shape[0]}")
    C = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    C = np.maximum(C, 0.0)
    r, c = linear_sum_assignment(C)
    return float(np.sqrt(C[r, c].mean()))


def _directions(directions: np.ndarray, d: int) -> np.ndarray:
    U = np.asarray(directions, dtype=np.float64)
    if U.ndim != 2 or U.shape[0] != d:
        raise ValueError(f"directions must have shape ({d}, k), got {U.shape}")
    norms = np.linalg.norm(U, axis=0, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise ValueError("directions has a zero or non-finite column")
    return U / norms


def per_direction_wasserstein(
    gen: np.ndarray, test: np.ndarray, directions: np.ndarray
) -> np.ndarray:
    """1-D W1 between the projections of ``gen`` and ``test`` on each direction.

    Args:
        gen: Generated samples, shape ``(n, D)``.
        test: Held-out samples, shape ``(m, D)``.
        directions: Columns of directions, shape ``(D, k)`` (normalized here).

    Returns:
        W1 per direction, shape ``(k,)``.

    Raises:
        ValueError: If ``gen``/``test`` are not 2-D with one D or are non-finite, or
            ``directions`` is not ``(D, k)``.
    """
    from scipy.stats import wasserstein_distance

    G = _check_data(gen, None, "gen")
    T = _check_data(test, G.shape[1], "test", " (the D of gen)")
    U = _directions(directions, G.shape[1])
    PG, PT = G @ U, T @ U
    return np.array([wasserstein_distance(PG[:, j], PT[:, j]) for j in range(U.shape[1])])


def sliced_w2(gen: np.ndarray, test: np.ndarray, directions: np.ndarray) -> float:
    """Sliced W2 along the given directions: ``sqrt(mean_j W2^2(<gen, u_j>, <test, u_j>))``.

    1-D W2 from the empirical quantile functions on ``max(n, m)`` midpoint levels (for
    equal sizes: the sorted-sample formula).

    Args:
        gen: Generated samples, shape ``(n, D)``.
        test: Held-out samples, shape ``(m, D)``.
        directions: Columns of directions, shape ``(D, k)`` (normalized here).

    Returns:
        The distance, a float in the data's units.

    Raises:
        ValueError: As :func:`per_direction_wasserstein`.
    """
    G = _check_data(gen, None, "gen")
    T = _check_data(test, G.shape[1], "test", " (the D of gen)")
    U = _directions(directions, G.shape[1])
    q = (np.arange(max(len(G), len(T))) + 0.5) / max(len(G), len(T))
    QG = np.quantile(G @ U, q, axis=0, method="inverted_cdf")
    QT = np.quantile(T @ U, q, axis=0, method="inverted_cdf")
    return float(np.sqrt(np.mean((QG - QT) ** 2)))
