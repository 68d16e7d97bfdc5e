"""Named topologies as mixing schedules ``t -> W_t``, static and time-varying.

The graphs and mixing rules are the core's (:func:`icml26_core.decentralized.topology`,
:func:`~icml26_core.decentralized.mixing_matrix`); this module adds one name space for
the static graphs and the time-varying one-peer exponential graph, so an experiment or
a training script can take a topology by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from icml26_core.decentralized import (
    TOPOLOGIES,
    check_mixing_matrix,
    mixing_matrix,
    one_peer_exponential,
    topology,
)
from icml26_core.validation import check_choice, check_int

__all__ = ["SCHEDULES", "MixingSchedule", "mixing_schedule"]

SCHEDULES = (*TOPOLOGIES, "one_peer_exponential")
"""Every name :func:`mixing_schedule` takes: the core's static graphs, ``one_peer_exponential``."""


class MixingSchedule:
    """The mixing matrix of every round: ``schedule(t)`` is ``W_t`` (float64 (n, n)).

    Args:
        matrix: A fixed doubly stochastic (n, n) matrix (static topology), or a function
            ``t -> W_t`` (time-varying; each ``W_t`` doubly stochastic).
        n: Number of nodes (needed with a function).
        name: A label for tables.

    Attributes:
        static: Whether every round uses the same matrix (then :attr:`W` is it).
        n: Number of nodes.
        name: The label.

    Raises:
        ValueError: If a fixed ``matrix`` is not a valid mixing matrix (checked with
            ``check_mixing_matrix(symmetric=False)``), or ``n`` is missing with a function.
    """

    def __init__(
        self,
        matrix: Any,
        *,
        n: int | None = None,
        name: str = "custom",
    ) -> None:
        self.name = str(name)
        if callable(matrix):
            if n is None:
                raise ValueError("n is required when matrix is a function t -> W_t")
            self.n = check_int("n", n, low=1)
            self._fn: Callable[[int], Any] | None = matrix
            self.W: np.ndarray | None = None
        else:
            W = check_mixing_matrix(matrix, symmetric=False, name="matrix")
            W.setflags(write=False)
            self.n = W.shape[0]
            if n is not None and check_int("n", n, low=1) != self.n:
                raise ValueError(f"n={n} but matrix is {self.n} x {self.n}")
            self._fn = None
            self.W = W

    @property
    def static(self) -> bool:
        """Whether the topology is the same every round."""
        return self._fn is None

    def __call__(self, t: int) -> np.ndarray:
        """``W_t``, float64 (n, n)."""
        if self._fn is None:
            assert self.W is not None
            return self.W
        return np.asarray(self._fn(int(t)), dtype=np.float64)

    def __repr__(self) -> str:
        kind = "static" if self.static else "time-varying"
        return f"MixingSchedule(name={self.name!r}, n={self.n}, {kind})"


def mixing_schedule(
    name: str, n: int, *, rule: str = "metropolis", seed: int = 0, **graph_kw: Any
) -> MixingSchedule:
    """The mixing schedule of a named topology on ``n`` nodes.

    Args:
        name: One of :data:`SCHEDULES`: a static graph of
            :func:`icml26_core.decentralized.topology` (ring, path, torus, grid, star,
            complete, hypercube, exponential, erdos_renyi, random_geometric, barbell,
            lollipop), or ``"one_peer_exponential"`` (time-varying, Ying et al. 2021).
        n: Number of nodes.
        rule: Mixing rule of the static graphs (``"metropolis"``, ``"lazy-metropolis"``,
            ``"max-degree"``); the one-peer graph always averages with weight 1/2.
        seed: Seed of the random graphs (erdos_renyi, random_geometric).
        **graph_kw: Passed to ``topology`` (``p``, ``radius``, ``shape``).

    Returns:
        A :class:`MixingSchedule`.

    Raises:
        ValueError: If ``name`` or ``rule`` is unknown, or ``n`` does not fit the graph.

    Example:
        >>> s = mixing_schedule("one_peer_exponential", 8)
        >>> s.static, float(s(0)[0, 1]), float(s(1)[0, 2])
        (False, 0.5, 0.5)
    """
    check_choice("name", name, SCHEDULES)
    if name == "one_peer_exponential":
        n = check_int("n", n, low=2)
        return MixingSchedule(lambda t: one_peer_exponential(n, t), n=n, name=name)
    G = topology(name, n, seed=seed, **graph_kw)
    return MixingSchedule(mixing_matrix(G, rule), name=name)
