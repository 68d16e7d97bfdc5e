"""Baselines at an equal number of objective evaluations.

- :func:`random_search`: uniform draws in the box (the trivial floor).
- :func:`multistart_adam`: ``n_starts`` Adam runs in parallel from uniform starts,
  projected onto the box; one value-and-gradient call counts as one evaluation.
- :func:`cma_es`: pycma's CMA-ES (``cma`` package, its default population size) with
  the box as bounds, ask/tell until the budget is spent.
- :func:`nevergrad_minimize`: one of nevergrad's optimizers (``OnePlusOne``, ``CMA``,
  ``SPSA``, ...) with its defaults, sequential ask/tell, the box as bounds.
- :class:`flow_optimizer.l2l.LSTMOptimizer` (re-exported here): the coordinate-wise LSTM
  learned optimizer of Andrychowicz et al. (2016), run from ``n_starts`` uniform starts.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from icml26_core.validation import check_float, check_int

from flow_optimizer.l2l import LSTMOptimizer
from flow_optimizer.optimizer import OptResult, _bounds
from flow_optimizer.problems import Problem

__all__ = [
    "NEVERGRAD_OPTIMIZERS",
    "LSTMOptimizer",
    "cma_es",
    "multistart_adam",
    "nevergrad_minimize",
    "random_search",
]

NEVERGRAD_OPTIMIZERS = ("OnePlusOne", "CMA", "SPSA")
"""The nevergrad optimizers the experiment compares with (any registry name works)."""


def _start_rng(seed: int) -> np.random.Generator:
    """The start point's generator: a stream apart from ``np.random.default_rng(seed)``.

    The families draw an instance with ``np.random.default_rng(seed)``; a start drawn
    from the same stream would copy the instance's draws (for the arm, ``x0`` would be
    the target's joint angles, an optimum), so the start uses the seed sequence
    ``[seed, 1]`` instead.
    """
    return np.random.default_rng([int(seed), 1])


def random_search(problem: Problem, budget: int, *, seed: int = 0, batch: int = 32) -> OptResult:
    """Best of ``budget`` uniform draws in the box, drawn ``batch`` at a time.

    Args:
        problem: The instance (bounded).
        budget: Evaluations in all (every draw is one).
        seed: Seed of the draws.
        batch: Draws per ``problem.f`` call.

    Returns:
        The :class:`OptResult` (best point as a float64 array ``(d,)``, its value, the
        best value after each batch).

    Raises:
        ValueError: If ``budget < 1`` or ``batch < 1``.
    """
    budget = check_int("budget", budget, low=1)
    batch = check_int("batch", batch, low=1)
    g = torch.Generator().manual_seed(int(seed))
    best_f, best_x, hist, used = float("inf"), None, [], 0
    with torch.no_grad():
        while used < budget:
            n = min(batch, budget - used)
            X = problem.sample_uniform(n, g, torch.float64)
            F = problem.f(X)
            i = int(F.argmin())
            if float(F[i]) < best_f:
                best_f, best_x = float(F[i]), X[i].numpy()
            used += n
            hist.append(best_f)
    return OptResult(x=np.asarray(best_x), f=best_f, history=hist, evaluations=used)


def multistart_adam(
    problem: Problem, budget: int, *, n_starts: int = 32, lr: float = 0.01, seed: int = 0
) -> OptResult:
    """Adam from ``n_starts`` uniform starts, ``budget // n_starts`` gradient calls each.

    Args:
        problem: The instance.
        budget: Evaluations (value-and-gradient calls) in all.
        n_starts: Parallel starts (the population size of the comparison).
        lr: Adam step in units of the box width (``lr * (upper - lower)``).
        seed: Seed of the starts.

    Returns:
        The best value seen at any evaluated point.
    """
    budget = check_int("budget", budget, low=1)
    n_starts = check_int("n_starts", n_starts, low=1, high=budget)
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    lo, hi = _bounds(problem, torch.float64, "cpu")
    g = torch.Generator().manual_seed(int(seed))
    X = problem.sample_uniform(n_starts, g, torch.float64)
    m = torch.zeros_like(X)
    v = torch.zeros_like(X)
    b1, b2, eps = 0.9, 0.999, 1e-8
    step = lr * (hi - lo)
    best_f, best_x, hist = float("inf"), X[0].numpy(), []
    for k in range(1, budget // n_starts + 1):
        F, G = problem.value_and_grad(X)
        F = torch.nan_to_num(F, nan=float("inf"))
        i = int(F.argmin())
        if float(F[i]) < best_f:
            best_f, best_x = float(F[i]), X[i].numpy().copy()
        hist.append(best_f)
        m = b1 * m + (1 - b1) * G
        v = b2 * v + (1 - b2) * G * G
        mh, vh = m / (1 - b1**k), v / (1 - b2**k)
        X = torch.minimum(torch.maximum(X - step * mh / (vh.sqrt() + eps), lo), hi)
    return OptResult(x=best_x, f=best_f, history=hist, evaluations=n_starts * (budget // n_starts))


def cma_es(
    problem: Problem, budget: int, *, seed: int = 0, sigma0: float = 0.3, popsize: int | None = None
) -> OptResult:
    """Pycma CMA-ES from a uniform start, ``sigma0`` times the box width, box bounds.

    Stops before a generation would pass ``budget`` evaluations.

    Args:
        problem: The instance (bounded).
        budget: Evaluations in all (whole generations only).
        seed: Seed of the start point and of pycma.
        sigma0: Initial step in units of the mean box width.
        popsize: Population per generation (pycma's default if None).

    Returns:
        The :class:`OptResult` (best point as a float64 array ``(d,)``, its value, the
        best value after each generation).

    Raises:
        ValueError: If ``budget < 1``.
        ImportError: If ``cma`` is not installed (``pip install 'flow-optimizer[repro]'``).
    """
    import cma

    budget = check_int("budget", budget, low=1)
    lo, hi = _bounds(problem, torch.float64, "cpu")
    lo_np, hi_np = lo.numpy(), hi.numpy()
    rng = _start_rng(seed)
    x0 = rng.uniform(lo_np, hi_np)
    opts = {
        "bounds": [lo_np.tolist(), hi_np.tolist()],
        "seed": int(seed) + 1,
        "verbose": -9,
        "maxfevals": budget,
    }
    if popsize is not None:
        opts["popsize"] = int(popsize)
    es = cma.CMAEvolutionStrategy(x0, sigma0 * float(np.mean(hi_np - lo_np)), opts)
    best_f, best_x, hist, used = float("inf"), x0, [], 0
    while used + es.popsize <= budget:
        sols = es.ask()
        with torch.no_grad():
            F = problem.f(torch.as_tensor(np.asarray(sols), dtype=torch.float64)).numpy()
        F = np.nan_to_num(F, nan=np.inf)
        es.tell(sols, F.tolist())
        used += len(sols)
        i = int(np.argmin(F))
        if F[i] < best_f:
            best_f, best_x = float(F[i]), np.asarray(sols[i])
        hist.append(best_f)
    return OptResult(x=np.asarray(best_x), f=best_f, history=hist, evaluations=used)


def nevergrad_minimize(
    problem: Problem, budget: int, *, optimizer: str = "OnePlusOne", seed: int = 0
) -> OptResult:
    """One of nevergrad's optimizers on ``problem`` for ``budget`` evaluations.

    The parametrization is ``ng.p.Array(init=x0, lower=lower, upper=upper)`` with ``x0``
    uniform in the box (seeded, as for :func:`cma_es`): nevergrad's own defaults for a
    bounded array (initial step a sixth of the box width, its bound handling). The
    optimizer runs sequentially (``num_workers=1``, nevergrad's default), one
    candidate per ask/tell; ``optimizer`` is looked up in ``nevergrad.optimizers.registry``
    with its default settings. The result is the best point evaluated (as for every
    baseline here), not nevergrad's recommendation.

    Args:
        problem: The instance (bounded).
        budget: Evaluations in all (each ``tell`` is one).
        optimizer: A nevergrad registry name, e.g. ``"OnePlusOne"``, ``"CMA"``, ``"SPSA"``.
        seed: Seed of the start point and of nevergrad's random state.

    Returns:
        The :class:`OptResult` (best point as a float64 array ``(d,)``, its value, the
        best value after each evaluation).

    Raises:
        ValueError: If ``budget < 1`` or ``optimizer`` is not in nevergrad's registry.
        ImportError: If ``nevergrad`` is not installed
            (``pip install 'flow-optimizer[repro]'``).

    References:
        J. Rapin and O. Teytaud, Nevergrad - A gradient-free optimization platform,
        https://github.com/facebookresearch/nevergrad (version 1.0.12 here).
    """
    import nevergrad as ng

    budget = check_int("budget", budget, low=1)
    if not isinstance(optimizer, str) or optimizer not in ng.optimizers.registry:
        raise ValueError(
            f"optimizer must be a name in nevergrad.optimizers.registry (e.g. "
            f"{', '.join(NEVERGRAD_OPTIMIZERS)}), got {optimizer!r}"
        )
    lo, hi = _bounds(problem, torch.float64, "cpu")
    lo_np, hi_np = lo.numpy(), hi.numpy()
    rng = _start_rng(seed)
    x0 = rng.uniform(lo_np, hi_np)
    param = ng.p.Array(init=x0, lower=lo_np, upper=hi_np)
    param.random_state = np.random.RandomState(int(rng.integers(2**32)))
    opt = ng.optimizers.registry[optimizer](parametrization=param, budget=budget, num_workers=1)
    best_f, best_x, hist = float("inf"), x0, []
    with torch.no_grad(), warnings.catch_warnings():
        # nevergrad's CMA tells pycma its own asked points; pycma warns about each
        warnings.filterwarnings("ignore", message="orphanated injected solution")
        for _ in range(budget):
            cand = opt.ask()
            x = np.asarray(cand.value, dtype=np.float64)
            fx = float(problem.f(torch.as_tensor(x, dtype=torch.float64)[None])[0])
            finite = bool(np.isfinite(fx))
            opt.tell(cand, fx if finite else 1e300)  # NaN/inf: the worst value, not kept
            if finite and fx < best_f:
                best_f, best_x = fx, x.copy()
            hist.append(best_f)
    return OptResult(x=np.asarray(best_x), f=best_f, history=hist, evaluations=budget)
