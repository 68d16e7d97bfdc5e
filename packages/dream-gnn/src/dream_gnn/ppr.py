"""Personalized PageRank from every source node (the topology standard's scores)."""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

__all__ = ["personalized_pagerank"]


def _edges(edge_index: Any, num_nodes: int) -> np.ndarray:
    if hasattr(edge_index, "detach"):
        edge_index = edge_index.detach().cpu().numpy()
    ei = np.asarray(edge_index)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {ei.shape}")
    if ei.dtype.kind not in "iu":
        raise TypeError(f"edge_index must hold integers, got dtype {ei.dtype}")
    if ei.size and (ei.min() < 0 or ei.max() >= num_nodes):
        raise ValueError(
            f"edge_index must lie in 0..{num_nodes - 1} (num_nodes={num_nodes}), "
            f"got [{ei.min()}, {ei.max()}]"
        )
    return ei.astype(np.int64)


def personalized_pagerank(
    edge_index: Any,
    num_nodes: int,
    alpha: float = 0.15,
    *,
    sources: Any = None,
    dense_max: int = 2000,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> np.ndarray:
    """Personalized PageRank vectors, one row per source node.

    Row ``i`` is the stationary visit distribution of a walk that follows a uniformly
    random out-edge and restarts at ``sources[i]`` with probability ``alpha`` at each step.

    A walk at a node without out-edges restarts (the convention of
    ``networkx.pagerank(G, alpha=1 - alpha, personalization={s: 1})``, whose output each
    row equals). Duplicate edges count once. With ``num_nodes <= dense_max`` the rows are
    ``(I - (1 - alpha) P)^{-1}`` normalized to sum 1 (one dense solve); above, a sparse
    power iteration on the sources' rows.

    Args:
        edge_index: int (2, E) directed edges ``src -> dst`` (both directions for an
            undirected graph).
        num_nodes: Number of nodes.
        alpha: Restart probability in (0, 1).
        sources: int (S,) source nodes; all nodes when None.
        dense_max: Largest graph solved densely.
        tol: L1 tolerance of the power iteration.
        max_iter: Iteration cap of the power iteration.

    Returns:
        float64 (S, num_nodes), rows summing to 1.

    Raises:
        ValueError: If ``alpha`` is outside (0, 1), ``edge_index`` is not (2, E),
            ``edge_index``/``sources`` are out of the node range, or ``num_nodes``,
            ``dense_max``, ``tol`` or ``max_iter`` are out of range.
        TypeError: If ``edge_index`` or ``sources`` do not hold integers.
    """
    n = check_int("num_nodes", num_nodes, low=1)
    alpha = check_float(
        "alpha", alpha, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    dense_max = check_int("dense_max", dense_max, low=0)
    tol = check_float("tol", tol, low=0.0, low_inclusive=False)
    max_iter = check_int("max_iter", max_iter, low=1)
    ei = _edges(edge_index, n)
    if sources is None:
        src = np.arange(n)
    else:
        if hasattr(sources, "detach"):
            sources = sources.detach().cpu().numpy()
        src = np.asarray(sources).reshape(-1)
        if src.size and src.dtype.kind not in "iu":
            raise TypeError(f"sources must hold integers, got dtype {src.dtype}")
        src = src.astype(np.int64)
    if src.size and (src.min() < 0 or src.max() >= n):
        raise ValueError(f"sources must lie in 0..{n - 1}, got [{src.min()}, {src.max()}]")
    import scipy.sparse as sp

    A = sp.csr_array((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(n, n))
    A.sum_duplicates()
    A.data[:] = 1.0
    deg = np.asarray(A.sum(axis=1)).reshape(-1)
    inv = np.divide(1.0, deg, out=np.zeros(n), where=deg > 0)
    P = sp.diags_array(inv) @ A  # row-stochastic except rows of dangling nodes (zero)
    if n <= dense_max:
        M = np.eye(n) - (1.0 - alpha) * P.toarray()
        # rows of M^{-1}: solve M^T X^T = I for the requested columns
        E = np.zeros((n, src.size))
        E[src, np.arange(src.size)] = 1.0
        X = np.linalg.solve(M.T, E).T
    else:
        E = np.zeros((src.size, n))
        E[np.arange(src.size), src] = 1.0
        X = E.copy()
        PT = P.T.tocsr()
        for _ in range(max_iter):
            X_new = E + (1.0 - alpha) * (PT @ X.T).T
            if np.abs(X_new - X).sum(axis=1).max() < tol:
                X = X_new
                break
            X = X_new
    return X / X.sum(axis=1, keepdims=True)
