"""FlowOptimizer: a learned population optimizer trained by flow matching on objective-sampled targets, then fine-tuned by unrolling"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("flow-optimizer")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
