"""ES, OVI, CBO and their hybrids as one ask/tell population step.

One step: draw samples around a search state, aggregate their fitnesses into weights
(:mod:`bbo_hybrids.aggregation`), move the state. The methods differ in two choices:

================  ======================  ============================================
method            fitness aggregation     consensus scope
================  ======================  ============================================
``ES``            centred ranks           one Gaussian ``(m, sigma)``
``OVI``           Gibbs ``exp(-beta f)``  one Gaussian ``(m, sigma)``
``ESOVI``         Gibbs, rescaled         one Gaussian; ``beta -> 0`` is ES, large is OVI
``CBO``           Gibbs                   N particles, global consensus point
``CBOOVI``        Gibbs                   K Gaussians, global or kernel-local consensus
================  ======================  ============================================

The parametric methods share one update (our design, documented in the README): with
mirrored samples ``x_i = m + sigma eps_i`` and centred utilities ``u`` (``sum u = 0``),

    m     <- m + eta * sigma * sum_i u_i eps_i
    sigma <- sigma * exp(eta_sigma / 2 * sum_i u_i (|eps_i|^2 / d - 1))

For OVI ``u = w - 1/n`` with Gibbs weights ``w``, so ``eta = 1`` moves ``m`` to the
Gibbs mean and ``eta_sigma = 1`` is, to first order, the Gibbs-weighted variance about
the old mean. Fitnesses are minimized. Arrays are float64, shape ``(popsize, d)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml26_core.validation import check_choice, check_float, check_int

from .aggregation import centred_ranks, gibbs_weights

__all__ = [
    "CBO",
    "CBOOVI",
    "ES",
    "ESOVI",
    "OVI",
    "OptimizeResult",
    "PopulationOptimizer",
    "default_popsize",
]


def default_popsize(dim: int) -> int:
    """CMA-ES's default ``4 + floor(3 ln d)``, rounded up to an even number (mirroring)."""
    dim = check_int("dim", dim, low=1)
    n = 4 + int(3 * math.log(dim))
    return n + (n % 2)


@dataclass(frozen=True)
class OptimizeResult:
    """Best point seen so far.

    Attributes:
        x: Best sample, shape ``(d,)``.
        f: Its fitness.
        nfev: Number of fitness evaluations told so far.
        nit: Number of ask/tell generations.
    """

    x: np.ndarray
    f: float
    nfev: int
    nit: int


