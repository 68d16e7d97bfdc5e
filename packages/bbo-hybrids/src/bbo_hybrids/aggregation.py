"""Fitness aggregation: how a population's fitnesses become weights.

The two families the framework compares (our reading of the abstract):

- Gibbs (Laplace) weights ``w_i = softmax(-beta f_i)``: OVI's weights and CBO's
  consensus weights. Their effective objective is the soft-min
  ``F_beta(m) = -(1/beta) log E exp(-beta f(m + sigma eps))``: the Gaussian-smoothed
  mean as ``beta -> 0`` (flat minima), the local minimum as ``beta -> inf`` (sharp).
- Centred rank weights (ES): linear in the rank, summing to zero, invariant to any
  increasing transform of ``f``.

All functions take a 1-D float array of fitnesses (lower is better) and return
float64 arrays of the same length.
"""

from __future__ import annotations

import numpy as np
from icml26_core.validation import check_float

__all__ = ["centred_ranks", "es_gradient", "gibbs_weights", "soft_min"]


def _fitness(f: np.ndarray | list[float], name: str = "fitness") -> np.ndarray:
    arr = np.asarray(f, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} must be finite; entry {bad} is {arr[bad]}")
    return arr


def gibbs_weights(
    fitness: np.ndarray | list[float], beta: float, *, standardize: bool = False
) -> np.ndarray:
    """Gibbs weights ``softmax(-beta f)`` (lower fitness, larger weight).

    Computed as ``exp(-beta (f - min f))`` normalized, so adding a constant to ``f``
    leaves them unchanged and no overflow occurs.

    Args:
        fitness: Fitness values, shape ``(n,)``, finite.
        beta: Inverse temperature, ``>= 0``; 0 gives uniform weights, ``inf`` puts equal
            mass on the minimizers.
        standardize: Divide ``f - min f`` by the population's standard deviation first,
            so ``beta`` is in units of one fitness standard deviation (scale-free).

    Returns:
        Weights, shape ``(n,)``, non-negative, summing to 1.

    Raises:
        ValueError: If ``beta < 0`` or is NaN, or ``fitness`` is empty, not 1-D or not finite.
    """
    f = _fitness(fitness)
    beta = check_float("beta", beta, low=0.0, finite=False)
    g = f - f.min()
    if standardize:
        sd = float(f.std())
        g = g / sd if sd > 0 else np.zeros_like(g)
    if np.isinf(beta):
        w = (g == 0).astype(np.float64)
    else:
        w = np.exp(-beta * g)
    return w / w.sum()


def centred_ranks(fitness: np.ndarray | list[float]) -> np.ndarray:
    """ES utilities: centred ranks ``0.5 - rank/(n - 1)`` (best +0.5, worst -0.5).

    Ties share the mean of their ranks, so the utilities depend on ``f`` only through
    its order: any increasing transform of ``f`` leaves them unchanged. They sum to 0.

    Args:
        fitness: Fitness values, shape ``(n,)``, finite, ``n >= 2``.

    Returns:
        Utilities, shape ``(n,)``, in ``[-0.5, 0.5]``, summing to 0.

    Raises:
        ValueError: If ``fitness`` has fewer than 2 entries or is not finite.
    """
    f = _fitness(fitness)
    n = f.size
    if n < 2:
        raise ValueError(f"fitness needs at least 2 entries for ranks, got {n}")
    order = np.argsort(f, kind="stable")
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = np.arange(n, dtype=np.float64)
    # average the ranks of ties
    _, inv, counts = np.unique(f, return_inverse=True, return_counts=True)
    if counts.max() > 1:
        sums = np.zeros(counts.size)
        np.add.at(sums, inv, ranks)
        ranks = (sums / counts)[inv]
    return 0.5 - ranks / (n - 1)


def soft_min(fitness: np.ndarray | list[float], beta: float) -> float:
    """The Monte-Carlo soft-min ``-(1/beta) log mean exp(-beta f)`` (``F_beta`` estimate).

    ``beta -> 0`` gives the mean of ``f``; ``beta -> inf`` gives its minimum.

    Args:
        fitness: Fitness values of samples around one point, shape ``(n,)``.
        beta: Inverse temperature, ``>= 0``.

    Returns:
        The soft-min as a float.
    """
    f = _fitness(fitness)
    beta = check_float("beta", beta, low=0.0, finite=False)
    if beta == 0:
        return float(f.mean())
    if np.isinf(beta):
        return float(f.min())
    lo = f.min()
    return float(lo - np.log(np.mean(np.exp(-beta * (f - lo)))) / beta)


def es_gradient(eps: np.ndarray, fitness: np.ndarray | list[float], sigma: float) -> np.ndarray:
    """The ES (Gaussian-smoothing) gradient estimate ``1/(n sigma) sum_i (f_i - mean f) eps_i``.

    Unbiased (up to the baseline's ``O(1/n)`` term, exactly unbiased for mirrored ``eps``)
    for ``grad E f(m + sigma eps)``, which for a quadratic equals ``grad f(m)``.

    Args:
        eps: Standard normal perturbations, shape ``(n, d)``.
        fitness: ``f(m + sigma eps_i)``, shape ``(n,)``.
        sigma: Perturbation scale, ``> 0``.

    Returns:
        The gradient estimate, shape ``(d,)``.
    """
    f = _fitness(fitness)
    eps = np.asarray(eps, dtype=np.float64)
    if eps.ndim != 2 or eps.shape[0] != f.size:
        raise ValueError(f"eps must have shape ({f.size}, d), got {eps.shape}")
    sigma = check_float("sigma", sigma, low=0.0, low_inclusive=False)
    return (f - f.mean()) @ eps / (f.size * sigma)
