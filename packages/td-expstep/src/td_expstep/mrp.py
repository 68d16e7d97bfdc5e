"""Markov reward processes: from gymnasium toy-text environments, exact solutions, samplers."""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int


def _check_gamma(gamma: float) -> float:
    return check_float("gamma", gamma, low=0.0, high=1.0, high_inclusive=False)


def _check_P(P: Any) -> np.ndarray:
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] == 0:
        raise ValueError(f"P must be a square (n, n) matrix, got shape {P.shape}")
    if np.any(P < -1e-12) or not np.allclose(P.sum(1), 1.0, atol=1e-8):
        raise ValueError("P must be row-stochastic (nonnegative rows summing to 1)")
    return P


def _check_dist(mu: Any, n: int, name: str = "mu") -> np.ndarray:
    mu = np.asarray(mu, dtype=np.float64)
    if mu.shape != (n,) or np.any(mu < -1e-12) or not np.isclose(mu.sum(), 1.0, atol=1e-8):
        raise ValueError(
            f"{name} must be a probability vector of shape ({n},), got shape {mu.shape}"
        )
    return np.clip(mu, 0.0, None) / np.clip(mu, 0.0, None).sum()


def stationary_distribution(P: Any, initial: Any) -> np.ndarray:
    """The stationary distribution of the class reached from ``initial``.

    Args:
        P: Row-stochastic ``(n, n)``.
        initial: Start distribution ``(n,)``; states it cannot reach get mass 0.

    Returns:
        ``mu`` with ``mu P = mu``, float64 ``(n,)``.
    """
    P = _check_P(P)
    n = P.shape[0]
    initial = _check_dist(initial, n, "initial")
    reach = initial > 0
    while True:
        new = reach | (P[reach].sum(0) > 0)
        if np.array_equal(new, reach):
            break
        reach = new
    idx = np.flatnonzero(reach)
    sub = P[np.ix_(idx, idx)]
    m = len(idx)
    lhs = np.vstack([sub.T - np.eye(m), np.ones((1, m))])
    rhs = np.zeros(m + 1)
    rhs[-1] = 1.0
    sol = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
    mu = np.zeros(n)
    mu[idx] = np.clip(sol, 0.0, None)
    return mu / mu.sum()


