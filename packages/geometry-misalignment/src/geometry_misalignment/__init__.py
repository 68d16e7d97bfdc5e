"""geometry-misalignment: calibrated Wasserstein-metric preconditioning for Sinkhorn matching.

Public API: :func:`misalignment` (the condition number of the pulled-back Wasserstein
metric), :class:`WassersteinNaturalGradient` (preconditioned steps),
:class:`CalibratedOptimizer` (preconditions only when misalignment is high),
:func:`sinkhorn_divergence` and :class:`SinkhornLoss` (geomloss, log domain),
:func:`wasserstein2` (exact OT cost through POT, optional).
"""

from importlib.metadata import PackageNotFoundError, version

from geometry_misalignment.geometry import (
    MetricOperator,
    lanczos_extremes,
    metric_matrix,
    misalignment,
)
from geometry_misalignment.optim import (
    CalibratedOptimizer,
    WassersteinNaturalGradient,
    conjugate_gradient,
)
from geometry_misalignment.sinkhorn import SinkhornLoss, sinkhorn_divergence, wasserstein2

try:
    __version__ = version("geometry-misalignment")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "CalibratedOptimizer",
    "MetricOperator",
    "SinkhornLoss",
    "WassersteinNaturalGradient",
    "__version__",
    "conjugate_gradient",
    "lanczos_extremes",
    "metric_matrix",
    "misalignment",
    "sinkhorn_divergence",
    "wasserstein2",
]
