"""Head-to-head matches between searches, with both colours, openings and confidence intervals.

Games can be spread over worker processes (``play_match(..., executor=...)``): each game
is played whole inside one worker, both players moving in turn in the same process, so
a busy machine slows both sides alike and per-move times stay comparable.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "MatchResult",
    "OpenSpielMCTSBot",
    "RandomPlayer",
    "play_match",
    "random_openings",
    "wilson_interval",
]


def wilson_interval(score: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a mean score in ``[0, 1]`` over ``n`` games.

    Draws count as half a win, so the interval is the binomial one applied to the mean
    score (slightly conservative when there are draws). Claims use the core's
    ``icml26_core.stats.win_rate``, which also gives the test.

    Raises:
        ValueError: If ``n`` < 1 or ``score`` is outside ``[0, 1]``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score must be in [0, 1], got {score}")
    from icml26_core.stats import win_rate
    from scipy.stats import norm

    # scipy's Wilson interval (through the core), on the nearest half-point count
    half_points = round(2 * score * n)
    wins, draws = half_points // 2, half_points % 2
    ev = win_rate(wins, draws, n - wins - draws, min_n=1, confidence=float(2 * norm.cdf(z) - 1))
    return float(min(ev.ci_low, score)), float(max(ev.ci_high, score))


class OpenSpielMCTSBot:
    """open_spiel's C++ ``MCTSBot`` with random rollouts, as an external reference player.

    Picklable (it is rebuilt from its arguments), so it can play in worker processes.

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
        self._args = (game, simulations, rollouts, uct_c, seed)
        self._build()

    def _build(self) -> None:
        import pyspiel

        game, simulations, rollouts, uct_c, seed = self._args
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

    def __getstate__(self) -> dict[str, Any]:
        return {"_args": self._args}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._args = state["_args"]
        self._build()

    def step(self, state: Any) -> int:
        """Return the bot's move in ``state``."""
        return int(self.bot.step(state))


class RandomPlayer:
    """The floor: a uniformly random legal move.

    Args:
        seed: Seed of its generator.
    """

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def step(self, state: Any) -> int:
        """Return a uniformly random legal action of ``state``."""
        return int(self.rng.choice(state.legal_actions()))


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
        outcomes: ``a``'s score in each game, in the order of the openings (``a`` first,
            then ``a`` second, per opening).
        move_seconds: Wall time of every move of ``a`` and of ``b``.
        game_seconds: Per game, the median time per move of ``a`` and of ``b`` (NaN for a
            side that did not move), for comparisons paired by game.
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
    move_seconds: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    game_seconds: list[tuple[float, float]] = field(default_factory=list)


def random_openings(game: Any, count: int, plies: int, rng: np.random.Generator) -> list[list[int]]:
    """Up to ``count`` distinct random opening sequences of ``plies`` moves (non-terminal).

    Chance outcomes within the opening are drawn with their probabilities.
    """
    openings: set[tuple[int, ...]] = set()
    tries = 0
    while len(openings) < count and tries < 50 * count:
        tries += 1
        s = game.new_initial_state()
        seq = []
        for _ in range(plies):
            if s.is_terminal():
                break
            if s.is_chance_node():
                outcomes, probs = zip(*s.chance_outcomes(), strict=True)
                a = int(outcomes[rng.choice(len(probs), p=probs)])
            else:
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


def _play_games(
    game: Any, a: Any, b: Any, games: Sequence[tuple[Sequence[int], int]], seed: int
) -> list[tuple[float, list[float], list[float], list[float], list[float]]]:
    """Play ``(opening, a_seat)`` games; per game: a's score, a's/b's move times and evals."""
    rng = np.random.default_rng(seed)
    out = []
    for opening, a_seat in games:
        state = game.new_initial_state()
        for action in opening:
            state.apply_action(int(action))
        seats = {a_seat: (a, 0), 1 - a_seat: (b, 1)}
        times: list[list[float]] = [[], []]
        evals: list[list[float]] = [[], []]
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(outcomes[rng.choice(len(probs), p=probs)]))
                continue
            player, who = seats[state.current_player()]
            action, seconds, n_eval = _move(player, state)
            times[who].append(seconds)
            evals[who].append(n_eval)
            state.apply_action(action)
        out.append((0.5 * (state.returns()[a_seat] + 1.0), times[0], times[1], evals[0], evals[1]))
    return out


def play_match(
    game: Any,
    a: Any,
    b: Any,
    openings: Sequence[Sequence[int]],
    *,
    executor: Executor | None = None,
    chunks: int | None = None,
    seed: int = 0,
) -> MatchResult:
    """Play every opening twice, ``a`` moving first once and second once.

    Args:
        game: The ``pyspiel.Game``.
        a: First player: ``search(state) -> SearchResult`` or ``step(state) -> action``.
        b: Second player, of the same kind.
        openings: Move sequences played before the players take over (``[[]]`` for none).
        executor: Optional ``concurrent.futures`` executor (e.g. a ``ProcessPoolExecutor``):
            the games are split into ``chunks`` parts played in its workers, each game
            whole in one worker. ``game``, ``a`` and ``b`` must then be picklable. The
            outcomes of deterministic players do not depend on the split; random players
            (and chance outcomes) draw from per-chunk copies of their generators.
        chunks: Parts to split the games into (default: 4 per worker, or 1 without an
            executor).
        seed: Seed of the chance outcomes drawn during the games (per chunk).

    Returns:
        The :class:`MatchResult` from ``a``'s point of view.

    Raises:
        ValueError: If ``openings`` is empty.
    """
    if len(openings) == 0:
        raise ValueError("openings must contain at least one (possibly empty) move sequence")
    games = [(list(o), seat) for o in openings for seat in (0, 1)]
    if executor is None:
        per_game = _play_games(game, a, b, games, seed)
    else:
        workers = getattr(executor, "_max_workers", 2)
        parts = max(1, min(len(games), chunks or 4 * workers))
        bounds = np.linspace(0, len(games), parts + 1).round().astype(int)
        futures = [
            executor.submit(_play_games, game, a, b, games[lo:hi], seed + k)
            for k, (lo, hi) in enumerate(itertools.pairwise(bounds))
            if hi > lo
        ]
        per_game = [g for f in futures for g in f.result()]
    outcomes = [g[0] for g in per_game]
    times = ([t for g in per_game for t in g[1]], [t for g in per_game for t in g[2]])
    evals = ([e for g in per_game for e in g[3]], [e for g in per_game for e in g[4]])
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
        move_seconds=times,
        game_seconds=[(_median(g[1]), _median(g[2])) for g in per_game],
    )


def _median(x: list[float]) -> float:
    return float(np.median(x)) if x else float("nan")
