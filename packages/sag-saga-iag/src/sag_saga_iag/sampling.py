"""Orders in which the solvers visit the n components, one epoch (n steps) at a time.

- ``"uniform"``: i.i.d. uniform indices (with replacement), the SAG and SAGA of the papers.
- ``"reshuffle"``: a fresh random permutation every epoch (random reshuffling).
- ``"cyclic"``: 0, 1, ..., n-1 every epoch, the deterministic order of IAG.
- ``"markov"``: a random walk over the indices (:class:`MarkovSampler`), e.g. data that
  arrive along a trajectory: complete graph, cycle, or any transition matrix.

The delay of a table entry (how many steps ago it was refreshed) is what the unified
analysis controls; :func:`sag_saga_iag.bounds.delay_bound` turns each scheme into a bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.validation import check_choice, check_float, check_int

SAMPLINGS = ("uniform", "reshuffle", "cyclic", "markov")
"""Names accepted by ``sampling=``."""

GRAPHS = ("complete", "cycle")


class Sampler:
    """Base class: yields the indices of one epoch at a time.

    Args:
        n: Number of components, >= 1.
        rng: numpy Generator (or seed) for random schemes.
    """

    name = "base"

    def __init__(self, n: int, rng: Any = None) -> None:
        self.n = check_int("n", n, low=1)
        self.rng = np.random.default_rng(rng)

    def epoch(self) -> np.ndarray:
        """Indices of the next n steps, shape (n,), int64 in [0, n)."""
        raise NotImplementedError


class UniformSampler(Sampler):
    """i.i.d. uniform indices with replacement."""

    name = "uniform"

    def epoch(self) -> np.ndarray:  # noqa: D102
        return self.rng.integers(0, self.n, size=self.n, dtype=np.int64)


class ReshuffleSampler(Sampler):
    """A fresh uniformly random permutation of 0..n-1 every epoch."""

    name = "reshuffle"

    def epoch(self) -> np.ndarray:  # noqa: D102
        return self.rng.permutation(self.n).astype(np.int64)


class CyclicSampler(Sampler):
    """The fixed order 0, 1, ..., n-1 every epoch (IAG)."""

    name = "cyclic"

    def epoch(self) -> np.ndarray:  # noqa: D102
        return np.arange(self.n, dtype=np.int64)


class MarkovSampler(Sampler):
    """Indices along a random walk (Markovian sampling).

    Args:
        n: Number of components (states of the walk), >= 1.
        rng: numpy Generator or seed; the walk starts at a uniform random state.
        graph: ``"complete"`` (move to one of the other n-1 indices uniformly) or
            ``"cycle"`` (move to i-1 or i+1 mod n with equal probability). Ignored when
            ``transition`` is given.
        laziness: Probability in [0, 1) of staying at the current index.
        transition: Optional row-stochastic matrix of shape (n, n), irreducible.

    Raises:
        ValueError: If ``graph`` is unknown, ``laziness`` is outside [0, 1), or
            ``transition`` is not a row-stochastic (n, n) matrix.

    Example:
        >>> s = MarkovSampler(5, rng=0, graph="cycle")
        >>> idx = s.epoch()
        >>> bool(np.all(np.isin((np.diff(idx)) % 5, [1, 4])))
        True
    """

    name = "markov"

    def __init__(
        self,
        n: int,
        rng: Any = None,
        *,
        graph: str = "complete",
        laziness: float = 0.0,
        transition: np.ndarray | None = None,
    ) -> None:
        super().__init__(n, rng)
        self.graph = check_choice("graph", graph, GRAPHS)
        self.laziness = check_float("laziness", laziness, low=0.0, high=1.0, high_inclusive=False)
        self.transition: np.ndarray | None = None
        if transition is not None:
            P = np.array(transition, dtype=np.float64, copy=True)
            if P.shape != (self.n, self.n):
                raise ValueError(f"transition must have shape ({self.n}, {self.n}), got {P.shape}")
            if np.any(P < 0) or not np.allclose(P.sum(axis=1), 1.0):
                raise ValueError(
                    "transition must be row-stochastic (nonnegative rows summing to 1)"
                )
            self.transition = P
            self._cum = np.cumsum(P, axis=1)
        self.state = int(self.rng.integers(0, self.n))

    def epoch(self) -> np.ndarray:  # noqa: D102
        n = self.n
        if self.transition is not None:
            out = np.empty(n, dtype=np.int64)
            u = self.rng.random(n)
            s = self.state
            for t in range(n):
                out[t] = s
                s = min(int(np.searchsorted(self._cum[s], u[t], side="right")), n - 1)
            self.state = s
            return out
        if n == 1:
            return np.zeros(1, dtype=np.int64)
        stay = self.rng.random(n) < self.laziness
        if self.graph == "complete":
            moves = self.rng.integers(1, n, size=n)
        else:
            moves = np.where(self.rng.random(n) < 0.5, 1, n - 1)
        moves = np.where(stay, 0, moves)
        # position t is the state before move t; the first one is the current state
        offsets = np.concatenate([[0], np.cumsum(moves[:-1])])
        out = ((self.state + offsets) % n).astype(np.int64)
        self.state = int((out[-1] + moves[-1]) % n)
        return out

    def max_hitting_time(self) -> float:
        """Max over states x, y of E_x[T_y], T_y = first time the walk is at y.

        Closed forms for the graphs: (n-1)/(1-laziness) on the complete graph,
        floor(n/2) ceil(n/2) / (1-laziness) on the cycle; for a transition matrix, the
        fundamental matrix Z = (I - P + 1 pi^T)^{-1} gives E_x T_y = (Z_yy - Z_xy)/pi_y
        (Aldous & Fill, Reversible Markov Chains, ch. 2), O(n^3).
        """
        n = self.n
        if n == 1:
            return 0.0
        if self.transition is None:
            base = (n - 1) if self.graph == "complete" else (n // 2) * ((n + 1) // 2)
            return base / (1.0 - self.laziness)
        P = self.transition
        w, v = np.linalg.eig(P.T)
        pi = np.real(v[:, np.argmin(np.abs(w - 1.0))])
        pi = pi / pi.sum()
        Z = np.linalg.inv(np.eye(n) - P + np.outer(np.ones(n), pi))
        H = (np.diag(Z)[None, :] - Z) / pi[None, :]
        return float(H.max())


_CLASSES: dict[str, type[Sampler]] = {
    "uniform": UniformSampler,
    "reshuffle": ReshuffleSampler,
    "cyclic": CyclicSampler,
    "markov": MarkovSampler,
}


def make_sampler(sampling: str | Sampler, n: int, rng: Any = None) -> Sampler:
    """Return a :class:`Sampler` for ``sampling`` (a name in :data:`SAMPLINGS` or a Sampler).

    Raises:
        ValueError: If the name is unknown or a given Sampler has another n.
        TypeError: If ``sampling`` is neither a name nor a Sampler.
    """
    if isinstance(sampling, Sampler):
        if sampling.n != n:
            raise ValueError(f"sampling has n={sampling.n}, but the problem has n={n}")
        return sampling
    if not isinstance(sampling, str):
        raise TypeError(f"sampling must be one of {SAMPLINGS} or a Sampler, got {sampling!r}")
    check_choice("sampling", sampling, SAMPLINGS)
    return _CLASSES[sampling](n, rng)
