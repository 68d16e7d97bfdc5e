"""Baselines: proximal gradient for MCP non-negative regression, single and multi-start.

The nonconvex reference of the experiment is the best of many restarts of proximal
gradient with the exact MCP-then-clip prox (``prox_admm.blocks.mcp(..., nonneg=True)``),
a method that needs no splitting at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

from prox_admm.blocks import mcp
from prox_admm.problems import _xy, mcp_nonneg_objective

Array = np.ndarray


@dataclass(frozen=True)
class PGResult:
    """Outcome of :func:`prox_gradient_mcp`.

    Attributes:
        x: Coefficients, shape ``(d,)``, non-negative.
        objective: ``F(x)``.
        n_iter: Iterations run.
        converged: Whether the prox-gradient mapping ``||x^+ - x|| / t`` fell below tol.
        n_starts: Starts tried (1 for a single run).
    """

    x: Array
    objective: float
    n_iter: int
    converged: bool
    n_starts: int = 1


def prox_gradient_mcp(
    X: Any,
    y: Any,
    lam: float,
    gamma: float,
    *,
    x0: Any = None,
    max_iter: int = 20000,
    tol: float = 1e-8,
) -> PGResult:
    """Proximal gradient on ``||X b - y||^2 / (2n) + MCP(b)`` s.t. ``b >= 0``, step ``1/L``.

    Args:
        X: Design ``(n, d)``.
        y: Targets ``(n,)``.
        lam: MCP level.
        gamma: MCP concavity.
        x0: Start ``(d,)`` (zeros if None; projected onto ``b >= 0``).
        max_iter: Most iterations.
        tol: Stop when ``||x^+ - x|| L <= tol`` (the prox-gradient mapping).
    """
    Xa, ya = _xy(X, y)
    n, d = Xa.shape
    max_iter = check_int("max_iter", max_iter, low=1)
    tol = check_float("tol", tol, low=0.0)
    G = Xa.T @ Xa / n
    c = Xa.T @ ya / n
    L = float(np.linalg.eigvalsh(G)[-1])
    t = 1.0 / L
    pen = mcp(lam, gamma, nonneg=True)
    x = np.zeros(d) if x0 is None else np.maximum(np.asarray(x0, dtype=np.float64), 0.0)
    conv = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        xn = pen.prox(x - t * (G @ x - c), t)
        step = float(np.linalg.norm(xn - x)) / t
        x = xn
        if step <= tol:
            conv = True
            break
    return PGResult(x, mcp_nonneg_objective(Xa, ya, lam, gamma, x), it, conv)


def multistart_prox_gradient(
    X: Any, y: Any, lam: float, gamma: float, *, n_starts: int = 20, seed: int = 0, **kwargs: Any
) -> PGResult:
    """Best of ``n_starts`` proximal-gradient runs (start 0: zeros; others random).

    Random starts are uniform on ``[0, 2 b_nnls]`` coordinate-wise, with ``b_nnls`` the
    non-negative least-squares solution (scipy), so they spread over the region where
    the solutions lie.

    Returns:
        The best :class:`PGResult` (``n_starts`` set, ``n_iter`` summed over runs).
    """
    from scipy.optimize import nnls

    Xa, ya = _xy(X, y)
    n_starts = check_int("n_starts", n_starts, low=1)
    rng = np.random.default_rng(seed)
    b_nnls = nnls(Xa, ya)[0]
    scale = np.maximum(2 * b_nnls, 2 * lam)
    best: PGResult | None = None
    total = 0
    for s in range(n_starts):
        x0 = None if s == 0 else rng.uniform(0.0, 1.0, Xa.shape[1]) * scale
        r = prox_gradient_mcp(Xa, ya, lam, gamma, x0=x0, **kwargs)
        total += r.n_iter
        if best is None or r.objective < best.objective:
            best = r
    assert best is not None
    return PGResult(best.x, best.objective, total, best.converged, n_starts)
