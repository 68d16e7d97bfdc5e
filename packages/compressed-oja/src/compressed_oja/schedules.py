"""Step-size schedules: the theory's eta_t = alpha / (Delta (t + t0)), or your own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from icml26_core.validation import check_choice, check_float, check_int

#: Power p of d in the default offset t0 = d^p lambda1 / Delta, per measurement scheme:
#: the dimension factor of each scheme's rate (full d, adaptive d^2, non-adaptive d^3).
DIMENSION_POWER = {"full": 1, "adaptive": 2, "nonadaptive": 3, "coordinate": 3}


@dataclass(frozen=True)
class TheorySchedule:
    """eta_t = alpha / (eigengap (t + t0)), t = 1, 2, ... (the rate-optimal 1/t decay).

    With ``alpha > 1/2`` the error of Oja-type updates decays as 1/t; ``alpha = 2`` is
    the usual choice. ``eigengap`` is Delta = lambda1 - lambda2 in the units of the data's
    variance; a Delta that is too large (alpha / Delta too small) loses the 1/t rate.

    Attributes:
        eigengap: Delta > 0.
        t0: Offset >= 0 (damps the first steps).
        alpha: Numerator > 0.
    """

    eigengap: float
    t0: float
    alpha: float = 2.0

    def __post_init__(self) -> None:
        check_float("eigengap", self.eigengap, low=0.0, low_inclusive=False)
        check_float("t0", self.t0, low=0.0)
        check_float("alpha", self.alpha, low=0.0, low_inclusive=False)

    def __call__(self, t: int) -> float:
        """The step size at step ``t`` (1, 2, ...)."""
        return self.alpha / (self.eigengap * (t + self.t0))


def default_t0(dim: int, measurement: str, eigenvalue_ratio: float = 1.0) -> float:
    """The offset t0 = d^p lambda1 / Delta of the theory schedule.

    Args:
        dim: Ambient dimension d >= 2.
        measurement: ``"full"``, ``"adaptive"``, ``"nonadaptive"`` or ``"coordinate"``
            (p = 1, 2, 3, 3).
        eigenvalue_ratio: lambda1 / Delta (>= 1); 1 when unknown.

    Returns:
        t0 as a float.
    """
    check_int("dim", dim, low=2)
    check_choice("measurement", measurement, tuple(DIMENSION_POWER))
    check_float("eigenvalue_ratio", eigenvalue_ratio, low=1.0)
    return float(dim ** DIMENSION_POWER[measurement]) * eigenvalue_ratio


Schedule = Callable[[int], float]


def as_schedule(schedule: Schedule | float) -> Schedule:
    """A callable ``t -> eta``: a float is a constant step, a callable is used as is.

    Raises:
        TypeError: If ``schedule`` is neither.
        ValueError: If a constant step is not positive and finite.
    """
    if callable(schedule):
        return schedule
    if isinstance(schedule, bool) or not isinstance(schedule, int | float):
        raise TypeError(
            f"schedule must be a callable t -> step size or a positive float, got {schedule!r}"
        )
    eta = check_float("schedule", schedule, low=0.0, low_inclusive=False)
    return lambda t: eta
