"""FOAM: Shampoo with adaptive damping and eigendecomposition frequency from a staleness error"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("foam-shampoo")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
