"""Exact minimax values of small games (tic-tac-toe), for measuring policy quality.

States are identified by ``str(state)`` plus the player to move, which is exact for
games whose printed board determines the state (tic-tac-toe, connect four).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ExactEvaluator", "MinimaxSolver"]


class MinimaxSolver:
    """Memoized negamax over the whole game tree.

    Args:
        game: A deterministic ``pyspiel.Game`` small enough to solve (tic-tac-toe: 5,478
            states).

    Raises:
        ValueError: If ``game`` has chance nodes (negamax needs a deterministic game).

    Example:
        >>> from rmcts import load_game
        >>> solver = MinimaxSolver(load_game("tic_tac_toe"))
        >>> solver.value(solver.game.new_initial_state())  # a draw under perfect play
        0.0
    """

    def __init__(self, game: Any) -> None:
        import pyspiel

        if game.get_type().chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC:
            raise ValueError(
                f"MinimaxSolver needs a deterministic game, got {game.get_type().short_name!r} "
                f"with chance mode {game.get_type().chance_mode.name}"
            )
        self.game = game
        self._values: dict[tuple[str, int], float] = {}

    @staticmethod
    def _key(state: Any) -> tuple[str, int]:
        return str(state), int(state.current_player())

    def value(self, state: Any) -> float:
        """Minimax value of ``state`` for the player to move (terminal: for player 0)."""
        if state.is_terminal():
            return float(state.returns()[0])
        key = self._key(state)
        cached = self._values.get(key)
        if cached is not None:
            return cached
        player = state.current_player()
        best = -np.inf
        for action in state.legal_actions():
            child = state.child(action)
            best = max(best, self._value_for(child, player))
        self._values[key] = float(best)
        return float(best)

    def _value_for(self, state: Any, player: int) -> float:
        if state.is_terminal():
            return float(state.returns()[player])
        v = self.value(state)
        return v if state.current_player() == player else -v

    def action_values(self, state: Any) -> np.ndarray:
        """Exact ``Q*(s, a)`` for the player to move, float64 ``(num_distinct_actions,)``.

        Illegal actions are NaN.

        Raises:
            ValueError: If ``state`` is terminal.
        """
        if state.is_terminal():
            raise ValueError("a terminal state has no action values")
        q = np.full(self.game.num_distinct_actions(), np.nan)
        player = state.current_player()
        for action in state.legal_actions():
            q[action] = self._value_for(state.child(action), player)
        return q

    def all_states(self) -> list[Any]:
        """Every non-terminal state reachable from the start, once each."""
        seen: dict[tuple[str, int], Any] = {}
        stack = [self.game.new_initial_state()]
        while stack:
            s = stack.pop()
            if s.is_terminal():
                continue
            key = self._key(s)
            if key in seen:
                continue
            seen[key] = s
            stack.extend(s.child(a) for a in s.legal_actions())
        return list(seen.values())


class ExactEvaluator:
    """Evaluator returning exact minimax values and a uniform prior (for tests and references).

    Args:
        solver: A :class:`MinimaxSolver` of the game.
        prior: ``"uniform"`` or ``"optimal"`` (uniform over the optimal actions' logits).
    """

    def __init__(self, solver: MinimaxSolver, prior: str = "uniform") -> None:
        if prior not in ("uniform", "optimal"):
            raise ValueError(f"prior must be 'uniform' or 'optimal', got {prior!r}")
        self.solver = solver
        self.prior = prior

    def evaluate(self, states: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Return logits ``(B, A)`` and exact values ``(B,)`` for the player to move."""
        num_actions = self.solver.game.num_distinct_actions()
        logits = np.zeros((len(states), num_actions))
        values = np.empty(len(states))
        for i, s in enumerate(states):
            values[i] = self.solver.value(s)
            if self.prior == "optimal":
                q = self.solver.action_values(s)
                logits[i] = np.where(q >= np.nanmax(q), 0.0, -5.0)
        return logits, values
