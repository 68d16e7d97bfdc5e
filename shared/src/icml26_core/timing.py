"""Wall-clock timers that synchronize CUDA, and fair timing comparisons.

:func:`compare_times` times two callables interleaved in one process after a warm-up;
:func:`warm_budget` derives a time budget from several warm runs, never one cold run.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icml26_core.device import synchronize

if TYPE_CHECKING:
    from icml26_core.stats import Evidence


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


@dataclass(frozen=True)
class TimeComparison:
    """Interleaved wall times of two callables, measured in one process.

    Attributes:
        names: Labels of A and B.
        times_a: Seconds per call of A, one per round, shape ``(repeats,)``.
        times_b: Seconds per call of B, same rounds.
        warmup: Calls of each made (and discarded) before the rounds.
        threads: torch's intra-op thread count during the rounds (None without torch).
    """

    names: tuple[str, str]
    times_a: tuple[float, ...]
    times_b: tuple[float, ...]
    warmup: int
    threads: int | None

    @property
    def median_a(self) -> float:
        """Median seconds of A."""
        return float(statistics.median(self.times_a))

    @property
    def median_b(self) -> float:
        """Median seconds of B."""
        return float(statistics.median(self.times_b))

    def speedup(self, *, at_least: float = 1.0) -> Evidence:
        """Speed-up of A over B (ratio of medians, paired rounds) with its bootstrap CI.

        Args:
            at_least: Speed-up the decision compares with.

        Returns:
            :func:`icml26_core.stats.ratio_of_medians` on the paired rounds.
        """
        from icml26_core.stats import ratio_of_medians

        return ratio_of_medians(
            self.times_a, self.times_b, at_least=at_least, paired=True, names=self.names
        )


def compare_times(
    fn_a: Callable[[], Any],
    fn_b: Callable[[], Any],
    *,
    repeats: int = 9,
    warmup: int = 1,
    names: tuple[str, str] = ("A", "B"),
    device: Any = "cpu",
) -> TimeComparison:
    """Time two callables interleaved (A B B A A B ...) after a warm-up, in one process.

    Interleaving puts both under the same machine load, caches and thread count, so
    the ratio of their medians is a fair comparison even on a busy machine; the order
    alternates each round so neither always runs second. CUDA is synchronized around
    each call.

    Args:
        fn_a: Zero-argument callable for A (its return value is discarded).
        fn_b: Same for B.
        repeats: Rounds to time (one call of each per round), >= 1.
        warmup: Untimed calls of each before the rounds, >= 0.
        names: Labels of A and B.
        device: Device to synchronize.

    Returns:
        The :class:`TimeComparison`.

    Raises:
        ValueError: If ``repeats < 1`` or ``warmup < 0``.

    Example:
        >>> c = compare_times(lambda: sum(range(100)), lambda: sum(range(10_000)), repeats=5)
        >>> len(c.times_a), len(c.times_b)
        (5, 5)
    """
    if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    if isinstance(warmup, bool) or int(warmup) != warmup or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    for _ in range(int(warmup)):
        fn_a()
        fn_b()
    ta: list[float] = []
    tb: list[float] = []
    for i in range(int(repeats)):
        order = ((fn_a, ta), (fn_b, tb)) if i % 2 == 0 else ((fn_b, tb), (fn_a, ta))
        for fn, out in order:
            with Timer(device) as t:
                fn()
            out.append(t.elapsed)
    threads = None
    if "torch" in sys.modules:
        threads = int(sys.modules["torch"].get_num_threads())
    return TimeComparison(tuple(names), tuple(ta), tuple(tb), int(warmup), threads)  # type: ignore[arg-type]


def warm_budget(
    fn: Callable[[], Any], *, runs: int = 3, warmup: int = 1, device: Any = "cpu"
) -> float:
    """Median wall time of ``runs`` warm calls of ``fn``: a budget that one cold run skews.

    Args:
        fn: Zero-argument callable.
        runs: Timed calls, >= 1.
        warmup: Untimed calls first, >= 0.
        device: Device to synchronize.

    Returns:
        The median in seconds.

    Raises:
        ValueError: If ``runs < 1`` or ``warmup < 0``.
    """
    if isinstance(runs, bool) or int(runs) != runs or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
    if isinstance(warmup, bool) or int(warmup) != warmup or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    for _ in range(int(warmup)):
        fn()
    times = []
    for _ in range(int(runs)):
        with Timer(device) as t:
            fn()
        times.append(t.elapsed)
    return float(statistics.median(times))
