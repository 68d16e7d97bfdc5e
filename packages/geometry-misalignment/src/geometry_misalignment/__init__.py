"""geometry-misalignment: Wasserstein-metric preconditioning, calibrated by a measured condition number, for Sinkhorn distribution matching"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("geometry-misalignment")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
