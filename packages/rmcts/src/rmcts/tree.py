"""The search tree shared by RMCTS and MCTS-UCB, and what a search returns.

Values are stored from player 0's point of view (``value0``), so a node converts them
to its own player's point of view with :attr:`Node.sign`; this handles games where a
player moves twice in a row as well as alternating ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Node", "SearchResult"]


class Node:
    """One game state in a search tree.

    Attributes:
        state: The open_spiel state (owned by the node; never mutated after creation).
        terminal: Whether the state is terminal.
        player: Player to move (0 or 1); -1 for a terminal state.
        actions: int64 array ``(k,)`` of legal actions, in open_spiel's order.
        prior: float64 ``(k,)`` prior over ``actions`` (after evaluation).
        children: One slot per legal action, ``None`` until created.
        value0_net: Network (or terminal) value of the state for player 0.
        value0: Search estimate of the value for player 0.
        visits: Per-action visit counts (MCTS) or subtree sizes (RMCTS), float64 ``(k,)``.
        value_sum0: Per-action sums of backed-up values for player 0 (MCTS only).
        depth: Distance from the root.
    """

    __slots__ = (
        "actions",
        "children",
        "depth",
        "evaluated",
        "player",
        "prior",
        "state",
        "terminal",
        "value0",
        "value0_net",
        "value_sum0",
        "visits",
    )

    def __init__(self, state: Any, depth: int = 0) -> None:
        self.state = state
        self.depth = depth
        self.terminal = bool(state.is_terminal())
        self.evaluated = self.terminal
        if self.terminal:
            self.player = -1
            self.actions = np.zeros(0, dtype=np.int64)
            self.value0_net = float(state.returns()[0])
        else:
            self.player = int(state.current_player())
            self.actions = np.asarray(state.legal_actions(), dtype=np.int64)
            self.value0_net = 0.0
        self.value0 = self.value0_net
        self.prior = np.zeros(len(self.actions))
        self.children: list[Node | None] = [None] * len(self.actions)
        self.visits = np.zeros(len(self.actions))
        self.value_sum0 = np.zeros(len(self.actions))

    @property
    def sign(self) -> float:
        """+1 if player 0 is to move, -1 if player 1 is (0 for terminal states)."""
        return 1.0 if self.player == 0 else (-1.0 if self.player == 1 else 0.0)

    def child(self, index: int) -> Node:
        """Return the child for ``actions[index]``, creating it (clone + apply) on first use."""
        node = self.children[index]
        if node is None:
            state = self.state.clone()
            state.apply_action(int(self.actions[index]))
            node = Node(state, self.depth + 1)
            self.children[index] = node
        return node

    def set_evaluation(self, logits: np.ndarray, value: float) -> None:
        """Store the prior (softmax of the legal logits) and the value for the player to move."""
        legal_logits = np.asarray(logits, dtype=np.float64)[self.actions]
        legal_logits = legal_logits - legal_logits.max()
        prior = np.exp(legal_logits)
        prior /= prior.sum()
        self.prior = prior
        self.value0_net = float(np.clip(value, -1.0, 1.0)) * self.sign
        self.value0 = self.value0_net
        self.evaluated = True


@dataclass
class SearchResult:
    """What one search from a root state returns.

    Attributes:
        action: The chosen action (open_spiel action id).
        policy: float64 ``(num_distinct_actions,)`` root policy (zero on illegal actions).
        value: Root value estimate for the player to move, in ``[-1, 1]``.
        simulations: Tree nodes added (RMCTS) or simulations run (MCTS), root included.
        evaluations: States sent to the evaluator.
        batches: Evaluator calls.
        seconds: Wall time of the search.
        batch_sizes: Sizes of the evaluator calls, in order.
        root: The search tree's root :class:`Node`, for inspection.
    """

    action: int
    policy: np.ndarray
    value: float
    simulations: int
    evaluations: int
    batches: int
    seconds: float
    batch_sizes: list[int] = field(default_factory=list)
    root: Node | None = field(default=None, repr=False)


class EvaluationCounter:
    """Calls an evaluator on batches of nodes and counts states and calls."""

    def __init__(self, evaluator: Any) -> None:
        if not callable(getattr(evaluator, "evaluate", None)):
            raise TypeError(
                f"evaluator must have a method evaluate(states) -> (logits, values), "
                f"got {type(evaluator).__name__}"
            )
        self.evaluator = evaluator
        self.batch_sizes: list[int] = []

    def __call__(self, nodes: Sequence[Node]) -> None:
        """Evaluate ``nodes`` in one call and store priors and values in them."""
        if not nodes:
            return
        logits, values = self.evaluator.evaluate([n.state for n in nodes])
        logits = np.asarray(logits)
        values = np.asarray(values).reshape(-1)
        if logits.ndim != 2 or logits.shape[0] != len(nodes) or values.shape[0] != len(nodes):
            raise ValueError(
                f"evaluate must return logits (B, A) and values (B,) with B={len(nodes)}, "
                f"got {logits.shape} and {values.shape}"
            )
        needed = 1 + max(int(n.actions.max()) for n in nodes)
        if logits.shape[1] < needed:
            raise ValueError(
                f"evaluate returned logits over {logits.shape[1]} actions; the game's action ids "
                f"need at least {needed} (use num_distinct_actions)"
            )
        if not (np.all(np.isfinite(logits)) and np.all(np.isfinite(values))):
            raise ValueError("evaluate returned NaN or inf logits or values")
        self.batch_sizes.append(len(nodes))
        for i, node in enumerate(nodes):
            node.set_evaluation(logits[i], float(values[i]))

    @property
    def evaluations(self) -> int:
        """States evaluated so far."""
        return int(sum(self.batch_sizes))
