"""Step-size schedules for TD(0): the exponential schedule and the baselines.

A schedule is a callable ``t -> eta_t`` (``t = 0, 1, ...`` counts updates) returning a
float or an array that broadcasts against the batch shape of :class:`~td_expstep.LinearTD`
(e.g. shape ``(M,)`` for ``M`` schedules run side by side).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int


def exponential_step_size(t: Any, eta0: Any, total_steps: int, beta: float = 1.0) -> np.ndarray:
    r"""The exponential step size :math:`\eta_t = \eta_0 (\beta/T)^{t/T}`.

    It decays geometrically from ``eta0`` at ``t = 0`` to ``eta0 * beta / T`` at
    ``t = T``; past ``T`` it stays at that value. It needs the horizon ``T`` but no
    problem constant (no smallest eigenvalue ``omega``, no mixing time).

    Args:
        t: Update counter(s), integers >= 0 (any shape).
        eta0: Initial step size(s), > 0; broadcasts against ``t``.
        total_steps: The horizon ``T`` >= 1.
        beta: The final step is ``eta0 * beta / T``; > 0.

    Returns:
        float64 array of the broadcast shape of ``t`` and ``eta0``.

    Raises:
        ValueError: If ``total_steps < 1``, ``beta <= 0`` or ``eta0 <= 0``.

    References:
        Li, Zhuang & Orabona (2021), "A second look at exponential and cosine step
        sizes"; used for TD(0) in the ICML 2026 paper.
    """
    total_steps = check_int("total_steps", total_steps, low=1)
    beta = check_float("beta", beta, low=0.0, low_inclusive=False)
    eta0 = np.asarray(eta0, dtype=np.float64)
    if not np.all(np.isfinite(eta0)) or np.any(eta0 <= 0):
        raise ValueError(f"eta0 must be finite and > 0, got {eta0}")
    t = np.minimum(np.asarray(t, dtype=np.float64), total_steps)
    return eta0 * (beta / total_steps) ** (t / total_steps)


class ExponentialSchedule:
    r"""Callable exponential schedule :math:`\eta_t = \eta_0 (\beta/T)^{t/T}` (numpy).

    Args:
        eta0: Initial step size (a float, or an array for several schedules at once).
        total_steps: The horizon ``T`` >= 1.
        beta: Final step ``eta0 * beta / T``, > 0.

    Example:
        >>> s = ExponentialSchedule(0.5, total_steps=100)
        >>> float(s(0)), float(s(100))
        (0.5, 0.005)
    """

    def __init__(self, eta0: Any, total_steps: int, beta: float = 1.0) -> None:
        exponential_step_size(0, eta0, total_steps, beta)  # validates
        self.eta0 = eta0
        self.total_steps = int(total_steps)
        self.beta = float(beta)
        self._eta0 = np.asarray(eta0, dtype=np.float64)
        self._ratio = self.beta / self.total_steps

    def __call__(self, t: int) -> np.ndarray:
        """The step size(s) at update ``t`` (validated once, in ``__init__``)."""
        return self._eta0 * self._ratio ** (min(t, self.total_steps) / self.total_steps)

    def __repr__(self) -> str:
        return (
            f"ExponentialSchedule(eta0={self.eta0}, total_steps={self.total_steps}, "
            f"beta={self.beta})"
        )


class ConstantSchedule:
    """Constant step size ``eta_t = eta`` (a float or an array of several).

    Raises:
        ValueError: If an ``eta`` is not finite and > 0.
    """

    def __init__(self, eta: Any) -> None:
        eta = np.asarray(eta, dtype=np.float64)
        if not np.all(np.isfinite(eta)) or np.any(eta <= 0):
            raise ValueError(f"eta must be finite and > 0, got {eta}")
        self.eta = eta

    def __call__(self, t: int) -> np.ndarray:
        """The step size(s) at update ``t``."""
        return self.eta

    def __repr__(self) -> str:
        return f"ConstantSchedule(eta={self.eta})"


class InverseTimeSchedule:
    r"""The omega-based baseline :math:`\eta_t = \min(\eta_{max}, c / (\omega (1-\gamma)(t+1)))`.

    This is the decaying step of the finite-time analyses (e.g. Bhandari, Russo & Singal
    2018), which needs the smallest eigenvalue ``omega`` of the feature covariance
    ``Phi^T D Phi``; it is clipped at ``eta_max`` until ``t ~ c / (omega (1 - gamma))``.

    Args:
        omega: The (possibly misestimated) smallest eigenvalue, > 0 (float or array).
        gamma: Discount in [0, 1).
        c: Numerator constant, > 0.
        eta_max: Clip, > 0.

    Raises:
        ValueError: On out-of-range arguments.
    """

    def __init__(self, omega: Any, gamma: float, c: float = 1.0, eta_max: float = 1.0) -> None:
        omega = np.asarray(omega, dtype=np.float64)
        if not np.all(np.isfinite(omega)) or np.any(omega <= 0):
            raise ValueError(f"omega must be finite and > 0, got {omega}")
        self.omega = omega
        self.gamma = check_float("gamma", gamma, low=0.0, high=1.0, high_inclusive=False)
        self.c = check_float("c", c, low=0.0, low_inclusive=False)
        self.eta_max = check_float("eta_max", eta_max, low=0.0, low_inclusive=False)

    def __call__(self, t: int) -> np.ndarray:
        """The step size(s) at update ``t``."""
        return np.minimum(self.eta_max, self.c / (self.omega * (1.0 - self.gamma) * (t + 1.0)))


def regularization(total_steps: int, kind: str = "log", c: float = 1.0) -> float:
    r"""The regularization strength of regularized TD(0) for Markovian sampling.

    ``kind="log"`` (our default): :math:`\lambda = c \log(T)/T`; ``kind="sqrt"``:
    :math:`\lambda = c/\sqrt{T}`. The abstract fixes neither; the bias it adds is
    :math:`\|\theta_\lambda - \theta^*\| = O(\lambda)`.

    Raises:
        ValueError: If ``total_steps < 1``, ``c < 0`` or ``kind`` is unknown.
    """
    total_steps = check_int("total_steps", total_steps, low=1)
    c = check_float("c", c, low=0.0)
    if kind == "log":
        return c * np.log(max(total_steps, 2)) / total_steps
    if kind == "sqrt":
        return c / np.sqrt(total_steps)
    raise ValueError(f"kind must be 'log' or 'sqrt', got {kind!r}")
