"""Wall-clock timers that synchronize CUDA before reading the clock."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from icml26_core.device import synchronize


@dataclass
class Timer:
    """Context manager measuring elapsed wall time in seconds.

    CUDA work queued on ``device`` is waited for on entry and exit, so the time
    covers the kernels and not only their launch.

    Example:
        >>> with Timer() as t:
        ...     _ = sum(range(1000))
        >>> t.elapsed >= 0.0
        True
    """

    device: Any = "cpu"
    elapsed: float = field(default=0.0, init=False)
    _start: float = field(default=0.0, init=False, repr=False)

    def __enter__(self) -> Timer:
        synchronize(self.device)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        synchronize(self.device)
        self.elapsed = time.perf_counter() - self._start


def now(device: Any = "cpu") -> float:
    """Return ``time.perf_counter()`` after synchronizing ``device``."""
    synchronize(device)
    return time.perf_counter()
