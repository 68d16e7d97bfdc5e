"""Proximal multi-block ADMM for block anti-upper triangular constraints"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("prox-admm")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
