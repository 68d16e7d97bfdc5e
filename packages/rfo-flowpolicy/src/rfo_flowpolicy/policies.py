"""Policies that are differentiable functions of (observation, noise).

:class:`FlowPolicy` generates actions by integrating a learned, observation-conditioned
velocity field from Gaussian noise with a fixed-step solver (Euler or midpoint); the
whole generation is an ordinary torch graph, so a return can be backpropagated through
the actions into the velocity field without any log-likelihood. :class:`GaussianPolicy`
is the prior approach (a reparameterized, tanh-squashed Gaussian) with the same
interface, so both run in the same trainer.

Both emit *chunks* of ``chunk`` consecutive actions per query (``chunk=1`` is the usual
one action per step); both squash the final sample with ``tanh`` into the action box.
Every random draw (the noise, the flow-matching times) takes an optional
``torch.Generator``, so a trainer that owns one generator controls all of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_choice, check_float, check_int
from torch import Tensor, nn
from torch.nn import functional as F

from rfo_flowpolicy._checks import check_obs

SOLVERS = ("euler", "midpoint")


def _check_hidden(hidden: Sequence[int]) -> tuple[int, ...]:
    if isinstance(hidden, int | str) or len(hidden) < 1:
        raise ValueError(f"hidden must be a sequence of layer widths, got {hidden!r}")
    return tuple(check_int(f"hidden[{i}]", h, low=1) for i, h in enumerate(hidden))


def mlp(sizes: Sequence[int], out_scale: float = 1.0) -> nn.Sequential:
    """A SiLU multilayer perceptron; the last layer's weights are scaled by ``out_scale``."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.SiLU())
    last = layers[-1]
    assert isinstance(last, nn.Linear)
    with torch.no_grad():
        last.weight.mul_(out_scale)
        last.bias.zero_()
    return nn.Sequential(*layers)


def _bound(value: Any, act_dim: int, name: str) -> Tensor:
    t = torch.as_tensor(np.asarray(value, dtype=np.float32))
    if t.ndim > 1 or (t.ndim == 1 and t.shape[0] not in (1, act_dim)):
        raise ValueError(
            f"{name} must be a number or a sequence of {act_dim} numbers, got shape "
            f"{tuple(t.shape)}"
        )
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite, got {t.tolist()}")
    return t.expand(act_dim).clone()


