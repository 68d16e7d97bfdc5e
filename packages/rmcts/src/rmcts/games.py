"""Game interface: two-player, zero-sum, deterministic, perfect-information open_spiel games.

Games come from open_spiel (``pyspiel``) through the core's ``icml26_core.datasets.load_game``
for the names it lists (tic-tac-toe, connect four, hex, go 9x9, with the core's defaults),
and from ``pyspiel.load_game`` for any other game string (``"hex(board_size=5)"``).
Searches only use ``clone``, ``apply_action``, ``legal_actions``, ``is_terminal``, ``returns``,
``current_player`` and ``observation_tensor`` of a state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["check_game", "encode_states", "legal_mask", "load_game"]


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
        ValueError: If the game is not two-player, zero-sum, deterministic, sequential and of
            perfect information (what the searches assume).

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
    check_game(loaded)
    return loaded


def check_game(game: Any) -> None:
    """Raise ValueError unless ``game`` is a game the searches support (see :func:`load_game`)."""
    pyspiel = _pyspiel()
    gt = game.get_type()
    problems = []
    if game.num_players() != 2:
        problems.append(f"{game.num_players()} players (need 2)")
    if gt.utility != pyspiel.GameType.Utility.ZERO_SUM:
        problems.append(f"utility {gt.utility} (need ZERO_SUM)")
    if gt.chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC:
        problems.append(f"chance mode {gt.chance_mode} (need DETERMINISTIC)")
    if gt.information != pyspiel.GameType.Information.PERFECT_INFORMATION:
        problems.append(f"information {gt.information} (need PERFECT_INFORMATION)")
    if gt.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        problems.append(f"dynamics {gt.dynamics} (need SEQUENTIAL)")
    if not gt.provides_observation_tensor:
        problems.append("no observation tensor")
    if problems:
        raise ValueError(f"game {gt.short_name!r} is not supported: " + "; ".join(problems))


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
