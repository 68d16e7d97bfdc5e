"""Coherent coordinate descent (CoCD): a deterministic block zeroth-order optimizer.

CoCD refreshes one cyclic block of finite-difference gradient entries per step and
moves every coordinate along the partly stale estimate (``k + 1`` loss queries per
step, independent of the dimension). Baselines with the same closure contract:
:class:`BCCD`, :class:`SPSA`, :class:`RandomSubspace`, :class:`RandomCoordinate`.
"""

from importlib.metadata import PackageNotFoundError, version

from cocd.functional import MinimizeResult, batched_loss, minimize
from cocd.optim import BCCD, SPSA, CoCD, RandomCoordinate, RandomSubspace, block_size_for_budget

try:
    __version__ = version("cocd")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "BCCD",
    "SPSA",
    "CoCD",
    "MinimizeResult",
    "RandomCoordinate",
    "RandomSubspace",
    "__version__",
    "batched_loss",
    "block_size_for_budget",
    "minimize",
]
