r"""One convergence guarantee for SAG, SAGA and IAG, built from a bound on delays.

All three methods step along x_{k+1} = x_k - gamma g_k, where g_k is made of stored
per-sample gradients grad f_i(x_{k - tau_i(k)}), each refreshed tau_i(k) steps ago:

- SAG / IAG: g_k = (1/n) sum_i grad f_i(x_{k - tau_i(k)}) (the sampled entry is fresh);
- SAGA: g_k = grad f_j(x_k) - grad f_j(x_{k - tau_j(k)}) + (1/n) sum_i grad f_i(x_{k - tau_i(k)}).

The analysis (our reading of the paper's abstract; the constants and the proof below are
ours) has two steps.

**(i) Delays.** Let tau bound every delay read during the first T steps. It is n - 1
for cyclic IAG and 2n - 2 for random reshuffling (n and 2n - 1 for SAGA, which also
reads the sampled index's old entry). For uniform sampling an entry survives tau steps
with probability (1 - 1/n)^tau, so a union bound over n entries and T steps gives,
with probability >= 1 - delta, tau <= ceil(ln(nT/delta) / -ln(1 - 1/n)) (about
n ln(nT/delta)). For a Markov chain with largest mean hitting time h, Markov's
inequality applied on blocks of ceil(e h) steps gives
tau <= ceil(e h) ceil(ln(nT/delta)) with the same probability. See :func:`delay_bound`.

**(ii) Lyapunov function.** Write g_k = grad f(x_k) + e_k. Since every stored point is
some x_s with k - tau <= s <= k, ||e_k|| <= E gamma sum_{t=k-tau}^{k-1} ||g_t||, with
E = L_bar for SAG/IAG and E = L_max + L_bar for SAGA (L_bar the mean, L_max the largest
per-sample smoothness constant). The descent lemma for the L-smooth f and
<a, b> = (|a|^2 + |b|^2 - |a - b|^2)/2 give

    D_{k+1} <= D_k - (gamma/2)|grad f(x_k)|^2 - (gamma/2)(1 - L gamma)|g_k|^2
               + (gamma^3 E^2 tau / 2) sum_{t=k-tau}^{k-1} |g_t|^2,

with D_k = f(x_k) - f*. The Lyapunov function

    V_k = D_k + gamma^3 E^2 tau sum_{t=k-tau}^{k-1} (t - k + tau + 1) |g_t|^2

(weights 1..tau on the last tau directions; V_0 = D_0 when the memory starts at x_0)
then satisfies, whenever the step obeys 2 gamma^2 E^2 tau^2 + L gamma <= 1,

    V_{k+1} <= V_k - (gamma/2)|grad f(x_k)|^2,      and, if f is mu-strongly convex,
    V_{k+1} <= (1 - min(gamma mu, 1/(2 tau))) V_k.

Hence f(x_k) - f* <= (1 - min(gamma mu, 1/(2 tau)))^k (f(x_0) - f*) (linear rate; a
high-probability statement for random sampling through (i)), and without convexity
min_{k<K} |grad f(x_k)|^2 <= 2 (f(x_0) - f_low) / (gamma K). The largest admissible step
is gamma* = 2 / (L + sqrt(L^2 + 8 E^2 tau^2)) (:func:`theory_step_size`); with tau = 0 the
bound is gradient descent's 1 - gamma mu with gamma <= 1/L.

For cyclic IAG (tau = n - 1) this is about 1 - mu / (sqrt(2) L_bar n) per step, i.e.
O(Q n log(1/eps)) steps with Q = L_bar/mu. :func:`max_lemma_iag_bound` is the earlier
style of analysis (a max-type recursion on the distance, as in Gurbuzbalaban, Ozdaglar
& Parrilo, 2017, and Feyzmahdavian, Aytekin & Johansson, 2014), re-derived by us for the
same constants; it needs O(Q^2 n^2 log(1/eps)) steps.

References:
    Zhu, Heath & Mitra (ICML 2026), a short and unified convergence analysis of the
    SAG, SAGA and IAG algorithms (abstract only).
    Schmidt, Le Roux & Bach (2017), Minimizing finite sums with the stochastic average
    gradient, Math. Program. 162. Defazio, Bach & Lacoste-Julien (2014), SAGA, NeurIPS.
    Gurbuzbalaban, Ozdaglar & Parrilo (2017), On the convergence rate of incremental
    aggregated gradient algorithms, SIAM J. Optim. 27(2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml26_core.validation import check_choice, check_float, check_int

from sag_saga_iag.problems import Smoothness
from sag_saga_iag.sampling import SAMPLINGS, MarkovSampler, Sampler

METHODS = ("sag", "saga", "iag")


def error_constant(method: str, smoothness: Smoothness) -> float:
    """E in ||g_k - grad f(x_k)|| <= E gamma sum_{window} ||g_t||.

    L_bar for SAG/IAG, L_max + L_bar for SAGA.

    Raises:
        ValueError: If ``method`` is unknown.
    """
    check_choice("method", method, METHODS)
    if method == "saga":
        return smoothness.L_max + smoothness.L_bar
    return smoothness.L_bar


def delay_bound(
    sampling: str | Sampler,
    n: int,
    *,
    method: str = "sag",
    horizon: int | None = None,
    delta: float = 0.05,
) -> int:
    """Bound tau on the delay of every stored gradient read during ``horizon`` steps.

    Deterministic for ``"cyclic"`` (n - 1, or n for SAGA) and ``"reshuffle"`` (2n - 2,
    or 2n - 1); for ``"uniform"`` and ``"markov"`` it holds with probability at least
    1 - ``delta`` over the sampling (union bound over the n entries and the T steps).

    Args:
        sampling: A name in :data:`~sag_saga_iag.sampling.SAMPLINGS` or a Sampler (a
            :class:`~sag_saga_iag.sampling.MarkovSampler` brings its own hitting time;
            the name ``"markov"`` means the walk on the complete graph).
        n: Number of components, >= 1.
        method: ``"sag"``, ``"saga"`` or ``"iag"``.
        horizon: T, the number of steps the bound must cover (needed for random schemes).
        delta: Failure probability in (0, 1) for random schemes.

    Returns:
        tau, an int >= 0 (never more than T - 1 when ``horizon`` is given).

    Raises:
        ValueError: On an unknown scheme or method, n < 1, or a missing ``horizon``
            for a random scheme.

    Example:
        >>> delay_bound("cyclic", 100, method="iag")
        99
        >>> delay_bound("uniform", 100, horizon=10_000, delta=0.05) > 100 * math.log(100)
        True
    """
    n = check_int("n", n, low=1)
    check_choice("method", method, METHODS)
    offset = 1 if method == "saga" else 0
    name = sampling.name if isinstance(sampling, Sampler) else sampling
    if not isinstance(name, str) or name not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS} or a Sampler, got {sampling!r}")
    T = None if horizon is None else check_int("horizon", horizon, low=1)
    if name == "cyclic":
        tau = n - 1 + offset
    elif name == "reshuffle":
        tau = 2 * n - 2 + offset
    else:
        if T is None:
            raise ValueError(f"horizon (number of steps) is needed for sampling={name!r}")
        d = check_float(
            "delta", delta, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
        )
        if n == 1:
            tau = offset
        elif name == "uniform":
            m = math.ceil(math.log(n * T / d) / -math.log1p(-1.0 / n))
            tau = m - 1 + offset
        else:
            sampler = sampling if isinstance(sampling, MarkovSampler) else MarkovSampler(n, 0)
            block = math.ceil(math.e * sampler.max_hitting_time())
            tau = block * math.ceil(math.log(n * T / d)) - 1 + offset
    if T is not None:
        tau = min(tau, T - 1)
    return max(int(tau), 0)


def theory_step_size(method: str, smoothness: Smoothness, tau: int) -> float:
    """Largest step of the unified analysis: gamma* = 2 / (L + sqrt(L^2 + 8 E^2 tau^2)).

    It is the positive root of 2 gamma^2 E^2 tau^2 + L gamma = 1 (see the module text);
    with tau = 0 it is 1/L, the step of gradient descent.

    Raises:
        ValueError: If ``method`` is unknown or ``tau`` < 0.
    """
    tau = check_int("tau", tau, low=0)
    E = error_constant(method, smoothness)
    L = smoothness.L
    return 2.0 / (L + math.sqrt(L * L + 8.0 * E * E * tau * tau))


@dataclass(frozen=True)
class UnifiedBound:
    """The guarantee of the unified analysis for one method, step size and delay bound.

    Attributes:
        method: ``"sag"``, ``"saga"`` or ``"iag"``.
        step_size: gamma.
        tau: Delay bound used.
        error_constant: E (see :func:`error_constant`).
        max_step: Largest admissible step gamma* for this tau.
        rate: Per-step contraction 1 - min(gamma mu, 1/(2 tau)) of f(x_k) - f*; 1.0 when
            mu is None or 0 (no linear rate, only the non-convex bound).
        mu: Strong convexity constant used (None if unknown).
    """

    method: str
    step_size: float
    tau: int
    error_constant: float
    max_step: float
    rate: float
    mu: float | None

    def suboptimality(self, steps: Any, initial_gap: float) -> np.ndarray:
        """Upper bound on f(x_k) - f* after k steps: rate**k * (f(x_0) - f*).

        Args:
            steps: Step counts k (array-like of ints >= 0).
            initial_gap: f(x_0) - f* >= 0.
        """
        k = np.asarray(steps, dtype=np.float64)
        return (
            initial_gap * np.exp(k * np.log(self.rate))
            if self.rate < 1
            else np.full_like(k, initial_gap)
        )

    def epoch_rate(self, n: int) -> float:
        """Contraction per epoch of n steps, rate**n."""
        return float(self.rate**n)

    def steps_to(self, epsilon: float) -> float:
        """Steps after which the bound guarantees (f(x_k) - f*) <= epsilon (f(x_0) - f*)."""
        eps = check_float("epsilon", epsilon, low=0.0, low_inclusive=False)
        if eps >= 1:
            return 0.0
        if self.rate >= 1:
            return float("inf")
        return math.ceil(math.log(eps) / math.log(self.rate))

    def gradient_norm_sq(self, steps: Any, initial_gap: float) -> np.ndarray:
        """Non-convex bound: min_{k<K} ||grad f(x_k)||^2 <= 2 (f(x_0) - f_low) / (gamma K).

        Args:
            steps: K >= 1 (array-like).
            initial_gap: f(x_0) - f_low for a lower bound f_low of f.
        """
        K = np.maximum(np.asarray(steps, dtype=np.float64), 1.0)
        return 2.0 * initial_gap / (self.step_size * K)


def unified_bound(
    method: str,
    smoothness: Smoothness,
    tau: int,
    step_size: float | None = None,
) -> UnifiedBound:
    """The unified guarantee for ``method`` with delays <= ``tau`` and step ``step_size``.

    Args:
        method: ``"sag"``, ``"saga"`` or ``"iag"``.
        smoothness: Constants L, L_bar, L_max, mu of the problem.
        tau: Delay bound, e.g. from :func:`delay_bound`.
        step_size: gamma in (0, gamma*]; None means gamma* (:func:`theory_step_size`).

    Returns:
        The :class:`UnifiedBound`.

    Raises:
        ValueError: If the step is <= 0 or larger than gamma*, or ``tau`` < 0.

    Example:
        >>> s = Smoothness(L=1.0, L_bar=1.0, L_max=1.0, mu=0.1)
        >>> b = unified_bound("iag", s, tau=9)
        >>> round(b.rate, 6) == round(1 - 0.1 * b.step_size, 6)
        True
    """
    tau = check_int("tau", tau, low=0)
    gmax = theory_step_size(method, smoothness, tau)
    gamma = (
        gmax
        if step_size is None
        else check_float("step_size", step_size, low=0.0, low_inclusive=False)
    )
    if gamma > gmax * (1 + 1e-12):
        raise ValueError(
            f"step_size={gamma:.6g} is larger than the largest step {gmax:.6g} the analysis "
            f"allows for method={method!r} with tau={tau}"
        )
    E = error_constant(method, smoothness)
    mu = smoothness.mu
    if mu is None or mu <= 0:
        rate = 1.0
    else:
        check_float("mu", mu, low=0.0)
        shrink = gamma * mu if tau == 0 else min(gamma * mu, 1.0 / (2.0 * tau))
        rate = 1.0 - min(shrink, 1.0)
    return UnifiedBound(method, gamma, tau, E, gmax, rate, mu)


@dataclass(frozen=True)
class MaxLemmaBound:
    """The earlier style of IAG guarantee (max-type recursion on the distance).

    With e_k bounded through ||g_t|| <= L_bar max_{s in [t-tau, t]} ||x_s - x*||, the distance
    d_k = ||x_k - x*|| obeys
    d_{k+1} <= (1 - gamma mu) d_k + gamma^2 L_bar^2 tau max_{[k-2tau, k]} d_s,
    and the lemma of Feyzmahdavian, Aytekin & Johansson (2014) gives
    d_k <= (p + q)^{k/(2tau+1)} d_0. The best step gamma = mu / (2 L_bar^2 tau) makes
    p + q = 1 - 1/(4 Q^2 tau); in function value, f(x_k) - f* <= (L/mu) rate^k (f(x_0) - f*)
    with rate = (1 - 1/(4 Q^2 tau))^{2/(2tau+1)}.

    Attributes:
        step_size: mu / (2 L_bar^2 tau).
        rate: Per-step contraction of the function-value bound.
        prefactor: L / mu.
    """

    step_size: float
    rate: float
    prefactor: float

    def suboptimality(self, steps: Any, initial_gap: float) -> np.ndarray:
        """Upper bound prefactor * rate**k * (f(x_0) - f*)."""
        k = np.asarray(steps, dtype=np.float64)
        return self.prefactor * initial_gap * np.exp(k * np.log(self.rate))

    def steps_to(self, epsilon: float) -> float:
        """Steps after which this bound guarantees (f(x_k) - f*) <= epsilon (f(x_0) - f*)."""
        eps = check_float("epsilon", epsilon, low=0.0, low_inclusive=False)
        return max(0.0, math.ceil(math.log(eps / self.prefactor) / math.log(self.rate)))


def max_lemma_iag_bound(smoothness: Smoothness, tau: int) -> MaxLemmaBound:
    """The earlier-style IAG bound (see :class:`MaxLemmaBound`) for delays <= tau >= 1.

    Raises:
        ValueError: If mu is missing or not positive, or tau < 1.
    """
    tau = check_int("tau", tau, low=1)
    mu = smoothness.mu
    if mu is None or mu <= 0:
        raise ValueError(f"the IAG bounds need mu > 0, got mu={mu!r}")
    Q = smoothness.L_bar / mu
    gamma = mu / (2.0 * smoothness.L_bar**2 * tau)
    contraction = 1.0 - 1.0 / (4.0 * Q * Q * tau)
    rate = contraction ** (2.0 / (2 * tau + 1))
    return MaxLemmaBound(step_size=gamma, rate=rate, prefactor=smoothness.L / mu)


def classical_rate(method: str, smoothness: Smoothness, n: int) -> tuple[float, float]:
    """Step and per-step expected rate of the original analyses, for reference.

    SAG: gamma = 1/(16 L_max), 1 - min(mu/(16 L_max), 1/(8n)) on E[f(x_k)] - f*
    (Schmidt, Le Roux & Bach, 2017, Thm 1). SAGA: gamma = 1/(3 L_max),
    1 - min(mu/(3 L_max), 1/(4n)) on E||x_k - x*||^2 (Defazio et al., 2014, Thm 1).

    Returns:
        (step_size, rate).

    Raises:
        ValueError: For ``"iag"`` (no expected rate: it is deterministic) or mu <= 0.
    """
    check_choice("method", method, ("sag", "saga"))
    n = check_int("n", n, low=1)
    mu = smoothness.mu
    if mu is None or mu <= 0:
        raise ValueError(f"the classical rates need mu > 0, got mu={mu!r}")
    if method == "sag":
        return 1.0 / (16 * smoothness.L_max), 1.0 - min(mu / (16 * smoothness.L_max), 1 / (8 * n))
    return 1.0 / (3 * smoothness.L_max), 1.0 - min(mu / (3 * smoothness.L_max), 1 / (4 * n))
