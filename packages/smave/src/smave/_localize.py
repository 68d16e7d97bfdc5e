"""Tie-aware nearest-neighbour localization in the projected space.

SMAVE localizes each local linear fit by the ``k`` nearest points of a random pool in
the projected space ``P = Z B`` (d columns), with a Gaussian kernel whose bandwidth is
the k-th distance. On discrete covariates or duplicated rows many points share one
projected location, and the k nearest can all be tied: the bandwidth collapses to zero
(or to the tiny spread of a near-tie), the local design has no spread along ``B``, the
local slope is unidentified and the centre explains no variance. The criterion then
rewards directions that *break* ties rather than directions that explain ``y``, and
SMAVE can end orthogonal to the truth. Two rules keep the localization well posed:

* a bandwidth floor ``h >= h_floor`` (in the whitened projected units, where the
  projected coordinates have unit variance), so a near-tie cannot shrink the kernel;
* a tie rule: when the k nearest points do not span the d projected directions
  (fewer than d + 1 affinely independent locations), the radius grows to the smallest
  one at which the ball does.

Where a rule widens a neighbourhood beyond the k nearest, the k neighbours are drawn
at random from the ball (a uniform subsample of the ball, then Gaussian weights: the
kernel sum of the whole ball estimated from k of its points), so a step still costs
O(k) local work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

TIE_TOL = 1e-9
"""Projected distances at or below this (whitened units) count as tied."""


@dataclass(frozen=True)
class Neighbourhoods:
    """The localization of ``m`` centres.

    Attributes:
        neighbors: int array (m, k), indices into the full sample.
        dist: float array (m, k), projected distances to the centres.
        bandwidth: float array (m,), the kernel bandwidths ``h_j``.
        n_tied: Number of centres whose k nearest points were all at distance 0.
        n_widened: Number of centres whose ball was widened beyond the k nearest
            (by the floor or the tie rule).
        n_degenerate: Number of centres left without spread in every direction even
            at the largest radius (the whole pool is degenerate along ``B``).
    """

    neighbors: np.ndarray
    dist: np.ndarray
    bandwidth: np.ndarray
    n_tied: int
    n_widened: int
    n_degenerate: int


def bandwidth_floor(n_samples: int, n_points: int, n_components: int, scale: float) -> float:
    """The floor of the projected bandwidth, in whitened units (projected variance 1).

    ``scale`` times the radius ``r`` of the ball that holds ``n_points`` of ``n_samples``
    points at the mode of a standard Gaussian in d dimensions,
    ``V_d r^d (2 pi)^(-d/2) = n_points / n_samples`` (``V_d`` the volume of the unit
    ball): the k-th neighbour distance that continuous data would give at its densest.
    With ``scale < 1`` the floor binds on tied and near-tied projections, rarely on
    continuous ones.
    """
    d = int(n_components)
    v_d = np.pi ** (d / 2) / math.gamma(d / 2 + 1)
    frac = min(1.0, n_points / n_samples)
    return float(scale) * float((frac * (2 * np.pi) ** (d / 2) / v_d) ** (1.0 / d))


def _spans(U: np.ndarray, tol: float) -> np.ndarray:
    """Whether each set of offsets ``U`` (..., L, d) spans d directions (affine rank d).

    The smallest eigenvalue of the centred second moment must exceed ``tol**2``.
    """
    C = np.einsum("...li,...lj->...ij", U, U) / U.shape[-2]
    mu = U.mean(axis=-2)
    C = C - mu[..., :, None] * mu[..., None, :]
    return np.linalg.eigvalsh(C)[..., 0] > tol**2


def _spanning_radius(
    tree: cKDTree, P_pool: np.ndarray, x: np.ndarray, k: int, tol: float
) -> float | None:
    """Smallest radius at which the pool points around ``x`` span every direction.

    Grows the candidate count from ``2k`` by doubling; None if even the whole pool is
    degenerate along the projection.
    """
    n_pool = P_pool.shape[0]
    kk = min(n_pool, 2 * k)
    while True:
        dist, idx = tree.query(x, k=kk)
        dist, idx = np.atleast_1d(dist), np.atleast_1d(idx)
        U = P_pool[idx] - x
        # prefix second moments: the first prefix with affine rank d
        S1 = np.cumsum(U, axis=0)
        S2 = np.cumsum(U[:, :, None] * U[:, None, :], axis=0)
        L = np.arange(1, kk + 1)[:, None, None]
        C = S2 / L - (S1[:, :, None] * S1[:, None, :]) / L**2
        ok = np.linalg.eigvalsh(C)[:, 0] > tol**2
        if ok.any():
            return float(dist[int(np.argmax(ok))])
        if kk >= n_pool:
            return None
        kk = min(n_pool, 2 * kk)


def localize(
    tree: cKDTree,
    pool: np.ndarray,
    P_pool: np.ndarray,
    Pc: np.ndarray,
    k: int,
    h_floor: float,
    rng: np.random.RandomState,
    tol: float = TIE_TOL,
) -> Neighbourhoods:
    """Tie-aware k-neighbourhoods of the centres ``Pc`` among the pool projections.

    Args:
        tree: k-d tree on ``P_pool``.
        pool: int array (n_pool,), indices of the pool points in the full sample.
        P_pool: float array (n_pool, d), projected pool points.
        Pc: float array (m, d), projected centres.
        k: Neighbours per centre, ``k <= n_pool``.
        h_floor: Bandwidth floor (whitened projected units), >= 0.
        rng: Random state for the subsample of widened balls.
        tol: Distances at or below ``tol`` count as tied.

    Returns:
        The :class:`Neighbourhoods`; ``bandwidth[j] = max(k-th distance, h_floor,
        spanning radius where the k nearest are degenerate)``.
    """
    m = Pc.shape[0]
    dist, idx = tree.query(Pc, k=k)
    dist, idx = dist.reshape(m, k), idx.reshape(m, k)
    kth = dist[:, -1]
    n_tied = int(np.sum(kth <= tol))
    U = P_pool[idx] - Pc[:, None, :]
    degenerate = ~_spans(U, tol)
    radius = np.maximum(kth, h_floor)
    n_degenerate = 0
    redraw = np.zeros(m, dtype=bool)
    for j in np.flatnonzero(degenerate):
        r = _spanning_radius(tree, P_pool, Pc[j], k, tol)
        if r is None:
            n_degenerate += 1
        else:
            radius[j] = max(radius[j], r)
            redraw[j] = True  # even at the same radius: the k nearest were one location
    wide = redraw | (radius > kth * (1.0 + 1e-12) + tol)
    for j in np.flatnonzero(wide):
        ball = np.asarray(tree.query_ball_point(Pc[j], radius[j] * (1.0 + 1e-12) + tol))
        if ball.size > k:
            ball = rng.choice(ball, k, replace=False)
        elif ball.size < k:  # cannot happen (the k nearest lie inside); keep them
            continue
        idx[j] = ball
        dist[j] = np.linalg.norm(P_pool[ball] - Pc[j], axis=1)
    bandwidth = np.maximum(np.maximum(dist.max(axis=1), radius), 1e-12)
    return Neighbourhoods(pool[idx], dist, bandwidth, n_tied, int(wide.sum()), n_degenerate)


def kernel_weights(dist: np.ndarray, bandwidth: np.ndarray) -> np.ndarray:
    """Gaussian weights ``exp(-(dist / h)^2 / 2)`` normalized per row, shape (m, k)."""
    w = np.exp(-0.5 * (dist / bandwidth[:, None]) ** 2)
    return w / w.sum(axis=1, keepdims=True)
