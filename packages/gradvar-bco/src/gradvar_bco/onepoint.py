"""One-point bandit linear optimization on a box, with a hint (ask/tell, vectorized).

Losses are linear, ``f_t(x) = <l_t, x>`` on the box ``{lo <= x <= hi}``, and each round
reveals one number, ``<l_t, x_t>`` at the single point played. The learner is SCRiBLe
(Abernethy, Hazan & Rakhlin 2008) with the box's logarithmic barrier, made optimistic
with a hint ``m_t`` (a guess of ``l_t``) as Rakhlin & Sridharan (2013) do:

    x̂_t = argmin_x  eta_t <L_{t-1} + m_t, x> + R(x),
          R(x) = -sum_i log(x_i - lo_i) + log(hi_i - x_i)      (nu = 2d self-concordant)
    pick i uniform in {1..d}, e uniform in {-1, +1};  r_i = h_i(x̂_t)^(-1/2),
          h_i = 1/(x̂_i - lo_i)^2 + 1/(hi_i - x̂_i)^2             (the barrier's Hessian)
    play x_t = x̂_t + e r_i e_i                                  (inside the Dikin ellipsoid)
    see y_t = <l_t, x_t>
    ĝ_t = m_t + d (y_t - <m_t, x_t>) (e / r_i) e_i,   L_t = L_{t-1} + ĝ_t.

The barrier is separable, so its Dikin ellipsoid is axis-aligned: exploring one
coordinate by its Dikin radius is SCRiBLe's eigen-direction sampling, and the FTRL
step has a closed form per coordinate. ``ĝ_t`` is unbiased for ``l_t`` whatever the
hint, and its local dual norm is ``||ĝ_t - m_t||_{*, x̂_t}^2 = d^2 <l_t - m_t, x_t>^2``:
the estimator's noise is measured *relative to the hint*, so a good hint shrinks it.
The optimistic-FTRL bound (Rakhlin & Sridharan 2013, Thm. 7, with a fixed eta) reads

    E Regret_T <= nu log(T) / eta + eta d^2 sum_t E <l_t - m_t, x_t>^2.

The hint (our design). With ``hint="tracking"`` the hint of the explored coordinate moves
towards the one-coordinate estimate ``c_i = m_i + (y_t - <m_t, x_t>) e / r_i``, which is
unbiased for ``l_{t,i}`` given i (it lacks the factor d of ``ĝ``):
``m_i <- m_i + beta_t (c_i - m_i)``. Its error e = l - m obeys, in mean square,
``E|e'|^2 <= |e|^2 (1 - (beta/d)(2 - beta (1 + |x̂|^2 sum_j h_j)))``, so the rate
``beta_t = hint_rate / (1 + |x̂_t|^2 sum_j h_j(x̂_t))`` with ``hint_rate <= 1`` is stable for
every sequence (a fixed rate was not: its noise grows with the barrier's curvature near
the boundary, where the learner goes). ``hint="none"`` is plain SCRiBLe (``m = 0``); an
array passed to ``tell(..., hint=...)`` is a hint known from outside.

A baseline (a generic variance reduction, available to the baseline learner too):
with ``baseline_rate = rho > 0`` the residual is centred by a running mean ``b_t`` of
past residuals, ``ĝ_t = m_t + d (y_t - <m_t, x_t> - b_t) (e / r_i) e_i`` (and the same
centred residual feeds the hint). ``b_t`` depends on the past only and ``E[e] = 0``, so
``ĝ_t`` stays unbiased; its noise drops from ``<l_t - m_t, x̂_t>`` to that minus ``b_t``.

Step size: ``"adaptive"`` (default) ``eta_t = s sqrt(nu) / (d sqrt(1 + A_{t-1}))`` with
``A = sum_s (y_s - <m_s, x_s>)^2``, which the learner observes (no horizon needed);
``s = step_scale``. A float (or one per run) gives a fixed eta.

References:
    Abernethy, Hazan & Rakhlin (2008), Competing in the dark: an efficient algorithm
    for bandit linear optimization, COLT.
    Rakhlin & Sridharan (2013), Online learning with predictable sequences, COLT.
    Wei & Luo (2018), More adaptive algorithms for adversarial bandits, COLT.
"""

from __future__ import annotations

import numpy as np
from icml26_core.validation import check_choice, check_float, check_int

from gradvar_bco.domains import Box

__all__ = ["OnePointBoxLinear", "OnePointGradientDescent", "barrier_ftrl_point"]


MAX_BARRIER_TILT = 1e8  # |theta| r is capped here: the point keeps >= r / 1e8 to the boundary


