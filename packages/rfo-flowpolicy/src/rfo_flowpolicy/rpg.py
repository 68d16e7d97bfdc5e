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
the same imagined rollouts (:func:`td_lambda_targets`).

The trainer has the surface of a stable-baselines3 algorithm: ``learn``, batched
``predict``, ``save``/``load``, one ``seed`` for every random draw.

References:
    RFO: "Reparameterization Flow Policy Optimization", ICML 2026 (abstract).
    Xu et al., "Accelerated Policy Learning with Parallel Differentiable Simulation"
    (SHAC), ICLR 2022, for the short-horizon + critic setup.
"""

from __future__ import annotations

import copy
import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_float, check_int
from torch import Tensor, nn

from rfo_flowpolicy._checks import check_finite_array
from rfo_flowpolicy.policies import FlowPolicy, GaussianPolicy, _SquashedPolicy, mlp
from rfo_flowpolicy.regularizers import EntropyTemperature, entropy_estimate, stability_loss
from rfo_flowpolicy.worldmodel import WorldModel

POLICIES = {"flow": FlowPolicy, "gaussian": GaussianPolicy}
"""Policy names that :class:`RPGTrainer` builds from the environment's spaces."""
_SAVE_FORMAT = 1


@dataclass
class RPGConfig:
    """Hyperparameters of :class:`RPGTrainer` (defaults suit the classic-control tasks).

    Every field is checked when the config is built (``TypeError`` for a wrong type,
    ``ValueError`` for a value out of range, NaN or inf, each naming the field).

    Attributes:
        horizon: Steps of each differentiable rollout (>= 1, a multiple of the chunk).
        batch_size: Rollouts per policy-gradient step (>= 1).
        gamma: Discount, in (0, 1].
        lam: TD(lambda) parameter of the critic targets, in [0, 1].
        actor_lr: Adam step size of the policy (> 0).
        critic_lr: Adam step size of the critic (> 0).
        critic_iters: Critic minibatch steps per update (>= 1).
        target_tau: Polyak rate of the target critic, in (0, 1].
        grad_clip: Max global gradient norm of the policy (> 0).
        reward_scale: Multiplies rewards inside the trainer (not in reported returns), > 0.
        stability_coef: Weight of the stability (flow-matching trust-region) loss; 0 = off.
        reference_tau: Polyak rate of the reference policy that the stability loss uses,
            in (0, 1].
        exploration: Add the likelihood-free entropy bonus with a tuned weight.
        init_alpha: Initial weight of the entropy bonus (> 0).
        target_entropy_per_dim: Target entropy per action dimension (nats, actions
            rescaled to [-1, 1], as :func:`~rfo_flowpolicy.entropy_estimate` measures it).
        alpha_lr: Step size of the entropy weight's dual update (> 0).
        env_steps_per_iter: Real environment steps collected per iteration (>= 1).
        updates_per_iter: Policy/critic updates per iteration (>= 1).
        warmup_steps: Initial real steps with uniform random actions (>= 0).
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
        for name in (
            "horizon",
            "batch_size",
            "critic_iters",
            "env_steps_per_iter",
            "updates_per_iter",
            "model_fit_iters",
            "model_fit_every",
            "model_batch_size",
        ):
            setattr(self, name, check_int(name, getattr(self, name), low=1))
        self.warmup_steps = check_int("warmup_steps", self.warmup_steps, low=0)
        pos = {"low": 0.0, "low_inclusive": False}
        for name in ("actor_lr", "critic_lr", "grad_clip", "reward_scale", "init_alpha"):
            setattr(self, name, check_float(name, getattr(self, name), **pos))
        self.alpha_lr = check_float("alpha_lr", self.alpha_lr, **pos)
        self.gamma = check_float("gamma", self.gamma, low=0.0, high=1.0, low_inclusive=False)
        self.lam = check_float("lam", self.lam, low=0.0, high=1.0)
        for name in ("target_tau", "reference_tau"):
            value = check_float(name, getattr(self, name), low=0.0, high=1.0, low_inclusive=False)
            setattr(self, name, value)
        self.stability_coef = check_float("stability_coef", self.stability_coef, low=0.0)
        self.target_entropy_per_dim = check_float(
            "target_entropy_per_dim", self.target_entropy_per_dim
        )
        if not isinstance(self.exploration, bool | np.bool_):
            raise TypeError(
                f"exploration must be a bool, got {self.exploration!r} "
                f"({type(self.exploration).__name__})"
            )
        self.exploration = bool(self.exploration)


def td_lambda_targets(
    rewards: Any,
    values: Any,
    terminated: Any,
    truncated: Any = None,
    gamma: float = 0.99,
    lam: float = 0.95,
) -> Any:
    """TD(lambda) returns of a batch of trajectories, computed backwards in time.

    With ``c_t = 1 - terminated_t`` and the lambda-return ``G_t``::

        G_t = r_t + gamma * c_t * ((1 - lam) * V_{t+1} + lam * G_{t+1})
        G_t = r_t + gamma * c_t * V_{t+1}          where the trajectory is cut after t

    A trajectory is cut after step ``t`` where ``truncated_t`` (a time limit: the next
    state is not terminal, so its value is bootstrapped, but what follows belongs to
    another episode) and always after the last step ``T - 1``. ``lam = 0`` gives the
    one-step TD targets, ``lam = 1`` the discounted return bootstrapped at the cut.

    Args:
        rewards: Rewards ``r_t``, shape (T,) or (T, n), float.
        values: Values ``V(s_t)`` of the states ``s_0 .. s_T``, shape (T + 1,) or
            (T + 1, n); ``V(s_{t+1})`` is not read where step ``t`` terminated.
        terminated: Whether ``s_{t+1}`` is terminal, shape of ``rewards``, bool or 0/1.
        truncated: Whether the trajectory is cut after step ``t`` (shape of
            ``rewards``), or None for no cut before the end.
        gamma: Discount, in [0, 1].
        lam: Lambda, in [0, 1].

    Returns:
        The targets ``G_t``, shape of ``rewards``: a torch tensor for tensor input (no
        gradient), a numpy array otherwise.

    Raises:
        ValueError: On mismatched shapes, NaN/inf rewards or values, or ``gamma`` or
            ``lam`` outside [0, 1].

    References:
        Sutton & Barto, *Reinforcement Learning: An Introduction* (2nd ed., 2018),
        section 12.1 (the lambda-return) and its recursive form.

    Example:
        >>> import numpy as np
        >>> td_lambda_targets(np.ones(3), np.zeros(4), np.zeros(3, bool), gamma=1.0, lam=1.0)
        array([3., 2., 1.])
    """
    gamma = check_float("gamma", gamma, low=0.0, high=1.0)
    lam = check_float("lam", lam, low=0.0, high=1.0)
    as_numpy = not isinstance(rewards, Tensor)
    with torch.no_grad():
        r = torch.as_tensor(np.asarray(rewards) if as_numpy else rewards)
        r = r.to(torch.float64 if as_numpy else (r.dtype if r.is_floating_point() else None))
        v = torch.as_tensor(values, device=r.device).to(r.dtype)
        term = torch.as_tensor(terminated, device=r.device).to(torch.bool)
        if r.ndim not in (1, 2) or r.shape[0] < 1:
            raise ValueError(f"rewards must have shape (T,) or (T, n), got {tuple(r.shape)}")
        if v.shape != (r.shape[0] + 1, *r.shape[1:]):
            raise ValueError(
                f"values must have shape {(r.shape[0] + 1, *r.shape[1:])} (one more step "
                f"than rewards), got {tuple(v.shape)}"
            )
        if term.shape != r.shape:
            raise ValueError(
                f"terminated must have the shape of rewards {tuple(r.shape)}, "
                f"got {tuple(term.shape)}"
            )
        cut = torch.zeros_like(term)
        if truncated is not None:
            cut = torch.as_tensor(truncated, device=r.device).to(torch.bool)
            if cut.shape != r.shape:
                raise ValueError(
                    f"truncated must have the shape of rewards {tuple(r.shape)}, "
                    f"got {tuple(cut.shape)}"
                )
        if not bool(torch.isfinite(r).all()):
            raise ValueError("rewards contain NaN or inf values")
        # a value after a terminal step is never read, so it may be anything there
        v_next = torch.where(term, torch.zeros_like(v[1:]), v[1:])
        if not (bool(torch.isfinite(v_next).all()) and bool(torch.isfinite(v[:1]).all())):
            raise ValueError("values contain NaN or inf values where they are read")
        out = torch.empty_like(r)
        g = v_next[-1]
        for t in reversed(range(r.shape[0])):
            if t == r.shape[0] - 1:
                boot = v_next[t]
            else:
                mixed = (1 - lam) * v_next[t] + lam * g
                boot = torch.where(cut[t], v_next[t], mixed)
            g = r[t] + gamma * (~term[t]).to(r.dtype) * boot
            out[t] = g
    return out.numpy() if as_numpy else out


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

    def __init__(self, obs_dim: int, hidden: Sequence[int] = (64, 64)) -> None:
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
        episodes: Number of episodes (reset seeds ``seed``, ``seed + 1``, ...).
        seed: First reset seed.

    Returns:
        The mean return.
    """
    return float(np.mean(episode_returns(act_fn, make_env, episodes, seed)))


