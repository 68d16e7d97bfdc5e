"""The top eigenvector from two scalar measurements per sample (compressed Oja).

- :class:`CompressedOja`: ask/tell, for hardware that measures projections.
- :class:`CompressedOjaPCA`: a scikit-learn estimator (adaptive, non-adaptive, full,
  coordinate-sampling measurements).
- :mod:`compressed_oja.theory`: the abstract's three rates and :func:`sin2_error`.
"""

from importlib.metadata import PackageNotFoundError, version

from .estimator import CompressedOjaPCA
from .oja import CompressedOja
from .schedules import TheorySchedule, default_t0
from .theory import rates, sin2_error

try:
    __version__ = version("compressed-oja")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "CompressedOja",
    "CompressedOjaPCA",
    "TheorySchedule",
    "__version__",
    "default_t0",
    "rates",
    "sin2_error",
]
