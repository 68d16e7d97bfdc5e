"""Run a two-point learner on a loss sequence, and measure a sequence's variation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from icml26_core.validation import check_int

__all__ = ["RunResult", "run", "variation"]

#: A loss sequence: ``losses(t, x)`` with ``t`` the round (0-based) and ``x`` points of
#: shape (n_runs, d), returning the n_runs values ``f_t^{(i)}(x_i)`` (run i may see its
#: own sequence, e.g. its own random drift).
LossSequence = Callable[[int, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class RunResult:
    """What :func:`run` measured.

    Attributes:
        losses: float64 (n_runs, T), the learner's loss each round: the mean of its two
            queried values (two-point regret counts both queries).
        comparator_losses: float64 (n_runs, T), the comparator's losses (fixed point, or
            the path for dynamic regret); zeros if none was given.
        regret: float64 (n_runs,), ``sum_t losses - comparator_losses``.
        decisions: float64 (n_runs, d), the learner's last decision.
    """

    losses: np.ndarray
    comparator_losses: np.ndarray
    regret: np.ndarray
    decisions: np.ndarray


def run(
    learner,
    losses: LossSequence,
    T: int,
    comparator: np.ndarray | None = None,
    comparator_path: Callable[[int], np.ndarray] | None = None,
) -> RunResult:
    """Play ``T`` rounds of ``learner`` (ask/tell) on ``losses``.

    Args:
        learner: A learner with ``ask()``/``tell(f1, f2)`` and ``n_runs`` (e.g.
            :class:`~gradvar_bco.TwoPointOptimisticBCO`).
        losses: ``losses(t, x)``, see :data:`LossSequence`.
        T: Number of rounds >= 1.
        comparator: A fixed comparator u, shape (d,) or (n_runs, d): static regret.
        comparator_path: ``comparator_path(t)`` giving u_t, shape (d,) or (n_runs, d):
            dynamic regret (takes precedence over ``comparator``).

    Returns:
        The :class:`RunResult`.

    Raises:
        ValueError: If ``T`` < 1 or a loss value is not finite (raised by ``tell``).
    """
    T = check_int("T", T, low=1)
    s = 1 if learner.n_runs is None else learner.n_runs
    d = learner.domain.dim
    own = np.zeros((s, T))
    ref = np.zeros((s, T))
    for t in range(T):
        x1, x2 = learner.ask()
        f1 = np.asarray(losses(t, np.reshape(x1, (s, d))), dtype=np.float64).reshape(s)
        f2 = np.asarray(losses(t, np.reshape(x2, (s, d))), dtype=np.float64).reshape(s)
        learner.tell(f1 if learner.n_runs else f1[0], f2 if learner.n_runs else f2[0])
        own[:, t] = 0.5 * (f1 + f2)
        u = comparator_path(t) if comparator_path is not None else comparator
        if u is not None:
            ref[:, t] = np.asarray(losses(t, np.broadcast_to(u, (s, d)))).reshape(s)
    dec = np.reshape(learner.decision, (s, d))
    return RunResult(own, ref, own.sum(axis=1) - ref.sum(axis=1), dec)


def variation(
    gradients: np.ndarray, comparator_losses: np.ndarray | None = None
) -> dict[str, float]:
    """The problem-dependent quantities of a loss sequence.

    The supremum over the domain is taken over the probe points at which the
    gradients were evaluated (a lower estimate; exact for quadratics whose Hessian
    changes only in the direction that the probes span).

    Args:
        gradients: float64 (T, m, d): ``grad f_t`` at m probe points, every round.
        comparator_losses: float64 (T,), ``f_t(u*)``, for the small-loss quantity.

    Returns:
        ``V`` = sum_{t>=2} max_probe ||grad f_t - grad f_{t-1}||^2 (gradient variation),
        ``W`` = sum_t max_probe ||grad f_t - mean_s grad f_s||^2 (gradient variance),
        ``F`` = sum_t f_t(u*) (small loss; NaN if ``comparator_losses`` is None).

    Raises:
        ValueError: If ``gradients`` is not 3-d or not finite.
    """
    g = np.asarray(gradients, dtype=np.float64)
    if g.ndim != 3 or g.shape[0] < 1:
        raise ValueError(f"gradients must have shape (T, m, d), got {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError("gradients must be finite")
    V = float(np.sum(np.max(np.sum(np.diff(g, axis=0) ** 2, axis=-1), axis=-1)))
    W = float(np.sum(np.max(np.sum((g - g.mean(axis=0)) ** 2, axis=-1), axis=-1)))
    F = float("nan") if comparator_losses is None else float(np.sum(comparator_losses))
    return {"V": V, "W": W, "F": F}
