"""minimal augmentation for robust safety alignment by submodular selection of group actions"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("submodular-augment")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
