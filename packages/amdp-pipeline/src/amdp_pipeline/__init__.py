"""asynchronous multi-directional pipeline parallelism with bounded forward/backward weight mismatch"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("amdp-pipeline")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
