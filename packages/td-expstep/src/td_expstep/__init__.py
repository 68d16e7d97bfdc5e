"""TD(0) with an exponential step-size schedule, no problem constants needed.

The method: :class:`LinearTD` with :class:`ExponentialSchedule` (numpy), or the torch
scheduler :class:`ExponentialStepSize` (needs ``td-expstep[torch]``); MRP tools for
gymnasium's toy-text environments in :mod:`td_expstep.mrp`.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from td_expstep.mrp import (
    ChainSampler,
    IIDSampler,
    TrajectorySampler,
    boyan_chain,
    exact_value,
    mixing_time,
    mrp_from_env,
    omega,
    random_features,
    random_walk,
    stationary_distribution,
    td_fixed_point,
)
from td_expstep.schedules import (
    ConstantSchedule,
    ExponentialSchedule,
    InverseTimeSchedule,
    exponential_step_size,
    regularization,
)
from td_expstep.td import LinearTD, lstd

try:
    __version__ = version("td-expstep")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "ExponentialStepSize":  # torch is optional: import it only when asked
        from td_expstep.scheduler import ExponentialStepSize

        return ExponentialStepSize
    raise AttributeError(f"module 'td_expstep' has no attribute {name!r}")


__all__ = [
    "ChainSampler",
    "ConstantSchedule",
    "ExponentialSchedule",
    "ExponentialStepSize",
    "IIDSampler",
    "InverseTimeSchedule",
    "LinearTD",
    "TrajectorySampler",
    "__version__",
    "boyan_chain",
    "exact_value",
    "exponential_step_size",
    "lstd",
    "mixing_time",
    "mrp_from_env",
    "omega",
    "random_features",
    "random_walk",
    "regularization",
    "stationary_distribution",
    "td_fixed_point",
]
