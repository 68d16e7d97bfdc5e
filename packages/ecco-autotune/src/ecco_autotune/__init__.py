"""ECCO: LLM-strategist-guided genetic search over LLVM pass sequences"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ecco-autotune")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
