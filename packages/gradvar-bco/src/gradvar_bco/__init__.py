"""Gradient-variation regret for two-point bandit convex optimization.

Public API: the learner :class:`TwoPointOptimisticBCO` (ask/tell, vectorized over runs),
the one-point learner :class:`OnePointBoxLinear` (linear losses on a box, with a hint),
the ensemble :class:`GradVarEnsemble` (dynamic regret),
the domains :class:`Ball`, :class:`Box`, :class:`Simplex`, :func:`run` and
:func:`variation`.
"""

from importlib.metadata import PackageNotFoundError, version

from gradvar_bco.domains import Ball, Box, Domain, Simplex
from gradvar_bco.ensemble import GradVarEnsemble
from gradvar_bco.learner import TwoPointOptimisticBCO
from gradvar_bco.onepoint import OnePointBoxLinear, OnePointGradientDescent
from gradvar_bco.protocol import RunResult, run, variation

try:
    __version__ = version("gradvar-bco")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "Ball",
    "Box",
    "Domain",
    "GradVarEnsemble",
    "OnePointBoxLinear",
    "OnePointGradientDescent",
    "RunResult",
    "Simplex",
    "TwoPointOptimisticBCO",
    "__version__",
    "run",
    "variation",
]
