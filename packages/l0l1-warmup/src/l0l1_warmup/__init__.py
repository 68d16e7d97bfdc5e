"""A one-parameter, loss-driven warm-up from the (L0, L1) curvature bound.

- :class:`L0L1Warmup`: the LR scheduler ``eta_t = eta_peak * base(t) / (1 + alpha (fbar_t - f*))``
  (``step(loss)`` after ``optimizer.step()``).
- :func:`estimate_constants`: sharpness (plain and Adam-preconditioned) against loss gap
  at checkpoints (:func:`snapshot`), the fitted ``K0 + K1 gap``, and the suggested ``alpha``.
- :func:`quartic_descent`: the theory check on ``f(x) = sum x_i^4``.
"""

from importlib.metadata import PackageNotFoundError, version

from l0l1_warmup.curvature import (
    CurvatureFit,
    EnvelopeFit,
    Snapshot,
    estimate_constants,
    fit_envelope,
    snapshot,
    top_eigenvalue,
)
from l0l1_warmup.scheduler import L0L1Warmup
from l0l1_warmup.theory import quartic_descent

try:
    __version__ = version("l0l1-warmup")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "CurvatureFit",
    "EnvelopeFit",
    "L0L1Warmup",
    "Snapshot",
    "__version__",
    "estimate_constants",
    "fit_envelope",
    "quartic_descent",
    "snapshot",
    "top_eigenvalue",
]
