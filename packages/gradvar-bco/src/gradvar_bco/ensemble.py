"""An ensemble over step sizes for dynamic regret: optimistic Hedge on two-point bases.

Dynamic regret against a moving comparator needs a step size tuned to the unknown path
length P_T. The ensemble runs ``n_bases`` optimistic OGD bases with the geometric grid
of fixed steps ``eta_i = eta_min 2^i`` and combines them with optimistic Hedge, all from
one pair of queries per round (our design, in the spirit of Zhao et al. 2021's
two-point ensemble, with optimism added at both levels):

    x_t = sum_i p_{t,i} x_{t,i};   query f_t(x_t ± delta u_t);   g_t the two-point estimate
    every base steps on the linear surrogate <g_t, x>  (bases: x̂_{t+1,i} = Pi[x̂_{t,i} - eta_i g_t])
    meta losses l_{t,i} = <g_t, x_{t,i}>, hints h_{t+1,i} = <g_t, x_{t+1,i}>
    p_{t+1} ∝ exp(-eps_t (L_t + h_{t+1})),  L_t = sum_{s<=t} l_s,
    eps_t = sqrt(ln N / (1 + sum_{s<=t} max_i (l_{s,i} - h_{s,i})^2))

The meta losses are shifted by their mean before use (Hedge is shift-invariant).
"""

from __future__ import annotations

import numpy as np
from icml26_core.validation import check_float, check_int

from gradvar_bco.domains import Domain
from gradvar_bco.learner import two_point_estimate

__all__ = ["GradVarEnsemble"]


class GradVarEnsemble:
    """Optimistic Hedge over a geometric grid of optimistic two-point OGD bases.

    Args:
        domain: The decision set.
        delta: Exploration radius, ``0 < delta < domain.inner_radius``.
        n_bases: Number of bases N >= 1.
        eta_min: The smallest step; base i uses ``eta_min * 2**i``.
        optimistic: Use hints at both levels (``False``: plain bases and plain Hedge,
            the structure of a two-point ensemble without optimism).
        n_runs: Independent runs stepped together; None for one run.
        seed: Seed or generator.

    Raises:
        ValueError: If ``delta``, ``n_bases`` or ``eta_min`` are out of range.

    Example:
        >>> import numpy as np
        >>> from gradvar_bco import Ball, GradVarEnsemble
        >>> ens = GradVarEnsemble(Ball(2), delta=0.05, n_bases=6, eta_min=1e-3, seed=0)
        >>> for t in range(1000):
        ...     x1, x2 = ens.ask()
        ...     _ = ens.tell(np.sum((x1 - 0.4) ** 2), np.sum((x2 - 0.4) ** 2))
        >>> bool(np.allclose(ens.decision, 0.4, atol=0.1)), float(ens.weights.sum())
        (True, 1.0)
    """

    def __init__(
        self,
        domain: Domain,
        delta: float,
        n_bases: int,
        eta_min: float,
        *,
        optimistic: bool = True,
        n_runs: int | None = None,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a gradvar_bco Domain, got {type(domain).__name__}")
        self.domain = domain
        self.delta = check_float("delta", delta, low=0.0, low_inclusive=False)
        if self.delta >= domain.inner_radius:
            raise ValueError(
                f"delta must be < the domain's inner radius {domain.inner_radius:g}, got {delta}"
            )
        self.n_bases = check_int("n_bases", n_bases, low=1)
        self.eta_min = check_float("eta_min", eta_min, low=0.0, low_inclusive=False)
        self.optimistic = bool(optimistic)
        self.n_runs = None if n_runs is None else check_int("n_runs", n_runs, low=1)
        s, n, d = (1 if self.n_runs is None else self.n_runs), self.n_bases, domain.dim
        self.etas = self.eta_min * 2.0 ** np.arange(n)  # (N,)
        self._shrink = self.delta / domain.inner_radius
        self._rng = np.random.default_rng(seed)
        self._xhat = np.broadcast_to(domain.center, (s, n, d)).copy()  # base states
        self._xb = self._xhat.copy()  # base decisions
        self._m = np.zeros((s, d))  # gradient hint
        self._L = np.zeros((s, n))  # cumulative meta losses
        self._h = np.zeros((s, n))  # meta hints
        self._V = np.zeros(s)  # sum of squared meta prediction errors
        self.weights_ = np.full((s, n), 1.0 / n)
        self._x = np.broadcast_to(domain.center, (s, d)).copy()
        self._u: np.ndarray | None = None

    def _probs(self) -> np.ndarray:
        eps = np.sqrt(np.log(max(self.n_bases, 2)) / (1.0 + self._V))[:, None]
        z = -eps * (self._L + (self._h if self.optimistic else 0.0))
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def ask(self) -> tuple[np.ndarray, np.ndarray]:
        """The two query points, shape (d,) or (n_runs, d), both in the domain.

        Raises:
            RuntimeError: If the last ``ask`` was not answered by ``tell``.
        """
        if self._u is not None:
            raise RuntimeError("ask() called twice: answer the last query with tell(f1, f2)")
        hint = self._m[:, None, :] if self.optimistic else 0.0
        self._xb = self.domain.project(self._xhat - self.etas[None, :, None] * hint, self._shrink)
        self.weights_ = self._probs()
        self._x = np.einsum("sn,snd->sd", self.weights_, self._xb)
        self._u = self.domain.sample_directions(self._rng, self._x.shape[0])
        x1, x2 = self._x + self.delta * self._u, self._x - self.delta * self._u
        return (x1[0], x2[0]) if self.n_runs is None else (x1, x2)

    def tell(self, f1, f2) -> np.ndarray:
        """Report both loss values and step; returns the estimate g_t.

        Raises:
            RuntimeError: If ``ask`` was not called first.
            ValueError: If the values have the wrong shape or are not finite.
        """
        if self._u is None:
            raise RuntimeError("tell() called before ask()")
        g = two_point_estimate(f1, f2, self._u, self.delta, self.domain.direction_dim)
        loss = np.einsum("sd,snd->sn", g, self._xb)
        loss -= loss.mean(axis=1, keepdims=True)
        err = loss - (self._h if self.optimistic else 0.0)
        self._V = self._V + np.max(err**2, axis=1)
        self._L = self._L + loss
        self._xhat = self.domain.project(
            self._xhat - self.etas[None, :, None] * g[:, None, :], self._shrink
        )
        self._m = g
        if self.optimistic:  # hint: the next base decisions scored by the gradient hint
            nxt = self.domain.project(
                self._xhat - self.etas[None, :, None] * g[:, None, :], self._shrink
            )
            h = np.einsum("sd,snd->sn", g, nxt)
            self._h = h - h.mean(axis=1, keepdims=True)
        self._u = None
        return g[0] if self.n_runs is None else g

    @property
    def decision(self) -> np.ndarray:
        """The combined decision x_t, (d,) or (n_runs, d)."""
        return self._x[0].copy() if self.n_runs is None else self._x.copy()

    @property
    def weights(self) -> np.ndarray:
        """The meta weights p_t over the bases, (N,) or (n_runs, N)."""
        return self.weights_[0].copy() if self.n_runs is None else self.weights_.copy()
