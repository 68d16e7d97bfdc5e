"""Ask/tell compressed Oja: two scalar measurements per sample.

For hardware that measures projections <d, x> of a signal it cannot read in full.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from icml26_core.validation import check_choice, check_int

from . import _kernels as k
from .schedules import Schedule, as_schedule

MEASUREMENTS = ("adaptive", "nonadaptive")


class CompressedOja:
    """Streaming top-eigenvector estimate from two measurements per sample.

    Each round, :meth:`ask` returns two unit directions and :meth:`tell` takes the two
    scalars ``<direction, x>`` measured on the next sample x.

    - ``measurement="adaptive"`` (the paper's scheme): the directions are the current
      estimate w and a uniform random unit u orthogonal to w. With y1 = <w, x> and
      y2 = <u, x> the update is w <- normalize(w + eta_t (d-1) y1 y2 u), unbiased for
      Oja's (I - ww^T) x x^T w because E[uu^T] = (I - ww^T)/(d-1).
    - ``measurement="nonadaptive"`` (the baseline any fixed design must match): two
      independent uniform unit directions a, b; C = d^2 y1 y2 (ab^T + ba^T)/2 is unbiased
      for xx^T and w <- normalize(w + eta_t C w).

    The abstract fixes the measurements; these unbiased updates are our design.

    Args:
        dim: Ambient dimension d >= 2.
        schedule: Step size: a callable ``t -> eta_t`` (t = 1, 2, ...), e.g.
            :class:`~compressed_oja.schedules.TheorySchedule`, or a constant float.
        measurement: ``"adaptive"`` or ``"nonadaptive"``.
        random_state: Seed or numpy Generator of the random directions and of the start.
        w0: (d,) start (normalized; copied); uniform on the sphere if None.

    Attributes:
        components_: (1, d) float64 current unit estimate.
        n_measurements_: Scalar measurements told so far (2 per round).
        n_samples_seen_: Rounds completed.

    Raises:
        ValueError: On ``dim < 2``, an unknown ``measurement``, or a bad ``w0``.

    Example:
        >>> import numpy as np
        >>> from compressed_oja import CompressedOja, TheorySchedule
        >>> est = CompressedOja(3, TheorySchedule(eigengap=1.0, t0=10.0), random_state=0)
        >>> D = est.ask()                     # (2, 3): w and u
        >>> est.tell(*(D @ np.array([1.0, 0.5, 0.0])))
    """

    def __init__(
        self,
        dim: int,
        schedule: Schedule | float,
        *,
        measurement: str = "adaptive",
        random_state: int | np.random.Generator | None = None,
        w0: np.ndarray | None = None,
    ) -> None:
        self.dim = check_int("dim", dim, low=2)
        self.measurement = check_choice("measurement", measurement, MEASUREMENTS)
        self.schedule = as_schedule(schedule)
        self._rng = np.random.default_rng(random_state)
        if w0 is None:
            w = self._rng.standard_normal(self.dim)
        else:
            w = np.array(w0, dtype=np.float64, copy=True).reshape(-1)
            if w.shape != (self.dim,):
                raise ValueError(f"w0 must have shape ({self.dim},), got {np.shape(w0)}")
            if not np.all(np.isfinite(w)) or not np.any(w):
                raise ValueError("w0 must be finite and nonzero")
        k.normalize_(w)
        self._w = w
        self._pending: np.ndarray | None = None
        self.n_samples_seen_ = 0
        self.n_measurements_ = 0

    @property
    def components_(self) -> np.ndarray:
        """(1, d) float64 copy of the current unit estimate."""
        return self._w.copy()[None, :]

    def ask(self) -> np.ndarray:
        """The two unit directions to measure the next sample along.

        Asking again before :meth:`tell` returns the same directions.

        Returns:
            (2, d) float64: rows (w, u) for adaptive, (a, b) for non-adaptive (a copy).
        """
        if self._pending is None:
            g = self._rng.standard_normal((2, self.dim))
            if self.measurement == "adaptive":
                k.orthogonal_unit_(g[1], self._w)
                g[0] = self._w
            else:
                k.normalize_(g[0])
                k.normalize_(g[1])
            self._pending = g
        return self._pending.copy()

    def tell(self, y1: float, y2: float) -> None:
        """Update with the two measurements of the sample along :meth:`ask`'s directions.

        Raises:
            RuntimeError: If no directions are pending (call :meth:`ask` first).
            ValueError: If a measurement is not a finite real scalar.
        """
        if self._pending is None:
            raise RuntimeError("tell() before ask(): ask for the two directions first")
        ys = []
        for name, y in (("y1", y1), ("y2", y2)):
            if np.ndim(y) != 0 or isinstance(y, bool | np.bool_):
                raise ValueError(f"{name} must be a real scalar, got {y!r}")
            y = float(y)
            if not math.isfinite(y):
                raise ValueError(f"{name} must be finite, got {y}")
            ys.append(y)
        t = self.n_samples_seen_ + 1
        eta = float(self.schedule(t))
        if not (math.isfinite(eta) and eta >= 0):
            raise ValueError(f"schedule({t}) must be a finite step size >= 0, got {eta}")
        D = self._pending
        if self.measurement == "adaptive":
            k.adaptive_step_(self._w, D[1], ys[0], ys[1], eta)
        else:
            k.nonadaptive_step_(self._w, D[0], D[1], ys[0], ys[1], eta)
        self._pending = None
        self.n_samples_seen_ = t
        self.n_measurements_ += 2

    def step(self, measure: Callable[[np.ndarray], np.ndarray]) -> None:
        """One round through a callable: ``measure(D)`` returns the 2 scalars ``D @ x``.

        Raises:
            ValueError: If ``measure`` does not return exactly two numbers.
        """
        y = np.asarray(measure(self.ask()), dtype=float).reshape(-1)
        if y.shape != (2,):
            raise ValueError(f"measure(D) must return 2 measurements, got shape {y.shape}")
        self.tell(y[0], y[1])
