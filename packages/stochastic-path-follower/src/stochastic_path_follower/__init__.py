"""Stochastic Path Follower: a learned, dimension-free tracker of a drifting stochastic optimum"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("stochastic-path-follower")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
