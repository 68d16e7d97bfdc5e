"""coherent coordinate descent: deterministic block zeroth-order optimizer reusing stale gradients"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cocd")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
