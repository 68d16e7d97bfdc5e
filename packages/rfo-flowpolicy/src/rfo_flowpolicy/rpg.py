"""Short-horizon reparameterization policy gradient (RPG) with a learned critic; RFO.

One trainer serves both the method and its baseline:

* **RFO** = :class:`RPGTrainer` with a :class:`~rfo_flowpolicy.FlowPolicy` and the two
  regularizers on (``stability_coef > 0``, ``exploration=True``);
* **Gaussian RPG** (the prior approach the abstract contrasts) = the same trainer, same
  dynamics, same critic and horizon, with a :class:`~rfo_flowpolicy.GaussianPolicy`
  and no regularizer.

Each iteration (i) acts in the *real* gymnasium environment for a few steps and stores
the transitions, (ii) refits the world model where the dynamics are learned, (iii)
samples start observations from the replay buffer, rolls the policy out for
``horizon`` steps through the differentiable dynamics and backpropagates
``-(sum_t gamma^t r_t + gamma^H V(s_H)) / H`` jointly through every flow generation and
every dynamics step (SHAC-style), and (iv) fits the critic ``V`` to TD(lambda) targets of
the same imagined rollouts.

References:
    RFO: "Reparameterization Flow Policy Optimization", ICML 2026 (abstract).
    Xu et al., "Accelerated Policy Learning with Parallel Differentiable Simulation"
    (SHAC), ICLR 2022, for the short-horizon + critic setup.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from rfo_flowpolicy._checks import check_finite_array, check_positive_int
from rfo_flowpolicy.policies import FlowPolicy, _SquashedPolicy, mlp
from rfo_flowpolicy.regularizers import EntropyTemperature, entropy_estimate, stability_loss
from rfo_flowpolicy.worldmodel import WorldModel


@dataclass
class RPGConfig:
    """Hyperparameters of :class:`RPGTrainer` (defaults suit the classic-control tasks).

    Attributes:
        horizon: Steps of each differentiable rollout (>= 1, a multiple of the chunk).
        batch_size: Rollouts per policy-gradient step.
        gamma: Discount.
        lam: TD(lambda) parameter of the critic targets.
        actor_lr: Adam step size of the policy.
        critic_lr: Adam step size of the critic.
        critic_iters: Critic minibatch steps per update.
        target_tau: Polyak rate of the target critic.
        grad_clip: Max global gradient norm of the policy.
        reward_scale: Multiplies rewards inside the trainer (not in reported returns).
        stability_coef: Weight of the stability (flow-matching trust-region) loss; 0 = off.
        reference_tau: Polyak rate of the reference policy that the stability loss uses.
        exploration: Add the likelihood-free entropy bonus with a tuned weight.
        init_alpha: Initial weight of the entropy bonus.
        target_entropy_per_dim: Target entropy per action dimension (nats, actions in [-1, 1]).
        alpha_lr: Step size of the entropy weight's dual update.
        env_steps_per_iter: Real environment steps collected per iteration.
        updates_per_iter: Policy/critic updates per iteration.
        warmup_steps: Initial real steps with uniform random actions.
        model_fit_iters: World-model gradient steps per iteration (learned models only).
        model_fit_every: Refit the world model every this many iterations.
        model_batch_size: World-model minibatch size.
    """

    horizon: int = 16
    batch_size: int = 64
    gamma: float = 0.99
    lam: float = 0.95
    actor_lr: float = 2e-3
    critic_lr: float = 2e-3
    critic_iters: int = 8
    target_tau: float = 0.2
    grad_clip: float = 1.0
    reward_scale: float = 1.0
    stability_coef: float = 0.1
    reference_tau: float = 0.1
    exploration: bool = True
    init_alpha: float = 0.01
    target_entropy_per_dim: float = -1.0
    alpha_lr: float = 3e-2
    env_steps_per_iter: int = 50
    updates_per_iter: int = 1
    warmup_steps: int = 400
    model_fit_iters: int = 50
    model_fit_every: int = 1
    model_batch_size: int = 256

    def __post_init__(self) -> None:
        check_positive_int(self.horizon, "horizon")
        check_positive_int(self.batch_size, "batch_size")
        check_positive_int(self.env_steps_per_iter, "env_steps_per_iter")
        check_positive_int(self.updates_per_iter, "updates_per_iter")
        check_positive_int(self.critic_iters, "critic_iters")
        check_positive_int(self.warmup_steps, "warmup_steps", minimum=0)
        if not 0 < self.gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}")
        if not 0 <= self.lam <= 1:
            raise ValueError(f"lam must be in [0, 1], got {self.lam}")
        if self.stability_coef < 0:
            raise ValueError(f"stability_coef must be >= 0, got {self.stability_coef}")


class ReplayBuffer:
    """Fixed-capacity ring buffer of real transitions (numpy float32)."""

    def __init__(self, obs_dim: int, act_dim: int, capacity: int = 1_000_000) -> None:
        self.obs = np.zeros((capacity, obs_dim), np.float32)
        self.act = np.zeros((capacity, act_dim), np.float32)
        self.rew = np.zeros(capacity, np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), np.float32)
        self.size, self.ptr, self.capacity = 0, 0, capacity

    def add(self, o, a, r, o2) -> None:
        """Store one transition."""
        i = self.ptr
        self.obs[i], self.act[i], self.rew[i], self.next_obs[i] = o, a, r, o2
        self.ptr = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def view(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The stored transitions (obs, act, rew, next_obs)."""
        n = self.size
        return self.obs[:n], self.act[:n], self.rew[:n], self.next_obs[:n]


