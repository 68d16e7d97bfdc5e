"""Gradient-variation regret for two-point bandit convex optimization"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gradvar-bco")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
