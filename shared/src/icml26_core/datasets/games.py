"""Board games from OpenSpiel (``pyspiel``), compiled into the ``open_spiel`` wheel.

``load_game(name, **params)`` returns a ``pyspiel.Game``; states come from
``game.new_initial_state()``, observations from ``state.observation_tensor()`` (a flat
list of floats of ``game.observation_tensor_size()``; reshape with
``game.observation_tensor_shape()``, planes first).

| name | board | actions | observation | players |
| --- | --- | --- | --- | --- |
| tic_tac_toe | 3 x 3 | 9 | (3, 3, 3) | 2 |
| connect_four | 6 rows x 7 columns | 7 | (3, 6, 7) | 2 |
| hex | 11 x 11 (``board_size=`` to change) | 121 | (9, 11, 11) | 2 |
| go | 9 x 9, komi 7.5 (``board_size=`` to change) | 82 (81 + pass) | (4, 9, 9) | 2 |

Source: OpenSpiel (DeepMind), Apache-2.0; the games are rules, not data.
"""

from __future__ import annotations

from typing import Any

from icml26_core._lazy import require
from icml26_core.datasets._registry import DatasetInfo, dataset_info, register

__all__ = ["load_game"]

# name -> (pyspiel short name, default parameters, shape text, description)
_GAMES: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "tic_tac_toe": ("tic_tac_toe", {}, "board 3x3, 9 actions, obs (3, 3, 3)", "Tic-tac-toe"),
    "connect_four": (
        "connect_four",
        {},
        "board 6x7, 7 actions, obs (3, 6, 7)",
        "Connect four",
    ),
    "hex": ("hex", {}, "board 11x11, 121 actions, obs (9, 11, 11)", "Hex, no swap rule"),
    "go": (
        "go",
        {"board_size": 9, "komi": 7.5},
        "board 9x9, 82 actions, obs (4, 9, 9)",
        "Go on 9x9, Tromp-Taylor rules, komi 7.5",
    ),
}

for _name, (_short, _params, _shape, _desc) in _GAMES.items():
    register(
        DatasetInfo(
            name=_name,
            kind="game",
            loader="icml26_core.datasets.games.load_game",
            extra="games",
            modules=("pyspiel",),
            shape=_shape,
            source=f"OpenSpiel (pyspiel.load_game({_short!r}), compiled into the wheel)",
            license="Apache-2.0 (OpenSpiel)",
            description=_desc,
        )
    )


def load_game(name: str, **params: Any) -> Any:
    """Load an OpenSpiel game by name, with our defaults and optional overrides.

    Args:
        name: ``"tic_tac_toe"``, ``"connect_four"``, ``"hex"`` or ``"go"`` (9x9),
            case-insensitive.
        **params: Game parameters that override the defaults, e.g.
            ``load_game("hex", board_size=7)`` (see ``game.get_parameters()``).

    Returns:
        A ``pyspiel.Game``.

    Raises:
        ValueError: If ``name`` is unknown (lists the known ones) or pyspiel rejects a
            parameter.
        icml26_core._lazy.MissingExtraError: If open_spiel is not installed
            (``pip install 'icml26-core[games]'``).

    Example:
        >>> game = load_game("tic_tac_toe")
        >>> game.num_distinct_actions()
        9
    """
    info = dataset_info("game", name)
    pyspiel = require("pyspiel", "games")
    short, defaults, _, _ = _GAMES[info.name]
    merged = {**defaults, **params}
    try:
        return pyspiel.load_game(short, merged)
    except pyspiel.SpielError as exc:
        raise ValueError(f"pyspiel rejected parameters {merged} for {short!r}: {exc}") from exc
