"""Head-to-head matches between searches, with both colours, openings and confidence intervals."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["MatchResult", "OpenSpielMCTSBot", "play_match", "random_openings", "wilson_interval"]


def wilson_interval(score: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a mean score in ``[0, 1]`` over ``n`` games.

    Draws count as half a win, so the interval is the binomial one applied to the mean
    score (slightly conservative when there are draws).

    Raises:
        ValueError: If ``n`` < 1 or ``score`` is outside ``[0, 1]``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score must be in [0, 1], got {score}")
    denom = 1 + z * z / n
    centre = (score + z * z / (2 * n)) / denom
    half = z * np.sqrt(score * (1 - score) / n + z * z / (4 * n * n)) / denom
    # the interval always contains the observed score (rounding aside)
    low = min(max(0.0, centre - half), score)
    high = max(min(1.0, centre + half), score)
    return float(low), float(high)


class OpenSpielMCTSBot:
    """open_spiel's C++ ``MCTSBot`` with random rollouts, as an external reference player.

    Args:
        game: The ``pyspiel.Game``.
        simulations: MCTS simulations per move.
        rollouts: Random rollouts per leaf.
        uct_c: UCT exploration constant.
        seed: Seed of the bot and its rollouts.
    """

    def __init__(
        self,
        game: Any,
        simulations: int = 1000,
        rollouts: int = 1,
        uct_c: float = 2.0,
        seed: int = 0,
    ) -> None:
        import pyspiel

        self.simulations = simulations
        evaluator = pyspiel.RandomRolloutEvaluator(rollouts, seed)
        self._evaluator = evaluator  # keep alive: the bot holds only a reference
        self.bot = pyspiel.MCTSBot(
            game,
            evaluator,
            uct_c,
            simulations,
            10**7,
            False,
            seed,
            False,
            pyspiel.ChildSelectionPolicy.UCT,
        )

    def step(self, state: Any) -> int:
        """Return the bot's move in ``state``."""
        return int(self.bot.step(state))


@dataclass
class MatchResult:
    """Outcome of a match, from the first player's (``a``) point of view.

    Attributes:
        games: Games played.
        wins, draws, losses: Counts for player ``a``.
        score: Mean score of ``a`` (win 1, draw 0.5, loss 0).
        ci_low, ci_high: 95% Wilson interval of ``score``.
        seconds_per_move: Mean wall time per move of ``a`` and of ``b``.
        evaluations_per_move: Mean evaluator states per move of ``a`` and ``b`` (NaN if unknown).
    """

    games: int
    wins: int
    draws: int
    losses: int
    score: float
    ci_low: float
    ci_high: float
    seconds_per_move: tuple[float, float]
    evaluations_per_move: tuple[float, float]
    outcomes: list[float] = field(default_factory=list)


def random_openings(game: Any, count: int, plies: int, rng: np.random.Generator) -> list[list[int]]:
    """Up to ``count`` distinct random opening sequences of ``plies`` moves (non-terminal)."""
    openings: set[tuple[int, ...]] = set()
    tries = 0
    while len(openings) < count and tries < 50 * count:
        tries += 1
        s = game.new_initial_state()
        seq = []
        for _ in range(plies):
            if s.is_terminal():
                break
            a = int(rng.choice(s.legal_actions()))
            s.apply_action(a)
            seq.append(a)
        if not s.is_terminal():
            openings.add(tuple(seq))
    return [list(o) for o in sorted(openings)]


def _move(player: Any, state: Any) -> tuple[int, float, float]:
    t0 = time.perf_counter()
    if hasattr(player, "search"):
        res = player.search(state)
        return res.action, time.perf_counter() - t0, float(res.evaluations)
    action = player.step(state)
    return int(action), time.perf_counter() - t0, float("nan")


def play_match(game: Any, a: Any, b: Any, openings: Sequence[Sequence[int]]) -> MatchResult:
    """Play every opening twice, ``a`` moving first once and second once.

    Args:
        game: The ``pyspiel.Game``.
        a: First player: ``search(state) -> SearchResult`` or ``step(state) -> action``.
        b: Second player, of the same kind.
        openings: Move sequences played before the players take over (``[[]]`` for none).

    Returns:
        The :class:`MatchResult` from ``a``'s point of view.

    Raises:
        ValueError: If ``openings`` is empty.
    """
    if len(openings) == 0:
        raise ValueError("openings must contain at least one (possibly empty) move sequence")
    outcomes: list[float] = []
    times: list[list[float]] = [[], []]
    evals: list[list[float]] = [[], []]
    for opening in openings:
        for a_seat in (0, 1):
            state = game.new_initial_state()
            for action in opening:
                state.apply_action(int(action))
            seats = {a_seat: (a, 0), 1 - a_seat: (b, 1)}
            while not state.is_terminal():
                player, who = seats[state.current_player()]
                action, seconds, n_eval = _move(player, state)
                times[who].append(seconds)
                evals[who].append(n_eval)
                state.apply_action(action)
            outcomes.append(0.5 * (state.returns()[a_seat] + 1.0))
    arr = np.asarray(outcomes)
    low, high = wilson_interval(float(arr.mean()), len(arr))
    return MatchResult(
        games=len(arr),
        wins=int(np.sum(arr == 1.0)),
        draws=int(np.sum(arr == 0.5)),
        losses=int(np.sum(arr == 0.0)),
        score=float(arr.mean()),
        ci_low=low,
        ci_high=high,
        seconds_per_move=(float(np.mean(times[0])), float(np.mean(times[1]))),
        evaluations_per_move=(float(np.mean(evals[0])), float(np.mean(evals[1]))),
        outcomes=outcomes,
    )
