"""The search tree shared by RMCTS and MCTS-UCB, and what a search returns.

Values are stored from player 0's point of view (``value0``), so a node converts them
to its own player's point of view with :attr:`Node.sign`; this handles games where a
player moves twice in a row as well as alternating ones.

Three kinds of node: decision nodes (a player chooses among legal actions; evaluated by
the network), chance nodes (the game draws an outcome from ``chance_outcomes()``; never
evaluated, their value is the expectation over outcomes) and terminal nodes (value from
``returns()``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rmcts.games import describe_state

__all__ = ["Node", "SearchResult"]

VALUE_TOLERANCE = 1e-6
"""How far outside [-1, 1] an evaluator's value may stray (rounding) before it is rejected."""


class Node:
    """One game state in a search tree.

    Args:
        state: The open_spiel state (owned by the node; never mutated after creation).
        depth: Distance from the root.
        fallback0: Value (player 0's view) a chance node takes for outcomes not in the
            tree: the value of the nearest decision node above it.

    Raises:
        ValueError: If ``state`` is a simultaneous-move node, has a player other than 0 or
            1 to move, is a chance node without outcomes, or is a non-terminal decision
            node without legal actions (the message names the state).

    Attributes:
        state: The open_spiel state.
        terminal: Whether the state is terminal.
        chance: Whether the state is a chance node.
        player: Player to move (0 or 1); -1 for terminal and chance nodes.
        actions: int64 ``(k,)`` legal actions (chance nodes: outcomes), open_spiel's order.
        prior: float64 ``(k,)`` prior over ``actions`` after evaluation (chance nodes: the
            outcome probabilities).
        children: One slot per action, ``None`` until created.
        value0_net: Network (or terminal) value of the state for player 0; for a chance
            node, ``fallback0``.
        value0: Search estimate of the value for player 0.
        visits: float64 ``(k,)`` per-action visit counts (MCTS) or subtree sizes (RMCTS).
        value_sum0: float64 ``(k,)`` per-action sums of backed-up values for player 0 (MCTS).
        depth: Distance from the root.
    """

    __slots__ = (
        "actions",
        "chance",
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

    def __init__(self, state: Any, depth: int = 0, fallback0: float = 0.0) -> None:
        self.state = state
        self.depth = depth
        self.terminal = bool(state.is_terminal())
        self.chance = not self.terminal and bool(state.is_chance_node())
        self.evaluated = self.terminal or self.chance
        if self.terminal:
            self.player = -1
            self.actions = np.zeros(0, dtype=np.int64)
            self.prior = np.zeros(0)
            self.value0_net = float(state.returns()[0])
        elif self.chance:
            outcomes = state.chance_outcomes()
            if not outcomes:
                raise ValueError(f"chance node without outcomes: {describe_state(state)}")
            self.player = -1
            self.actions = np.asarray([a for a, _ in outcomes], dtype=np.int64)
            probs = np.asarray([p for _, p in outcomes], dtype=np.float64)
            self.prior = probs / probs.sum()
            self.value0_net = float(fallback0)
        else:
            if state.is_simultaneous_node():
                raise ValueError(
                    "simultaneous-move node: the searches need sequential turns: "
                    f"{describe_state(state)}"
                )
            self.player = int(state.current_player())
            if self.player not in (0, 1):
                raise ValueError(
                    f"player {self.player} to move; the searches need players 0 and 1: "
                    f"{describe_state(state)}"
                )
            self.actions = np.asarray(state.legal_actions(), dtype=np.int64)
            if self.actions.size == 0:
                raise ValueError(
                    f"state is not terminal but has no legal actions: {describe_state(state)}"
                )
            self.prior = np.zeros(len(self.actions))
            self.value0_net = 0.0
        self.value0 = self.value0_net
        self.children: list[Node | None] = [None] * len(self.actions)
        self.visits = np.zeros(len(self.actions))
        self.value_sum0 = np.zeros(len(self.actions))

    @property
    def sign(self) -> float:
        """+1 if player 0 is to move, -1 if player 1 is (0 for terminal and chance nodes)."""
        return 1.0 if self.player == 0 else (-1.0 if self.player == 1 else 0.0)

    def child(self, index: int) -> Node:
        """Return the child for ``actions[index]``, creating it (clone + apply) on first use."""
        node = self.children[index]
        if node is None:
            state = self.state.clone()
            state.apply_action(int(self.actions[index]))
            node = Node(state, self.depth + 1, fallback0=self.value0_net)
            self.children[index] = node
        return node

    def set_evaluation(self, logits: np.ndarray, value: float) -> None:
        """Store the prior (softmax of the legal logits) and the value for the player to move.

        ``logits`` must be finite on the legal actions (illegal entries are ignored, so
        ``-inf`` masking is fine) and ``value`` in ``[-1, 1]``; :class:`EvaluationCounter`
        checks both before calling this.
        """
        legal_logits = np.asarray(logits, dtype=np.float64)[self.actions]
        legal_logits = legal_logits - legal_logits.max()
        prior = np.exp(legal_logits)
        prior /= prior.sum()
        self.prior = prior
        self.value0_net = float(np.clip(value, -1.0, 1.0)) * self.sign
        self.value0 = self.value0_net
        self.evaluated = True

    def q(self) -> np.ndarray:
        """Per-action values for the player to move, float64 ``(k,)``.

        A child's search value where it is in the tree, else the node's own value: what
        RMCTS's backup reads.
        """
        out = np.full(len(self.actions), self.value0_net * self.sign)
        for i, ch in enumerate(self.children):
            if ch is not None:
                out[i] = ch.value0 * self.sign
        return out


@dataclass
class SearchResult:
    """What one search from a root state returns.

    Arrays over actions have the game's ``num_distinct_actions`` entries, indexed by
    open_spiel action id (as ``policy``), with zeros (NaN for ``q``) on illegal actions.

    Attributes:
        action: The chosen action (open_spiel action id).
        policy: float64 ``(num_distinct_actions,)`` root policy: ``pi_bar`` (RMCTS) or
            visit counts normalized (MCTS-UCB).
        value: Root value estimate for the player to move, in ``[-1, 1]``.
        simulations: Tree nodes added (RMCTS) or simulations run (MCTS), root included;
            chance nodes are not counted (they cost no evaluation).
        evaluations: States of this root sent to the evaluator.
        batches: Evaluator calls (shared by all roots of a batched search).
        seconds: Wall time of the search (of the whole batch for a batched search).
        batch_sizes: Sizes of the evaluator calls, in order (whole calls when batched).
        q: float64 ``(num_distinct_actions,)`` action values for the player to move:
            RMCTS's re-estimated child values (the root's own value for actions not in the
            tree), MCTS-UCB's mean backed-up values (the root's network value for
            unvisited actions); NaN on illegal actions.
        visits: float64 ``(num_distinct_actions,)`` MCTS-UCB's visit counts, or RMCTS's
            subtree sizes (nodes under each root action, which play the role of visits
            in ``pi_bar``).
        prior: float64 ``(num_distinct_actions,)`` the root prior the search used (after
            Dirichlet noise, if any).
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
    q: np.ndarray = field(default_factory=lambda: np.zeros(0))
    visits: np.ndarray = field(default_factory=lambda: np.zeros(0))
    prior: np.ndarray = field(default_factory=lambda: np.zeros(0))
    root: Node | None = field(default=None, repr=False)


class EvaluationCounter:
    """Calls an evaluator on batches of nodes, checks what it returns and counts calls.

    Args:
        evaluator: Object with ``evaluate(states) -> (logits (B, A), values (B,))``.

    Raises:
        TypeError: If ``evaluator`` has no ``evaluate`` method.
    """

    def __init__(self, evaluator: Any) -> None:
        if not callable(getattr(evaluator, "evaluate", None)):
            raise TypeError(
                f"evaluator must have a method evaluate(states) -> (logits, values), "
                f"got {type(evaluator).__name__}"
            )
        self.evaluator = evaluator
        self.batch_sizes: list[int] = []

    def __call__(self, nodes: Sequence[Node]) -> None:
        """Evaluate ``nodes`` in one call and store priors and values in them.

        Raises:
            ValueError: If the evaluator returns the wrong shapes, too few action columns,
                NaN or infinite logits on a legal action, or a value that is not finite
                or lies outside ``[-1, 1]`` (beyond a rounding tolerance of 1e-6).
        """
        if not nodes:
            return
        logits, values = self.evaluator.evaluate([n.state for n in nodes])
        logits = np.asarray(logits, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64).reshape(-1)
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
        for i, node in enumerate(nodes):
            legal = logits[i, node.actions]
            if not np.all(np.isfinite(legal)):
                bad = node.actions[~np.isfinite(legal)].tolist()
                raise ValueError(
                    f"evaluate returned NaN or inf logits on legal actions {bad} of state #{i} "
                    "of the batch (illegal entries may be anything, e.g. -inf)"
                )
            v = float(values[i])
            if not np.isfinite(v) or abs(v) > 1.0 + VALUE_TOLERANCE:
                raise ValueError(
                    f"evaluate returned value {v} for state #{i} of the batch; values must "
                    "be finite and in [-1, 1], for the player to move (scale your value head)"
                )
        self.batch_sizes.append(len(nodes))
        for i, node in enumerate(nodes):
            node.set_evaluation(logits[i], float(values[i]))

    @property
    def evaluations(self) -> int:
        """States evaluated so far."""
        return int(sum(self.batch_sizes))
