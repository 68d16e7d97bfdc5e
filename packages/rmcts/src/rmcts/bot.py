"""RMCTS and MCTS-UCB as ``pyspiel.Bot``s, to play in OpenSpiel's tools.

:class:`SearchBot` wraps a search (:class:`~rmcts.RMCTS` or :class:`~rmcts.MCTS`) so
that ``open_spiel.python.algorithms.evaluate_bots.evaluate_bots`` (and ``pyspiel``'s
own ``evaluate_bots``) can play it against open_spiel's ``MCTSBot`` or any other bot.
"""

from __future__ import annotations

from typing import Any

import pyspiel

__all__ = ["SearchBot"]


class SearchBot(pyspiel.Bot):
    """A ``pyspiel.Bot`` that searches every move afresh with an RMCTS or MCTS-UCB search.

    The search keeps no tree between moves, so :meth:`restart_at` and
    :meth:`inform_action` have nothing to update; they exist so that OpenSpiel's
    match runners can call them. At a chance node the bot returns
    ``pyspiel.INVALID_ACTION`` with the policy ``[(INVALID_ACTION, 1.0)]``, as open_spiel's
    ``MCTSBot`` does (the runner samples chance outcomes itself).

    Args:
        search: An object with ``search(state) -> SearchResult`` (:class:`~rmcts.RMCTS`,
            :class:`~rmcts.MCTS`).

    Attributes:
        search: The wrapped search.
        last_result: The :class:`~rmcts.SearchResult` of the latest move (None before one).

    Raises:
        TypeError: If ``search`` has no ``search`` method.

    Example:
        >>> import numpy as np
        >>> from open_spiel.python.algorithms.evaluate_bots import evaluate_bots
        >>> from rmcts import RMCTS, RolloutEvaluator, SearchBot, load_game
        >>> game = load_game("tic_tac_toe")
        >>> bot = SearchBot(RMCTS(RolloutEvaluator(seed=0), simulations=16))
        >>> returns = evaluate_bots(game.new_initial_state(), [bot, bot], np.random.default_rng(0))
        >>> len(returns)
        2
    """

    def __init__(self, search: Any) -> None:
        pyspiel.Bot.__init__(self)
        if not callable(getattr(search, "search", None)):
            raise TypeError(
                f"search must have a method search(state) -> SearchResult (RMCTS or MCTS), "
                f"got {type(search).__name__}"
            )
        self.search = search
        self.last_result: Any = None

    def provides_policy(self) -> bool:
        """True: :meth:`step_with_policy` returns the search's root policy."""
        return True

    def restart(self) -> None:
        """Nothing to reset (no tree is kept between moves)."""

    def restart_at(self, state: Any) -> None:
        """Nothing to reset (no tree is kept between moves)."""

    def inform_action(self, state: Any, player_id: int, action: int) -> None:
        """Nothing to update (the next move searches afresh)."""

    def inform_actions(self, state: Any, actions: Any) -> None:
        """Nothing to update (the next move searches afresh)."""

    def step_with_policy(self, state: Any) -> tuple[list[tuple[int, float]], int]:
        """Search from ``state``; return the policy over legal actions and the move.

        Returns:
            ``([(action, probability), ...] over the legal actions, action)``.

        Raises:
            ValueError: See :meth:`rmcts.RMCTS.search`.
        """
        if state.is_chance_node():
            return [(pyspiel.INVALID_ACTION, 1.0)], pyspiel.INVALID_ACTION
        result = self.search.search(state)
        self.last_result = result
        policy = [(int(a), float(result.policy[a])) for a in state.legal_actions()]
        return policy, int(result.action)

    def step(self, state: Any) -> int:
        """Search from ``state`` and return the move."""
        return self.step_with_policy(state)[1]
