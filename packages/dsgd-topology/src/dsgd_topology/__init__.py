"""decentralized SGD over 12 topologies: every eigenvalue of the mixing matrix predicts the consensus error"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dsgd-topology")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
