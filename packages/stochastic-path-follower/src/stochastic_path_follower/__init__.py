"""stochastic-path-follower: a learned, dimension-free tracker of a drifting stochastic optimum.

Public API: :class:`StochasticPathFollower` (fit / track / save / load),
:class:`SPFOptimizer` (a ``torch.optim.Optimizer``), the problems
:class:`DriftingLeastSquares` and :class:`DriftingLogistic` with the :class:`Scenario`
protocol, the metrics :func:`tracking_error` and :func:`dynamic_regret`, and the
baselines in :mod:`stochastic_path_follower.baselines`.
"""

from importlib.metadata import PackageNotFoundError, version

from stochastic_path_follower.follower import FEATURES, LSTMOptimizer, StochasticPathFollower
from stochastic_path_follower.metrics import dynamic_regret, relative_errors, tracking_error
from stochastic_path_follower.optim import SPFOptimizer
from stochastic_path_follower.problems import (
    DriftingLeastSquares,
    DriftingLogistic,
    LeastSquaresBatch,
    LogisticBatch,
    Minibatch,
    Scenario,
    stream,
)

try:
    __version__ = version("stochastic-path-follower")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "FEATURES",
    "DriftingLeastSquares",
    "DriftingLogistic",
    "LSTMOptimizer",
    "LeastSquaresBatch",
    "LogisticBatch",
    "Minibatch",
    "SPFOptimizer",
    "Scenario",
    "StochasticPathFollower",
    "__version__",
    "dynamic_regret",
    "relative_errors",
    "stream",
    "tracking_error",
]
