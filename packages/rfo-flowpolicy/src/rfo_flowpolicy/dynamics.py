"""Differentiable torch re-implementations of gymnasium's classic control tasks.

Each class mirrors one gymnasium environment step for step (same constants, same
integrator, same clipping), batched over a leading dimension and differentiable with
torch autograd, so a policy gradient can flow through the physics. All of them share
the *model* interface used by :class:`rfo_flowpolicy.RPGTrainer`::

    next_obs, reward, terminated = model.step(obs, action)

working on observations (what an agent sees) rather than hidden states; every
observation of these tasks determines the state (angles come back through atan2).

The tests check every transition against gymnasium's own environment to 1e-6.

References:
    RFO: "Reparameterization Flow Policy Optimization", ICML 2026 (the abstract); the
    dynamics are gymnasium's ``Pendulum-v1``, ``CartPole-v1`` and ``Acrobot-v1``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from rfo_flowpolicy._checks import check_action, check_obs


def _angle_normalize(x: Tensor) -> Tensor:
    return torch.remainder(x + math.pi, 2 * math.pi) - math.pi


class ClassicControlModel:
    """Base of the differentiable classic-control models (batched, any float dtype).

    Subclasses define ``obs_dim``, ``act_dim``, ``action_low``, ``action_high``,
    ``max_episode_steps`` and the four state methods.
    """

    name = "classic"
    obs_dim: int
    act_dim: int
    state_dim: int
    action_low: float
    action_high: float
    max_episode_steps: int

    def initial_state(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """Sample ``n`` initial states like gymnasium's reset (float64, (n, state_dim))."""
        raise NotImplementedError

    def step_state(self, state: Tensor, action: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Advance hidden states one step: ``(next_state, reward (n,), terminated (n,) bool)``."""
        raise NotImplementedError

    def observe(self, state: Tensor) -> Tensor:
        """Observation of a batch of states, shape (n, obs_dim)."""
        raise NotImplementedError

    def state_from_obs(self, obs: Tensor) -> Tensor:
        """Invert :meth:`observe` (differentiably)."""
        raise NotImplementedError

    def step(self, obs: Tensor, action: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """One differentiable transition in observation space.

        Args:
            obs: Observations, shape (n, obs_dim), float.
            action: Actions, shape (n, act_dim), float, finite.

        Returns:
            ``(next_obs (n, obs_dim), reward (n,), terminated (n,) bool)``.

        Raises:
            ValueError: On a shape mismatch or a NaN/inf action.
        """
        check_obs(obs, self.obs_dim)
        check_action(action, self.act_dim, batch=obs.shape[0])
        s2, r, done = self.step_state(self.state_from_obs(obs), action)
        return self.observe(s2), r, done


class Pendulum(ClassicControlModel):
    """gymnasium ``Pendulum-v1``: swing a pendulum up with torque in [-2, 2].

    State ``(theta, theta_dot)``; observation ``(cos theta, sin theta, theta_dot)``.
    """

    name = "pendulum"
    obs_dim, act_dim, state_dim = 3, 1, 2
    action_low, action_high = -2.0, 2.0
    max_episode_steps = 200

    def __init__(self, g: float = 10.0) -> None:
        self.g, self.m, self.l, self.dt = float(g), 1.0, 1.0, 0.05
        self.max_speed, self.max_torque = 8.0, 2.0

    def initial_state(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """Uniform angle in [-pi, pi] and velocity in [-1, 1], as gymnasium's reset."""
        u = torch.rand(n, 2, generator=generator, dtype=torch.float64) * 2 - 1
        return u * torch.tensor([math.pi, 1.0], dtype=torch.float64)

    def step_state(self, state: Tensor, action: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Semi-implicit Euler step with gymnasium's clipping; reward = -cost."""
        th, thdot = state[:, 0], state[:, 1]
        u = action[:, 0].clamp(-self.max_torque, self.max_torque)
        cost = _angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * u**2
        acc = 3 * self.g / (2 * self.l) * torch.sin(th) + 3.0 / (self.m * self.l**2) * u
        newthdot = (thdot + acc * self.dt).clamp(-self.max_speed, self.max_speed)
        newth = th + newthdot * self.dt
        done = torch.zeros_like(th, dtype=torch.bool)
        return torch.stack([newth, newthdot], dim=1), -cost, done

    def observe(self, state: Tensor) -> Tensor:
        """``(cos, sin, theta_dot)``."""
        th, thdot = state[:, 0], state[:, 1]
        return torch.stack([torch.cos(th), torch.sin(th), thdot], dim=1)

    def state_from_obs(self, obs: Tensor) -> Tensor:
        """Angle back through atan2 (the dynamics only see it modulo 2 pi)."""
        return torch.stack([torch.atan2(obs[:, 1], obs[:, 0]), obs[:, 2]], dim=1)


class CartPoleSwingUp(ClassicControlModel):
    """Cart-pole swing-up built on gymnasium ``CartPole-v1``'s physics.

    The equations of motion, constants (gravity 9.8, cart 1 kg, pole 0.1 kg,
    half-length 0.5 m, ``tau`` 0.02 s) and the explicit Euler integrator are
    gymnasium's. What we changed, to make a swing-up task (our design):

    * continuous force ``10 * clip(a, -1, 1)`` N instead of the two-valued +-10 N
      (``a = +-1`` reproduces gymnasium's actions 1/0 exactly);
    * the pole starts hanging down (``theta = pi`` +- 0.05);
    * reward ``(1 + cos theta) / 2 - 0.01 x^2 - 0.001 a^2`` (1 when upright and
      centred), terminated only when the cart leaves ``|x| <= 2.4``;
    * observation ``(x, x_dot, cos theta, sin theta, theta_dot)``; 200 steps (4 s).
    """

    name = "cartpole_swingup"
    obs_dim, act_dim, state_dim = 5, 1, 4
    action_low, action_high = -1.0, 1.0
    max_episode_steps = 200

    def __init__(self) -> None:
        self.gravity, self.masscart, self.masspole = 9.8, 1.0, 0.1
        self.total_mass = self.masscart + self.masspole
        self.length = 0.5
        self.polemass_length = self.masspole * self.length
        self.force_mag, self.tau, self.x_threshold = 10.0, 0.02, 2.4

    def initial_state(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """Hanging down with a +-0.05 uniform perturbation of every coordinate."""
        u = (torch.rand(n, 4, generator=generator, dtype=torch.float64) * 2 - 1) * 0.05
        return u + torch.tensor([0.0, 0.0, math.pi, 0.0], dtype=torch.float64)

    def step_state(self, state: Tensor, action: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Gymnasium's Euler step with a continuous force; reward of the swing-up."""
        x, x_dot, theta, theta_dot = state.unbind(1)
        a = action[:, 0].clamp(-1.0, 1.0)
        force = self.force_mag * a
        cos, sin = torch.cos(theta), torch.sin(theta)
        temp = (force + self.polemass_length * theta_dot**2 * sin) / self.total_mass
        thetaacc = (self.gravity * sin - cos * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * cos**2 / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * cos / self.total_mass
        nxt = torch.stack(
            [
                x + self.tau * x_dot,
                x_dot + self.tau * xacc,
                theta + self.tau * theta_dot,
                theta_dot + self.tau * thetaacc,
            ],
            dim=1,
        )
        reward = self.reward(nxt, a)
        done = nxt[:, 0].abs() > self.x_threshold
        return nxt, reward, done

    @staticmethod
    def reward(state: Tensor, a: Tensor) -> Tensor:
        """Swing-up reward of the state after the step, shape (n,)."""
        return (1 + torch.cos(state[:, 2])) / 2 - 0.01 * state[:, 0] ** 2 - 0.001 * a**2

    def observe(self, state: Tensor) -> Tensor:
        """``(x, x_dot, cos theta, sin theta, theta_dot)``."""
        x, x_dot, theta, theta_dot = state.unbind(1)
        return torch.stack([x, x_dot, torch.cos(theta), torch.sin(theta), theta_dot], dim=1)

    def state_from_obs(self, obs: Tensor) -> Tensor:
        """Angle back through atan2."""
        theta = torch.atan2(obs[:, 3], obs[:, 2])
        return torch.stack([obs[:, 0], obs[:, 1], theta, obs[:, 4]], dim=1)


class Acrobot(ClassicControlModel):
    """gymnasium ``Acrobot-v1`` ("book" dynamics, one RK4 step of 0.2 s).

    The torque is continuous, ``clip(a, -1, 1)`` N m (gymnasium's discrete actions
    0/1/2 are ``a = -1/0/+1``); the reward is dense, the tip height
    ``-cos(t1) - cos(t1 + t2)`` in [-2, 2] (gymnasium gives -1 per step), and the
    episode terminates when the height exceeds 1, as in gymnasium.
    """

    name = "acrobot"
    obs_dim, act_dim, state_dim = 6, 1, 4
    action_low, action_high = -1.0, 1.0
    max_episode_steps = 500

    def __init__(self) -> None:
        self.dt = 0.2
        self.max_vel_1, self.max_vel_2 = 4 * math.pi, 9 * math.pi

    def initial_state(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """Uniform in [-0.1, 0.1]^4, as gymnasium's reset."""
        return (torch.rand(n, 4, generator=generator, dtype=torch.float64) * 2 - 1) * 0.1

    @staticmethod
    def _dsdt(s: Tensor, a: Tensor) -> Tensor:
        m1 = m2 = 1.0
        l1, lc1, lc2, i1, i2, g = 1.0, 0.5, 0.5, 1.0, 1.0, 9.8
        t1, t2, dt1, dt2 = s.unbind(1)
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * torch.cos(t2)) + i1 + i2
        d2 = m2 * (lc2**2 + l1 * lc2 * torch.cos(t2)) + i2
        phi2 = m2 * lc2 * g * torch.cos(t1 + t2 - math.pi / 2.0)
        phi1 = (
            -m2 * l1 * lc2 * dt2**2 * torch.sin(t2)
            - 2 * m2 * l1 * lc2 * dt2 * dt1 * torch.sin(t2)
            + (m1 * lc1 + m2 * l1) * g * torch.cos(t1 - math.pi / 2)
            + phi2
        )
        ddt2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dt1**2 * torch.sin(t2) - phi2) / (
            m2 * lc2**2 + i2 - d2**2 / d1
        )
        ddt1 = -(d2 * ddt2 + phi1) / d1
        return torch.stack([dt1, dt2, ddt1, ddt2], dim=1)

    def step_state(self, state: Tensor, action: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """RK4 step, angle wrapping and velocity bounds as in gymnasium."""
        a = action[:, 0].clamp(-1.0, 1.0)
        h = self.dt
        k1 = self._dsdt(state, a)
        k2 = self._dsdt(state + h / 2 * k1, a)
        k3 = self._dsdt(state + h / 2 * k2, a)
        k4 = self._dsdt(state + h * k3, a)
        ns = state + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        wrap = torch.remainder(ns[:, :2] + math.pi, 2 * math.pi) - math.pi
        nxt = torch.stack(
            [
                wrap[:, 0],
                wrap[:, 1],
                ns[:, 2].clamp(-self.max_vel_1, self.max_vel_1),
                ns[:, 3].clamp(-self.max_vel_2, self.max_vel_2),
            ],
            dim=1,
        )
        height = -torch.cos(nxt[:, 0]) - torch.cos(nxt[:, 1] + nxt[:, 0])
        return nxt, height, height > 1.0

    def observe(self, state: Tensor) -> Tensor:
        """``(cos t1, sin t1, cos t2, sin t2, dt1, dt2)``."""
        t1, t2, dt1, dt2 = state.unbind(1)
        return torch.stack(
            [torch.cos(t1), torch.sin(t1), torch.cos(t2), torch.sin(t2), dt1, dt2], dim=1
        )

    def state_from_obs(self, obs: Tensor) -> Tensor:
        """Angles back through atan2."""
        t1 = torch.atan2(obs[:, 1], obs[:, 0])
        t2 = torch.atan2(obs[:, 3], obs[:, 2])
        return torch.stack([t1, t2, obs[:, 4], obs[:, 5]], dim=1)


def make_cartpole_swingup_env(max_episode_steps: int = 200):
    """Gymnasium environment of :class:`CartPoleSwingUp` (for baselines and evaluation).

    Subclasses gymnasium's ``CartPoleEnv`` (its constants and rendering), replacing
    the action space with ``Box(-1, 1, (1,))`` and the step with the swing-up step,
    computed in numpy float64 exactly as gymnasium does.

    Returns:
        A ``gymnasium.Env`` wrapped in ``TimeLimit(max_episode_steps)``.
    """
    import gymnasium as gym
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv
    from gymnasium.wrappers import TimeLimit

    model = CartPoleSwingUp()

    class CartPoleSwingUpEnv(CartPoleEnv):
        def __init__(self) -> None:
            super().__init__()
            self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
            high = np.array([np.inf] * 5, dtype=np.float32)
            self.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)

        def reset(self, *, seed=None, options=None):
            gym.Env.reset(self, seed=seed)
            u = self.np_random.uniform(-0.05, 0.05, size=(4,))
            self.state = u + np.array([0.0, 0.0, np.pi, 0.0])
            return self._obs(), {}

        def _obs(self):
            return model.observe(torch.as_tensor(self.state)[None])[0].numpy().astype(np.float32)

        def step(self, action):
            a = np.asarray(action, dtype=np.float64).reshape(1, 1)
            if not np.all(np.isfinite(a)):
                raise ValueError(f"action must be finite, got {action!r}")
            s2, r, done = model.step_state(torch.as_tensor(self.state)[None], torch.as_tensor(a))
            self.state = s2[0].numpy()
            return self._obs(), float(r[0]), bool(done[0]), False, {}

    return TimeLimit(CartPoleSwingUpEnv(), max_episode_steps=max_episode_steps)


def make_acrobot_env(max_episode_steps: int = 500):
    """Gymnasium environment of :class:`Acrobot`: continuous torque, dense reward.

    Subclasses gymnasium's ``AcrobotEnv`` (its constants, reset and rendering),
    replacing the action space with ``Box(-1, 1, (1,))`` (torque in N m; ``-1, 0, +1``
    are gymnasium's three actions) and the step with :class:`Acrobot`'s, computed in
    numpy float64: the reward is the tip height ``-cos(t1) - cos(t1 + t2)`` in [-2, 2]
    and the episode terminates when it exceeds 1, as in gymnasium.

    Returns:
        A ``gymnasium.Env`` wrapped in ``TimeLimit(max_episode_steps)``.
    """
    import gymnasium as gym
    from gymnasium.envs.classic_control.acrobot import AcrobotEnv
    from gymnasium.wrappers import TimeLimit

    model = Acrobot()

    class AcrobotContinuousEnv(AcrobotEnv):
        def __init__(self) -> None:
            super().__init__()
            self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

        def reset(self, *, seed=None, options=None):
            obs, info = super().reset(seed=seed, options=options)
            self.state = np.asarray(self.state, dtype=np.float64)
            return obs, info

        def step(self, action):
            a = np.asarray(action, dtype=np.float64).reshape(1, 1)
            if not np.all(np.isfinite(a)):
                raise ValueError(f"action must be finite, got {action!r}")
            s2, r, done = model.step_state(torch.as_tensor(self.state)[None], torch.as_tensor(a))
            self.state = s2[0].numpy()
            return self._get_ob(), float(r[0]), bool(done[0]), False, {}

    return TimeLimit(AcrobotContinuousEnv(), max_episode_steps=max_episode_steps)
