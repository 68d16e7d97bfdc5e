"""A learned differentiable world model of MuJoCo locomotion, trained on real transitions.

The model predicts the change of observation and the reward from ``(obs, action)``
with one MLP on normalized inputs and targets; termination, where the task has one,
comes from the task's known rule on the predicted observation (gymnasium's Hopper
health check), so the model only learns what is unknown. It exposes the same
``step(obs, action)`` as the analytic models of :mod:`rfo_flowpolicy.dynamics`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from rfo_flowpolicy._checks import check_action, check_obs, check_positive_int
from rfo_flowpolicy.policies import mlp


def hopper_terminated(obs: Tensor) -> Tensor:
    """Gymnasium ``Hopper-v5``'s unhealthy rule on observations (n, 11) -> (n,) bool.

    Healthy: height ``obs[0] > 0.7``, torso angle ``|obs[1]| < 0.2`` and every other
    coordinate (angle, joints, velocities) within +-100.
    """
    healthy = (obs[:, 0] > 0.7) & (obs[:, 1].abs() < 0.2) & (obs[:, 1:].abs() < 100).all(1)
    return ~healthy


def never_terminated(obs: Tensor) -> Tensor:
    """HalfCheetah never terminates."""
    return torch.zeros(obs.shape[0], dtype=torch.bool, device=obs.device)


class WorldModel(nn.Module):
    """MLP dynamics and reward model in observation space.

    Args:
        obs_dim: Observation size.
        act_dim: Action size.
        hidden: Hidden widths.
        terminated_fn: Known termination rule on the next observation.

    Example:
        >>> m = WorldModel(3, 1)
        >>> o2, r, done = m.step(torch.zeros(4, 3), torch.zeros(4, 1))
        >>> o2.shape, r.shape
        (torch.Size([4, 3]), torch.Size([4]))
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden: Sequence[int] = (200, 200, 200),
        terminated_fn: Callable[[Tensor], Tensor] = never_terminated,
    ) -> None:
        super().__init__()
        self.obs_dim = check_positive_int(obs_dim, "obs_dim")
        self.act_dim = check_positive_int(act_dim, "act_dim")
        self.net = mlp([obs_dim + act_dim, *hidden, obs_dim + 1])
        self.terminated_fn = terminated_fn
        for name, size in (("in", obs_dim + act_dim), ("out", obs_dim + 1)):
            self.register_buffer(f"{name}_mean", torch.zeros(size))
            self.register_buffer(f"{name}_std", torch.ones(size))

    def step(self, obs: Tensor, action: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Predict ``(next_obs (n, obs_dim), reward (n,), terminated (n,) bool)``.

        Raises:
            ValueError: On a shape mismatch or non-finite input.
        """
        check_obs(obs, self.obs_dim)
        check_action(action, self.act_dim, batch=obs.shape[0])
        x = (torch.cat([obs, action], 1) - self.in_mean) / self.in_std
        y = self.net(x) * self.out_std + self.out_mean
        nxt = obs + y[:, : self.obs_dim]
        return nxt, y[:, self.obs_dim], self.terminated_fn(nxt.detach())

    def fit(
        self,
        obs: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_obs: np.ndarray,
        *,
        iters: int = 200,
        batch_size: int = 256,
        lr: float = 1e-3,
        generator: torch.Generator | None = None,
        optimizer: torch.optim.Optimizer | None = None,
    ) -> float:
        """Fit on real transitions (continuing from the current weights).

        Args:
            obs: (N, obs_dim) observations.
            actions: (N, act_dim) actions.
            rewards: (N,) rewards.
            next_obs: (N, obs_dim) next observations.
            iters: Gradient steps.
            batch_size: Minibatch size.
            lr: Adam learning rate (if no optimizer is given).
            generator: Random generator for minibatches.
            optimizer: Optimizer to reuse across calls.

        Returns:
            The mean normalized training loss over the last 10 % of the steps.
        """
        iters = check_positive_int(iters, "iters")
        dev = self.in_mean.device
        o = torch.as_tensor(obs, dtype=torch.float32, device=dev)
        a = torch.as_tensor(actions, dtype=torch.float32, device=dev)
        x = torch.cat([o, a], 1)
        y = torch.cat(
            [
                torch.as_tensor(next_obs, dtype=torch.float32, device=dev) - o,
                torch.as_tensor(rewards, dtype=torch.float32, device=dev)[:, None],
            ],
            1,
        )
        if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
            raise ValueError("transitions contain NaN or inf values")
        self.in_mean.copy_(x.mean(0))
        self.in_std.copy_(x.std(0).clamp_min(1e-3))
        self.out_mean.copy_(y.mean(0))
        self.out_std.copy_(y.std(0).clamp_min(1e-3))
        xn, yn = (x - self.in_mean) / self.in_std, (y - self.out_mean) / self.out_std
        opt = optimizer or torch.optim.Adam(self.parameters(), lr=lr)
        losses = []
        for _ in range(iters):
            idx = torch.randint(0, x.shape[0], (min(batch_size, x.shape[0]),), generator=generator)
            loss = ((self.net(xn[idx]) - yn[idx]) ** 2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        tail = losses[-max(1, iters // 10) :]
        return float(np.mean(tail))