def barrier_ftrl_point(
    theta: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``argmin_x <theta, x> - sum_i log(x_i - lo_i) + log(hi_i - x_i)``, and its curvature.

    With the centre c and half-width r of each interval and ``q = |theta| r``, the
    minimizer is ``c - sign(theta) r q / (1 + sqrt(1 + q^2))`` (the root inside the
    interval of ``theta (r^2 - z^2) + 2 z = 0``; no cancellation at small theta). Its
    distance to the nearer face, ``r (1 + 1 / (q + sqrt(1 + q^2))) / (1 + sqrt(1 + q^2))``,
    is computed without cancellation too, and ``q`` is capped at ``MAX_BARRIER_TILT`` so
    that the point stays representable strictly inside the box.

    Args:
        theta: float64 (..., d), the linear term (eta times the cumulative loss).
        lo: float64 (d,), lower corner.
        hi: float64 (d,), upper corner.

    Returns:
        ``(x, h)``: the point, float64 (..., d), strictly inside the box, and the
        barrier's Hessian diagonal there, ``1/(x - lo)^2 + 1/(hi - x)^2``, (..., d).
    """
    c = (lo + hi) / 2.0
    r = (hi - lo) / 2.0
    q = np.minimum(np.abs(theta) * r, MAX_BARRIER_TILT)
    root = np.sqrt(1.0 + q**2)
    offset = r * q / (1.0 + root)  # |x - c| < r
    near = r * (1.0 + 1.0 / (q + root)) / (1.0 + root)  # r - offset, accurately
    far = r + offset
    x = c - np.sign(theta) * offset
    return x, 1.0 / near**2 + 1.0 / far**2


def _rates(name: str, value, s: int) -> np.ndarray:
    """A rate in [0, 1], or one per run, as float64 (s,)."""
    if np.ndim(value) == 0:
        return np.full(s, check_float(name, value, low=0.0, high=1.0))
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (s,) or not np.all((arr >= 0) & (arr <= 1)):
        raise ValueError(f"{name} as an array must hold {s} values in [0, 1], got {arr!r}")
    return arr.copy()


class OnePointBoxLinear:
    """SCRiBLe with a hint for one-point bandit linear losses on a box (ask/tell).

    Args:
        lo: Lower corner, shape (d,) or a scalar (with ``dim``).
        hi: Upper corner, shape (d,) or a scalar.
        dim: Dimension when ``lo`` and ``hi`` are scalars.
        step_size: ``"adaptive"`` (default), a fixed eta > 0, or an array (n_runs,) of
            fixed steps (a sweep in one call).
        step_scale: s > 0 (or one per run) of the adaptive step. Default 1.
        hint: ``"tracking"`` (default: the stable tracking hint above) or ``"none"``
            (plain SCRiBLe, m = 0).
        hint_rate: beta_0 in (0, 1] of the tracking hint. Default 1.
        baseline_rate: rho in [0, 1] (or one per run) of the residual's running mean;
            0 (default) uses no baseline.
        n_runs: Independent runs stepped together; None for one run (points (d,),
            values scalars).
        seed: Seed or generator for the exploration.

    Raises:
        ValueError: If the box is empty or the shapes disagree, a step is not positive,
            ``hint`` is unknown, ``hint_rate`` is outside (0, 1] or ``baseline_rate``
            outside [0, 1].

    Example:
        >>> import numpy as np
        >>> from gradvar_bco import OnePointBoxLinear
        >>> learner = OnePointBoxLinear(-1.0, 1.0, dim=3, seed=0)
        >>> l = np.array([0.5, -0.3, 0.2])
        >>> for t in range(5000):
        ...     x = learner.ask()
        ...     _ = learner.tell(float(l @ x))
        >>> np.sign(learner.decision).tolist()  # towards the minimizing corner -sign(l)
        [-1.0, 1.0, -1.0]
    """

    def __init__(
        self,
        lo: float | np.ndarray,
        hi: float | np.ndarray,
        dim: int | None = None,
        *,
        step_size: str | float | np.ndarray = "adaptive",
        step_scale: float | np.ndarray = 1.0,
        hint: str = "tracking",
        hint_rate: float = 1.0,
        baseline_rate: float = 0.0,
        n_runs: int | None = None,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        self.domain = Box(lo, hi, dim)
        d = self.domain.dim
        self.n_runs = None if n_runs is None else check_int("n_runs", n_runs, low=1)
        s = 1 if self.n_runs is None else self.n_runs
        self.step_size = self._per_run("step_size", step_size, s, allow=("adaptive",))
        self.step_scale = self._per_run("step_scale", step_scale, s)
        self.hint = check_choice("hint", hint, ("tracking", "none"))
        self.hint_rate = check_float("hint_rate", hint_rate, low=0.0, high=1.0, low_inclusive=False)
        self.baseline_rate = _rates("baseline_rate", baseline_rate, s)
        self._b = np.zeros(s)
        self._rng = np.random.default_rng(seed)
        self.nu = 2.0 * d  # the log-barrier of a box is 2d-self-concordant
        self._L = np.zeros((s, d))  # cumulative estimates
        self._m = np.zeros((s, d))  # the hint of the coming round
        self.A = np.zeros(s)  # sum of (y - <m, x>)^2: the observed noise scale
        self._xhat = np.broadcast_to(self.domain.center, (s, d)).copy()
        self._x = self._xhat.copy()
        self._h = np.zeros((s, d))
        self._pending: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.t = 0

    @staticmethod
    def _per_run(name: str, value, s: int, allow: tuple[str, ...] = ()):
        if isinstance(value, str):
            if not allow:
                raise ValueError(f"{name} must be a float > 0 or an array of them, got {value!r}")
            return check_choice(name, value, allow)
        if np.ndim(value) == 0:
            return np.full(s, check_float(name, value, low=0.0, low_inclusive=False))
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != (s,) or not np.all(np.isfinite(arr) & (arr > 0)):
            raise ValueError(
                f"{name} as an array must hold {s} finite values > 0 (one per run), "
                f"got shape {arr.shape}"
            )
        return arr.copy()

    def eta(self) -> np.ndarray:
        """The step of the coming round, one per run, float64 (n_runs,) or (1,)."""
        if isinstance(self.step_size, str):
            d = self.domain.dim
            return self.step_scale * np.sqrt(self.nu) / (d * np.sqrt(1.0 + self.A))
        return self.step_size

    def ask(self) -> np.ndarray:
        """The point to play this round.

        Returns:
            float64 (d,) for one run, (n_runs, d) otherwise; strictly inside the box.

        Raises:
            RuntimeError: If the previous ``ask`` was not answered by ``tell``.
        """
        if self._pending is not None:
            raise RuntimeError("ask() called twice: answer the last point with tell(value)")
        s, d = self._L.shape
        theta = self.eta()[:, None] * (self._L + self._m)
        self._xhat, h = barrier_ftrl_point(theta, self.domain.lo, self.domain.hi)
        self._h = h
        i = self._rng.integers(d, size=s)
        sign = self._rng.choice((-1.0, 1.0), size=s)
        radius = 1.0 / np.sqrt(h[np.arange(s), i])
        x = self._xhat.copy()
        x[np.arange(s), i] += sign * radius
        self._x = x
        self._pending = (i, sign, radius)
        return x[0].copy() if self.n_runs is None else x.copy()

    def tell(self, value, hint: np.ndarray | None = None) -> np.ndarray:
        """Report ``<l_t, x_t>`` and update.

        Args:
            value: The loss at the point played: a float (one run) or shape (n_runs,).
            hint: The next round's hint, shape (d,) or (n_runs, d), overriding the
                learner's own (a hint known from outside); None keeps ``hint=``'s rule.

        Returns:
            The estimate ``ĝ_t`` of ``l_t``, float64 (d,) or (n_runs, d).

        Raises:
            RuntimeError: If ``ask`` was not called first.
            ValueError: If ``value`` or ``hint`` has the wrong shape or is not finite.
        """
        if self._pending is None:
            raise RuntimeError("tell() called before ask()")
        s, d = self._L.shape
        y = np.asarray(value, dtype=np.float64).reshape(-1) if np.ndim(value) <= 1 else None
        if y is None or y.shape != (s,):
            raise ValueError(f"value must have shape ({s},) (one per run), got {np.shape(value)}")
        if not np.all(np.isfinite(y)):
            raise ValueError(f"value must be finite, got {y}")
        i, sign, radius = self._pending
        rows = np.arange(s)
        resid = y - np.sum(self._m * self._x, axis=-1)  # <l - m, x_t>, observed
        centred = resid - self._b
        self._b = self._b + self.baseline_rate * (resid - self._b)
        g = self._m.copy()
        g[rows, i] += d * centred * sign / radius
        self._L += g
        self.A += resid**2
        if hint is not None:
            h = np.asarray(hint, dtype=np.float64)
            if h.shape not in ((d,), (s, d)) or not np.all(np.isfinite(h)):
                raise ValueError(f"hint must be finite with shape ({d},) or ({s}, {d})")
            self._m = np.broadcast_to(h, (s, d)).copy()
        elif self.hint == "tracking":
            curv = np.sum(self._h, axis=-1)
            beta = self.hint_rate / (1.0 + np.sum(self._xhat**2, axis=-1) * curv)
            self._m[rows, i] += beta * centred * sign / radius
        self._pending = None
        self.t += 1
        return g[0] if self.n_runs is None else g

    @property
    def decision(self) -> np.ndarray:
        """The FTRL point ``x̂_t`` of the last round, (d,) or (n_runs, d)."""
        return self._xhat[0].copy() if self.n_runs is None else self._xhat.copy()

    @property
    def hint_estimate(self) -> np.ndarray:
        """The hint ``m_{t+1}`` of the coming round, (d,) or (n_runs, d)."""
        return self._m[0].copy() if self.n_runs is None else self._m.copy()

    def __repr__(self) -> str:
        return (
            f"OnePointBoxLinear(dim={self.domain.dim}, step_size={self.step_size!r}, "
            f"hint={self.hint!r})"
        )


class OnePointGradientDescent:
    """Bandit gradient descent with one-point feedback (Flaxman, Kalai & McMahan 2005).

    The baseline of the one-point comparison (PyNOL's ``BGDOnePoint`` update): play
    ``x_t = y_t + delta u_t`` with u_t uniform on the unit sphere, see ``f_t(x_t)``,
    estimate ``g_t = (d / delta) f_t(x_t) u_t`` (unbiased for the gradient of the
    delta-smoothed loss, exactly ``l_t`` for a linear loss; with ``baseline_rate > 0``,
    ``f_t(x_t)`` minus a running mean of past values, still unbiased) and step
    ``y_{t+1} = Pi[y_t - eta g_t]`` onto the box shrunk by ``delta / inner radius``, so
    that every played point lies in the box.

    Args:
        domain: The decision set (any :class:`~gradvar_bco.Domain`).
        delta: Exploration radius, ``0 < delta < domain.inner_radius``.
        step_size: Fixed eta > 0, or an array (n_runs,) of one per run.
        baseline_rate: rho in [0, 1] (or one per run) of the running mean of past values
            subtracted from ``f_t(x_t)``; 0 (default) is Flaxman et al.'s estimator.
        n_runs: Independent runs stepped together; None for one run.
        seed: Seed or generator for the directions.

    Raises:
        ValueError: If ``delta`` is not in (0, inner radius), a step is not positive or
            a ``baseline_rate`` is outside [0, 1].
    """

    def __init__(
        self,
        domain,
        delta: float,
        step_size: float | np.ndarray,
        *,
        baseline_rate: float | np.ndarray = 0.0,
        n_runs: int | None = None,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        self.domain = domain
        self.delta = check_float("delta", delta, low=0.0, low_inclusive=False)
        if self.delta >= domain.inner_radius:
            raise ValueError(
                f"delta must be < the domain's inner radius {domain.inner_radius:g}, got {delta}"
            )
        self.n_runs = None if n_runs is None else check_int("n_runs", n_runs, low=1)
        s = 1 if self.n_runs is None else self.n_runs
        self.step_size = OnePointBoxLinear._per_run("step_size", step_size, s)
        self.baseline_rate = _rates("baseline_rate", baseline_rate, s)
        self._b = np.zeros(s)
        self._shrink = self.delta / domain.inner_radius
        self._y = np.broadcast_to(domain.center, (s, domain.dim)).copy()
        self._u: np.ndarray | None = None
        self._rng = np.random.default_rng(seed)
        self.t = 0

    def ask(self) -> np.ndarray:
        """The point to play, (d,) or (n_runs, d), inside the domain.

        Raises:
            RuntimeError: If the previous ``ask`` was not answered by ``tell``.
        """
        if self._u is not None:
            raise RuntimeError("ask() called twice: answer the last point with tell(value)")
        self._u = self.domain.sample_directions(self._rng, self._y.shape[0])
        x = self._y + self.delta * self._u
        return x[0].copy() if self.n_runs is None else x

    def tell(self, value) -> np.ndarray:
        """Report ``f_t(x_t)`` and step; returns the estimate ``g_t``, (d,) or (n_runs, d).

        Raises:
            RuntimeError: If ``ask`` was not called first.
            ValueError: If ``value`` has the wrong shape or is not finite.
        """
        if self._u is None:
            raise RuntimeError("tell() called before ask()")
        s = self._y.shape[0]
        y = np.asarray(value, dtype=np.float64).reshape(-1) if np.ndim(value) <= 1 else None
        if y is None or y.shape != (s,):
            raise ValueError(f"value must have shape ({s},) (one per run), got {np.shape(value)}")
        if not np.all(np.isfinite(y)):
            raise ValueError(f"value must be finite, got {y}")
        g = (self.domain.direction_dim / self.delta) * (y - self._b)[:, None] * self._u
        self._b = self._b + self.baseline_rate * (y - self._b)
        self._y = self.domain.project(self._y - self.step_size[:, None] * g, self._shrink)
        self._u = None
        self.t += 1
        return g[0] if self.n_runs is None else g

    @property
    def decision(self) -> np.ndarray:
        """The centre ``y_t`` of the next query, (d,) or (n_runs, d)."""
        return self._y[0].copy() if self.n_runs is None else self._y.copy()
