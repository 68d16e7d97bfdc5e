"""Convex decision sets with Euclidean projections: :class:`Ball`, :class:`Box`, :class:`Simplex`.

Every domain ``X`` is given with a centre ``c`` and an inner radius ``r`` (the ball
``c + r B`` lies in ``X``, inside ``X``'s affine hull for the simplex). A two-point
learner with exploration radius ``delta < r`` plays on the shrunk set
``X_delta = c + (1 - delta / r)(X - c)``, so that ``x + delta u`` stays in ``X`` for
every unit direction ``u`` of :meth:`Domain.sample_directions`.

All methods act on the last axis, so a batch of points of shape ``(..., d)`` is
projected at once (float64).
"""

from __future__ import annotations

import numpy as np
from icml26_core.validation import check_float, check_int

__all__ = ["Ball", "Box", "Domain", "Simplex"]


def _as_points(x: np.ndarray, dim: int, name: str = "x") -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] != dim:
        raise ValueError(f"{name} must have shape (..., {dim}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


class Domain:
    """A compact convex set in R^d (base class).

    Attributes:
        dim: Ambient dimension d.
        center: The centre c, float64 (d,).
        inner_radius: r > 0 with ``c + r B`` inside the set (in its affine hull).
        diameter: D, the largest distance between two points of the set.
        direction_dim: Dimension k of the space the directions live in (d, or d - 1
            for the simplex); the two-point estimator is scaled by k.
    """

    dim: int
    center: np.ndarray
    inner_radius: float
    diameter: float
    direction_dim: int

    def project(self, x: np.ndarray, shrink: float = 0.0) -> np.ndarray:
        """Euclidean projection onto ``c + (1 - shrink)(X - c)``.

        Args:
            x: Points, shape (..., d).
            shrink: Fraction in [0, 1) to shrink the set by about its centre
                (``delta / inner_radius`` for a two-point learner).

        Returns:
            The projections, float64 of the same shape.
        """
        raise NotImplementedError

    def contains(self, x: np.ndarray, atol: float = 1e-9) -> np.ndarray:
        """Whether each point of ``x`` (shape (..., d)) lies in the set, within ``atol``."""
        x = _as_points(x, self.dim)
        return np.linalg.norm(self.project(x) - x, axis=-1) <= atol

    def sample_directions(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` unit directions uniform on the sphere of the set's direction space, (n, d)."""
        u = rng.standard_normal((n, self.dim))
        u /= np.linalg.norm(u, axis=-1, keepdims=True)
        return u

    def _check_shrink(self, shrink: float) -> float:
        return check_float("shrink", shrink, low=0.0, high=1.0, high_inclusive=False)


class Ball(Domain):
    """The Euclidean ball ``{x : ||x - c|| <= radius}``.

    Args:
        dim: Dimension d >= 1.
        radius: Radius > 0.
        center: Centre, shape (d,); the origin if None.

    Raises:
        ValueError: If ``dim`` < 1, ``radius`` <= 0 or ``center`` has the wrong shape.
    """

    def __init__(self, dim: int, radius: float = 1.0, center: np.ndarray | None = None) -> None:
        self.dim = check_int("dim", dim, low=1)
        self.radius = check_float("radius", radius, low=0.0, low_inclusive=False)
        c = np.zeros(self.dim) if center is None else _as_points(center, self.dim, "center")
        if c.shape != (self.dim,):
            raise ValueError(f"center must have shape ({self.dim},), got {c.shape}")
        self.center = c.copy()
        self.inner_radius = self.radius
        self.diameter = 2.0 * self.radius
        self.direction_dim = self.dim

    def project(self, x: np.ndarray, shrink: float = 0.0) -> np.ndarray:  # noqa: D102
        x = _as_points(x, self.dim)
        rad = self.radius * (1.0 - self._check_shrink(shrink))
        z = x - self.center
        nrm = np.linalg.norm(z, axis=-1, keepdims=True)
        scale = np.minimum(1.0, rad / np.maximum(nrm, 1e-300))
        return self.center + z * scale

    def __repr__(self) -> str:
        return f"Ball(dim={self.dim}, radius={self.radius:g})"


class Box(Domain):
    """The hyper-rectangle ``{x : lo <= x <= hi}`` (coordinate-wise).

    Args:
        lo: Lower corner, shape (d,), or a scalar broadcast to ``hi``'s shape or ``dim``.
        hi: Upper corner, shape (d,) or a scalar; ``hi > lo`` in every coordinate.
        dim: Dimension when ``lo`` and ``hi`` are scalars.

    Raises:
        ValueError: If the box is empty (some ``hi <= lo``) or the shapes disagree.
    """

    def __init__(self, lo: float | np.ndarray, hi: float | np.ndarray, dim: int | None = None):
        lo_a = np.atleast_1d(np.asarray(lo, dtype=np.float64))
        hi_a = np.atleast_1d(np.asarray(hi, dtype=np.float64))
        if dim is not None:
            d = check_int("dim", dim, low=1)
            lo_a = np.broadcast_to(lo_a, (d,)).copy() if lo_a.size == 1 else lo_a
            hi_a = np.broadcast_to(hi_a, (d,)).copy() if hi_a.size == 1 else hi_a
        if lo_a.size == 1 and hi_a.ndim == 1:
            lo_a = np.broadcast_to(lo_a, hi_a.shape).copy()
        if hi_a.size == 1 and lo_a.ndim == 1:
            hi_a = np.broadcast_to(hi_a, lo_a.shape).copy()
        if lo_a.ndim != 1 or lo_a.shape != hi_a.shape:
            raise ValueError(
                f"lo and hi must have the same shape (d,), got {lo_a.shape}, {hi_a.shape}"
            )
        if not (np.all(np.isfinite(lo_a)) and np.all(np.isfinite(hi_a))):
            raise ValueError("lo and hi must be finite")
        if not np.all(hi_a > lo_a):
            raise ValueError("the box is empty: every coordinate needs hi > lo")
        self.lo, self.hi = lo_a, hi_a
        self.dim = lo_a.size
        self.center = (lo_a + hi_a) / 2.0
        self.inner_radius = float(np.min(hi_a - lo_a) / 2.0)
        self.diameter = float(np.linalg.norm(hi_a - lo_a))
        self.direction_dim = self.dim

    def project(self, x: np.ndarray, shrink: float = 0.0) -> np.ndarray:  # noqa: D102
        x = _as_points(x, self.dim)
        s = 1.0 - self._check_shrink(shrink)
        half = (self.hi - self.lo) / 2.0 * s
        return np.clip(x, self.center - half, self.center + half)

    def __repr__(self) -> str:
        return f"Box(dim={self.dim})"


def _project_simplex(v: np.ndarray) -> np.ndarray:
    """Projection of each row of ``v`` (..., d) onto the probability simplex (sort-based)."""
    d = v.shape[-1]
    u = -np.sort(-v, axis=-1)
    css = np.cumsum(u, axis=-1) - 1.0
    ind = np.arange(1, d + 1)
    cond = u - css / ind > 0
    rho = d - 1 - np.argmax(cond[..., ::-1], axis=-1)
    theta = np.take_along_axis(css, rho[..., None], axis=-1) / (rho[..., None] + 1.0)
    return np.maximum(v - theta, 0.0)


class Simplex(Domain):
    """The probability simplex ``{x >= 0 : sum x = 1}`` in R^d (d >= 2).

    Its centre is the uniform vector and its inner radius ``1 / sqrt(d (d - 1))`` is that
    of the largest ball inside it within the hyperplane ``sum x = 1``; directions are
    uniform on the unit sphere of ``{u : sum u = 0}`` (``direction_dim = d - 1``).

    Args:
        dim: Dimension d >= 2.

    Raises:
        ValueError: If ``dim`` < 2.
    """

    def __init__(self, dim: int) -> None:
        self.dim = check_int("dim", dim, low=2)
        self.center = np.full(self.dim, 1.0 / self.dim)
        self.inner_radius = 1.0 / np.sqrt(self.dim * (self.dim - 1.0))
        self.diameter = float(np.sqrt(2.0))
        self.direction_dim = self.dim - 1

    def project(self, x: np.ndarray, shrink: float = 0.0) -> np.ndarray:  # noqa: D102
        x = _as_points(x, self.dim)
        s = 1.0 - self._check_shrink(shrink)
        # c + s (Simplex - c) = {x : sum x = 1, x_i >= (1 - s) / d}, a scaled simplex.
        lb = (1.0 - s) / self.dim
        return lb + s * _project_simplex((x - lb) / s)

    def sample_directions(self, rng: np.random.Generator, n: int) -> np.ndarray:  # noqa: D102
        u = rng.standard_normal((n, self.dim))
        u -= u.mean(axis=-1, keepdims=True)
        u /= np.linalg.norm(u, axis=-1, keepdims=True)
        return u

    def __repr__(self) -> str:
        return f"Simplex(dim={self.dim})"
