"""__PKG_SUMMARY__"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("__PKG_NAME__")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
