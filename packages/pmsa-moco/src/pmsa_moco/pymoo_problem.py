"""The multi-objective TSP as a pymoo problem, so pymoo users can run NSGA-II on it."""

from __future__ import annotations

from typing import Any

import numpy as np
from pymoo.core.problem import Problem

from pmsa_moco.problem import check_coords


class MOTSPProblem(Problem):
    """One M-objective TSP instance as a pymoo :class:`~pymoo.core.problem.Problem`.

    A solution is a permutation of ``0..n-1`` (use pymoo's
    ``PermutationRandomSampling``, ``OrderCrossover``, ``InversionMutation``); its
    objectives are the M closed-tour lengths. A closed tour's length does not depend on
    its start city or direction, so no repair fixing the start is needed.

    Args:
        coords: ``(n, 2M)`` coordinates of one instance (or ``(1, n, 2M)``).

    Raises:
        ValueError: On bad ``coords`` (see :func:`pmsa_moco.problem.check_coords`) or a
            batch of more than one instance.

    Example:
        >>> import numpy as np
        >>> sq = np.array([[0, 0, 0, 0], [1, 0, 0, 2], [1, 1, 2, 2], [0, 1, 2, 0]], float)
        >>> out = {}
        >>> MOTSPProblem(sq)._evaluate(np.array([[0, 1, 2, 3]]), out)
        >>> out["F"]
        array([[4., 8.]])
    """

    def __init__(self, coords: Any) -> None:
        x = check_coords(coords)
        if x.shape[0] != 1:
            raise ValueError(f"coords must hold one instance, got a batch of {x.shape[0]}")
        self.coords = x[0].double().numpy()
        n, two_m = self.coords.shape
        self.n_cities = n
        xy = self.coords.reshape(n, two_m // 2, 2).transpose(1, 0, 2)  # (M, n, 2)
        self.dist = np.sqrt(((xy[:, :, None, :] - xy[:, None, :, :]) ** 2).sum(-1))
        super().__init__(n_var=n, n_obj=two_m // 2, xl=0, xu=n - 1, vtype=int)

    def _evaluate(self, x: np.ndarray, out: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        t = np.asarray(x, dtype=np.int64)
        nxt = np.roll(t, -1, axis=1)
        out["F"] = self.dist[:, t, nxt].sum(-1).T  # (pop, M)
