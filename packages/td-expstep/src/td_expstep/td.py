"""Linear TD(0) (plain, regularized, projected) and LSTD, in numpy, batched."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

from td_expstep.schedules import ConstantSchedule  # noqa: F401 - used in the docstring example

Schedule = Callable[[int], Any]


def _check_gamma(gamma: float) -> float:
    return check_float("gamma", gamma, low=0.0, high=1.0, high_inclusive=False)


class LinearTD:
    r"""TD(0) with linear features, the last iterate as the estimate.

    Each :meth:`update` on a transition ``(phi, r, phi_next)`` does

    .. math::
        \delta_t = r + \gamma \phi'^\top \theta - \phi^\top \theta, \qquad
        \theta \leftarrow \Pi_R\big(\theta + \eta_t (\delta_t \phi - \lambda \theta)\big)

    with ``eta_t = schedule(t)``, ``lambda = regularization`` (0: standard TD(0);
    > 0: the regularized TD(0) the paper uses for Markovian sampling) and ``Pi_R`` the
    projection on the ball of radius ``projection_radius`` (None: no projection; the
    projected TD of Bhandari et al. 2018 is a baseline, not the method). The running
    Polyak-Ruppert average of the iterates is kept in ``theta_avg_`` for comparison.

    Leading batch dimensions run many seeds (and schedules) at once: ``theta_`` has
    shape ``(*batch, k)``, where ``batch`` broadcasts the shapes of the transitions'
    batch and of ``schedule(t)``, ``regularization`` and ``projection_radius``.

    Args:
        n_features: ``k`` >= 1.
        gamma: Discount in [0, 1).
        schedule: ``t -> eta_t`` (float or array broadcasting to ``batch``), e.g.
            :class:`~td_expstep.ExponentialSchedule`.
        regularization: ``lambda`` >= 0 (float or array broadcasting to ``batch``).
        projection_radius: ``R`` > 0, or None for no projection.

    Attributes:
        theta_: Current iterate, float64 ``(*batch, k)``.
        theta_avg_: Average of the iterates after each update, same shape.
        n_updates_: Updates done.

    Raises:
        ValueError: On out-of-range arguments or shape mismatch.

    Example:
        >>> import numpy as np
        >>> td = LinearTD(2, gamma=0.5, schedule=ConstantSchedule(0.1))
        >>> _ = td.update(np.array([1.0, 0.0]), 1.0, np.array([1.0, 0.0]))
        >>> td.theta_
        array([0.1, 0. ])
    """

    def __init__(
        self,
        n_features: int,
        gamma: float,
        schedule: Schedule,
        regularization: Any = 0.0,
        projection_radius: Any = None,
    ) -> None:
        self.n_features = check_int("n_features", n_features, low=1)
        self.gamma = _check_gamma(gamma)
        if not callable(schedule):
            raise TypeError(f"schedule must be callable t -> eta_t, got {type(schedule).__name__}")
        self.schedule = schedule
        lam = np.asarray(regularization, dtype=np.float64)
        if not np.all(np.isfinite(lam)) or np.any(lam < 0):
            raise ValueError(f"regularization must be finite and >= 0, got {regularization}")
        self.regularization = regularization
        self._lam = lam[..., None] if np.any(lam > 0) else None
        if projection_radius is not None:
            rad = np.asarray(projection_radius, dtype=np.float64)
            if np.any(np.isnan(rad)) or np.any(rad <= 0):
                raise ValueError(f"projection_radius must be > 0 or None, got {projection_radius}")
        self.projection_radius = projection_radius
        self._rad = (
            None
            if projection_radius is None
            else np.asarray(projection_radius, dtype=np.float64)[..., None]
        )
        self.reset()

    def reset(self) -> LinearTD:
        """Start afresh from ``theta = 0``."""
        self.theta_: np.ndarray = np.zeros(self.n_features)
        self.theta_avg_: np.ndarray = np.zeros(self.n_features)
        self.n_updates_ = 0
        return self

    def _check_phi(self, phi: Any, name: str) -> np.ndarray:
        phi = np.asarray(phi, dtype=np.float64)
        if phi.ndim < 1 or phi.shape[-1] != self.n_features:
            raise ValueError(f"{name} must have shape (..., {self.n_features}), got {phi.shape}")
        return phi

    def update(self, phi: Any, r: Any, phi_next: Any) -> np.ndarray:
        """One TD(0) update on a (batch of) transition(s).

        Args:
            phi: Features of the state, ``(*batch, k)``.
            r: Rewards, ``(*batch,)`` or a float.
            phi_next: Features of the next state, ``(*batch, k)``.

        Returns:
            The new ``theta_``, ``(*batch, k)``.
        """
        phi = self._check_phi(phi, "phi")
        phi_next = self._check_phi(phi_next, "phi_next")
        return self._step(phi, np.asarray(r, dtype=np.float64), phi - self.gamma * phi_next)

    def _step(self, phi: np.ndarray, r: np.ndarray, psi: np.ndarray) -> np.ndarray:
        # psi = phi - gamma phi_next, so delta = r - psi^T theta
        theta = self.theta_
        eta = np.asarray(self.schedule(self.n_updates_), dtype=np.float64)[..., None]
        delta = r - np.einsum("...i,...i->...", psi, theta)
        step = delta[..., None] * phi
        if self._lam is not None:
            step = step - self._lam * theta
        theta = theta + eta * step
        if self._rad is not None:
            rad = self._rad
            norm = np.sqrt(np.einsum("...i,...i->...", theta, theta))[..., None]
            theta = theta * np.minimum(1.0, rad / np.maximum(norm, 1e-300))
        self.n_updates_ += 1
        self.theta_avg_ = self.theta_avg_ + (theta - self.theta_avg_) / self.n_updates_
        self.theta_ = theta
        return theta

    def fit(self, transitions: tuple[Any, Any, Any]) -> LinearTD:
        """Run TD(0) from ``theta = 0`` over a sequence of transitions.

        Args:
            transitions: ``(phi, r, phi_next)`` with shapes ``(T, *batch, k)``,
                ``(T, *batch)`` and ``(T, *batch, k)``; step ``t`` uses row ``t``.

        Returns:
            self, with ``theta_`` the last iterate.

        Raises:
            ValueError: If the shapes disagree or ``T == 0``.
        """
        phi, r, phi_next = transitions
        phi = self._check_phi(phi, "transitions[0] (phi)")
        phi_next = self._check_phi(phi_next, "transitions[2] (phi_next)")
        r = np.asarray(r, dtype=np.float64)
        if phi.shape != phi_next.shape or r.shape != phi.shape[:-1] or phi.ndim < 2:
            raise ValueError(
                f"transitions must have shapes (T, *batch, k), (T, *batch), (T, *batch, k); "
                f"got {phi.shape}, {r.shape}, {phi_next.shape}"
            )
        if phi.shape[0] == 0:
            raise ValueError("transitions must hold at least one transition")
        self.reset()
        psi = phi - self.gamma * phi_next
        for t in range(phi.shape[0]):
            self._step(phi[t], r[t], psi[t])
        return self


def lstd(phi: Any, r: Any, phi_next: Any, gamma: float, ridge: float = 1e-8) -> np.ndarray:
    r"""Least-squares TD: solve :math:`\hat A \theta = \hat b` from samples.

    :math:`\hat A = \frac1T \sum_t \phi_t(\phi_t - \gamma\phi'_t)^\top + \text{ridge} I`,
    :math:`\hat b = \frac1T \sum_t r_t \phi_t`. The sample-solution reference, O(k^2)
    memory and per sample (here done in one batched pass).

    Args:
        phi: ``(T, *batch, k)``.
        r: ``(T, *batch)``.
        phi_next: ``(T, *batch, k)``.
        gamma: Discount in [0, 1).
        ridge: Small ``>= 0`` added to the diagonal of ``A_hat``.

    Returns:
        ``theta``, ``(*batch, k)``.
    """
    gamma = _check_gamma(gamma)
    ridge = check_float("ridge", ridge, low=0.0)
    phi = np.asarray(phi, dtype=np.float64)
    phi_next = np.asarray(phi_next, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    if phi.shape != phi_next.shape or r.shape != phi.shape[:-1] or phi.shape[0] == 0:
        raise ValueError(
            f"phi, r, phi_next must have shapes (T, *batch, k), (T, *batch), (T, *batch, k) "
            f"with T >= 1; got {phi.shape}, {r.shape}, {phi_next.shape}"
        )
    n = phi.shape[0]
    a = np.einsum("t...i,t...j->...ij", phi, phi - gamma * phi_next) / n
    a = a + ridge * np.eye(phi.shape[-1])
    b = np.einsum("t...,t...i->...i", r, phi) / n
    return np.linalg.solve(a, b[..., None])[..., 0]
