"""Decentralized SGD: a local step, then one round of gossip with the neighbours.

Two entry points give the same numbers:

- :class:`DecentralizedSGD` wraps any ``torch.optim.Optimizer`` of one node (one
  process, ``torchrun`` or :func:`icml26_core.decentralized.spawn_local`) and gossips
  its parameters over a :class:`icml26_core.decentralized.GossipGroup` after every
  ``step()`` (neighbour ``batch_isend_irecv`` only, no all-reduce).
- :class:`SimulatedDSGD` runs the update with every node's parameters stacked on
  dimension 0 in one process (numpy or torch), over a
  :class:`icml26_core.decentralized.SimulatedNetwork`; it is what the experiment uses.

Adapt-then-combine (``order="atc"``, the default, Lian et al. 2017's D-PSGD in the
form of Koloskova et al. 2020): ``x_i <- sum_j W_ij (x_j - eta g_j)``.
Combine-then-adapt (``order="cta"``): ``x_i <- sum_j W_ij x_j - eta g_i``, with
``g_i`` computed at the node's own (pre-gossip) iterate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from icml26_core.decentralized import SimulatedNetwork
from icml26_core.validation import check_choice, check_float, check_int

from dsgd_topology.topologies import MixingSchedule

__all__ = ["ORDERS", "DecentralizedSGD", "SimulatedDSGD"]

ORDERS = ("atc", "cta")
"""Adapt-then-combine and combine-then-adapt."""


def _schedule(topology: Any, name: str = "topology") -> MixingSchedule:
    if isinstance(topology, MixingSchedule):
        return topology
    if isinstance(topology, str):
        raise TypeError(
            f"{name} must be a mixing matrix or a MixingSchedule, got the string "
            f"{topology!r}: use mixing_schedule({topology!r}, n)"
        )
    if callable(topology):
        raise TypeError(
            f"{name}: wrap a function t -> W_t as MixingSchedule(fn, n=n), or pass a matrix"
        )
    return MixingSchedule(topology)


def _check_stack(name: str, X: Any) -> None:
    if not isinstance(X, np.ndarray | torch.Tensor):
        raise TypeError(
            f"{name} must be a numpy array or a torch tensor stacked on dimension 0, got "
            f"{type(X).__name__}"
        )


class SimulatedDSGD:
    """D-SGD on ``n`` simulated nodes whose parameters are stacked on dimension 0.

    ``step(X, G)`` returns the next stacked iterate: ``W_t (X - lr G)`` (atc) or
    ``W_t X - lr G`` (cta), with ``W_t`` the topology's matrix at round ``t``. It is
    functional in the iterate (``X`` is not modified) and keeps the round counter and
    the bits each node sent (through its :attr:`network`).

    Args:
        topology: A doubly stochastic (n, n) matrix, or a
            :class:`~dsgd_topology.MixingSchedule` (e.g.
            ``mixing_schedule("one_peer_exponential", n)``).
        lr: Step size ``eta`` > 0.
        order: ``"atc"`` or ``"cta"``.

    Attributes:
        schedule: The :class:`~dsgd_topology.MixingSchedule`.
        network: The :class:`icml26_core.decentralized.SimulatedNetwork` (``bits_sent``,
            ``rounds``, ``consensus_error``, ``average``).
        t: Rounds done.

    Raises:
        TypeError: If ``topology`` is a string (use ``mixing_schedule(name, n)``) or a
            bare function (wrap it in ``MixingSchedule(fn, n=n)``).
        ValueError: If the matrix is invalid, ``lr`` is not positive, ``order`` unknown.

    Example:
        >>> import numpy as np
        >>> from dsgd_topology import SimulatedDSGD, mixing_schedule
        >>> opt = SimulatedDSGD(mixing_schedule("ring", 4), lr=0.1)
        >>> X = np.zeros((4, 2)); G = np.eye(4)[:, :2]     # node i's gradient e_i
        >>> X = opt.step(X, G)
        >>> X.round(4)[:, 0], opt.t
        (array([-0.0333, -0.0333,  0.    , -0.0333]), 1)
    """

    def __init__(self, topology: Any, lr: float, *, order: str = "atc") -> None:
        self.schedule = _schedule(topology)
        self.lr = check_float("lr", lr, low=0.0, low_inclusive=False)
        self.order = check_choice("order", order, ORDERS)
        n = self.schedule.n
        base = self.schedule.W if self.schedule.static else np.full((n, n), 1.0 / n)
        self.network = SimulatedNetwork(base)
        self.t = 0

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return self.schedule.n

    def mix(self, X: Any) -> Any:
        """One gossip round with this round's matrix (counts the round)."""
        if self.schedule.static:
            return self.network.mix(X)
        return self.network.mix(X, W=self.schedule(self.t))

    def step(self, X: Any, G: Any) -> Any:
        """One D-SGD step.

        Args:
            X: Stacked iterates, (n, ...), numpy array or torch tensor.
            G: Stacked stochastic gradients at ``X``, same shape and library.

        Returns:
            The next stacked iterate, same shape, library and dtype as ``X``.

        Raises:
            TypeError: If ``X`` or ``G`` is not a numpy array or torch tensor, or one is
                numpy and the other torch.
            ValueError: If the shapes differ or ``X`` does not have ``n`` rows.
        """
        _check_stack("X", X)
        _check_stack("G", G)
        if isinstance(X, torch.Tensor) != isinstance(G, torch.Tensor):
            raise TypeError(
                f"X and G must be of the same library, got {type(X).__name__} and "
                f"{type(G).__name__}"
            )
        if tuple(X.shape) != tuple(G.shape):
            raise ValueError(
                f"X and G must have the same shape, got {tuple(X.shape)} and {tuple(G.shape)}"
            )
        if self.order == "atc":
            out = self.mix(X - self.lr * G)
        else:
            out = self.mix(X) - self.lr * G
        self.t += 1
        return out

    def consensus_error(self, X: Any) -> float:
        """``(1/n) sum_i ||x_i - x_bar||^2`` of the stacked iterates ``X`` (n, ...).

        Raises:
            TypeError: If ``X`` is not a numpy array or torch tensor.
            ValueError: If ``X`` does not have ``n`` rows.
        """
        _check_stack("X", X)
        return self.network.consensus_error(X)

    def average(self, X: Any) -> Any:
        """The averaged model ``x_bar`` (shape ``X.shape[1:]``) of the stacked ``X`` (n, ...).

        Raises:
            TypeError: If ``X`` is not a numpy array or torch tensor.
            ValueError: If ``X`` does not have ``n`` rows.
        """
        _check_stack("X", X)
        return self.network.average(X)

    def __repr__(self) -> str:
        return (
            f"SimulatedDSGD(n_nodes={self.n_nodes}, lr={self.lr:g}, order={self.order!r}, "
            f"topology={self.schedule.name!r}, t={self.t})"
        )


