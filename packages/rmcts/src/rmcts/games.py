"""Game interface: two-player, zero-sum, sequential, perfect-information open_spiel games.

Games come from open_spiel (``pyspiel``) through the core's ``icml26_core.datasets.load_game``
for the names it lists (tic-tac-toe, connect four, hex, go 9x9, with the core's defaults),
and from ``pyspiel.load_game`` for any other game string (``"hex(board_size=5)"``, ``"pig"``).
Deterministic games and games with explicit chance nodes (dice, as in ``pig``) are
supported; simultaneous-move and imperfect-information games are not. Searches only use
``clone``, ``apply_action``, ``legal_actions``, ``chance_outcomes``, ``is_terminal``,
``is_chance_node``, ``returns`` and ``current_player`` of a state; the network evaluator
also uses ``observation_tensor``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["check_game", "check_state", "encode_states", "legal_mask", "load_game"]


def _pyspiel() -> Any:
    try:
        import pyspiel
    except ImportError as err:  # pragma: no cover - open_spiel is a hard dependency
        raise ImportError("rmcts needs open_spiel: pip install open-spiel") from err
    return pyspiel


def load_game(game: str | Any) -> Any:
    """Load an open_spiel game by name (or pass a loaded ``pyspiel.Game`` through) and check it.

    Args:
        game: A game string such as ``"tic_tac_toe"``, ``"connect_four"`` or
            ``"hex(board_size=5)"``, or a ``pyspiel.Game``.

    Returns:
        The ``pyspiel.Game``.

    Raises:
        TypeError: If ``game`` is neither a string nor a ``pyspiel.Game``.
        ValueError: If the game is not what the searches support (see :func:`check_game`),
            or provides no observation tensor (what the network evaluator reads).

    Example:
        >>> load_game("tic_tac_toe").num_distinct_actions()
        9
    """
    pyspiel = _pyspiel()
    if isinstance(game, str):
        try:
            from icml26_core.datasets import load_game as core_load_game
        except ImportError:
            core_load_game = None
        loaded = None
        if core_load_game is not None and "(" not in game:
            try:
                loaded = core_load_game(game)
            except ValueError:  # not among the core's named games: ask pyspiel directly
                loaded = None
        if loaded is None:
            try:
                loaded = pyspiel.load_game(game)
            except pyspiel.SpielError as err:
                reason = str(err).split("Available games")[0].strip()  # drop the long list
                raise ValueError(
                    f"open_spiel cannot load game {game!r}: {reason} "
                    "(see pyspiel.registered_names())"
                ) from err
    elif isinstance(game, pyspiel.Game):
        loaded = game
    else:
        raise TypeError(
            f"game must be a game name (str) or a pyspiel.Game, got {type(game).__name__}"
        )
    check_game(loaded, observation=True)
    return loaded


def check_game(game: Any, *, observation: bool = False) -> None:
    """Raise ValueError unless the searches support ``game``.

    Supported: two players, zero-sum, sequential turns, perfect information, deterministic
    or with explicit chance nodes (``chance_outcomes`` lists every outcome and its
    probability), utilities within ``[-1, 1]``.

    Args:
        game: A ``pyspiel.Game``.
        observation: Also require an observation tensor (what :class:`NetworkEvaluator`
            encodes).

    Raises:
        ValueError: Listing every unsupported property, with what is needed.
    """
    pyspiel = _pyspiel()
    gt = game.get_type()
    problems = []
    if gt.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        problems.append(
            f"dynamics {gt.dynamics.name} (players move simultaneously; the searches need "
            "sequential turns, one player to move at a time)"
        )
    if gt.information != pyspiel.GameType.Information.PERFECT_INFORMATION:
        problems.append(
            f"information {gt.information.name} (the searches need perfect information: a "
            "state's legal moves and values must not depend on hidden cards or moves)"
        )
    if game.num_players() != 2:
        problems.append(f"{game.num_players()} players (need 2)")
    if gt.utility != pyspiel.GameType.Utility.ZERO_SUM:
        problems.append(f"utility {gt.utility.name} (need ZERO_SUM)")
    allowed = (
        pyspiel.GameType.ChanceMode.DETERMINISTIC,
        pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    )
    if gt.chance_mode not in allowed:
        problems.append(
            f"chance mode {gt.chance_mode.name} (need DETERMINISTIC or EXPLICIT_STOCHASTIC, "
            "whose chance nodes list their outcomes)"
        )
    lo, hi = float(game.min_utility()), float(game.max_utility())
    if lo < -1.0 or hi > 1.0:
        problems.append(
            f"utilities in [{lo:g}, {hi:g}] (values must lie in [-1, 1]; scale the returns)"
        )
    if observation and not gt.provides_observation_tensor:
        problems.append("no observation tensor (the network evaluator encodes it)")
    if problems:
        raise ValueError(f"game {gt.short_name!r} is not supported: " + "; ".join(problems))


def check_state(state: Any) -> None:
    """Raise ValueError unless a search can start from ``state``.

    A root must be a decision node of a supported game (:func:`check_game`): not terminal,
    not a chance node (sample its outcome first; chance nodes below the root are handled),
    with at least one legal action.

    Raises:
        ValueError: Naming the state and what is wrong with it.
    """
    check_game(state.get_game())
    if state.is_terminal():
        raise ValueError(
            f"cannot search from a terminal state (no legal actions): {describe_state(state)}"
        )
    if state.is_chance_node():
        raise ValueError(
            "cannot search from a chance node: no player chooses there; apply an outcome from "
            f"state.chance_outcomes() first (chance nodes below the root are handled): "
            f"{describe_state(state)}"
        )
    if not state.legal_actions():
        raise ValueError(f"state is not terminal but has no legal actions: {describe_state(state)}")


def describe_state(state: Any) -> str:
    """A one-line name of a state: its game, history and printed form."""
    try:
        text = " / ".join(line.strip() for line in str(state).splitlines() if line.strip())
    except Exception:  # pragma: no cover - a state whose __str__ fails
        text = "?"
    if len(text) > 200:
        text = text[:197] + "..."
    return (
        f"game {state.get_game().get_type().short_name!r}, history {state.history()}, "
        f"state {text!r}"
    )


def legal_mask(state: Any, num_actions: int) -> np.ndarray:
    """Boolean mask of shape ``(num_actions,)`` of the legal actions of ``state``."""
    mask = np.zeros(num_actions, dtype=bool)
    mask[state.legal_actions()] = True
    return mask


def encode_states(states: Sequence[Any]) -> np.ndarray:
    """Observation tensors of non-terminal states, float32 of shape ``(B, obs_size)``.

    The observation is taken for the player to move, so a network sees the position
    the way the player who has to choose sees it.

    Raises:
        ValueError: If ``states`` is empty or contains a terminal state.
    """
    if len(states) == 0:
        raise ValueError("states must be a nonempty sequence of non-terminal states")
    rows = []
    for s in states:
        if s.is_terminal():
            raise ValueError("cannot encode a terminal state (it has no player to move)")
        rows.append(s.observation_tensor(s.current_player()))
    return np.asarray(rows, dtype=np.float32)
