"""Gossip on one process: every node's tensor stacked on dimension 0, gossip is ``W @ X``.

:class:`SimulatedNetwork` is the fast backend for experiments: ``X`` has shape
``(n, ...)`` (row ``i`` is node ``i``), ``network.mix(X)`` is ``W @ X`` on the flattened
rows, and every round counts the bits each node sends. It has the same methods as
:class:`~icml26_core.decentralized.GossipGroup` (``mix``, ``compress``, ``bits_sent``,
``rounds``, ``average``, ``consensus_error``), which runs the same update with one
node per process over ``torch.distributed``; an algorithm written against them runs
on both, and the two give the same numbers (the tests check it to 1e-6 on 2 and 4
gloo processes).

A round in which node ``i`` sends a message of ``b`` bits costs it ``b`` times its
number of out-neighbours (``k != i`` with ``W[k, i] != 0``): point-to-point
messages, as ``torch.distributed`` sends them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml26_core.decentralized.mixing import check_mixing_matrix
from icml26_core.validation import check_int

__all__ = ["SimulatedNetwork", "StackedMessage", "node_seed"]


def node_seed(seed: int, rank: int) -> int:
    """Seed of node ``rank``'s compression generator, the same in both backends."""
    return (int(seed) * 1_000_003 + int(rank) * 7_919 + 17) % (2**63 - 1)


