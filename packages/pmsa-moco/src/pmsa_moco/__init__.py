"""preference-modulated structural attention (edge-biased attention) for neural multi-objective TSP"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pmsa-moco")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
