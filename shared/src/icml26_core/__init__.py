"""Shared core of icml26-optim.

The core is small and lazy: importing it needs only numpy and rich. torch,
matplotlib and the dataset carriers are imported inside the functions that use
them and are declared as extras (``icml26-core[torch]``, ``[plot]``, ``[data]``).
"""

from importlib.metadata import PackageNotFoundError, version

from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table
from icml26_core.seeding import seed_everything

try:
    __version__ = version("icml26-core")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "Claim",
    "Experiment",
    "Result",
    "RunContext",
    "Table",
    "__version__",
    "seed_everything",
]
