"""transformers trained to descend the loss layer by layer (primal-dual)"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("descent-transformers")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
