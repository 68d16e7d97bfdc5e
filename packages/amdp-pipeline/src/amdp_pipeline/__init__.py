"""Asynchronous multi-directional pipeline parallelism (AMDP) with bounded weight mismatch.

Schedules (AMDP and the GPipe, 1F1B, PipeDream and PipeDream-2BW baselines) from one
generator, :func:`make_schedule`; a simulator, :func:`simulate`; an exact one-process
executor of a schedule, :class:`Emulator`; Llama stages, :func:`split_llama`.
"""

from importlib.metadata import PackageNotFoundError, version

from amdp_pipeline.emulator import EmulationResult, Emulator, check_chain
from amdp_pipeline.schedule import (
    METHODS,
    Action,
    Schedule,
    SimulationResult,
    default_n_pipelines,
    make_schedule,
    placement,
    simulate,
)
from amdp_pipeline.stages import LlamaStage, split_llama

try:
    __version__ = version("amdp-pipeline")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "METHODS",
    "Action",
    "EmulationResult",
    "Emulator",
    "LlamaStage",
    "Schedule",
    "SimulationResult",
    "__version__",
    "check_chain",
    "default_n_pipelines",
    "make_schedule",
    "placement",
    "simulate",
    "split_llama",
]
