r"""Hamilton-Jacobi Monte Carlo proximal operators (HJ-Prox).

For a function ``f`` on R^d, a time ``t > 0`` and a viscosity ``delta > 0``, the
Hopf-Lax / Cole-Hopf link between the Moreau envelope and the heat equation gives

.. math::

    u^\delta(x, t) = -\delta \log \mathbb{E}_{y \sim N(x, \delta t I)}
        \left[ e^{-f(y) / \delta} \right]
    \;\xrightarrow[\delta \to 0]{}\; \min_z f(z) + \frac{1}{2t} \|z - x\|^2,

    \operatorname{prox}_{t f}(x) \approx x - t \nabla u^\delta(x, t)
    = \frac{\mathbb{E}[y\, e^{-f(y)/\delta}]}{\mathbb{E}[e^{-f(y)/\delta}]},

both estimated with ``N`` samples ``y_i = x + sqrt(delta t) z_i``, ``z_i ~ N(0, I)``:
``prox ~ sum_i w_i y_i`` with ``w = softmax(-f(y) / delta)``. The softmax and the
envelope are computed with the log-sum-exp shift, so huge ``f`` values never underflow
to 0/0; ``f = +inf`` (an indicator) gives weight 0.

References:
    S. Osher, H. Heaton, S. Wu Fung, "A Hamilton-Jacobi-based proximal operator",
    PNAS 120 (2023). The ICML 2026 paper (abstract only) builds
    operator splitting on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

__all__ = ["HJProx", "Schedule", "hj_prox", "moreau_envelope"]

_CHUNK = 1 << 22
"""Default largest number of sample coordinates (points x samples x d) held at once."""


def _is_torch(x: Any) -> bool:
    mod = type(x).__module__
    return mod.startswith("torch") and hasattr(x, "detach")


def _check_common(t: Any, delta: Any, n_samples: Any) -> tuple[float, float, int]:
    t = check_float("t", t, low=0.0, low_inclusive=False)
    delta = check_float("delta", delta, low=0.0, low_inclusive=False)
    n_samples = check_int("n_samples", n_samples, low=1)
    return t, delta, n_samples


def _check_values(fy: Any, shape: tuple[int, ...], xp: str) -> None:
    if tuple(fy.shape) != shape:
        raise ValueError(
            f"f must map samples of shape (m, n_samples, d) to values of shape "
            f"(m, n_samples) = {shape}; it returned shape {tuple(fy.shape)}"
        )
    if xp == "numpy":
        bad_nan = bool(np.isnan(fy).any())
        bad_neg = bool(np.isneginf(fy).any())
    else:
        import torch

        bad_nan = bool(torch.isnan(fy).any())
        bad_neg = bool(torch.isneginf(fy).any())
    if bad_nan:
        raise ValueError("f returned NaN at some samples; HJ-prox needs values in R or +inf")
    if bad_neg:
        raise ValueError("f returned -inf at some samples; f must be bounded below")


def _estimate_numpy(
    f: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    t: float,
    delta: float,
    n: int,
    rng: np.random.Generator,
    antithetic: bool,
    chunk: int,
) -> tuple[np.ndarray, np.ndarray]:
    batch, d = x.shape[:-1], x.shape[-1]
    xf = x.reshape(-1, d)
    m = xf.shape[0]
    prox = np.empty_like(xf)
    env = np.empty(m, dtype=xf.dtype)
    sd = math.sqrt(delta * t)
    step = max(1, chunk // max(1, n * d))
    for s in range(0, m, step):
        xs = xf[s : s + step]
        b = xs.shape[0]
        if antithetic:
            h = (n + 1) // 2
            z = rng.standard_normal((b, h, d), dtype=xf.dtype)
            z = np.concatenate([z, -z], axis=1)[:, :n]
        else:
            z = rng.standard_normal((b, n, d), dtype=xf.dtype)
        y = xs[:, None, :] + sd * z
        fy = np.asarray(f(y))
        _check_values(fy, (b, n), "numpy")
        a = -fy / delta
        amax = a.max(axis=1, keepdims=True)
        if not np.all(np.isfinite(amax)):
            raise ValueError(
                "f is +inf at every sample of some point: raise n_samples or delta, or start "
                "inside the domain of f"
            )
        w = np.exp(a - amax)
        sw = w.sum(axis=1)
        prox[s : s + b] = np.einsum("bn,bnd->bd", w, y) / sw[:, None]
        env[s : s + b] = -delta * (amax[:, 0] + np.log(sw / n))
    return prox.reshape(*batch, d), env.reshape(batch)


def _estimate_torch(
    f: Callable[[Any], Any],
    x: Any,
    t: float,
    delta: float,
    n: int,
    rng: Any,
    antithetic: bool,
    chunk: int,
) -> tuple[Any, Any]:
    import torch

    batch, d = tuple(x.shape[:-1]), x.shape[-1]
    xf = x.reshape(-1, d)
    m = xf.shape[0]
    prox = torch.empty_like(xf)
    env = torch.empty(m, dtype=xf.dtype, device=xf.device)
    sd = math.sqrt(delta * t)
    step = max(1, chunk // max(1, n * d))
    for s in range(0, m, step):
        xs = xf[s : s + step]
        b = xs.shape[0]
        h = (n + 1) // 2 if antithetic else n
        z = torch.randn((b, h, d), dtype=xf.dtype, device=xf.device, generator=rng)
        if antithetic:
            z = torch.cat([z, -z], dim=1)[:, :n]
        y = xs[:, None, :] + sd * z
        fy = torch.as_tensor(f(y), dtype=xf.dtype, device=xf.device)
        _check_values(fy, (b, n), "torch")
        a = -fy / delta
        amax = a.amax(dim=1, keepdim=True)
        if not bool(torch.isfinite(amax).all()):
            raise ValueError(
                "f is +inf at every sample of some point: raise n_samples or delta, or start "
                "inside the domain of f"
            )
        w = torch.exp(a - amax)
        sw = w.sum(dim=1)
        prox[s : s + b] = torch.einsum("bn,bnd->bd", w, y) / sw[:, None]
        env[s : s + b] = -delta * (amax[:, 0] + torch.log(sw / n))
    return prox.reshape(*batch, d), env.reshape(batch)


def _numpy_rng(rng: Any) -> np.random.Generator:
    if rng is None or isinstance(rng, int | np.integer | np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError(
        f"rng must be None, an int seed or a numpy Generator for numpy input, got "
        f"{type(rng).__name__}"
    )


def _torch_rng(rng: Any, device: Any) -> Any:
    import torch

    if rng is None:
        return None
    if isinstance(rng, torch.Generator):
        return rng
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        g = torch.Generator(device=device)
        g.manual_seed(int(rng))
        return g
    raise TypeError(
        f"rng must be None, an int seed or a torch.Generator for torch input, got "
        f"{type(rng).__name__}"
    )


def _estimate(
    f: Callable[[Any], Any],
    x: Any,
    t: Any,
    delta: Any,
    n_samples: Any,
    rng: Any,
    antithetic: bool,
    chunk_size: int,
) -> tuple[Any, Any]:
    if not callable(f):
        raise TypeError(f"f must be callable, got {type(f).__name__}")
    t, delta, n_samples = _check_common(t, delta, n_samples)
    chunk_size = check_int("chunk_size", chunk_size, low=1)
    if _is_torch(x):
        import torch

        if x.ndim < 1 or x.shape[-1] == 0 or x.numel() == 0:
            raise ValueError(f"x must have shape (..., d) with d >= 1, got {tuple(x.shape)}")
        if not torch.is_floating_point(x):
            x = x.to(torch.get_default_dtype())
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x must be finite (no NaN or inf)")
        with torch.no_grad():
            return _estimate_torch(
                f, x, t, delta, n_samples, _torch_rng(rng, x.device), antithetic, chunk_size
            )
    x = np.asarray(x)
    if x.ndim < 1 or x.shape[-1] == 0 or x.size == 0:
        raise ValueError(f"x must have shape (..., d) with d >= 1, got {x.shape}")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite (no NaN or inf)")
    return _estimate_numpy(f, x, t, delta, n_samples, _numpy_rng(rng), antithetic, chunk_size)


def hj_prox(
    f: Callable[[Any], Any],
    x: Any,
    t: float,
    delta: float = 0.1,
    n_samples: int = 1000,
    rng: Any = None,
    *,
    antithetic: bool = False,
    chunk_size: int = _CHUNK,
) -> Any:
    """Monte Carlo estimate of ``prox_{t f}(x)`` by the Hamilton-Jacobi formula.

    ``prox ~ sum_i softmax(-f(y)/delta)_i y_i`` with ``y_i ~ N(x, delta t I)``, one
    independent set of ``n_samples`` samples per point of the batch.

    This is self-normalized importance sampling of the Gibbs density
    ``exp(-(f(y) + ||y - x||^2 / (2t)) / delta)`` from the proposal ``N(x, delta t I)``.
    When the prox lies many proposal widths ``sqrt(delta t)`` away from ``x`` (large
    ``t ||grad f||``, small ``delta``) or ``d`` is large, the weights collapse onto a few
    samples and the estimate is biased towards ``x``: small ``delta`` lowers the
    smoothing bias but needs many more samples.

    Args:
        f: The function, vectorized over leading axes: given samples of shape
            ``(m, n_samples, d)`` (``m`` points of the flattened batch, chunked) it
            returns values of shape ``(m, n_samples)`` (real or ``+inf``; never NaN
            or ``-inf``). Only values are used (derivative-free). For numpy input it
            receives a numpy array, for torch input a tensor.
        x: Points, shape ``(..., d)``, numpy array (float32/float64; other dtypes
            become float64) or torch tensor (any device: the samples are drawn there).
        t: Proximal time (step) ``t > 0``.
        delta: Viscosity ``delta > 0``; smaller is closer to the true prox but gives
            fewer effective samples.
        n_samples: Samples per point, ``>= 1``.
        rng: None (fresh entropy), an int seed, or a ``numpy.random.Generator``
            (numpy input) / ``torch.Generator`` (torch input) for reproducibility.
        antithetic: Use antithetic pairs ``z, -z`` (halves the fresh normals; lowers
            the variance for nearly linear ``f``).
        chunk_size: Largest number of sample coordinates (points x samples x d) in
            memory at once; the batch is processed in chunks of points below it.

    Returns:
        The estimate, same shape as ``x`` (same array type, dtype and device).

    Raises:
        ValueError: If ``t <= 0``, ``delta <= 0``, ``n_samples < 1``, ``x`` is empty or
            not finite, ``f`` returns the wrong shape, NaN or ``-inf``, or ``+inf`` at
            every sample of a point.
        TypeError: If ``f`` is not callable or ``rng`` has the wrong type.

    Example:
        >>> import numpy as np
        >>> p = hj_prox(lambda y: 0.5 * (y**2).sum(-1), np.ones(3), t=1.0, delta=1.0,
        ...             n_samples=20000, rng=0)
        >>> np.round(p, 1)  # closed form x / (1 + t), for every delta
        array([0.5, 0.5, 0.5])
    """
    return _estimate(f, x, t, delta, n_samples, rng, antithetic, chunk_size)[0]


def moreau_envelope(
    f: Callable[[Any], Any],
    x: Any,
    t: float,
    delta: float = 0.1,
    n_samples: int = 1000,
    rng: Any = None,
    *,
    return_grad: bool = False,
    antithetic: bool = False,
    chunk_size: int = _CHUNK,
) -> Any:
    """Monte Carlo estimate of the Moreau envelope ``min_z f(z) + ||z - x||^2 / (2t)``.

    ``u = -delta log mean_i exp(-f(y_i)/delta)``, ``y_i ~ N(x, delta t I)`` (the
    viscous envelope, which tends to the Moreau envelope as ``delta -> 0``; for
    ``f = ||x||^2 / 2`` it is ``||x||^2 / (2 (1 + t)) + (delta d / 2) log(1 + t)``),
    computed with the log-sum-exp shift. Its gradient is ``(x - prox) / t`` with the prox
    estimate from the same samples.

    Args:
        f: Vectorized function, as in :func:`hj_prox`.
        x: Points ``(..., d)``, numpy array or torch tensor.
        t: Proximal time ``> 0``.
        delta: Viscosity ``> 0``.
        n_samples: Samples per point ``>= 1``.
        rng: Seed or generator, as in :func:`hj_prox`.
        return_grad: Also return the gradient estimate.
        antithetic: Antithetic pairs, as in :func:`hj_prox`.
        chunk_size: Memory bound, as in :func:`hj_prox`.

    Returns:
        ``u`` of shape ``x.shape[:-1]``, or ``(u, grad)`` with ``grad`` shaped like ``x``.

    Raises:
        ValueError, TypeError: As :func:`hj_prox`.

    Example:
        >>> import numpy as np
        >>> u = moreau_envelope(lambda y: 0.5 * (y**2).sum(-1), np.array([2.0]), t=1.0,
        ...                     delta=1.0, n_samples=10000, rng=0)
        >>> round(float(u), 1)  # ||x||^2 / (2 (1 + t)) + (delta d / 2) log(1 + t) = 1.35
        1.4
    """
    prox, env = _estimate(f, x, t, delta, n_samples, rng, antithetic, chunk_size)
    if not return_grad:
        return env
    xa = x if _is_torch(x) else np.asarray(x, dtype=prox.dtype)
    return env, (xa - prox) / check_float("t", t)


@dataclass(frozen=True)
class Schedule:
    """Sample count and viscosity per call ``k = 0, 1, 2, ...`` of an :class:`HJProx`.

    ``N_k = min(n_max, ceil(n0 * growth**k))`` and
    ``delta_k = max(delta_min, delta0 * decay**k)``.

    Inexact proximal methods converge when the prox errors are summable
    (``sum_k eps_k < inf``; Rockafellar 1976 for the proximal point method, Combettes
    and Wajs 2005 for forward-backward, the same for DRS/Davis-Yin/PDHG as averaged
    operator iterations). We model the HJ-prox error as
    ``eps_k ~ C (delta_k + sqrt(delta_k t d / N_k))`` (bias plus Monte Carlo spread;
    our heuristic, not a proven bound): with ``decay < 1`` and ``growth >= 1`` it is
    summable as long as ``delta_min = 0`` and ``n_max = inf``; the floors keep the
    cost bounded and so stop the error at a level set by them.

    Args:
        n0: Samples at call 0, ``>= 1``.
        growth: Factor per call, ``>= 1``.
        n_max: Largest sample count.
        delta0: Viscosity at call 0, ``> 0``.
        decay: Factor per call, in ``(0, 1]``.
        delta_min: Smallest viscosity, ``>= 0`` (``delta_k`` never reaches 0 when it is 0).

    Raises:
        ValueError: On an argument out of range.
    """

    n0: int = 100
    growth: float = 1.0
    n_max: int = 10**6
    delta0: float = 0.1
    decay: float = 1.0
    delta_min: float = 0.0

    def __post_init__(self) -> None:
        check_int("n0", self.n0, low=1)
        check_float("growth", self.growth, low=1.0)
        check_int("n_max", self.n_max, low=self.n0)
        check_float("delta0", self.delta0, low=0.0, low_inclusive=False)
        check_float("decay", self.decay, low=0.0, high=1.0, low_inclusive=False)
        check_float("delta_min", self.delta_min, low=0.0)

    def __call__(self, k: int) -> tuple[int, float]:
        """Return ``(N_k, delta_k)`` for call ``k >= 0``."""
        k = check_int("k", k, low=0)
        n = min(self.n_max, math.ceil(self.n0 * self.growth**k))
        delta = max(self.delta_min, self.delta0 * self.decay**k)
        return int(n), float(max(delta, np.finfo(np.float64).tiny))


class HJProx:
    """A proximal operator of ``f`` estimated by HJ-Prox: ``prox(x, t)``.

    Plugs into every solver of :mod:`hj_prox.splitting` wherever an exact prox
    ``prox(x, t)`` (pyproximal / copt functional style) would go.

    Args:
        f: Vectorized function, as in :func:`hj_prox`.
        delta: Viscosity ``> 0`` (ignored when ``schedule`` is given).
        n_samples: Samples per point ``>= 1`` (ignored when ``schedule`` is given).
        schedule: Optional ``k -> (N_k, delta_k)`` per call (e.g. :class:`Schedule`),
            for convergence with summable errors.
        rng: Seed or generator; one stream for all calls (reproducible runs).
        antithetic: Antithetic sampling, as in :func:`hj_prox`.
        separable: ``f`` is a scalar function ``phi`` and the prox is that of
            ``sum_i phi(x_i)``: each coordinate gets its own 1-D estimate (``f`` then
            receives samples of shape ``(m, n_samples, 1)``). The Monte Carlo error no
            longer grows with ``d``; the cost is ``d`` times the samples.

    Attributes:
        n_calls: Calls so far.
        n_fevals: Evaluations of ``f`` so far (points x samples).

    Example:
        >>> import numpy as np
        >>> prox = HJProx(lambda y: np.abs(y).sum(-1), delta=0.1, n_samples=4000, rng=0)
        >>> np.round(prox(np.array([[2.0], [0.1]]), 0.5), 1)  # soft threshold at 0.5
        array([[1.5],
               [0. ]])
        >>> prox.n_fevals
        8000
    """

    def __init__(
        self,
        f: Callable[[Any], Any],
        delta: float = 0.1,
        n_samples: int = 1000,
        schedule: Callable[[int], tuple[int, float]] | None = None,
        rng: Any = None,
        *,
        antithetic: bool = False,
        separable: bool = False,
    ) -> None:
        if not callable(f):
            raise TypeError(f"f must be callable, got {type(f).__name__}")
        if schedule is not None and not callable(schedule):
            raise TypeError(f"schedule must be callable k -> (N_k, delta_k), got {schedule!r}")
        self.f = f
        self.delta = check_float("delta", delta, low=0.0, low_inclusive=False)
        self.n_samples = check_int("n_samples", n_samples, low=1)
        self.schedule = schedule
        self.antithetic = bool(antithetic)
        self.separable = bool(separable)
        self._rng_arg = rng
        self._rng: Any = None
        self.n_calls = 0
        self.n_fevals = 0

    def current(self) -> tuple[int, float]:
        """``(n_samples, delta)`` that the next call will use."""
        if self.schedule is None:
            return self.n_samples, self.delta
        n, delta = self.schedule(self.n_calls)
        return check_int("schedule N_k", n, low=1), check_float(
            "schedule delta_k", delta, low=0.0, low_inclusive=False
        )

    def _generator(self, x: Any) -> Any:
        if self._rng is None:
            self._rng = (
                _torch_rng(self._rng_arg, x.device) if _is_torch(x) else _numpy_rng(self._rng_arg)
            )
        return self._rng

    def __call__(self, x: Any, t: float) -> Any:
        """Estimate ``prox_{t f}(x)`` for ``x`` of shape ``(..., d)``."""
        n, delta = self.current()
        if not _is_torch(x):
            x = np.asarray(x)
        xin = x[..., None] if self.separable else x
        out = hj_prox(self.f, xin, t, delta, n, self._generator(x), antithetic=self.antithetic)
        self.n_calls += 1
        self.n_fevals += int(np.prod(xin.shape[:-1], dtype=np.int64)) * n
        return out[..., 0] if self.separable else out

    def envelope(self, x: Any, t: float, *, return_grad: bool = False) -> Any:
        """Estimate the Moreau envelope of ``f`` at ``x`` (counts toward ``n_fevals``)."""
        if self.separable:
            raise ValueError("envelope() is for a non-separable HJProx (separable=False)")
        n, delta = self.current()
        if not _is_torch(x):
            x = np.asarray(x)
        out = moreau_envelope(
            self.f,
            x,
            t,
            delta,
            n,
            self._generator(x),
            return_grad=return_grad,
            antithetic=self.antithetic,
        )
        self.n_fevals += int(np.prod(x.shape[:-1], dtype=np.int64)) * n
        return out

    def __repr__(self) -> str:
        sched = f", schedule={self.schedule!r}" if self.schedule is not None else ""
        sep = ", separable=True" if self.separable else ""
        return f"HJProx(delta={self.delta:g}, n_samples={self.n_samples}{sched}{sep})"
