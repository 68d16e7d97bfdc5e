"""step-parallel training: solve the triangular system of optimizer steps in windows (PASO)"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("paso-optim")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
