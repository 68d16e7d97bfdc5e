"""Decentralized stochastic gradient descent ascent with momentum and compressed, error-fed gossip"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("compressed-dsgda")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