def episode_returns(
    act_fn: Callable[[np.ndarray], np.ndarray],
    make_env: Callable[[], Any],
    episodes: int,
    seed: int,
) -> list[float]:
    """Undiscounted return of each of ``episodes`` real episodes (see :func:`evaluate_policy`)."""
    episodes = check_int("episodes", episodes, low=1)
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
    return total


@dataclass
class TrainLog:
    """What :meth:`RPGTrainer.train` measured.

    Attributes:
        env_steps: Real environment steps at each evaluation.
        returns: Mean evaluation return at each evaluation.
        model_steps: Differentiable-dynamics steps taken by the rollouts, at each evaluation.
        updates: Policy-gradient updates done, at each evaluation.
        wall_s: Training wall time at each evaluation.
        stats: Last update's diagnostics (losses, alpha, entropy, gradient norm).
    """

    env_steps: list[int] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    model_steps: list[int] = field(default_factory=list)
    updates: list[int] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)


class EvalCallback:
    """A :meth:`RPGTrainer.learn` callback: evaluate every ``eval_every`` real steps.

    Evaluates the deterministic policy when the trainer's step count crosses a
    multiple of ``eval_every`` and records the curve in :attr:`log`.

    Args:
        eval_every: Real steps between evaluations (>= 1).
        episodes: Episodes per evaluation (>= 1).
        seed: Reset seed of the first evaluation episode (each evaluation uses the same
            episodes, so curves compare like with like).
    """

    def __init__(self, eval_every: int, episodes: int = 5, seed: int = 10_000) -> None:
        self.eval_every = check_int("eval_every", eval_every, low=1)
        self.episodes = check_int("episodes", episodes, low=1)
        self.seed = int(seed)
        self.log = TrainLog()
        self._next: int | None = None
        self._t0 = time.perf_counter()

    def __call__(self, trainer: RPGTrainer) -> bool:
        """Evaluate if due; always continue."""
        if self._next is None:
            self._next = (trainer.num_timesteps // self.eval_every + 1) * self.eval_every
            if trainer.num_timesteps % self.eval_every == 0:
                self._next -= self.eval_every
        while trainer.num_timesteps >= self._next:
            lg = self.log
            lg.env_steps.append(trainer.num_timesteps)
            lg.returns.append(trainer.evaluate(self.episodes, self.seed))
            lg.model_steps.append(trainer.model_steps)
            lg.updates.append(trainer.num_updates)
            lg.wall_s.append(time.perf_counter() - self._t0)
            self._next += self.eval_every
        return True


def _resolve_env(env: Any) -> tuple[Any, Callable[[], Any] | None]:
    """The environment instance and a factory of fresh copies (None if unknown)."""
    import gymnasium as gym

    if isinstance(env, str):
        factory: Callable[[], Any] | None = functools.partial(gym.make, env)
        return factory(), factory
    if isinstance(env, gym.Env):
        spec = env.spec
        return env, (functools.partial(gym.make, spec) if spec is not None else None)
    if callable(env):
        inst = env()
        if not isinstance(inst, gym.Env):
            raise TypeError(f"env() must return a gymnasium.Env, got {type(inst).__name__}")
        return inst, env
    raise TypeError(
        "env must be a gymnasium.Env, an environment id (str) or a function returning "
        f"an Env, got {type(env).__name__}"
    )


def _check_box(space: Any, name: str, bounded: bool) -> None:
    from gymnasium import spaces

    if not isinstance(space, spaces.Box) or len(space.shape) != 1:
        raise TypeError(
            f"{name} must be a 1-D gymnasium.spaces.Box, got {space}; reparameterization "
            "policy gradients differentiate through continuous actions, so discrete, "
            "image and dict spaces are not supported"
        )
    if bounded and not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
        raise ValueError(f"{name} must have finite bounds, got low={space.low} high={space.high}")


class RPGTrainer:
    """Reparameterization policy gradient through differentiable dynamics (RFO / Gaussian RPG).

    The surface follows stable-baselines3: :meth:`learn`, :meth:`predict`, :meth:`save`,
    :meth:`load`, :attr:`num_timesteps`, one ``seed``.

    Args:
        policy: ``"flow"`` (RFO) or ``"gaussian"`` (the baseline), built from the
            environment's spaces with ``policy_kwargs``; or a :class:`FlowPolicy` /
            :class:`GaussianPolicy` instance whose action box must equal
            ``env.action_space``'s.
        model: Differentiable dynamics with ``step(obs, action) -> (next_obs, reward,
            terminated)``: an analytic model of :mod:`rfo_flowpolicy.dynamics` or a
            :class:`WorldModel` (refit on the real transitions as training goes).
        env: The real environment: a ``gymnasium.Env``, an environment id, or a function
            returning one. Evaluation runs on fresh copies (from the function, the id, or
            ``gymnasium.make(env.spec)``). Its action space must be a bounded 1-D ``Box``.
        config: Hyperparameters (:class:`RPGConfig`).
        seed: Seeds every random draw: the policy's and the critic's initial weights
            (inside a forked RNG, so torch's global generator is left alone), the
            policy noise in rollouts, regularizers and real actions, the replay and
            critic minibatches, the warm-up actions and the environment's resets. A
            policy or world model passed in as an instance keeps the weights it has.
        device: Torch device of the networks and rollouts.
        policy_kwargs: Constructor arguments of the policy when ``policy`` is a name
            (e.g. ``{"steps": 2, "chunk": 2}``).
        critic_hidden: Hidden widths of the critic.

    Raises:
        TypeError: If ``policy`` is neither a name nor a policy of this package, or the
            environment's spaces are not 1-D ``Box`` spaces (e.g. ``Discrete``).
        ValueError: If the policy's sizes or action box disagree with the environment,
            the model's sizes disagree, or the horizon is not a positive multiple of the
            policy's chunk.

    Example:
        >>> import numpy as np
        >>> from rfo_flowpolicy import Pendulum, RPGConfig, RPGTrainer
        >>> cfg = RPGConfig(horizon=8, warmup_steps=50, env_steps_per_iter=50)
        >>> trainer = RPGTrainer("flow", Pendulum(), "Pendulum-v1", cfg, seed=0)
        >>> trainer.learn(total_timesteps=100).num_timesteps
        100
        >>> trainer.predict(np.zeros((4, 3), np.float32), deterministic=True)[0].shape
        (4, 1)
    """

    def __init__(
        self,
        policy: str | _SquashedPolicy,
        model: Any,
        env: Any,
        config: RPGConfig | None = None,
        *,
        seed: int = 0,
        device: str | torch.device = "cpu",
        policy_kwargs: dict[str, Any] | None = None,
        critic_hidden: Sequence[int] = (64, 64),
    ) -> None:
        if config is not None and not isinstance(config, RPGConfig):
            raise TypeError(f"config must be an RPGConfig, got {type(config).__name__}")
        self.cfg = config or RPGConfig()
        self.seed = check_int("seed", seed)
        self.device = torch.device(device)
        self.env, self._env_factory = _resolve_env(env)
        _check_box(self.env.action_space, "env.action_space", bounded=True)
        _check_box(self.env.observation_space, "env.observation_space", bounded=False)
        obs_dim = int(self.env.observation_space.shape[0])
        act_dim = int(self.env.action_space.shape[0])
        space = self.env.action_space
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            policy = self._make_policy(policy, policy_kwargs, obs_dim, act_dim, space)
            self.critic = Critic(obs_dim, critic_hidden).to(self.device)
        if self.cfg.horizon % policy.chunk:
            raise ValueError(
                f"horizon ({self.cfg.horizon}) must be a multiple of the policy's chunk "
                f"({policy.chunk})"
            )
        if not callable(getattr(model, "step", None)):
            raise TypeError(
                f"model must have a step(obs, action) method, got {type(model).__name__}"
            )
        for attr, want in (("obs_dim", obs_dim), ("act_dim", act_dim)):
            have = getattr(model, attr, want)
            if have != want:
                raise ValueError(f"model {attr} {have} != environment {attr} {want}")
        self.policy = policy.to(self.device)
        self.model = model
        self.critic_hidden = tuple(int(h) for h in critic_hidden)
        self.gen = torch.Generator().manual_seed(self.seed)
        self.np_rng = np.random.default_rng(self.seed)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_opt = torch.optim.Adam(self.policy.parameters(), lr=self.cfg.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=self.cfg.critic_lr)
        is_flow = isinstance(policy, FlowPolicy)
        self.use_stability = is_flow and self.cfg.stability_coef > 0
        self.reference = copy.deepcopy(policy).requires_grad_(False) if self.use_stability else None
        self.temperature = None
        self.alpha_opt = None
        if self.cfg.exploration:
            target = self.cfg.target_entropy_per_dim * policy.raw_dim
            self.temperature = EntropyTemperature(self.cfg.init_alpha, target).to(self.device)
            self.alpha_opt = torch.optim.Adam(self.temperature.parameters(), lr=self.cfg.alpha_lr)
        self.learned_model = isinstance(model, WorldModel)
        self.model_opt = None
        if self.learned_model:
            self.model = model.to(self.device)
            self.model_opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.buffer = ReplayBuffer(obs_dim, act_dim)
        self.env_steps = 0
        self.model_steps = 0
        self.num_updates = 0
        self.iterations = 0
        self.env.action_space.seed(self.seed)
        self._obs, _ = self.env.reset(seed=self.seed)
        self._queue: list[np.ndarray] = []
        self.episode_returns: list[float] = []
        self._ep_ret = 0.0
        self.last_stats: dict[str, float] = {}

    def _make_policy(
        self,
        policy: Any,
        policy_kwargs: dict[str, Any] | None,
        obs_dim: int,
        act_dim: int,
        space: Any,
    ) -> _SquashedPolicy:
        if isinstance(policy, str):
            if policy not in POLICIES:
                raise ValueError(f"policy must be one of {sorted(POLICIES)}, got {policy!r}")
            kwargs = dict(policy_kwargs or {})
            for k in ("obs_dim", "act_dim", "action_low", "action_high"):
                if k in kwargs:
                    raise ValueError(f"policy_kwargs must not set {k!r}: it comes from env")
            return POLICIES[policy](
                obs_dim, act_dim, action_low=space.low, action_high=space.high, **kwargs
            )
        if policy_kwargs:
            raise ValueError("policy_kwargs is only used when policy is a name")
        if not isinstance(policy, _SquashedPolicy):
            raise TypeError(
                f"policy must be 'flow', 'gaussian', a FlowPolicy or a GaussianPolicy, "
                f"got {type(policy).__name__}"
            )
        if (obs_dim, act_dim) != (policy.obs_dim, policy.act_dim):
            raise ValueError(
                f"policy has (obs_dim, act_dim) = {(policy.obs_dim, policy.act_dim)}, "
                f"environment has {(obs_dim, act_dim)}"
            )
        low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
        if not (
            np.allclose(policy.action_low, low, atol=1e-6)
            and np.allclose(policy.action_high, high, atol=1e-6)
        ):
            raise ValueError(
                f"the policy's action box [{policy.action_low.tolist()}, "
                f"{policy.action_high.tolist()}] differs from env.action_space "
                f"[{low.tolist()}, {high.tolist()}]; build the policy with "
                "action_low=env.action_space.low, action_high=env.action_space.high "
                "(or pass policy='flow' / 'gaussian')"
            )
        return policy

    @property
    def num_timesteps(self) -> int:
        """Real environment steps taken so far (stable-baselines3's name)."""
        return self.env_steps

    # ---------------------------------------------------------------- real environment
    def collect(self, n: int) -> None:
        """Act ``n`` steps in the real environment and store the transitions.

        Raises:
            ValueError: If the environment returns NaN/inf observations or rewards.
        """
        self._need_env("collect")
        space = self.env.action_space
        for _ in range(check_int("n", n, low=0)):
            if self.env_steps < self.cfg.warmup_steps:
                a = self.np_rng.uniform(space.low, space.high).astype(np.float32)
            else:
                if not self._queue:
                    self._queue = list(self.policy.act(self._obs, generator=self.gen))
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
            (H+1, n) used by the critic, and ``first_actions`` (n, chunk, act_dim).
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
                chunk = self.policy.squash(self.policy.generate(obs, generator=self.gen))
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
        h, n = traj["rew"].shape
        with torch.no_grad():
            v = self.critic_target(traj["obs"].reshape(-1, traj["obs"].shape[-1])).view(h + 1, n)
        alive = traj["alive"]
        terminated = (alive[:-1] > 0) & (alive[1:] == 0)
        return td_lambda_targets(traj["rew"], v, terminated, None, self.cfg.gamma, self.cfg.lam)

    def _randint(self, high: int, size: int) -> Tensor:
        return torch.randint(0, high, (size,), generator=self.gen).to(self.device)

    def update(self) -> dict[str, float]:
        """One policy-gradient step and the critic's fit; returns diagnostics."""
        cfg = self.cfg
        obs_np = self.buffer.view()[0]
        if len(obs_np) == 0:
            raise RuntimeError("the replay buffer is empty: collect() real steps first")
        idx = self.np_rng.integers(0, len(obs_np), cfg.batch_size)
        start = torch.as_tensor(obs_np[idx], device=self.device)
        traj = self.imagine(start)
        actor_loss = -traj["ret"].mean() / cfg.horizon
        loss = actor_loss
        stats = {"actor_loss": float(actor_loss.detach())}
        if self.use_stability:
            visited = traj["obs"][:: self.policy.chunk][:-1].reshape(-1, start.shape[1])
            pick = self._randint(visited.shape[0], cfg.batch_size)
            stab = stability_loss(self.policy, self.reference, visited[pick], self.gen)
            loss = loss + cfg.stability_coef * stab
            stats["stability_loss"] = float(stab.detach())
        if self.temperature is not None:
            ent = entropy_estimate(self.policy, start, traj["first_actions"], generator=self.gen)
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
            sel = self._randint(states.shape[0], min(256, states.shape[0]))
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
        self.num_updates += 1
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
    def _need_env(self, what: str) -> None:
        if self.env is None:
            raise RuntimeError(
                f"{what} needs an environment: load with RPGTrainer.load(path, env=..., "
                "model=...) to train or evaluate"
            )

    def evaluate(self, episodes: int = 5, seed: int = 10_000, env: Any = None) -> float:
        """Mean return of the deterministic (zero-noise) policy on real episodes.

        Args:
            episodes: Number of episodes (reset seeds ``seed``, ``seed + 1``, ...).
            seed: Reset seed of the first episode.
            env: Environment, id or factory to evaluate on; by default a fresh copy of
                the training environment.

        Raises:
            RuntimeError: If no fresh copy of the training environment can be made (an
                ``Env`` instance without a ``spec``) and ``env`` is not given.
        """
        if env is None:
            self._need_env("evaluate")
            if self._env_factory is None:
                raise RuntimeError(
                    "the training env has no spec, so no fresh copy can be made for "
                    "evaluation; pass env= (an Env, id or factory) to evaluate, or give "
                    "RPGTrainer a factory"
                )
            make = self._env_factory
        else:
            inst, factory = _resolve_env(env)
            make = factory or (lambda: inst)
        return evaluate_policy(
            lambda o: self.policy.act(o, deterministic=True), make, episodes, seed
        )

    def _iteration(self, target: int) -> None:
        cfg = self.cfg
        step = min(cfg.env_steps_per_iter, target - self.env_steps)
        if self.env_steps < cfg.warmup_steps:
            step = min(step, cfg.warmup_steps - self.env_steps)
        self.collect(step)
        if self.env_steps >= min(cfg.warmup_steps, target):
            if self.iterations % 10 == 0:
                self._update_normalization()
            if self.learned_model and self.iterations % cfg.model_fit_every == 0:
                self.last_stats["model_loss"] = self.fit_model()
            for _ in range(cfg.updates_per_iter):
                self.last_stats.update(self.update())
            self.iterations += 1

    def learn(
        self,
        total_timesteps: int,
        callback: Callable[[RPGTrainer], bool | None] | None = None,
        progress_bar: bool = False,
    ) -> RPGTrainer:
        """Train for ``total_timesteps`` more real environment steps.

        Each iteration collects ``env_steps_per_iter`` real steps (uniform random
        actions during the first ``warmup_steps``), then refits the world model (if
        learned) and does ``updates_per_iter`` policy and critic updates. A second call
        continues where the first stopped (stable-baselines3's
        ``reset_num_timesteps=False``).

        Args:
            total_timesteps: Real steps to take in this call (>= 1).
            callback: Called as ``callback(trainer)`` after every iteration; returning
                ``False`` stops training (as a stable-baselines3 callback's ``_on_step``).
                :class:`EvalCallback` records a learning curve.
            progress_bar: Show a progress bar of the real steps (rich).

        Returns:
            ``self``.
        """
        total = check_int("total_timesteps", total_timesteps, low=1)
        self._need_env("learn")
        target = self.env_steps + total
        bar = task = None
        if progress_bar:
            from rich.progress import Progress

            bar = Progress()
            bar.start()
            task = bar.add_task("RPG real steps", total=total)
        try:
            while self.env_steps < target:
                before = self.env_steps
                self._iteration(target)
                if bar is not None:
                    bar.advance(task, self.env_steps - before)
                if callback is not None and callback(self) is False:
                    break
        finally:
            if bar is not None:
                bar.stop()
        return self

    def train(
        self,
        total_env_steps: int,
        eval_every: int,
        eval_episodes: int = 5,
        eval_seed: int = 10_000,
        progress_bar: bool = False,
    ) -> TrainLog:
        """:meth:`learn` for ``total_env_steps`` real steps with an :class:`EvalCallback`.

        Args:
            total_env_steps: Real environment steps to take (>= 1).
            eval_every: Real steps between evaluations (>= 1).
            eval_episodes: Episodes per evaluation.
            eval_seed: Reset seed of the first evaluation episode.
            progress_bar: Show a progress bar.

        Returns:
            The learning curve and the last diagnostics.
        """
        cb = EvalCallback(eval_every, eval_episodes, eval_seed)
        self.learn(total_env_steps, callback=cb, progress_bar=progress_bar)
        cb.log.stats = dict(self.last_stats)
        return cb.log

    # ---------------------------------------------------------------- inference
    def predict(
        self,
        observation: Any,
        state: np.ndarray | None = None,
        episode_start: Any = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Actions for one observation or a batch (stable-baselines3's ``predict``).

        With ``chunk > 1`` the policy plans ``chunk`` actions at once: ``state`` carries
        the not yet executed rest of the chunk (shape (n, r, act_dim)); pass it back on
        the next call. A new chunk is generated for the whole batch when it runs out,
        when the batch size changes, or where ``episode_start`` is true.

        Args:
            observation: Shape (obs_dim,) or (n, obs_dim).
            state: The state returned by the previous call (None at the start).
            episode_start: Bools, shape (n,): episodes that just started.
            deterministic: Use zero noise (the policy's mode).

        Returns:
            ``(actions, state)``: actions of shape (act_dim,) or (n, act_dim), float32;
            ``state`` is None when ``chunk == 1``.

        Raises:
            ValueError: If the observation has the wrong size or NaN/inf values.
        """
        obs = np.asarray(observation, dtype=np.float32)
        if obs.ndim not in (1, 2) or obs.shape[-1] != self.policy.obs_dim:
            raise ValueError(
                f"observation must have shape ({self.policy.obs_dim},) or (n, "
                f"{self.policy.obs_dim}), got {obs.shape}"
            )
        single = obs.ndim == 1
        batch = obs[None] if single else obs
        gen = None if deterministic else self.gen
        if self.policy.chunk == 1:
            a = self.policy.act(batch, deterministic, generator=gen)[:, 0]
            return (a[0] if single else a), None
        restart = episode_start is not None and bool(np.any(episode_start))
        if state is None or state.shape[1] == 0 or state.shape[0] != batch.shape[0] or restart:
            state = self.policy.act(batch, deterministic, generator=gen)
        a, state = state[:, 0], state[:, 1:]
        return (a[0] if single else a), state

    # ---------------------------------------------------------------- persistence
    def save(self, path: str | os.PathLike[str], include_buffer: bool = False) -> None:
        """Save weights, optimizer states, counters and the config with ``torch.save``.

        The file holds only tensors and plain Python values, so :meth:`load` reads it
        with ``torch.load(..., weights_only=True)``. The environment and the analytic
        dynamics are not saved (pass them to :meth:`load`); a :class:`WorldModel`'s
        weights are.

        Args:
            path: File to write.
            include_buffer: Also save the replay buffer (to continue training exactly).
        """
        payload: dict[str, Any] = {
            "format": _SAVE_FORMAT,
            "policy_class": type(self.policy).__name__,
            "policy_kwargs": self.policy.init_kwargs(),
            "policy": self.policy.state_dict(),
            "critic_hidden": list(self.critic_hidden),
            "critic": self.critic.state_dict(),
            "critic_target": self.critic_target.state_dict(),
            "reference": None if self.reference is None else self.reference.state_dict(),
            "temperature": None if self.temperature is None else self.temperature.state_dict(),
            "actor_opt": self.actor_opt.state_dict(),
            "critic_opt": self.critic_opt.state_dict(),
            "alpha_opt": None if self.alpha_opt is None else self.alpha_opt.state_dict(),
            "world_model": self.model.state_dict() if isinstance(self.model, nn.Module) else None,
            "model_opt": None if self.model_opt is None else self.model_opt.state_dict(),
            "config": asdict(self.cfg),
            "seed": self.seed,
            "counters": {
                "env_steps": self.env_steps,
                "model_steps": self.model_steps,
                "num_updates": self.num_updates,
                "iterations": self.iterations,
            },
            "generator": self.gen.get_state(),
            "buffer": None,
        }
        if include_buffer:
            o, a, r, o2 = self.buffer.view()
            payload["buffer"] = {
                k: torch.from_numpy(v.copy())
                for k, v in (("obs", o), ("act", a), ("rew", r), ("next_obs", o2))
            }
        torch.save(payload, path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        env: Any = None,
        model: Any = None,
        *,
        device: str | torch.device = "cpu",
    ) -> RPGTrainer:
        """Load a trainer saved by :meth:`save` (``torch.load(weights_only=True)``).

        Args:
            path: File written by :meth:`save`.
            env: The environment to continue training on (as in the constructor). None:
                the trainer can :meth:`predict` but not :meth:`learn` or
                :meth:`evaluate`.
            model: The differentiable dynamics (needed with ``env``); a
                :class:`WorldModel` gets the saved weights.
            device: Where to put the networks.

        Returns:
            The trainer.

        Raises:
            ValueError: If the file is not a saved trainer, or ``env`` is given without
                ``model``.
        """
        d = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(d, dict) or d.get("format") != _SAVE_FORMAT:
            raise ValueError(f"{os.fspath(path)!r} is not a file written by RPGTrainer.save")
        policy_cls = {"FlowPolicy": FlowPolicy, "GaussianPolicy": GaussianPolicy}[d["policy_class"]]
        policy = policy_cls(**d["policy_kwargs"])
        policy.load_state_dict(d["policy"])
        known = {f.name for f in fields(RPGConfig)}
        cfg = RPGConfig(**{k: v for k, v in d["config"].items() if k in known})
        if env is None:
            self = cls.__new__(cls)
            self.cfg, self.seed, self.device = cfg, int(d["seed"]), torch.device(device)
            self.policy = policy.to(self.device)
            self.env = self._env_factory = self.model = None
            self.gen = torch.Generator()
            self.gen.set_state(d["generator"])
            self.np_rng = np.random.default_rng(self.seed)
            c = d["counters"]
            self.env_steps, self.model_steps = int(c["env_steps"]), int(c["model_steps"])
            self.num_updates, self.iterations = int(c["num_updates"]), int(c["iterations"])
            return self
        if model is None:
            raise ValueError("model is needed to continue training: pass the dynamics")
        self = cls(
            policy,
            model,
            env,
            cfg,
            seed=int(d["seed"]),
            device=device,
            critic_hidden=d["critic_hidden"],
        )
        self.critic.load_state_dict(d["critic"])
        self.critic_target.load_state_dict(d["critic_target"])
        if self.reference is not None and d["reference"] is not None:
            self.reference.load_state_dict(d["reference"])
        if self.temperature is not None and d["temperature"] is not None:
            self.temperature.load_state_dict(d["temperature"])
            self.alpha_opt.load_state_dict(d["alpha_opt"])
        self.actor_opt.load_state_dict(d["actor_opt"])
        self.critic_opt.load_state_dict(d["critic_opt"])
        if isinstance(self.model, nn.Module) and d["world_model"] is not None:
            self.model.load_state_dict(d["world_model"])
            if self.model_opt is not None and d["model_opt"] is not None:
                self.model_opt.load_state_dict(d["model_opt"])
        self.gen.set_state(d["generator"])
        c = d["counters"]
        self.env_steps, self.model_steps = int(c["env_steps"]), int(c["model_steps"])
        self.num_updates, self.iterations = int(c["num_updates"]), int(c["iterations"])
        if d["buffer"] is not None:
            b = d["buffer"]
            for k in ("obs", "act", "rew", "next_obs"):
                arr = b[k].numpy()
                getattr(self.buffer, k)[: len(arr)] = arr
            self.buffer.size = self.buffer.ptr = len(b["obs"])
        return self