class Critic(nn.Module):
    """State-value network ``V(obs)`` on normalized observations."""

    def __init__(self, obs_dim: int, hidden=(64, 64)) -> None:
        super().__init__()
        self.net = mlp([obs_dim, *hidden, 1])
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))

    def forward(self, obs: Tensor) -> Tensor:
        """Values, shape (n,)."""
        return self.net((obs - self.obs_mean) / self.obs_std)[:, 0]


def evaluate_policy(
    act_fn: Callable[[np.ndarray], np.ndarray],
    make_env: Callable[[], Any],
    episodes: int,
    seed: int,
) -> float:
    """Mean undiscounted return of ``act_fn`` over ``episodes`` real episodes.

    Args:
        act_fn: Maps one observation to an action chunk of shape (k, act_dim) or (act_dim,).
        make_env: Builds a gymnasium environment (with its time limit).
        episodes: Number of episodes (seeds ``seed``, ``seed + 1``, ...).
        seed: First reset seed.

    Returns:
        The mean return.
    """
    env = make_env()
    total = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        ret, done, queue = 0.0, False, []
        while not done:
            if not queue:
                chunk = np.asarray(act_fn(obs), dtype=np.float32)
                queue = list(chunk.reshape(-1, env.action_space.shape[0]))
            obs, r, term, trunc, _ = env.step(queue.pop(0))
            ret += float(r)
            done = term or trunc
        total.append(ret)
    env.close()
    return float(np.mean(total))


@dataclass
class TrainLog:
    """What :meth:`RPGTrainer.train` measured.

    Attributes:
        env_steps: Real environment steps at each evaluation.
        returns: Mean evaluation return at each evaluation.
        model_steps: Differentiable-dynamics steps taken by the rollouts, at each evaluation.
        wall_s: Training wall time at each evaluation.
        stats: Last update's diagnostics (losses, alpha, entropy, gradient norm).
    """

    env_steps: list[int] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    model_steps: list[int] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)


