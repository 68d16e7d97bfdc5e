"""depth-progressive monotonic learning: local belief objectives refined across depth, unlocked block updates"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dmol")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
