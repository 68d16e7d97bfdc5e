"""M+Adam: additive plus multiplicative Adam steps on low-precision master weights.

Public API:
    MPlusAdam, LowPrecisionAdam, Madam: ``torch.optim.Optimizer`` subclasses whose
        parameters are the master weights, kept on a bf16 / fp8 / fp4 grid.
    stuck_fraction, binned_stuck: share of updates rounded away, binned by ``|w|``.
    state_bytes: bytes of master weights and optimizer state.
    formats: ``quantize`` and the formats' grids.
"""

from importlib.metadata import PackageNotFoundError, version

from mplus_adam import formats
from mplus_adam.formats import FORMATS, quantize
from mplus_adam.optim import (
    MODES,
    LowPrecisionAdam,
    Madam,
    MPlusAdam,
    binned_stuck,
    state_bytes,
    stuck_fraction,
)

try:
    __version__ = version("mplus-adam")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "FORMATS",
    "MODES",
    "LowPrecisionAdam",
    "MPlusAdam",
    "Madam",
    "__version__",
    "binned_stuck",
    "formats",
    "quantize",
    "state_bytes",
    "stuck_fraction",
]
