"""OPIC: validation-free evolutionary model merging that preserves in-context learning"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("opic-merging")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