def _neighbors(W: np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
    """(out-neighbours, in-neighbours) of every node: ``W[k, i] != 0``, ``W[i, j] != 0``."""
    n = W.shape[0]
    nz = W != 0
    np.fill_diagonal(nz, False)
    out = [np.flatnonzero(nz[:, i]).tolist() for i in range(n)]
    inn = [np.flatnonzero(nz[i, :]).tolist() for i in range(n)]
    return out, inn


def _torch() -> Any:
    from icml26_core._lazy import require

    return require("torch", "decentralized")


@dataclass(frozen=True, eq=False)
class StackedMessage:
    """One compressed message per node (from :meth:`SimulatedNetwork.compress`).

    Attributes:
        messages: Node ``i``'s :class:`~icml26_core.decentralized.Message` at index ``i``.
    """

    messages: tuple[Any, ...]

    def decode(self) -> Any:
        """Decoded messages stacked on dimension 0: shape ``(n, ...)``."""
        torch = _torch()
        return torch.stack([m.decode() for m in self.messages])

    @property
    def bits(self) -> np.ndarray:
        """Bits of each node's message, float64 (n,)."""
        return np.array([m.bits for m in self.messages], dtype=np.float64)

    def __len__(self) -> int:
        return len(self.messages)


class SimulatedNetwork:
    """``n`` nodes on one process, stacked on dimension 0.

    Args:
        W: Doubly stochastic mixing matrix (n, n) (e.g. :func:`mixing_matrix`); need
            not be symmetric (checked with ``check_mixing_matrix(W, symmetric=False)``).
        seed: Seed of the nodes' compression generators (node ``i`` uses
            ``node_seed(seed, i)``, as in :class:`GossipGroup`).

    Attributes:
        n_nodes: Number of nodes.
        rank: None (all nodes live here); :class:`GossipGroup` has its node's rank.
        bits_sent: float64 (n,), bits each node has sent so far.
        rounds: Number of gossip rounds (calls of :meth:`mix`).
        bits_history: Bits sent by each node in each round, a list of (n,) arrays.
        generators: Node ``i``'s CPU ``torch.Generator`` at index ``i`` (created on
            first use).

    Raises:
        ValueError: If ``W`` is not a valid mixing matrix (negative weights, sums not 1,
            disconnected).

    Example:
        >>> import numpy as np
        >>> from icml26_core.decentralized import mixing_matrix, topology
        >>> net = SimulatedNetwork(mixing_matrix(topology("ring", 4)))
        >>> X = np.arange(8.0).reshape(4, 2)           # node i holds row i
        >>> net.mix(X)[0], net.bits_sent              # float64 rows: 128 bits to 2 neighbours
        (array([2.66666667, 3.66666667]), array([256., 256., 256., 256.]))
    """

    rank = None

    def __init__(self, W: Any, *, seed: int = 0) -> None:
        self._W = check_mixing_matrix(W, symmetric=False)
        self._W.setflags(write=False)
        self.n_nodes = self._W.shape[0]
        self.seed = check_int("seed", seed, low=0)
        self._out, self._in = _neighbors(self._W)
        self._w_torch: dict[Any, Any] = {}
        self._generators: list[Any] | None = None
        self.bits_sent = np.zeros(self.n_nodes)
        self.rounds = 0
        self.bits_history: list[np.ndarray] = []

    @property
    def W(self) -> np.ndarray:
        """The mixing matrix, float64 (n, n), read-only."""
        return self._W

    @property
    def generators(self) -> list[Any]:
        """One CPU ``torch.Generator`` per node, seeded with ``node_seed(seed, i)``."""
        if self._generators is None:
            torch = _torch()
            self._generators = [
                torch.Generator().manual_seed(node_seed(self.seed, i)) for i in range(self.n_nodes)
            ]
        return self._generators

    def out_neighbors(self, i: int) -> list[int]:
        """Nodes that receive node ``i``'s messages (``W[k, i] != 0``, ``k != i``)."""
        return list(self._out[check_int("i", i, low=0, high=self.n_nodes - 1)])

    def in_neighbors(self, i: int) -> list[int]:
        """Nodes whose messages node ``i`` receives (``W[i, j] != 0``, ``j != i``)."""
        return list(self._in[check_int("i", i, low=0, high=self.n_nodes - 1)])

    def _check_stacked(self, X: Any, name: str = "X") -> None:
        shape = tuple(X.shape)
        if len(shape) < 1 or shape[0] != self.n_nodes:
            raise ValueError(
                f"{name} must be stacked on dimension 0 with {self.n_nodes} rows (one per "
                f"node), got shape {shape}"
            )

    def _count(self, bits_per_node: np.ndarray, W: np.ndarray | None) -> None:
        out = self._out if W is None else _neighbors(W)[0]
        degree = np.array([len(o) for o in out], dtype=np.float64)
        sent = bits_per_node * degree
        self.bits_sent = self.bits_sent + sent
        self.rounds += 1
        self.bits_history.append(sent)

    def _matrix(self, W: Any) -> np.ndarray | None:
        if W is None:
            return None
        M = check_mixing_matrix(W, symmetric=False, connected=False)
        if M.shape != self._W.shape:
            raise ValueError(f"W must be ({self.n_nodes}, {self.n_nodes}), got {M.shape}")
        return M

    def _apply(self, M: np.ndarray | None, X: Any) -> Any:
        """``W @ X`` over the flattened rows, in X's library, dtype and device."""
        W = self._W if M is None else M
        if isinstance(X, np.ndarray):
            return (W @ X.reshape(self.n_nodes, -1)).reshape(X.shape).astype(X.dtype, copy=False)
        torch = _torch()
        if M is None:
            key = (X.dtype, X.device)
            if key not in self._w_torch:
                self._w_torch[key] = torch.tensor(W, dtype=X.dtype, device=X.device)
            Wt = self._w_torch[key]
        else:
            Wt = torch.tensor(W, dtype=X.dtype, device=X.device)
        return (Wt @ X.reshape(self.n_nodes, -1)).reshape(X.shape)

    def mix(self, X: Any, *, W: Any = None) -> Any:
        """One gossip round: ``sum_j W_ij x_j`` for every node ``i``.

        Args:
            X: The nodes' tensors stacked, (n, ...): a numpy array or torch tensor
                (sent at full precision: ``numel`` floats per row), or a
                :class:`StackedMessage` from :meth:`compress` (the decoded messages are
                mixed, and their bits counted).
            W: A different mixing matrix for this round (time-varying topologies,
                e.g. :func:`one_peer_exponential`; doubly stochastic, but one round
                need not be connected); default the network's.

        Returns:
            The mixed rows, same shape (n, ...), library, dtype and device as ``X``
            (as the decoded messages for a :class:`StackedMessage`).

        Raises:
            ValueError: If ``X`` does not have ``n`` rows, or ``W`` is invalid.
        """
        M = self._matrix(W)
        if isinstance(X, StackedMessage):
            if len(X) != self.n_nodes:
                raise ValueError(f"the message has {len(X)} nodes, the network {self.n_nodes}")
            dense = X.decode()
            self._count(X.bits, M)
            return self._apply(M, dense)
        self._check_stacked(X)
        per_row = int(np.prod(X.shape[1:], dtype=np.int64))
        if isinstance(X, np.ndarray):
            width = X.dtype.itemsize * 8
        else:
            width = X.element_size() * 8
        self._count(np.full(self.n_nodes, float(per_row * width)), M)
        return self._apply(M, X)

    def compress(self, X: Any, compressor: Any) -> StackedMessage:
        """Compress each node's row with its own generator.

        Args:
            X: torch tensor (n, ...).
            compressor: A :class:`~icml26_core.decentralized.Compressor`.

        Returns:
            A :class:`StackedMessage` (pass it to :meth:`mix`; ``.decode()`` gives the
            (n, ...) tensor each node's neighbours reconstruct).
        """
        self._check_stacked(X)
        gens = self.generators
        return StackedMessage(
            tuple(compressor.compress(X[i], gens[i]) for i in range(self.n_nodes))
        )

    def average(self, X: Any) -> Any:
        """The node average ``x_bar`` (shape ``X.shape[1:]``)."""
        self._check_stacked(X)
        return X.mean(axis=0) if isinstance(X, np.ndarray) else X.mean(dim=0)

    def consensus_error(self, X: Any) -> float:
        """``(1/n) sum_i ||x_i - x_bar||^2``, the mean squared distance to the average."""
        self._check_stacked(X)
        if isinstance(X, np.ndarray):
            D = X.reshape(self.n_nodes, -1) - X.reshape(self.n_nodes, -1).mean(axis=0)
            return float(np.mean(np.sum(D * D, axis=1)))
        D = X.reshape(self.n_nodes, -1).double()
        D = D - D.mean(dim=0)
        return float((D * D).sum(dim=1).mean())

    def reset_counters(self) -> None:
        """Set ``bits_sent``, ``rounds`` and ``bits_history`` back to zero."""
        self.bits_sent = np.zeros(self.n_nodes)
        self.rounds = 0
        self.bits_history = []

    def __repr__(self) -> str:
        return f"SimulatedNetwork(n_nodes={self.n_nodes}, rounds={self.rounds})"
