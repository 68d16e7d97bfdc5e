"""RMCTS: recursive AlphaZero-style Monte-Carlo tree search with regularized posterior policies.

Public API: the regularized posterior of Grill et al. (2020) (:func:`pi_bar`,
:func:`regularized_policy`, :func:`lambda_n`), the searches (:class:`RMCTS`, and
AlphaZero's :class:`MCTS` with PUCT as the baseline), evaluators (a torch
:class:`PolicyValueNet` through :class:`NetworkEvaluator`, and random rollouts),
a ``pyspiel.Bot`` adapter (:class:`SearchBot`), an AlphaZero-style self-play trainer, an
exact minimax solver and head-to-head matches.
"""

from importlib.metadata import PackageNotFoundError, version

from rmcts.arena import (
    MatchResult,
    OpenSpielMCTSBot,
    RandomPlayer,
    play_match,
    random_openings,
    wilson_interval,
)
from rmcts.bot import SearchBot
from rmcts.evaluators import Evaluator, NetworkEvaluator, PolicyValueNet, RolloutEvaluator
from rmcts.games import check_game, check_state, encode_states, legal_mask, load_game
from rmcts.mctx_baseline import MctxGumbelMuZero
from rmcts.posterior import lambda_n, pi_bar, regularized_policy
from rmcts.search import MCTS, RMCTS, backup
from rmcts.selfplay import SelfPlayConfig, load_or_train, train_selfplay
from rmcts.solver import ExactEvaluator, MinimaxSolver
from rmcts.tree import Node, SearchResult

try:
    __version__ = version("rmcts")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "MCTS",
    "RMCTS",
    "Evaluator",
    "ExactEvaluator",
    "MatchResult",
    "MctxGumbelMuZero",
    "MinimaxSolver",
    "NetworkEvaluator",
    "Node",
    "OpenSpielMCTSBot",
    "PolicyValueNet",
    "RandomPlayer",
    "RolloutEvaluator",
    "SearchBot",
    "SearchResult",
    "SelfPlayConfig",
    "__version__",
    "backup",
    "check_game",
    "check_state",
    "encode_states",
    "lambda_n",
    "legal_mask",
    "load_game",
    "load_or_train",
    "pi_bar",
    "play_match",
    "random_openings",
    "regularized_policy",
    "train_selfplay",
    "wilson_interval",
]