class RPGTrainer:
    """Reparameterization policy gradient through differentiable dynamics (RFO / Gaussian RPG).

    Args:
        policy: A :class:`FlowPolicy` (RFO) or :class:`GaussianPolicy` (baseline).
        model: Differentiable dynamics with ``step(obs, action) -> (next_obs, reward,
            terminated)``: an analytic model of :mod:`rfo_flowpolicy.dynamics` or a
            :class:`WorldModel` (refit on the real transitions as training goes).
        make_env: Builds the real gymnasium environment (transitions and evaluation).
        config: Hyperparameters.
        seed: Seed of the environment resets and the trainer's random draws.
        device: Torch device for the networks and rollouts.

    Raises:
        ValueError: If sizes of policy, model and environment disagree, or the horizon
            is not a positive multiple of the policy's chunk.
        TypeError: If ``policy`` is not a policy of this package.

    Example:
        >>> import gymnasium as gym
        >>> from rfo_flowpolicy import FlowPolicy, Pendulum, RPGConfig, RPGTrainer
        >>> pi = FlowPolicy(3, 1, action_low=-2.0, action_high=2.0)
        >>> trainer = RPGTrainer(pi, Pendulum(), lambda: gym.make("Pendulum-v1"),
        ...                      RPGConfig(horizon=8, warmup_steps=50, env_steps_per_iter=50))
        >>> log = trainer.train(total_env_steps=100, eval_every=100, eval_episodes=1)
        >>> log.env_steps
        [100]
    """

    def __init__(
        self,
        policy: _SquashedPolicy,
        model: Any,
        make_env: Callable[[], Any],
        config: RPGConfig | None = None,
        *,
        seed: int = 0,
        device: str | torch.device = "cpu",
        critic_hidden=(64, 64),
    ) -> None:
        if not isinstance(policy, _SquashedPolicy):
            raise TypeError(f"policy must be a FlowPolicy or GaussianPolicy, got {type(policy)}")
        self.cfg = config or RPGConfig()
        if self.cfg.horizon % policy.chunk:
            raise ValueError(
                f"horizon ({self.cfg.horizon}) must be a multiple of the policy's chunk "
                f"({policy.chunk})"
            )
        self.device = torch.device(device)
        self.policy = policy.to(self.device)
        self.model = model
        self.make_env = make_env
        self.env = make_env()
        obs_dim = self.env.observation_space.shape[0]
        act_dim = self.env.action_space.shape[0]
        if (obs_dim, act_dim) != (policy.obs_dim, policy.act_dim):
            raise ValueError(
                f"policy has (obs_dim, act_dim) = {(policy.obs_dim, policy.act_dim)}, "
                f"environment has {(obs_dim, act_dim)}"
            )
        if getattr(model, "obs_dim", obs_dim) != obs_dim:
            raise ValueError(f"model obs_dim {model.obs_dim} != environment obs_dim {obs_dim}")
        self.seed = int(seed)
        self.gen = torch.Generator().manual_seed(self.seed)
        self.np_rng = np.random.default_rng(self.seed)
        self.critic = Critic(obs_dim, critic_hidden).to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_opt = torch.optim.Adam(self.policy.parameters(), lr=self.cfg.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=self.cfg.critic_lr)
        is_flow = isinstance(policy, FlowPolicy)
        self.use_stability = is_flow and self.cfg.stability_coef > 0
        self.reference = copy.deepcopy(policy).requires_grad_(False) if self.use_stability else None
        self.temperature = None
        if self.cfg.exploration:
            target = self.cfg.target_entropy_per_dim * policy.raw_dim
            self.temperature = EntropyTemperature(self.cfg.init_alpha, target).to(self.device)
            self.alpha_opt = torch.optim.Adam(self.temperature.parameters(), lr=self.cfg.alpha_lr)
        self.learned_model = isinstance(model, WorldModel)
        if self.learned_model:
            self.model = model.to(self.device)
            self.model_opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.buffer = ReplayBuffer(obs_dim, act_dim)
        self.env_steps = 0
        self.model_steps = 0
        self.iterations = 0
        self._obs, _ = self.env.reset(seed=self.seed)
        self._queue: list[np.ndarray] = []
        self.episode_returns: list[float] = []
        self._ep_ret = 0.0

    # ---------------------------------------------------------------- real environment
    def collect(self, n: int) -> None:
        """Act ``n`` steps in the real environment and store the transitions.

        Raises:
            ValueError: If the environment returns NaN/inf observations or rewards.
        """
        space = self.env.action_space
        for _ in range(n):
            if self.env_steps < self.cfg.warmup_steps:
                a = self.np_rng.uniform(space.low, space.high).astype(np.float32)
            else:
                if not self._queue:
                    self._queue = list(self.policy.act(self._obs))
                a = self._queue.pop(0)
            check_finite_array(a, "action")
            o2, r, term, trunc, _ = self.env.step(a)
            check_finite_array(o2, "observation")
            check_finite_array(r, "reward")
            self.buffer.add(self._obs, a, r, o2)
            self._ep_ret += float(r)
            self.env_steps += 1
            if term or trunc:
                self.episode_returns.append(self._ep_ret)
                self._ep_ret = 0.0
                self._obs, _ = self.env.reset()
                self._queue = []
            else:
                self._obs = o2

    def _update_normalization(self) -> None:
        obs = self.buffer.view()[0]
        mean = torch.as_tensor(obs.mean(0), device=self.device)
        std = torch.as_tensor(obs.std(0) + 1e-2, device=self.device)
        for net in (self.policy, self.reference):
            if net is not None:
                net.set_obs_normalization(mean, std)
        for c in (self.critic, self.critic_target):
            c.obs_mean.copy_(mean)
            c.obs_std.copy_(std)

    # ---------------------------------------------------------------- differentiable rollouts
    def imagine(self, start_obs: Tensor) -> dict[str, Tensor]:
        """Differentiable rollout of the policy through the model from ``start_obs``.

        Returns:
            ``ret`` (n,) differentiable discounted return plus terminal value, and the
            detached trajectory ``obs`` (H+1, n, obs_dim), ``rew`` (H, n), ``alive``
            (H+1, n) used by the critic.
        """
        cfg, k = self.cfg, self.policy.chunk
        obs = start_obs
        n = obs.shape[0]
        ret = torch.zeros(n, device=self.device)
        alive = torch.ones(n, device=self.device)
        disc = 1.0
        obs_l, rew_l, alive_l = [obs.detach()], [], [alive]
        chunk = first = None
        for t in range(cfg.horizon):
            if t % k == 0:
                chunk = self.policy.squash(self.policy.generate(obs))
                first = chunk if first is None else first
            obs2, r, done = self.model.step(obs, chunk[:, t % k])
            r = r.to(ret.dtype) * cfg.reward_scale
            ret = ret + disc * alive * r
            alive = alive * (~done).to(alive.dtype)
            disc *= cfg.gamma
            obs = obs2.to(start_obs.dtype)
            obs_l.append(obs.detach())
            rew_l.append(r.detach())
            alive_l.append(alive)
        ret = ret + disc * alive * self.critic(obs)
        self.model_steps += n * cfg.horizon
        return {
            "ret": ret,
            "obs": torch.stack(obs_l),
            "rew": torch.stack(rew_l),
            "alive": torch.stack(alive_l).detach(),
            "first_actions": first,
        }

    def _critic_targets(self, traj: dict[str, Tensor]) -> Tensor:
        cfg = self.cfg
        with torch.no_grad():
            h, n = traj["rew"].shape
            v = self.critic_target(traj["obs"].reshape(-1, traj["obs"].shape[-1])).view(h + 1, n)
            alive = traj["alive"]
            g = v[h]
            targets = torch.empty(h, n, device=self.device)
            for t in reversed(range(h)):
                cont = alive[t + 1] / alive[t].clamp_min(1e-8)  # 0 if the step terminated
                boot = (1 - cfg.lam) * v[t + 1] + cfg.lam * g
                g = traj["rew"][t] + cfg.gamma * cont * boot
                targets[t] = g
        return targets

    def update(self) -> dict[str, float]:
        """One policy-gradient step and the critic's fit; returns diagnostics."""
        cfg = self.cfg
        obs_np = self.buffer.view()[0]
        idx = self.np_rng.integers(0, len(obs_np), cfg.batch_size)
        start = torch.as_tensor(obs_np[idx], device=self.device)
        traj = self.imagine(start)
        actor_loss = -traj["ret"].mean() / cfg.horizon
        loss = actor_loss
        stats = {"actor_loss": float(actor_loss.detach())}
        if self.use_stability:
            visited = traj["obs"][:: self.policy.chunk][:-1].reshape(-1, start.shape[1])
            pick = torch.randint(0, visited.shape[0], (cfg.batch_size,), generator=self.gen)
            stab = stability_loss(self.policy, self.reference, visited[pick.to(self.device)])
            loss = loss + cfg.stability_coef * stab
            stats["stability_loss"] = float(stab.detach())
        if self.temperature is not None:
            ent = entropy_estimate(self.policy, start, traj["first_actions"])
            loss = loss - self.temperature.alpha * ent
            stats["entropy"] = float(ent.detach())
        self.actor_opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.grad_clip)
        self.actor_opt.step()
        stats["grad_norm"] = float(gnorm)
        if self.temperature is not None:
            self.alpha_opt.zero_grad(set_to_none=True)
            self.temperature.loss(ent).backward()
            self.alpha_opt.step()
            stats["alpha"] = float(self.temperature.alpha)
        if self.reference is not None:
            with torch.no_grad():
                for p_ref, p in zip(
                    self.reference.parameters(), self.policy.parameters(), strict=True
                ):
                    p_ref.lerp_(p, cfg.reference_tau)
        # critic on the detached imagined states
        targets = self._critic_targets(traj)
        states = traj["obs"][:-1].reshape(-1, start.shape[1])
        weights = traj["alive"][:-1].reshape(-1)
        flat_t = targets.reshape(-1)
        for _ in range(cfg.critic_iters):
            sel = torch.randint(
                0, states.shape[0], (min(256, states.shape[0]),), generator=self.gen
            )
            sel = sel.to(self.device)
            err = (self.critic(states[sel]) - flat_t[sel]) ** 2
            c_loss = (err * weights[sel]).sum() / weights[sel].sum().clamp_min(1.0)
            self.critic_opt.zero_grad(set_to_none=True)
            c_loss.backward()
            nn.utils.clip_grad_norm_(self.critic.parameters(), 10.0)
            self.critic_opt.step()
        with torch.no_grad():
            for p_t, p in zip(
                self.critic_target.parameters(), self.critic.parameters(), strict=True
            ):
                p_t.lerp_(p, cfg.target_tau)
        stats["critic_loss"] = float(c_loss.detach())
        return stats

    def fit_model(self) -> float:
        """Refit the learned world model on the buffer; returns its training loss."""
        o, a, r, o2 = self.buffer.view()
        return self.model.fit(
            o,
            a,
            r,
            o2,
            iters=self.cfg.model_fit_iters,
            batch_size=self.cfg.model_batch_size,
            generator=self.gen,
            optimizer=self.model_opt,
        )

    # ---------------------------------------------------------------- main loop
    def evaluate(self, episodes: int = 5, seed: int = 10_000) -> float:
        """Mean return of the deterministic (zero-noise) policy on real episodes."""
        return evaluate_policy(
            lambda o: self.policy.act(o, deterministic=True), self.make_env, episodes, seed
        )

    def train(
        self,
        total_env_steps: int,
        eval_every: int,
        eval_episodes: int = 5,
        eval_seed: int = 10_000,
        progress: Callable[[int], None] | None = None,
    ) -> TrainLog:
        """Train until ``total_env_steps`` real steps, evaluating every ``eval_every`` steps.

        Args:
            total_env_steps: Real environment steps in all (>= 1).
            eval_every: Real steps between evaluations (>= 1).
            eval_episodes: Episodes per evaluation.
            eval_seed: Reset seed of the first evaluation episode.
            progress: Called with the number of new steps after each iteration.

        Returns:
            The learning curve and the last diagnostics.
        """
        check_positive_int(total_env_steps, "total_env_steps")
        check_positive_int(eval_every, "eval_every")
        log = TrainLog()
        t0 = time.perf_counter()
        next_eval = eval_every
        while self.env_steps < total_env_steps:
            before = self.env_steps
            step = min(self.cfg.env_steps_per_iter, total_env_steps - self.env_steps)
            if self.env_steps < self.cfg.warmup_steps:
                step = min(step, self.cfg.warmup_steps - self.env_steps) or step
            self.collect(step)
            if self.env_steps >= min(self.cfg.warmup_steps, total_env_steps):
                if self.iterations % 10 == 0:
                    self._update_normalization()
                if self.learned_model and self.iterations % self.cfg.model_fit_every == 0:
                    log.stats["model_loss"] = self.fit_model()
                for _ in range(self.cfg.updates_per_iter):
                    log.stats.update(self.update())
                self.iterations += 1
            while self.env_steps >= next_eval:
                log.env_steps.append(next_eval)
                log.returns.append(self.evaluate(eval_episodes, eval_seed))
                log.model_steps.append(self.model_steps)
                log.wall_s.append(time.perf_counter() - t0)
                next_eval += eval_every
            if progress is not None:
                progress(self.env_steps - before)
        return log
