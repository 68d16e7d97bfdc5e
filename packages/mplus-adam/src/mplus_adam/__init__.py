"""M+Adam: additive plus multiplicative Adam for low-precision master weights (bf16/fp8/fp4) without an fp32 copy"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mplus-adam")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