class PopulationOptimizer:
    """Base class: the ask/tell protocol, budgets, best-so-far, seeding and state.

    Subclasses implement :meth:`_sample` (the population for the current state) and
    :meth:`_update` (the state move from the told fitnesses) and list their state
    arrays in ``_state_keys``.

    Args:
        x0: Initial search point, shape ``(d,)``, finite.
        sigma: Initial search scale, ``> 0`` (same units as ``x``).
        popsize: Samples per generation, ``>= 2``.
        seed: Seed of the optimizer's own ``numpy.random.Generator`` (or a Generator).

    Raises:
        ValueError: If ``x0`` is not a finite 1-D array, ``sigma <= 0`` or ``popsize < 2``.
    """

    _state_keys: tuple[str, ...] = ()

    def __init__(
        self,
        x0: Any,
        sigma: float,
        popsize: int,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        x = np.array(x0, dtype=np.float64)
        if x.ndim != 1 or x.size == 0:
            raise ValueError(f"x0 must be a non-empty 1-D array, got shape {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("x0 must be finite")
        self.dim = int(x.size)
        self.sigma0 = check_float("sigma", sigma, low=0.0, low_inclusive=False)
        self.popsize = check_int("popsize", popsize, low=2)
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self.nfev = 0
        self.nit = 0
        self._best_x = x.copy()
        self._best_f = math.inf
        self._pending: np.ndarray | None = None

    # -- protocol -----------------------------------------------------------------
    def ask(self) -> np.ndarray:
        """Return the next population, shape ``(popsize, d)`` (a fresh copy).

        Raises:
            RuntimeError: If the previous population was not told yet.
        """
        if self._pending is not None:
            raise RuntimeError("ask() called twice: tell() the fitnesses of the last population")
        self._pending = self._sample()
        return self._pending.copy()

    def tell(self, fitness: Any) -> None:
        """Update the state from the fitnesses of the last :meth:`ask` population.

        Args:
            fitness: Shape ``(popsize,)``, finite (numpy, list or torch tensor).

        Raises:
            RuntimeError: If :meth:`ask` was not called first.
            ValueError: If ``fitness`` has the wrong length or a non-finite entry.
        """
        if self._pending is None:
            raise RuntimeError("tell() without ask(): call ask() first")
        f = _to_numpy(fitness).astype(np.float64).ravel()
        if f.size != self.popsize:
            raise ValueError(f"fitness must have length popsize={self.popsize}, got {f.size}")
        if not np.all(np.isfinite(f)):
            bad = int(np.flatnonzero(~np.isfinite(f))[0])
            raise ValueError(f"fitness must be finite; entry {bad} is {f[bad]}")
        X = self._pending
        i = int(np.argmin(f))
        if f[i] < self._best_f:
            self._best_f = float(f[i])
            self._best_x = X[i].copy()
        self._update(X, f)
        self._pending = None
        self.nfev += self.popsize
        self.nit += 1

    def optimize(
        self,
        f: Callable[[Any], Any],
        budget: int,
        *,
        vectorized: bool = False,
        device: str | None = None,
        callback: Callable[[PopulationOptimizer], Any] | None = None,
    ) -> OptimizeResult:
        """Run ask/tell until the next generation would exceed ``budget`` evaluations.

        Args:
            f: The objective. Called once per sample with a ``(d,)`` array, or once per
                generation with the ``(popsize, d)`` batch if ``vectorized``.
            budget: Total evaluations allowed (counted from this call), ``>= popsize``.
            vectorized: Pass the whole population to ``f`` at once.
            device: If given, ``f`` gets the batch as a float32 torch tensor on this
                device (implies ``vectorized``) and may return a tensor.
            callback: Called after each generation with the optimizer; return ``True``
                to stop.

        Returns:
            :attr:`result`.

        Raises:
            ValueError: If ``budget < popsize`` or ``f`` returns the wrong number of values.
        """
        budget = check_int("budget", budget, low=1)
        if budget < self.popsize:
            raise ValueError(
                f"budget must be >= popsize={self.popsize} (one generation), got {budget}"
            )
        start = self.nfev
        while self.nfev - start + self.popsize <= budget:
            X = self.ask()
            if device is not None:
                try:
                    import torch
                except ImportError as exc:
                    raise ImportError(
                        "optimize(device=...) evaluates torch batches; install torch "
                        "(pip install torch) or call it without device"
                    ) from exc

                fx = f(torch.as_tensor(X, dtype=torch.float32, device=device))
            elif vectorized:
                fx = f(X)
            else:
                fx = [f(x) for x in X]
            self.tell(fx)
            if callback is not None and callback(self) is True:
                break
        return self.result

    @property
    def result(self) -> OptimizeResult:
        """Best sample seen so far, its fitness, ``nfev`` and ``nit``."""
        return OptimizeResult(self._best_x.copy(), self._best_f, self.nfev, self.nit)

    @property
    def mean(self) -> np.ndarray:
        """The current search state's centre (the point to deploy), shape ``(d,)``."""
        raise NotImplementedError

    # -- state --------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: state arrays, counters, best point, RNG state."""
        d: dict[str, Any] = {k: np.array(getattr(self, k), copy=True) for k in self._state_keys}
        d.update(
            type=type(self).__name__,
            nfev=self.nfev,
            nit=self.nit,
            best_x=self._best_x.copy(),
            best_f=self._best_f,
            rng=self.rng.bit_generator.state,
            pending=None if self._pending is None else self._pending.copy(),
        )
        return d

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output (from an optimizer of the same class and d).

        Raises:
            ValueError: If the state comes from another class or dimension.
        """
        if state.get("type") != type(self).__name__:
            raise ValueError(f"state is for {state.get('type')!r}, not {type(self).__name__!r}")
        if np.asarray(state["best_x"]).shape != (self.dim,):
            raise ValueError(
                f"state has dimension {np.asarray(state['best_x']).shape}, not {self.dim}"
            )
        for k in self._state_keys:
            cur = getattr(self, k)
            val = np.array(state[k], dtype=np.float64, copy=True)
            setattr(self, k, float(val) if np.ndim(cur) == 0 else val)
        self.nfev = int(state["nfev"])
        self.nit = int(state["nit"])
        self._best_x = np.array(state["best_x"], dtype=np.float64, copy=True)
        self._best_f = float(state["best_f"])
        self.rng.bit_generator.state = state["rng"]
        p = state.get("pending")
        self._pending = None if p is None else np.array(p, dtype=np.float64, copy=True)

    # -- to implement ---------------------------------------------------------------
    def _sample(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _update(self, X: np.ndarray, f: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, popsize={self.popsize}, nfev={self.nfev})"


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        return x.detach().cpu().double().numpy()
    if isinstance(x, list | tuple) and x and hasattr(x[0], "detach"):
        return np.array([float(v.detach().cpu()) for v in x])
    return np.asarray(x, dtype=np.float64)


def _mirrored(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    half = rng.standard_normal((n // 2, d))
    eps = np.concatenate([half, -half])
    if n % 2:
        eps = np.concatenate([eps, rng.standard_normal((1, d))])
    return eps


class _Gaussian(PopulationOptimizer):
    """One isotropic Gaussian ``N(m, sigma^2 I)`` with the shared update (module docs)."""

    _state_keys = ("m", "sigma", "_eps")

    def __init__(
        self,
        x0: Any,
        sigma: float,
        popsize: int | None,
        eta: float,
        eta_sigma: float,
        seed: int | np.random.Generator | None,
    ) -> None:
        x = np.asarray(x0, dtype=np.float64)
        n = default_popsize(x.size if x.ndim == 1 and x.size else 1) if popsize is None else popsize
        super().__init__(x0, sigma, n, seed)
        self.eta = check_float("eta", eta, low=0.0, low_inclusive=False)
        self.eta_sigma = check_float("eta_sigma", eta_sigma, low=0.0)
        self.m = np.array(x0, dtype=np.float64)
        self.sigma = self.sigma0
        self._eps = np.zeros((self.popsize, self.dim))

    @property
    def mean(self) -> np.ndarray:
        """The Gaussian's mean ``m``, shape ``(d,)``."""
        return self.m.copy()

    def _sample(self) -> np.ndarray:
        self._eps = _mirrored(self.rng, self.popsize, self.dim)
        return self.m + self.sigma * self._eps

    def utilities(self, fitness: Any) -> np.ndarray:
        """Centred utilities ``u`` (``sum u = 0``, larger is better) of one population."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _update(self, X: np.ndarray, f: np.ndarray) -> None:
        u = self.utilities(f)
        eps = (X - self.m) / self.sigma
        self.m = self.m + self.eta * self.sigma * (u @ eps)
        if self.eta_sigma > 0:
            g = u @ (np.einsum("ij,ij->i", eps, eps) / self.dim - 1.0)
            self.sigma = float(self.sigma * math.exp(0.5 * self.eta_sigma * g))


class ES(_Gaussian):
    """Evolution strategy: centred rank (or standardized) utilities, ``sigma`` adapted.

    Utilities are ``centred_ranks(f)`` scaled so their positive part sums to 1 (``"rank"``:
    invariant to increasing transforms of ``f``), or ``-(f - mean f) / (n std f)``
    (``"standardize"``: the ``beta -> 0`` limit of :class:`ESOVI`).

    Args:
        x0: Initial mean, shape ``(d,)``.
        sigma: Initial step size, ``> 0``.
        popsize: Samples per generation (mirrored pairs; an odd popsize adds one unpaired
            sample); default :func:`default_popsize`.
        eta: Mean learning rate, ``> 0``.
        eta_sigma: Step-size learning rate, ``>= 0`` (0 keeps ``sigma`` fixed).
        shaping: ``"rank"`` or ``"standardize"``.
        seed: Seed or Generator.
    """

    def __init__(
        self,
        x0: Any,
        sigma: float = 1.0,
        popsize: int | None = None,
        *,
        eta: float = 1.0,
        eta_sigma: float = 1.0,
        shaping: str = "rank",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(x0, sigma, popsize, eta, eta_sigma, seed)
        self.shaping = check_choice("shaping", shaping, ("rank", "standardize"))

    def utilities(self, fitness: Any) -> np.ndarray:
        """Rank (or standardized) utilities, shape ``(n,)``, summing to 0."""
        f = np.asarray(fitness, dtype=np.float64)
        if self.shaping == "rank":
            c = centred_ranks(f)
            pos = c[c > 0].sum()
            return c / pos if pos > 0 else c
        sd = f.std()
        return -(f - f.mean()) / (f.size * sd) if sd > 0 else np.zeros_like(f)


class OVI(_Gaussian):
    """Optimization via integration: move to the Gibbs (Laplace) mean of the samples.

    ``u = gibbs_weights(f, beta) - 1/n``; with ``eta = 1`` the new mean is the Gibbs
    mean ``sum_i w_i x_i`` and ``sigma^2`` follows the Gibbs-weighted variance.

    Args:
        x0: Initial mean, shape ``(d,)``.
        sigma: Initial step size, ``> 0``.
        popsize: Samples per generation; default :func:`default_popsize`.
        beta: Inverse temperature, ``>= 0`` (in fitness standard deviations when
            ``standardize``).
        eta: Mean learning rate, ``> 0`` (1: jump to the Gibbs mean).
        eta_sigma: Step-size learning rate, ``>= 0``.
        standardize: Scale fitnesses by the population's standard deviation.
        seed: Seed or Generator.

    Raises:
        ValueError: If ``beta < 0``.
    """

    def __init__(
        self,
        x0: Any,
        sigma: float = 1.0,
        popsize: int | None = None,
        *,
        beta: float = 5.0,
        eta: float = 1.0,
        eta_sigma: float = 1.0,
        standardize: bool = True,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(x0, sigma, popsize, eta, eta_sigma, seed)
        self.beta = check_float("beta", beta, low=0.0, finite=False)
        self.standardize = bool(standardize)

    def utilities(self, fitness: Any) -> np.ndarray:
        """``gibbs_weights(f, beta) - 1/n``, shape ``(n,)``."""
        w = gibbs_weights(fitness, self.beta, standardize=self.standardize)
        return w - 1.0 / w.size


class ESOVI(OVI):
    """ES-OVI hybrid: Gibbs aggregation rescaled so ``beta`` interpolates ES <-> OVI.

    ``u = (gibbs_weights(f, beta, standardize=True) - 1/n) * (1 + beta) / beta``. To
    first order in ``beta`` this is ``-(f - mean f) / (n std f)``: the standardized ES
    step (:class:`ES` with ``shaping="standardize"``); for large ``beta`` it is OVI's
    step. Small ``beta`` follows the Gaussian-smoothed objective (flat minima), large
    ``beta`` the best samples (sharp minima).

    Args:
        x0: Initial mean, shape ``(d,)``.
        sigma: Initial step size, ``> 0``.
        popsize: Samples per generation; default :func:`default_popsize`.
        beta: Flat-minimum control, ``> 0`` (in fitness standard deviations).
        eta: Mean learning rate, ``> 0``.
        eta_sigma: Step-size learning rate, ``>= 0``.
        seed: Seed or Generator.

    Raises:
        ValueError: If ``beta <= 0`` or is not finite.
    """

    def __init__(
        self,
        x0: Any,
        sigma: float = 1.0,
        popsize: int | None = None,
        *,
        beta: float = 1.0,
        eta: float = 1.0,
        eta_sigma: float = 1.0,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        beta = check_float("beta", beta, low=0.0, low_inclusive=False)
        super().__init__(
            x0,
            sigma,
            popsize,
            beta=beta,
            eta=eta,
            eta_sigma=eta_sigma,
            standardize=True,
            seed=seed,
        )

    def utilities(self, fitness: Any) -> np.ndarray:
        """``(gibbs_weights(f, beta) - 1/n) (1 + beta) / beta``, shape ``(n,)``."""
        return super().utilities(fitness) * (1.0 + self.beta) / self.beta


class CBO(PopulationOptimizer):
    """Consensus-based optimization: N particles drift to the Gibbs consensus point.

    ``v = sum_i w_i X_i`` with ``w = gibbs_weights(f(X), beta)``; then (Euler-Maruyama)
    ``X <- X - lam dt (X - v) + noise sqrt(dt) |X - v| * xi`` (anisotropic noise,
    ``xi ~ N(0, I)``), or ``noise sqrt(dt) |X - v|_2 xi`` (isotropic).

    Args:
        x0: Centre of the initial particles, shape ``(d,)``.
        sigma: Spread of the initial particles ``N(x0, sigma^2 I)``, ``> 0``.
        n_particles: ``N >= 2`` (the popsize).
        beta: Inverse temperature of the consensus weights, ``>= 0``.
        lam: Drift rate, ``> 0``.
        noise: Diffusion strength, ``>= 0``.
        dt: Time step, ``> 0``.
        anisotropic: Per-coordinate noise (scales with d far better).
        standardize: Scale fitnesses by their standard deviation before the weights.
        seed: Seed or Generator.
    """

    _state_keys = ("X", "v")

    def __init__(
        self,
        x0: Any,
        sigma: float = 1.0,
        n_particles: int = 20,
        *,
        beta: float = 30.0,
        lam: float = 1.0,
        noise: float = 1.0,
        dt: float = 1.0,
        anisotropic: bool = True,
        standardize: bool = True,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(x0, sigma, check_int("n_particles", n_particles, low=2), seed)
        self.beta = check_float("beta", beta, low=0.0, finite=False)
        self.lam = check_float("lam", lam, low=0.0, low_inclusive=False)
        self.noise = check_float("noise", noise, low=0.0)
        self.dt = check_float("dt", dt, low=0.0, low_inclusive=False)
        self.anisotropic = bool(anisotropic)
        self.standardize = bool(standardize)
        x = np.asarray(x0, dtype=np.float64)
        self.X = x + self.sigma0 * self.rng.standard_normal((self.popsize, self.dim))
        self.v = x.copy()

    @property
    def mean(self) -> np.ndarray:
        """The last consensus point ``v``, shape ``(d,)``."""
        return self.v.copy()

    def consensus(self, X: np.ndarray, fitness: Any) -> np.ndarray:
        """The consensus point: the Gibbs mean ``sum_i w_i X_i``, shape ``(d,)``."""
        w = gibbs_weights(fitness, self.beta, standardize=self.standardize)
        return w @ np.asarray(X, dtype=np.float64)

    def _sample(self) -> np.ndarray:
        return self.X.copy()

    def _update(self, X: np.ndarray, f: np.ndarray) -> None:
        self.v = self.consensus(X, f)
        diff = X - self.v
        xi = self.rng.standard_normal(X.shape)
        if self.anisotropic:
            diffusion = np.abs(diff) * xi
        else:
            diffusion = np.linalg.norm(diff, axis=1, keepdims=True) * xi
        self.X = X - self.lam * self.dt * diff + self.noise * math.sqrt(self.dt) * diffusion


class CBOOVI(PopulationOptimizer):
    """CBO-OVI hybrid: K OVI Gaussians coupled by a consensus drift on their means.

    Each Gaussian ``k`` draws ``samples`` mirrored points, takes its OVI step from its
    own fitnesses (Gibbs weights, ``beta``), and scores itself by the Gibbs-weighted
    mean fitness ``F_k`` of its samples. The means then drift toward a consensus point
    of the means, weighted by ``gibbs_weights(F, beta_consensus)``:

    - ``scope="global"``: one consensus point for all (CBO's scope);
    - ``scope="local"``: a per-Gaussian point with kernel ``exp(-|m_k - m_j|^2/(2 kappa^2))``
      (PolarCBO-like), so distant modes are kept.

    ``m_k <- m_k + lam (c_k - m_k)``. The recommendation :attr:`mean` is the mean of the
    Gaussian with the lowest ``F_k``.

    Args:
        x0: Centre of the initial means, shape ``(d,)``.
        sigma: Initial step size of each Gaussian and spread of the initial means, ``> 0``.
        n_particles: Number of Gaussians ``K >= 2``.
        samples: Samples per Gaussian per generation (even, ``>= 2``); default
            :func:`default_popsize`. The popsize is ``K * samples``.
        scope: ``"global"`` or ``"local"``.
        kappa: Kernel radius of the local scope, ``> 0`` (same units as ``x``).
        beta: Inverse temperature within each Gaussian (standardized fitness), ``>= 0``.
        beta_consensus: Inverse temperature across Gaussians, ``>= 0``.
        lam: Consensus drift per generation, in ``[0, 1]``.
        eta, eta_sigma: Learning rates of each Gaussian's OVI step.
        seed: Seed or Generator.
    """

    _state_keys = ("M", "S", "F", "_eps")

    def __init__(
        self,
        x0: Any,
        sigma: float = 1.0,
        n_particles: int = 4,
        samples: int | None = None,
        *,
        scope: str = "global",
        kappa: float = 1.0,
        beta: float = 5.0,
        beta_consensus: float = 1.0,
        lam: float = 0.1,
        eta: float = 1.0,
        eta_sigma: float = 1.0,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        x = np.asarray(x0, dtype=np.float64)
        k = check_int("n_particles", n_particles, low=2)
        d = x.size if x.ndim == 1 and x.size else 1
        p = default_popsize(d) if samples is None else check_int("samples", samples, low=2)
        if p % 2:
            raise ValueError(f"samples must be even (mirrored pairs), got {p}")
        super().__init__(x0, sigma, k * p, seed)
        self.n_particles = k
        self.samples = p
        self.scope = check_choice("scope", scope, ("global", "local"))
        self.kappa = check_float("kappa", kappa, low=0.0, low_inclusive=False)
        self.beta = check_float("beta", beta, low=0.0, finite=False)
        self.beta_consensus = check_float("beta_consensus", beta_consensus, low=0.0, finite=False)
        self.lam = check_float("lam", lam, low=0.0, high=1.0)
        self.eta = check_float("eta", eta, low=0.0, low_inclusive=False)
        self.eta_sigma = check_float("eta_sigma", eta_sigma, low=0.0)
        self.M = x + self.sigma0 * self.rng.standard_normal((k, self.dim))
        self.S = np.full(k, self.sigma0)
        self.F = np.full(k, np.inf)
        self._eps = np.zeros((k, p, self.dim))

    @property
    def mean(self) -> np.ndarray:
        """The mean of the Gaussian with the lowest Gibbs-weighted fitness, shape ``(d,)``."""
        i = int(np.argmin(self.F)) if np.isfinite(self.F).any() else 0
        return self.M[i].copy()

    def _sample(self) -> np.ndarray:
        k, p, d = self.n_particles, self.samples, self.dim
        self._eps = _mirrored(self.rng, k * p, d).reshape(p, k, d).transpose(1, 0, 2)
        X = self.M[:, None, :] + self.S[:, None, None] * self._eps
        return X.reshape(k * p, d)

    def consensus_points(self, M: np.ndarray, F: np.ndarray) -> np.ndarray:
        """Consensus point of each Gaussian, shape ``(K, d)`` (global: K equal rows)."""
        w = gibbs_weights(F, self.beta_consensus, standardize=True)
        if self.scope == "global":
            return np.broadcast_to(w @ M, M.shape).copy()
        sq = ((M[:, None, :] - M[None, :, :]) ** 2).sum(-1)
        kern = np.exp(-sq / (2 * self.kappa**2)) * w[None, :]
        kern /= kern.sum(axis=1, keepdims=True)
        return kern @ M

    def _update(self, X: np.ndarray, f: np.ndarray) -> None:
        k, p, d = self.n_particles, self.samples, self.dim
        Xk = X.reshape(k, p, d)
        fk = f.reshape(k, p)
        eps = (Xk - self.M[:, None, :]) / self.S[:, None, None]
        M, S, F = self.M.copy(), self.S.copy(), np.empty(k)
        for j in range(k):
            w = gibbs_weights(fk[j], self.beta, standardize=True)
            u = w - 1.0 / p
            M[j] = M[j] + self.eta * S[j] * (u @ eps[j])
            if self.eta_sigma > 0:
                g = u @ (np.einsum("ij,ij->i", eps[j], eps[j]) / d - 1.0)
                S[j] = S[j] * math.exp(0.5 * self.eta_sigma * g)
            F[j] = w @ fk[j]
        C = self.consensus_points(M, F)
        self.M = M + self.lam * (C - M)
        self.S = S
        self.F = F
