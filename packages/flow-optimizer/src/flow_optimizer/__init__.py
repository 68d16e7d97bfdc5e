"""FlowOptimizer: a learned population optimizer trained by flow matching, then unrolling.

Public API: :class:`VelocityField`, :class:`FlowOptimizer`, :class:`OptResult`, the
problem families in :mod:`flow_optimizer.problems` and the equal-budget baselines in
:mod:`flow_optimizer.baselines`.
"""

from importlib.metadata import PackageNotFoundError, version

from flow_optimizer import baselines, problems
from flow_optimizer.optimizer import (
    N_FEATURES,
    FlowOptimizer,
    OptResult,
    VelocityField,
    population_features,
)

try:
    __version__ = version("flow-optimizer")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "N_FEATURES",
    "FlowOptimizer",
    "OptResult",
    "VelocityField",
    "__version__",
    "baselines",
    "population_features",
    "problems",
]
