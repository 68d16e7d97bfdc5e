"""Decentralized SGD and how every eigenvalue of the mixing matrix shapes it.

- :class:`DecentralizedSGD`: wraps a node's ``torch.optim`` optimizer and gossips its
  parameters with the neighbours after every step, over ``torch.distributed``
  (:class:`icml26_core.decentralized.GossipGroup`, gloo or NCCL, ``torchrun``).
- :class:`SimulatedDSGD`: the same update with every node stacked on dimension 0.
- :func:`mixing_schedule` / :class:`MixingSchedule`: a topology by name (12 static
  graphs and the time-varying one-peer exponential graph) as ``t -> W_t``;
  :func:`topology` and :func:`mixing_matrix` are the core's.
- :func:`spectral_profile`: spectral gap, the all-eigenvalue quantity, the
  heterogeneous quantity and :meth:`SpectralProfile.predicted_consensus`;
  :func:`schedule_profile`: the same predictors for a time-varying schedule.
"""

from importlib.metadata import PackageNotFoundError, version

from icml26_core.decentralized import mixing_matrix, one_peer_exponential, topology

from dsgd_topology.dsgd import ORDERS, DecentralizedSGD, SimulatedDSGD
from dsgd_topology.spectral import (
    ScheduleProfile,
    SpectralProfile,
    schedule_profile,
    spectral_profile,
)
from dsgd_topology.topologies import SCHEDULES, MixingSchedule, mixing_schedule

try:
    __version__ = version("dsgd-topology")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "ORDERS",
    "SCHEDULES",
    "DecentralizedSGD",
    "MixingSchedule",
    "ScheduleProfile",
    "SimulatedDSGD",
    "SpectralProfile",
    "__version__",
    "mixing_matrix",
    "mixing_schedule",
    "one_peer_exponential",
    "schedule_profile",
    "spectral_profile",
    "topology",
]