def mrp_from_env(env: Any, policy: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Markov reward process of a toy-text environment under a fixed policy.

    Reads the model ``env.unwrapped.P[s][a] = [(prob, s_next, reward, terminated), ...]``
    (FrozenLake, CliffWalking, Taxi). A terminating transition becomes a reset: its
    mass goes to the environment's start distribution ``initial_state_distrib`` (or
    ``isd``), so the chain is continuing.

    Args:
        env: A gymnasium environment (wrappers are unwrapped) with a tabular model.
        policy: ``(n_states, n_actions)`` action probabilities, or None for uniform.

    Returns:
        ``(P, r, mu)``: transition matrix ``(n, n)``, expected one-step reward
        ``r(s) = E[reward | s]`` ``(n,)``, and the stationary distribution ``(n,)``
        (0 on states the chain never visits).

    Raises:
        ValueError: If the environment has no ``unwrapped.P`` (gymnasium's wrappers
            hide it: use the base environment's model) or ``policy`` has a wrong shape.
    """
    base = getattr(env, "unwrapped", env)
    model = getattr(base, "P", None)
    if not isinstance(model, dict):
        raise ValueError(
            f"env {type(env).__name__} has no tabular model env.unwrapped.P "
            "(a dict P[s][a] of (prob, next_state, reward, terminated)); only toy-text "
            "environments such as FrozenLake, CliffWalking and Taxi have one"
        )
    n = len(model)
    n_actions = len(model[0])
    if policy is None:
        policy = np.full((n, n_actions), 1.0 / n_actions)
    policy = np.asarray(policy, dtype=np.float64)
    if policy.shape != (n, n_actions) or not np.allclose(policy.sum(1), 1.0):
        raise ValueError(
            f"policy must be ({n}, {n_actions}) rows of action probabilities, got {policy.shape}"
        )
    isd = getattr(base, "initial_state_distrib", getattr(base, "isd", None))
    if isd is None:
        raise ValueError(f"env {type(env).__name__} has no initial_state_distrib for resets")
    isd = np.asarray(isd, dtype=np.float64)
    isd = isd / isd.sum()
    P = np.zeros((n, n))
    r = np.zeros(n)
    for s in range(n):
        for a in range(n_actions):
            for prob, s_next, reward, terminated in model[s][a]:
                w = policy[s, a] * prob
                r[s] += w * reward
                if terminated:
                    P[s] += w * isd
                else:
                    P[s, int(s_next)] += w
    return P, r, stationary_distribution(P, isd)


def exact_value(P: Any, r: Any, gamma: float) -> np.ndarray:
    r"""The value :math:`V = (I - \gamma P)^{-1} r` of the MRP, ``(n,)``."""
    P = _check_P(P)
    gamma = _check_gamma(gamma)
    r = np.asarray(r, dtype=np.float64)
    if r.shape != (P.shape[0],):
        raise ValueError(f"r must have shape ({P.shape[0]},), got {r.shape}")
    return np.linalg.solve(np.eye(P.shape[0]) - gamma * P, r)


def _check_phi(Phi: Any, n: int) -> np.ndarray:
    Phi = np.asarray(Phi, dtype=np.float64)
    if Phi.ndim != 2 or Phi.shape[0] != n:
        raise ValueError(f"Phi must have shape ({n}, k), got {Phi.shape}")
    return Phi


def omega(Phi: Any, mu: Any) -> float:
    r"""Smallest eigenvalue of the feature covariance :math:`\Phi^\top D_\mu \Phi`.

    For reporting only: the exponential schedule does not need it.
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    mu = _check_dist(mu, Phi.shape[0])
    return float(np.linalg.eigvalsh(Phi.T @ (mu[:, None] * Phi))[0])


def td_fixed_point(Phi: Any, P: Any, r: Any, mu: Any, gamma: float) -> np.ndarray:
    r"""The TD fixed point :math:`\theta^* = A^{-1} b`.

    :math:`A = \Phi^\top D_\mu (\Phi - \gamma P \Phi)`, :math:`b = \Phi^\top D_\mu r`.

    Args:
        Phi: Features ``(n, k)``.
        P: Transitions ``(n, n)``.
        r: Expected rewards ``(n,)``.
        mu: Stationary distribution ``(n,)``.
        gamma: Discount in [0, 1).

    Returns:
        ``theta*``, ``(k,)``.

    Raises:
        ValueError: If the features restricted to the support of ``mu`` have rank < k.
    """
    P = _check_P(P)
    n = P.shape[0]
    Phi = _check_phi(Phi, n)
    mu = _check_dist(mu, n)
    gamma = _check_gamma(gamma)
    r = np.asarray(r, dtype=np.float64)
    k = Phi.shape[1]
    rank = np.linalg.matrix_rank(Phi[mu > 0])
    if rank < k:
        raise ValueError(
            f"Phi has rank {rank} < k = {k} on the states the chain visits; drop dependent features"
        )
    D = mu[:, None]
    A = Phi.T @ (D * (Phi - gamma * P @ Phi))
    b = Phi.T @ (mu * r)
    return np.linalg.solve(A, b)


def mixing_time(P: Any, mu: Any, eps: float = 0.25, max_steps: int = 1 << 20) -> float:
    r"""Mixing time :math:`\min\{t: \max_s \|P^t(s,\cdot) - \mu\|_{TV} \le \epsilon\}`.

    For reporting only.

    Taken over the states with ``mu > 0``; found by doubling then bisection. Returns
    ``inf`` if not mixed by ``max_steps`` (e.g. a periodic chain).
    """
    P = _check_P(P)
    mu = _check_dist(mu, P.shape[0])
    eps = check_float("eps", eps, low=0.0, high=1.0, low_inclusive=False)
    max_steps = check_int("max_steps", max_steps, low=1)
    idx = np.flatnonzero(mu > 0)

    def tv(Q: np.ndarray) -> float:
        return float(0.5 * np.abs(Q[idx] - mu).sum(1).max())

    powers = [P]
    t = 1
    while tv(powers[-1]) > eps:
        if t >= max_steps:
            return float("inf")
        powers.append(powers[-1] @ powers[-1])
        t *= 2
    if t == 1:
        return 1.0
    lo, hi, Q_lo = t // 2, t, powers[-2]  # tv(P^lo) > eps >= tv(P^hi)
    for j in range(len(powers) - 3, -1, -1):  # bisect with the stored powers
        mid_Q = Q_lo @ powers[j]
        if tv(mid_Q) > eps:
            lo, Q_lo = lo + (1 << j), mid_Q
        else:
            hi = lo + (1 << j)
    return float(hi)


def _sample_rows(cum_flat: np.ndarray, n: int, s: np.ndarray, u: np.ndarray) -> np.ndarray:
    # rows of cumP offset by their index form one increasing array: one searchsorted
    idx = np.searchsorted(cum_flat, s + u * (1.0 - 1e-12), side="right")
    return np.minimum(idx - s * n, n - 1)


def _cum_flat(P: np.ndarray) -> np.ndarray:
    n = P.shape[0]
    cum = np.cumsum(P, axis=1)
    cum[:, -1] = 1.0
    return (cum + np.arange(n)[:, None]).ravel()


class IIDSampler:
    """i.i.d. transitions: ``s ~ mu``, ``s' ~ P(s, .)``.

    Args:
        mu: Stationary distribution ``(n,)``.
        P: Transitions ``(n, n)``.
    """

    def __init__(self, mu: Any, P: Any) -> None:
        self.P = _check_P(P)
        self.mu = _check_dist(mu, self.P.shape[0])
        self._cum = _cum_flat(self.P)
        self._cmu = np.cumsum(self.mu)
        self._cmu[-1] = 1.0

    def sample(self, shape: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """States and next states, each int64 of ``shape`` (e.g. ``(T, n_seeds)``)."""
        n = self.P.shape[0]
        s = np.minimum(np.searchsorted(self._cmu, rng.random(shape), side="right"), n - 1)
        return s, _sample_rows(self._cum, n, s, rng.random(shape))


class ChainSampler:
    """Markovian sampling along single trajectories of the chain ``P``, many at once.

    Equivalent in law to :class:`TrajectorySampler` on the MRP of :func:`mrp_from_env`,
    vectorized over seeds.

    Args:
        P: Transitions ``(n, n)``.
        initial: Start distribution ``(n,)``.
    """

    def __init__(self, P: Any, initial: Any) -> None:
        self.P = _check_P(P)
        self.initial = _check_dist(initial, self.P.shape[0], "initial")
        self._cum = _cum_flat(self.P)

    def sample(self, n_steps: int, n_chains: int, rng: np.random.Generator) -> np.ndarray:
        """States ``(n_steps + 1, n_chains)``; transition ``t`` is ``(s[t], s[t + 1])``."""
        n_steps = check_int("n_steps", n_steps, low=1)
        n_chains = check_int("n_chains", n_chains, low=1)
        n = self.P.shape[0]
        out = np.empty((n_steps + 1, n_chains), dtype=np.int64)
        out[0] = rng.choice(n, size=n_chains, p=self.initial)
        u = rng.random((n_steps, n_chains))
        for t in range(n_steps):
            out[t + 1] = _sample_rows(self._cum, n, out[t], u[t])
        return out


class TrajectorySampler:
    """One trajectory of the real gymnasium environment under ``policy``.

    A termination or truncation is followed by ``env.reset()``, so the trajectory is the
    continuing chain of :func:`mrp_from_env`.

    Args:
        env: A gymnasium environment with discrete observations.
        policy: ``(n_states, n_actions)`` action probabilities, a callable
            ``(state, rng) -> action``, or None for uniform random actions.
    """

    def __init__(self, env: Any, policy: Any = None) -> None:
        self.env = env
        self.policy = policy

    def _act(self, s: int, rng: np.random.Generator) -> int:
        if self.policy is None:
            return int(rng.integers(self.env.action_space.n))
        if callable(self.policy):
            return int(self.policy(s, rng))
        p = np.asarray(self.policy)[s]
        return int(rng.choice(len(p), p=p))

    def sample(self, n_steps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``(states, rewards)``: ``states`` ``(n_steps + 1,)``, ``rewards`` ``(n_steps,)``.

        Reward ``t`` is the one received on leaving ``states[t]``; after a termination
        ``states[t + 1]`` is the reset state.
        """
        n_steps = check_int("n_steps", n_steps, low=1)
        s, _ = self.env.reset(seed=int(rng.integers(2**31)))
        states = np.empty(n_steps + 1, dtype=np.int64)
        rewards = np.empty(n_steps)
        states[0] = s
        for t in range(n_steps):
            s, rew, term, trunc, _ = self.env.step(self._act(int(s), rng))
            if term or trunc:
                s, _ = self.env.reset()
            states[t + 1] = s
            rewards[t] = rew
        return states, rewards


def random_features(n_states: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` Gaussian features per state, each row scaled to unit norm, ``(n_states, k)``."""
    n_states = check_int("n_states", n_states, low=1)
    k = check_int("k", k, low=1)
    phi = rng.standard_normal((n_states, k))
    return phi / np.linalg.norm(phi, axis=1, keepdims=True)


def boyan_chain(n_states: int = 13) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Boyan's chain (Boyan 2002), continuing: ``(P, r, mu, Phi)`` with its 4 features.

    From state ``i >= 2`` the chain moves to ``i - 1`` or ``i - 2`` with probability 1/2
    each (reward -3); state 1 moves to 0 (reward -2); state 0 resets to the top state
    ``n - 1`` (reward 0). Features interpolate linearly between the unit vectors at
    states 12, 8, 4, 0 (normalized to unit norm).
    """
    n = check_int("n_states", n_states, low=5)
    P = np.zeros((n, n))
    r = np.zeros(n)
    for i in range(2, n):
        P[i, i - 1] = P[i, i - 2] = 0.5
        r[i] = -3.0
    P[1, 0], r[1] = 1.0, -2.0
    P[0, n - 1] = 1.0
    anchors = np.linspace(n - 1, 0, 4)
    Phi = np.zeros((n, 4))
    for s in range(n):
        j = min(int(np.searchsorted(-anchors, -s, side="right")) - 1, 2)
        w = (anchors[j] - s) / (anchors[j] - anchors[j + 1])
        Phi[s, j], Phi[s, j + 1] = 1.0 - w, w
    Phi /= np.linalg.norm(Phi, axis=1, keepdims=True)
    start = np.zeros(n)
    start[n - 1] = 1.0
    return P, r, stationary_distribution(P, start), Phi


def random_walk(n_states: int = 19) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``n``-state random walk (Sutton & Barto), continuing: ``(P, r, mu)``.

    From each state, left or right with probability 1/2; falling off the left end gives
    reward -1, off the right end +1, and both reset to the middle state.
    """
    n = check_int("n_states", n_states, low=3)
    mid = n // 2
    P = np.zeros((n, n))
    r = np.zeros(n)
    for i in range(n):
        P[i, i - 1 if i > 0 else mid] += 0.5
        P[i, i + 1 if i < n - 1 else mid] += 0.5
    r[0], r[n - 1] = -0.5, 0.5
    start = np.zeros(n)
    start[mid] = 1.0
    return P, r, stationary_distribution(P, start)


__all__ = [
    "ChainSampler",
    "IIDSampler",
    "TrajectorySampler",
    "boyan_chain",
    "exact_value",
    "mixing_time",
    "mrp_from_env",
    "omega",
    "random_features",
    "random_walk",
    "stationary_distribution",
    "td_fixed_point",
]