class DecentralizedSGD(torch.optim.Optimizer):
    """Gossip a node's parameters with its neighbours after every local optimizer step.

    Wraps the node's own optimizer (plain ``torch.optim.SGD`` gives D-SGD; any other
    optimizer gives its decentralized variant, with its state kept local). After
    ``optimizer.step()`` every parameter is flattened into one buffer, mixed in one
    round ``x_i <- sum_j W_ij x_j`` by ``group.mix`` (neighbour exchange only) and
    written back (atc). With ``order="cta"`` the parameters are mixed first and the
    local step then applies the gradients computed before the mix. Every rank must
    call :meth:`step` in the same order (it is collective).

    Args:
        optimizer: The node's optimizer over its model's parameters.
        group: A :class:`icml26_core.decentralized.GossipGroup` (one node per process),
            or any object with ``mix(x, W=None)`` and ``n_nodes``.
        order: ``"atc"`` or ``"cta"``.
        schedule: A :class:`~dsgd_topology.MixingSchedule` for a time-varying topology
            (its ``W_t`` is passed to ``group.mix`` at round ``t``); default: the
            group's fixed ``W``.

    Attributes:
        optimizer: The wrapped optimizer.
        group: The gossip group.
        t: Rounds done.

    Raises:
        TypeError: If ``optimizer`` is not a ``torch.optim.Optimizer`` or ``group`` has
            no ``mix``.
        ValueError: If ``order`` is unknown, or the schedule's size differs from the
            group's.

    Example (under ``torchrun --nproc-per-node 4 train.py``):

    .. code-block:: python

        from icml26_core.decentralized import GossipGroup, init_distributed
        from dsgd_topology import DecentralizedSGD, mixing_schedule

        rank, world = init_distributed()
        group = GossipGroup(mixing_schedule("ring", world).W)
        opt = DecentralizedSGD(torch.optim.SGD(model.parameters(), lr=0.05), group)
        for x, y in loader:  # this node's shard
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        group: Any,
        *,
        order: str = "atc",
        schedule: MixingSchedule | None = None,
    ) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
            )
        if not hasattr(group, "mix"):
            raise TypeError(
                f"group must have a mix(x, W=None) method (a GossipGroup), got "
                f"{type(group).__name__}"
            )
        self.optimizer = optimizer
        self.group = group
        self.order = check_choice("order", order, ORDERS)
        if schedule is not None:
            schedule = _schedule(schedule, "schedule")
            n = getattr(group, "n_nodes", schedule.n)
            if schedule.n != n:
                raise ValueError(f"schedule has {schedule.n} nodes but the group has {n}")
        self.schedule = schedule
        self.t = 0
        # share the wrapped optimizer's groups and state (as PostLocalSGDOptimizer does)
        self.param_groups = optimizer.param_groups
        self.defaults = optimizer.defaults
        self.state = optimizer.state

    def _params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    @torch.no_grad()
    def gossip(self) -> None:
        """One gossip round of every parameter (collective; counts the round)."""
        params = self._params()
        if not params:
            return
        flat = torch.cat([p.detach().reshape(-1) for p in params])
        W = None if self.schedule is None else self.schedule(self.t)
        mixed = self.group.mix(flat, W=W)
        offset = 0
        for p in params:
            k = p.numel()
            p.copy_(mixed[offset : offset + k].view_as(p))
            offset += k
        self.t += 1

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """A local step of the wrapped optimizer and one gossip round.

        Args:
            closure: Re-evaluates the model and returns the loss (for optimizers that
                need it); called once, before any mixing.

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if self.order == "atc":
            loss = self.optimizer.step(closure) if closure is not None else self.optimizer.step()
            self.gossip()
        else:
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            self.gossip()
            self.optimizer.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients of the wrapped optimizer."""
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """The wrapped optimizer's state and the gossip round counter."""
        return {"optimizer": self.optimizer.state_dict(), "t": self.t, "order": self.order}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output.

        Raises:
            ValueError: If ``state_dict`` is not a dict with an ``"optimizer"`` entry
                (e.g. the wrapped optimizer's own state dict), or its ``t`` or
                ``order`` is invalid; nothing is changed then.
        """
        if not isinstance(state_dict, dict) or "optimizer" not in state_dict:
            keys = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict)
            raise ValueError(
                "state_dict must be DecentralizedSGD.state_dict() output, a dict with "
                f"'optimizer', 't' and 'order'; got {keys} (to restore the wrapped "
                "optimizer alone, call opt.optimizer.load_state_dict)"
            )
        t = check_int("t", state_dict.get("t", 0), low=0)
        order = check_choice("order", state_dict.get("order", self.order), ORDERS)
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self.t, self.order = t, order

    def __repr__(self) -> str:
        return (
            f"DecentralizedSGD({type(self.optimizer).__name__}, order={self.order!r}, t={self.t})"
        )
