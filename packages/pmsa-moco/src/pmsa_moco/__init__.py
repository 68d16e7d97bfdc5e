"""Preference-modulated structural attention (PMSA) for neural multi-objective TSP.

A decomposition-based neural constructive solver (POMO/PMOCO style): one attention
model conditioned on a preference solves the scalarized subproblem of the M-objective
TSP; PMSA adds preference-modulated edge features as attention biases and an edge
aggregation step. :class:`NodeOnlyModel` is the same network without edges.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pmsa_moco.model import NodeOnlyModel, PMSAModel
from pmsa_moco.problem import (
    MOTSPEnv,
    distance_matrices,
    hypervolume,
    is_tour,
    pareto_front,
    scalarize,
    tour_costs,
    uniform_instances,
    uniform_prefs,
)
from pmsa_moco.train import pomo_advantages, rollout, solve, train

try:
    __version__ = version("pmsa-moco")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "MOTSPEnv",
    "NodeOnlyModel",
    "PMSAModel",
    "__version__",
    "distance_matrices",
    "hypervolume",
    "is_tour",
    "pareto_front",
    "pomo_advantages",
    "rollout",
    "scalarize",
    "solve",
    "tour_costs",
    "train",
    "uniform_instances",
    "uniform_prefs",
]


def __getattr__(name: str) -> Any:
    # MOTSPProblem needs pymoo (extra `pymoo`): imported on first use, and kept out of
    # __all__ so that `from pmsa_moco import *` works without pymoo
    if name == "MOTSPProblem":
        from pmsa_moco.pymoo_problem import MOTSPProblem

        return MOTSPProblem
    raise AttributeError(f"module 'pmsa_moco' has no attribute {name!r}")
