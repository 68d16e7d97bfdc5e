"""Adversarial-suffix detection as online change-point detection (one-sided CUSUM) on an LLM's next-token entropy stream"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cpd-online")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
