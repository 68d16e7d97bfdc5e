"""Score Anisotropy Directions: architecture-dependent NTK directions of score models, computed before training"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("score-anisotropy")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
