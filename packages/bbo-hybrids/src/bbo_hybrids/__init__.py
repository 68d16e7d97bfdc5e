"""ES, CBO and OVI as one population step, and their ES-OVI and CBO-OVI hybrids.

Ask/tell optimizers (minimization) that differ in fitness aggregation (rank vs Gibbs
weights: the preference for flat or sharp minima) and consensus scope (one Gaussian,
particles with a global consensus, or Gaussians with a local consensus).
"""

from importlib.metadata import PackageNotFoundError, version

from .aggregation import centred_ranks, es_gradient, gibbs_weights, soft_min
from .optimizers import (
    CBO,
    CBOOVI,
    ES,
    ESOVI,
    OVI,
    OptimizeResult,
    PopulationOptimizer,
    default_popsize,
)

try:
    __version__ = version("bbo-hybrids")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "CBO",
    "CBOOVI",
    "ES",
    "ESOVI",
    "OVI",
    "OptimizeResult",
    "PopulationOptimizer",
    "__version__",
    "centred_ranks",
    "default_popsize",
    "es_gradient",
    "gibbs_weights",
    "soft_min",
]