class _SquashedPolicy(nn.Module):
    """Shared plumbing: action box, observation normalization, chunk shapes."""

    _init_kwargs: dict[str, Any]

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        chunk: int,
        action_low: float | Sequence[float],
        action_high: float | Sequence[float],
    ) -> None:
        super().__init__()
        self.obs_dim = check_int("obs_dim", obs_dim, low=1)
        self.act_dim = check_int("act_dim", act_dim, low=1)
        self.chunk = check_int("chunk", chunk, low=1)
        low = _bound(action_low, act_dim, "action_low")
        high = _bound(action_high, act_dim, "action_high")
        if not bool((high > low).all()):
            raise ValueError(
                f"action_high must exceed action_low, got {low.tolist()} and {high.tolist()}"
            )
        self.register_buffer("act_center", (high + low) / 2)
        self.register_buffer("act_half", (high - low) / 2)
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))

    @property
    def action_low(self) -> np.ndarray:
        """Lower bounds of the action box, shape (act_dim,), float32."""
        return (self.act_center - self.act_half).cpu().numpy()

    @property
    def action_high(self) -> np.ndarray:
        """Upper bounds of the action box, shape (act_dim,), float32."""
        return (self.act_center + self.act_half).cpu().numpy()

    def init_kwargs(self) -> dict[str, Any]:
        """The constructor's arguments (plain Python values), for saving and rebuilding."""
        return dict(self._init_kwargs)

    @property
    def raw_dim(self) -> int:
        """Size of one generated sample: ``chunk * act_dim``."""
        return self.chunk * self.act_dim

    def set_obs_normalization(self, mean: Tensor, std: Tensor) -> None:
        """Normalize observations as ``(obs - mean) / std`` before the networks."""
        self.obs_mean.copy_(torch.as_tensor(mean, dtype=self.obs_mean.dtype))
        self.obs_std.copy_(torch.as_tensor(std, dtype=self.obs_std.dtype).clamp_min(1e-6))

    def _norm(self, obs: Tensor) -> Tensor:
        check_obs(obs, self.obs_dim)
        return (obs.to(self.obs_mean.dtype) - self.obs_mean) / self.obs_std

    def squash(self, raw: Tensor) -> Tensor:
        """Map raw samples (n, chunk*act_dim) to actions (n, chunk, act_dim) in the box."""
        a = torch.tanh(raw.view(raw.shape[0], self.chunk, self.act_dim))
        return self.act_center + self.act_half * a

    def unsquash(self, actions: Tensor, eps: float = 1e-4) -> Tensor:
        """Inverse of :meth:`squash` (actions clipped just inside the box)."""
        u = ((actions - self.act_center) / self.act_half).clamp(-1 + eps, 1 - eps)
        return torch.atanh(u).reshape(actions.shape[0], self.raw_dim)

    def sample_noise(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """Standard normal noise of shape (n, chunk*act_dim) on the policy's device.

        Args:
            n: Number of samples.
            generator: Source of the draw (a CPU generator works for any device: the
                noise is drawn on the generator's device and moved); torch's global
                generator if None.
        """
        dev = self.act_center.device
        gen_dev = generator.device if generator is not None else dev
        z = torch.randn(n, self.raw_dim, generator=generator, device=gen_dev)
        return z.to(dev)

    def _noise_for(
        self, obs: Tensor, noise: Tensor | None, generator: torch.Generator | None
    ) -> Tensor:
        if noise is None:
            return self.sample_noise(obs.shape[0], generator)
        if noise.shape != (obs.shape[0], self.raw_dim):
            raise ValueError(
                f"noise must have shape ({obs.shape[0]}, {self.raw_dim}), got {tuple(noise.shape)}"
            )
        return noise

    def generate(
        self,
        obs: Tensor,
        noise: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Raw (pre-tanh) samples, shape (n, chunk*act_dim)."""
        raise NotImplementedError

    def forward(
        self,
        obs: Tensor,
        noise: Tensor | None = None,
        deterministic: bool = False,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Differentiable actions for a batch of observations.

        Args:
            obs: Observations, shape (n, obs_dim), float.
            noise: Optional noise (n, chunk*act_dim); standard normal if None.
            deterministic: Use zero noise (the policy's "mode" for evaluation).
            generator: Source of the noise when ``noise`` is None.

        Returns:
            Actions in the box, shape (n, act_dim) if ``chunk == 1`` else
            (n, chunk, act_dim).

        Raises:
            ValueError: If ``obs`` has the wrong shape or is not finite.
        """
        if deterministic:
            noise = torch.zeros(obs.shape[0], self.raw_dim, device=self.act_center.device)
        a = self.squash(self.generate(obs, noise, generator))
        return a[:, 0] if self.chunk == 1 else a

    @torch.no_grad()
    def act(
        self, obs: Any, deterministic: bool = False, generator: torch.Generator | None = None
    ) -> np.ndarray:
        """Numpy convenience: observations to action chunks, without gradients.

        Args:
            obs: One observation, shape (obs_dim,), or a batch (n, obs_dim).
            deterministic: Use zero noise.
            generator: Source of the noise (torch's global generator if None).

        Returns:
            float32 array of shape (chunk, act_dim) for one observation, (n, chunk,
            act_dim) for a batch.

        Raises:
            ValueError: On a wrong observation size or NaN/inf values.
        """
        o = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=self.act_center.device)
        single = o.ndim == 1
        o = o[None] if single else o
        noise = None
        if deterministic:
            noise = torch.zeros(o.shape[0], self.raw_dim, device=self.act_center.device)
        out = self.squash(self.generate(o, noise, generator)).cpu().numpy()
        return out[0] if single else out


class FlowPolicy(_SquashedPolicy):
    """Flow policy: actions from noise by a fixed-step ODE in a learned velocity field.

    ``x_0 ~ N(0, noise_scale^2 I)``, ``dx/dt = v_theta(x, t, obs)`` for t in [0, 1],
    integrated with ``steps`` Euler or midpoint steps; the action chunk is
    ``tanh(x_1)`` mapped into the action box. Every operation is differentiable, so
    ``d action / d theta`` (and ``d action / d obs``) come from autograd.

    Args:
        obs_dim: Observation size.
        act_dim: Action size per environment step.
        chunk: Actions emitted per query (action chunking; 1 = none).
        hidden: Hidden layer widths of the velocity network.
        steps: Number of solver steps (>= 1).
        solver: ``"euler"`` or ``"midpoint"`` (two velocity evaluations per step).
        noise_scale: Standard deviation of the initial noise.
        action_low: Lower bound(s) of the action box.
        action_high: Upper bound(s) of the action box.

    Raises:
        ValueError: On a non-positive size or steps, or an unknown solver.

    References:
        RFO: "Reparameterization Flow Policy Optimization", ICML 2026 (abstract).

    Example:
        >>> import torch
        >>> pi = FlowPolicy(obs_dim=3, act_dim=1, steps=4)
        >>> pi(torch.zeros(5, 3)).shape
        torch.Size([5, 1])
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        *,
        chunk: int = 1,
        hidden: Sequence[int] = (64, 64),
        steps: int = 4,
        solver: str = "euler",
        noise_scale: float = 1.0,
        action_low: float | Sequence[float] = -1.0,
        action_high: float | Sequence[float] = 1.0,
    ) -> None:
        super().__init__(obs_dim, act_dim, chunk, action_low, action_high)
        self.steps = check_int("steps", steps, low=1)
        self.solver = check_choice("solver", solver, SOLVERS)
        self.noise_scale = check_float("noise_scale", noise_scale, low=0.0, low_inclusive=False)
        hidden = _check_hidden(hidden)
        self._init_kwargs = {
            "obs_dim": self.obs_dim,
            "act_dim": self.act_dim,
            "chunk": self.chunk,
            "hidden": list(hidden),
            "steps": self.steps,
            "solver": self.solver,
            "noise_scale": self.noise_scale,
            "action_low": self.action_low.tolist(),
            "action_high": self.action_high.tolist(),
        }
        # The first layer acts on [x, time features, obs]; it is split in three so the
        # observation's share is computed once per generation, not once per ODE step.
        self.in_x = nn.Linear(self.raw_dim, hidden[0])
        self.in_t = nn.Linear(3, hidden[0], bias=False)
        self.in_obs = nn.Linear(obs_dim, hidden[0], bias=False)
        self.net = mlp([*hidden, self.raw_dim], out_scale=0.1)

    def _time_features(self, t: Tensor) -> Tensor:
        return torch.cat([t, torch.cos(math.pi * t), torch.sin(math.pi * t)], dim=-1)

    def _field(self, x: Tensor, t_proj: Tensor, obs_proj: Tensor) -> Tensor:
        return self.net(F.silu(self.in_x(x) + t_proj + obs_proj))

    def velocity(self, x: Tensor, t: Tensor | float, obs_norm: Tensor) -> Tensor:
        """Velocity field ``v(x, t, obs)``, shape (n, chunk*act_dim); ``obs`` normalized.

        ``t`` is a float or a tensor of shape (n, 1).
        """
        t = torch.as_tensor(t, dtype=x.dtype, device=x.device).expand(x.shape[0], 1)
        return self._field(x, self.in_t(self._time_features(t)), self.in_obs(obs_norm))

    def integrate(self, obs_norm: Tensor, x0: Tensor) -> Tensor:
        """Integrate the ODE from ``x0`` at t=0 to t=1 with the fixed-step solver."""
        x, h = x0, 1.0 / self.steps
        obs_proj = self.in_obs(obs_norm)
        ts = torch.arange(2 * self.steps, dtype=x0.dtype, device=x0.device)[:, None] * (h / 2)
        t_proj = self.in_t(self._time_features(ts))  # (2 * steps, hidden): t = 0, h/2, h, ...
        for i in range(self.steps):
            if self.solver == "euler":
                x = x + h * self._field(x, t_proj[2 * i], obs_proj)
            else:
                mid = x + 0.5 * h * self._field(x, t_proj[2 * i], obs_proj)
                x = x + h * self._field(mid, t_proj[2 * i + 1], obs_proj)
        return x

    def generate(
        self,
        obs: Tensor,
        noise: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Raw samples ``x_1`` (pre-tanh), shape (n, chunk*act_dim).

        Args:
            obs: Observations (n, obs_dim).
            noise: Standard normal noise (n, chunk*act_dim); drawn if None.
            generator: Source of the noise when ``noise`` is None.
        """
        on = self._norm(obs)
        return self.integrate(on, self.noise_scale * self._noise_for(obs, noise, generator))

    def flow_matching_loss(
        self,
        obs: Tensor,
        target_raw: Tensor,
        noise: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Conditional flow-matching loss towards raw targets (straight paths).

        ``x_t = (1 - t) x_0 + t x_1``; regress ``v(x_t, t, obs)`` on ``x_1 - x_0``. With
        ``noise`` given, ``x_0`` is that noise (a fixed coupling, as in rectified flow);
        otherwise independent noise (plain flow matching / behaviour cloning).

        Args:
            obs: Observations (n, obs_dim).
            target_raw: Raw targets (n, chunk*act_dim), e.g. :meth:`unsquash` of actions.
            noise: Optional coupled noise (n, chunk*act_dim).
            generator: Source of the noise and of the times ``t ~ U(0, 1)``.

        Returns:
            Scalar mean squared error.
        """
        on = self._norm(obs)
        n = obs.shape[0]
        x0 = self.noise_scale * self._noise_for(obs, noise, generator)
        gen_dev = generator.device if generator is not None else x0.device
        t = torch.rand(n, 1, generator=generator, device=gen_dev).to(x0.device)
        xt = (1 - t) * x0 + t * target_raw
        return ((self.velocity(xt, t, on) - (target_raw - x0)) ** 2).sum(1).mean()


class GaussianPolicy(_SquashedPolicy):
    """Reparameterized tanh-Gaussian policy: ``tanh(mu(obs) + sigma * eps)`` in the box.

    The prior approach of reparameterization policy gradients (state-independent,
    learned ``log sigma``), with the same interface as :class:`FlowPolicy`.

    Args:
        obs_dim: Observation size.
        act_dim: Action size per step.
        chunk: Actions per query.
        hidden: Hidden widths of the mean network.
        init_std: Initial standard deviation (pre-tanh).
        action_low: Lower bound(s) of the action box.
        action_high: Upper bound(s) of the action box.

    Example:
        >>> import torch
        >>> GaussianPolicy(3, 1)(torch.zeros(2, 3)).shape
        torch.Size([2, 1])
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        *,
        chunk: int = 1,
        hidden: Sequence[int] = (64, 64),
        init_std: float = 1.0,
        action_low: float | Sequence[float] = -1.0,
        action_high: float | Sequence[float] = 1.0,
    ) -> None:
        super().__init__(obs_dim, act_dim, chunk, action_low, action_high)
        init_std = check_float("init_std", init_std, low=0.0, low_inclusive=False)
        hidden = _check_hidden(hidden)
        self._init_kwargs = {
            "obs_dim": self.obs_dim,
            "act_dim": self.act_dim,
            "chunk": self.chunk,
            "hidden": list(hidden),
            "init_std": init_std,
            "action_low": self.action_low.tolist(),
            "action_high": self.action_high.tolist(),
        }
        self.net = mlp([obs_dim, *hidden, self.raw_dim], out_scale=0.1)
        self.log_std = nn.Parameter(torch.full((self.raw_dim,), math.log(init_std)))

    def generate(
        self,
        obs: Tensor,
        noise: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Raw samples ``mu + sigma * noise``, shape (n, chunk*act_dim)."""
        mu = self.net(self._norm(obs))
        return mu + self.log_std.clamp(-5, 1).exp() * self._noise_for(obs, noise, generator)
