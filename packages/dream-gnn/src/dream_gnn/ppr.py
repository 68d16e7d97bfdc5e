"""Personalized PageRank from every source node (the topology standard's scores)."""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

__all__ = ["clear_ppr_cache", "personalized_pagerank"]

# (n, alpha, dense, tol, max_iter, edges digest[, sources digest]) -> rows; a few graphs
_CACHE: dict[tuple, np.ndarray] = {}
_CACHE_SIZE = 8


def clear_ppr_cache() -> None:
    """Forget the cached PageRank matrices of :func:`personalized_pagerank`."""
    _CACHE.clear()


def _digest(a: np.ndarray) -> str:
    import hashlib

    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


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
    dense_max: int = 999,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> np.ndarray:
    """Personalized PageRank vectors, one row per source node.

    Row ``i`` is the stationary visit distribution of a walk that follows a uniformly
    random out-edge and restarts at ``sources[i]`` with probability ``alpha`` at each step.

    A walk at a node without out-edges restarts (the convention of
    ``networkx.pagerank(G, alpha=1 - alpha, personalization={s: 1})``, whose output each
    row equals). Duplicate edges count once. With ``num_nodes <= dense_max`` (fewer than
    1000 nodes by default) the rows are those of ``(I - (1 - alpha) P)^{-1}`` normalized
    to sum 1: the whole matrix is inverted once per graph and cached, so later calls on
    the same graph (other sources, other seeds) only slice it. Above, a sparse power
    iteration on the sources' rows, cached per graph and source set. The cache holds
    the last 8 results, keyed by the edges' bytes; :func:`clear_ppr_cache` empties it.

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
    dense = n <= dense_max
    key: tuple = (n, alpha, dense, tol, max_iter, _digest(ei))
    if not dense:
        key += (_digest(src),)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit[src] if dense else hit.copy()
    import scipy.sparse as sp

    A = sp.csr_array((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(n, n))
    A.sum_duplicates()
    A.data[:] = 1.0
    deg = np.asarray(A.sum(axis=1)).reshape(-1)
    inv = np.divide(1.0, deg, out=np.zeros(n), where=deg > 0)
    P = sp.diags_array(inv) @ A  # row-stochastic except rows of dangling nodes (zero)
    if dense:
        M = np.eye(n) - (1.0 - alpha) * P.toarray()
        X = np.linalg.inv(M)  # row s: the visit distribution of walks restarting at s
        X /= X.sum(axis=1, keepdims=True)
        _remember(key, X)
        return X[src]
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
    X = X / X.sum(axis=1, keepdims=True)
    _remember(key, X)
    return X.copy()


def _remember(key: tuple, X: np.ndarray) -> None:
    X.flags.writeable = False
    _CACHE[key] = X
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
