"""Graph input, random walks and the stochastic block model."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from icml26_core.validation import check_float, check_int


def as_adjacency(graph: Any, *, allow_isolated: bool = False, name: str = "graph") -> sp.csr_array:
    """The symmetric weighted adjacency of ``graph`` as a float64 CSR array (n, n).

    Args:
        graph: A ``networkx`` graph (edge attribute ``weight`` if present, nodes in
            ``graph.nodes`` order), a scipy sparse or dense numpy adjacency (n, n), a
            ``(2, E)`` integer edge index (each column an edge; undirected: both
            directions are added if missing), or an :class:`icml26_core.datasets.Graph`.
        allow_isolated: Accept nodes of degree 0 (a walk from one stays in place).
        name: The argument's name for error messages.

    Returns:
        The adjacency, symmetric, nonnegative, without explicit zeros.

    Raises:
        ValueError: On an empty graph, NaN/inf or negative weights, a non-square or
            non-symmetric matrix, or isolated nodes unless ``allow_isolated``.
        TypeError: On an input of another type.
    """
    if hasattr(graph, "edge_index") and hasattr(graph, "num_nodes") and hasattr(graph, "adjacency"):
        adj = sp.csr_array(graph.adjacency(), dtype=np.float64)
        adj = ((adj + adj.T) / 2).tocsr() if graph.directed else adj
    elif hasattr(graph, "nodes") and hasattr(graph, "edges") and hasattr(graph, "is_directed"):
        import networkx as nx

        if graph.number_of_nodes() == 0:
            raise ValueError(f"{name} is empty: it has no nodes")
        adj = sp.csr_array(nx.to_scipy_sparse_array(graph, weight="weight", dtype=np.float64))
        if graph.is_directed():
            adj = ((adj + adj.T) / 2).tocsr()
    elif sp.issparse(graph):
        adj = sp.csr_array(graph, dtype=np.float64)
    elif isinstance(graph, np.ndarray | list | tuple):
        arr = np.asarray(graph)
        if arr.ndim == 2 and arr.shape[0] == 2 and arr.shape[1] != 2:
            adj = _from_edge_index(arr, name)
        elif arr.ndim == 2 and arr.shape[0] == arr.shape[1]:
            adj = sp.csr_array(arr.astype(np.float64))
        else:
            raise ValueError(
                f"{name} as an array must be a (2, E) edge index or an (n, n) adjacency; "
                f"got shape {arr.shape}"
            )
    else:
        raise TypeError(
            f"{name} must be a networkx graph, a scipy sparse adjacency, a (2, E) edge index "
            f"or an icml26_core Graph; got {type(graph).__name__}"
        )
    n = adj.shape[0]
    if adj.shape != (n, n):
        raise ValueError(f"{name} adjacency must be square; got shape {adj.shape}")
    if n == 0 or adj.nnz == 0:
        raise ValueError(f"{name} is empty: it has no nodes or no edges")
    if not np.all(np.isfinite(adj.data)):
        raise ValueError(f"{name} has NaN or infinite edge weights")
    if np.any(adj.data < 0):
        raise ValueError(f"{name} has negative edge weights; weights must be >= 0")
    adj.eliminate_zeros()
    if abs(adj - adj.T).sum() > 1e-10 * max(adj.sum(), 1.0):
        raise ValueError(f"{name} must be undirected (a symmetric adjacency)")
    deg = np.asarray(adj.sum(axis=1)).ravel()
    if not allow_isolated and np.any(deg <= 0):
        bad = np.flatnonzero(deg <= 0)
        raise ValueError(
            f"{name} has {bad.size} isolated node(s) (e.g. node {int(bad[0])}); remove them, "
            f"take the largest component, or pass allow_isolated=True"
        )
    adj.sort_indices()
    return adj


def _from_edge_index(edges: np.ndarray, name: str) -> sp.csr_array:
    if edges.size == 0:
        raise ValueError(f"{name} is empty: the edge index has no edges")
    if not np.issubdtype(edges.dtype, np.integer):
        if not np.all(np.isfinite(edges)) or np.any(edges != np.round(edges)):
            raise ValueError(f"{name} edge index must hold integer node ids")
        edges = edges.astype(np.int64)
    if edges.min() < 0:
        raise ValueError(f"{name} edge index has negative node ids")
    n = int(edges.max()) + 1
    adj = sp.csr_array((np.ones(edges.shape[1]), (edges[0], edges[1])), shape=(n, n))
    adj = sp.csr_array(adj.maximum(adj.T))  # undirected: each edge in both directions
    adj.data = np.minimum(adj.data, 1.0)  # a repeated column is one unweighted edge
    return adj


def random_walks(
    graph: Any,
    walk_length: int = 40,
    walks_per_node: int = 10,
    seed: int | None = 0,
    *,
    allow_isolated: bool = False,
) -> np.ndarray:
    """Uniform (weight-proportional) random walks, ``walks_per_node`` from every node.

    Vectorized over walks: at each step every walk moves to a neighbour drawn with
    probability proportional to the edge weight (uniformly when unweighted). No compiled
    extension is needed, and a seed gives the same walks on every machine.

    Args:
        graph: Anything :func:`as_adjacency` takes.
        walk_length: Nodes per walk (>= 2).
        walks_per_node: Walks started at each node (>= 1); the walks are ordered by
            round, then by start node.
        seed: Seed of the numpy Generator.
        allow_isolated: Accept isolated nodes (their walks stay in place).

    Returns:
        int64 array ``(walks_per_node * n, walk_length)`` of node ids. For gensim:
        ``[list(map(str, w)) for w in walks]``.
    """
    walk_length = check_int("walk_length", walk_length, low=2)
    walks_per_node = check_int("walks_per_node", walks_per_node, low=1)
    adj = as_adjacency(graph, allow_isolated=allow_isolated)
    return _walks(adj, walk_length, walks_per_node, np.random.default_rng(seed))


def _walks(
    adj: sp.csr_array, walk_length: int, walks_per_node: int, rng: np.random.Generator
) -> np.ndarray:
    n = adj.shape[0]
    indptr, indices = adj.indptr, adj.indices
    cum = np.cumsum(adj.data)
    start = np.concatenate(([0.0], cum))[indptr[:-1]]  # cumulative weight before each row
    rowsum = np.asarray(adj.sum(axis=1)).ravel()
    cur = np.tile(np.arange(n, dtype=np.int64), walks_per_node)
    out = np.empty((cur.size, walk_length), dtype=np.int64)
    out[:, 0] = cur
    for t in range(1, walk_length):
        u = rng.random(cur.size)
        target = start[cur] + u * rowsum[cur]
        pos = np.searchsorted(cum, target, side="right")
        pos = np.clip(pos, indptr[cur], np.maximum(indptr[cur + 1] - 1, indptr[cur]))
        nxt = np.where(rowsum[cur] > 0, indices[np.minimum(pos, indices.size - 1)], cur)
        out[:, t] = nxt
        cur = nxt
    return out


def skipgram_pairs(walks: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """All (center, context) pairs at distance 1..``window`` along the walks, both ways.

    Returns:
        ``(centers, contexts)``, int64 arrays of equal length.
    """
    window = check_int("window", window, low=1)
    walks = np.asarray(walks)
    if walks.ndim != 2:
        raise ValueError(f"walks must be a 2-D array (n_walks, walk_length); got {walks.shape}")
    if window >= walks.shape[1]:
        raise ValueError(f"window must be < walk_length = {walks.shape[1]}; got {window}")
    cs, xs = [], []
    for r in range(1, window + 1):
        a, b = walks[:, :-r].ravel(), walks[:, r:].ravel()
        cs += [a, b]
        xs += [b, a]
    return np.concatenate(cs), np.concatenate(xs)


def sbm_graph(
    sizes: Any = (100, 100, 100, 100),
    p_in: float = 0.1,
    p_out: float = 0.01,
    seed: int | None = 0,
) -> tuple[sp.csr_array, np.ndarray]:
    """A stochastic block model graph and its block labels.

    Args:
        sizes: Nodes per block.
        p_in: Edge probability inside a block.
        p_out: Edge probability between blocks.
        seed: Seed of the numpy Generator.

    Returns:
        ``(adjacency, labels)``: a float64 CSR (n, n) symmetric 0/1 adjacency without
        self loops, and int64 labels (n,). Isolated nodes may occur at tiny p; pass the
        graph's largest component on, or ``allow_isolated=True``.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.ndim != 1 or sizes.size < 1 or np.any(sizes < 1):
        raise ValueError(f"sizes must be a non-empty list of positive ints; got {sizes}")
    p_in = check_float("p_in", p_in, low=0.0, high=1.0)
    p_out = check_float("p_out", p_out, low=0.0, high=1.0)
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(sizes.size), sizes)
    n = y.size
    iu, ju = np.triu_indices(n, k=1)
    p = np.where(y[iu] == y[ju], p_in, p_out)
    keep = rng.random(iu.size) < p
    i, j = iu[keep], ju[keep]
    adj = sp.csr_array(
        (np.ones(2 * i.size), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n, n)
    )
    adj.sort_indices()
    return adj, y.astype(np.int64)


def largest_component(adj: sp.csr_array) -> np.ndarray:
    """Node ids of the largest connected component of ``adj`` (sorted)."""
    from scipy.sparse.csgraph import connected_components

    _, lab = connected_components(adj, directed=False)
    return np.flatnonzero(lab == np.bincount(lab).argmax())
