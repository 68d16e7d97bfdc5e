"""Reference solvers for the multi-objective TSP: WS-LKH (elkai), NSGA-II (pymoo), random tours."""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.validation import check_int

from pmsa_moco.problem import check_coords, check_prefs, tour_costs


def _one_instance(coords: Any) -> Any:
    """``coords`` validated as one instance, ``(1, n, 2M)``; a larger batch is an error."""
    x = check_coords(coords)
    if x.shape[0] != 1:
        raise ValueError(f"coords must hold one instance, got a batch of {x.shape[0]}")
    return x


def ws_lkh(coords: Any, prefs: Any, *, runs: int = 1, scale: float = 1000.0) -> np.ndarray:
    """Weighted-sum decomposition solved by LKH-3 (``elkai``): one tour per preference.

    For each preference ``lambda`` LKH solves the TSP on ``sum_m lambda_m D^m``; the
    returned objectives are the M true lengths of that tour.

    Args:
        coords: ``(n, 2M)`` one instance.
        prefs: ``(P, M)`` on the simplex.
        runs: LKH runs per subproblem.
        scale: Distances are multiplied by it before LKH (elkai rounds internally).

    Returns:
        ``(P, M)`` float64 objectives.

    Raises:
        ValueError: On bad ``coords`` (or a batch of more than one instance) or ``prefs``.
    """
    x = _one_instance(coords)[0].double()
    m = x.shape[-1] // 2
    lam = check_prefs(prefs, m).double().numpy()
    runs = check_int("runs", runs, low=1)
    import elkai

    xy = x.numpy().reshape(x.shape[0], m, 2).transpose(1, 0, 2)
    dist = np.sqrt(((xy[:, :, None, :] - xy[:, None, :, :]) ** 2).sum(-1))  # (M, n, n)
    tours = []
    for w in lam:
        mat = np.tensordot(w, dist, axes=1) * scale
        tour = elkai.DistanceMatrix(mat.tolist()).solve_tsp(runs=runs)[:-1]
        tours.append(tour)
    return tour_costs(x.unsqueeze(0), np.asarray(tours)[None])[0].numpy()


def nsga2(coords: Any, *, pop_size: int = 100, n_gen: int = 500, seed: int = 0) -> np.ndarray:
    """NSGA-II (pymoo) with permutation operators (random sampling, order crossover, inversion).

    Args:
        coords: ``(n, 2M)`` one instance.
        pop_size: Population.
        n_gen: Generations.
        seed: pymoo seed.

    Returns:
        ``(K, M)`` the final population's objectives.
    """
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.operators.crossover.ox import OrderCrossover
    from pymoo.operators.mutation.inversion import InversionMutation
    from pymoo.operators.sampling.rnd import PermutationRandomSampling
    from pymoo.optimize import minimize

    from pmsa_moco.pymoo_problem import MOTSPProblem

    algo = NSGA2(
        pop_size=check_int("pop_size", pop_size, low=2),
        sampling=PermutationRandomSampling(),
        crossover=OrderCrossover(),
        mutation=InversionMutation(),
        eliminate_duplicates=True,
    )
    res = minimize(
        MOTSPProblem(coords), algo, ("n_gen", check_int("n_gen", n_gen, low=1)), seed=seed
    )
    return np.asarray(res.pop.get("F"), dtype=float)


def random_tours(coords: Any, n_tours: int, *, seed: int = 0) -> np.ndarray:
    """The floor: ``n_tours`` uniformly random tours of one instance.

    Args:
        coords: ``(n, 2M)`` one instance (or ``(1, n, 2M)``).
        n_tours: Number of tours, >= 1.
        seed: Seed of the permutations.

    Returns:
        ``(n_tours, M)`` float64 objectives.

    Raises:
        ValueError: On bad ``coords`` (or a batch of more than one instance) or ``n_tours``.
    """
    x = _one_instance(coords)
    rng = np.random.default_rng(seed)
    t = np.stack([rng.permutation(x.shape[1]) for _ in range(check_int("n_tours", n_tours, low=1))])
    return tour_costs(x, t[None])[0].double().numpy()
