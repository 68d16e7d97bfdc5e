"""Named communication topologies, mixing matrices and their spectra.

A decentralized method runs on ``n`` nodes that talk only to their neighbours in a
graph ``G``; one round of gossip replaces each node's vector by a weighted average
of its neighbours', ``x_i <- sum_j W_ij x_j``, with a *mixing matrix* ``W`` that is
non-negative, doubly stochastic (rows and columns sum to 1) and, for an undirected
graph, symmetric. Its eigenvalues ``1 = lambda_1 > lambda_2 >= ... >= lambda_n > -1``
decide how fast the nodes agree: the *second-largest modulus*
``beta = max(|lambda_2|, |lambda_n|)`` is the worst per-round contraction of the
disagreement, and ``1 - beta`` is the *spectral gap*.

- :func:`topology(name, n) <topology>` builds a connected ``networkx.Graph`` on nodes
  ``0..n-1``: ``ring``, ``path``, ``torus`` (2-D, periodic), ``grid`` (2-D), ``star``,
  ``complete``, ``hypercube``, ``exponential``, ``erdos_renyi``, ``random_geometric``,
  ``barbell``, ``lollipop``.
- :func:`mixing_matrix(G, rule) <mixing_matrix>` gives ``W`` (float64 (n, n)) by the
  ``"metropolis"``, ``"lazy-metropolis"`` or ``"max-degree"`` rule.
- :func:`one_peer_exponential` is the time-varying one-peer exponential graph of
  Ying et al. (2021): at round ``t`` each node averages with one peer, ``W_t`` is
  doubly stochastic but not symmetric.
- :func:`check_mixing_matrix` validates a matrix given by a user (negative entries,
  rows or columns not summing to 1, asymmetry, a disconnected support), and
  :func:`spectrum` returns every eigenvalue with the gap and the second-largest modulus.

networkx is imported inside the functions (extra ``decentralized`` or ``data-graphs``).

Example:
    >>> G = topology("ring", 8)
    >>> W = mixing_matrix(G)            # weights 1/3 on a ring
    >>> round(float(W[0, 1]), 4), round(float(W.sum(axis=0).max()), 12)
    (0.3333, 1.0)
    >>> s = spectrum(W)
    >>> round(s.second_largest_modulus, 4), round(s.spectral_gap, 4)
    (0.8047, 0.1953)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml26_core._lazy import require
from icml26_core.validation import check_choice, check_float, check_int

__all__ = [
    "MIXING_RULES",
    "TOPOLOGIES",
    "Spectrum",
    "check_mixing_matrix",
    "default_mixing_atol",
    "mixing_matrix",
    "one_peer_exponential",
    "spectrum",
    "topology",
]

TOPOLOGIES = (
    "ring",
    "path",
    "torus",
    "grid",
    "star",
    "complete",
    "hypercube",
    "exponential",
    "erdos_renyi",
    "random_geometric",
    "barbell",
    "lollipop",
)
MIXING_RULES = ("metropolis", "lazy-metropolis", "max-degree")

_MAX_TRIES = 1000  # random graphs are redrawn until connected


def _nx() -> Any:
    return require("networkx", "decentralized")


def _grid_shape(n: int, shape: tuple[int, int] | None) -> tuple[int, int]:
    if shape is not None:
        rows = check_int("shape[0]", shape[0], low=2)
        cols = check_int("shape[1]", shape[1], low=2)
        if rows * cols != n:
            raise ValueError(f"shape {shape} has {rows * cols} nodes, but n is {n}")
        return rows, cols
    rows = math.isqrt(n)
    while rows > 1 and n % rows:
        rows -= 1
    if rows < 2:
        raise ValueError(
            f"n={n} has no factorization rows x cols with both >= 2; pass shape=(rows, cols) "
            "or use another n"
        )
    return rows, n // rows


def _relabel(G: Any) -> Any:
    """Nodes as 0..n-1 in sorted order of the original labels."""
    return _nx().convert_node_labels_to_integers(G, ordering="sorted")


def _random_connected(build: Any, seed: Any, what: str) -> Any:
    nx = _nx()
    rng = np.random.default_rng(seed)
    for _ in range(_MAX_TRIES):
        G = build(int(rng.integers(2**31 - 1)))
        if nx.is_connected(G):
            return G
    raise ValueError(
        f"no connected {what} graph in {_MAX_TRIES} draws; raise the edge probability or radius"
    )


def topology(
    name: str,
    n: int,
    *,
    seed: int | np.random.Generator | None = 0,
    p: float | None = None,
    radius: float | None = None,
    shape: tuple[int, int] | None = None,
) -> Any:
    """A connected, undirected communication graph on nodes ``0..n-1``.

    - ``ring``: the cycle ``i ~ i +- 1 (mod n)``; degree 2.
    - ``path``: ``i ~ i + 1``.
    - ``torus``: the 2-D periodic grid ``rows x cols`` (``shape``, by default the
      most square factorization of ``n``); degree 4 (3 along a side of 2).
    - ``grid``: the same grid without wrap-around.
    - ``star``: node 0 joined to every other.
    - ``complete``: every pair.
    - ``hypercube``: ``i ~ i XOR 2^k`` (``n`` a power of 2); degree ``log2 n``.
    - ``exponential``: ``i ~ i +- 2^k (mod n)`` for ``2^k < n``, the undirected static
      exponential graph; degree about ``2 log2 n``.
    - ``erdos_renyi``: each pair with probability ``p`` (default ``2 ln(n) / n``),
      redrawn until connected.
    - ``random_geometric``: uniform points in the unit square joined within
      ``radius`` (default ``sqrt(2 ln(n) / n)``), redrawn until connected; node
      attribute ``pos``.
    - ``barbell``: two complete graphs of ``n // 2`` nodes joined by an edge (through
      a middle node when ``n`` is odd).
    - ``lollipop``: a complete graph of ``n // 2`` nodes with a path of the others.

    Args:
        name: One of :data:`TOPOLOGIES`.
        n: Number of nodes, at least 2 (3 for ``ring``, 4 for ``torus``, ``grid``,
            ``barbell`` and ``lollipop``).
        seed: Seed (or numpy Generator) of the random graphs; the same seed gives the
            same graph. Ignored by the deterministic ones.
        p: Edge probability of ``erdos_renyi``, in (0, 1].
        radius: Connection radius of ``random_geometric``, > 0.
        shape: ``(rows, cols)`` of ``torus`` and ``grid``, with ``rows * cols == n``.

    Returns:
        A ``networkx.Graph`` with nodes ``0..n-1``, connected, without self-loops.

    Raises:
        ValueError: If ``name`` is unknown, ``n`` is too small or incompatible
            (``hypercube`` needs a power of 2, ``torus`` a factorization), or a random
            graph stays disconnected after 1000 draws.
        TypeError: If ``n`` is not an integer.
    """
    check_choice("name", name, TOPOLOGIES)
    minimum = {"ring": 3, "torus": 4, "grid": 4, "barbell": 4, "lollipop": 4}.get(name, 2)
    n = check_int("n", n, low=minimum)
    nx = _nx()
    if name == "ring":
        G = nx.cycle_graph(n)
    elif name == "path":
        G = nx.path_graph(n)
    elif name in ("torus", "grid"):
        rows, cols = _grid_shape(n, shape)
        G = _relabel(nx.grid_2d_graph(rows, cols, periodic=name == "torus"))
    elif name == "star":
        G = nx.star_graph(n - 1)
    elif name == "complete":
        G = nx.complete_graph(n)
    elif name == "hypercube":
        dim = n.bit_length() - 1
        if 2**dim != n:
            raise ValueError(f"hypercube needs n a power of 2, got {n}")
        G = nx.Graph()
        G.add_nodes_from(range(n))
        G.add_edges_from((i, i ^ (1 << k)) for i in range(n) for k in range(dim))
    elif name == "exponential":
        G = nx.Graph()
        G.add_nodes_from(range(n))
        hops = [2**k for k in range(max(1, (n - 1).bit_length())) if 2**k < n]
        G.add_edges_from((i, (i + h) % n) for i in range(n) for h in hops if (i + h) % n != i)
    elif name == "erdos_renyi":
        prob = 2 * math.log(n) / n if p is None else p
        prob = check_float(
            "p", min(prob, 1.0) if p is None else prob, low=0.0, high=1.0, low_inclusive=False
        )
        G = _random_connected(lambda s: nx.gnp_random_graph(n, prob, seed=s), seed, "Erdos-Renyi")
    elif name == "random_geometric":
        r = math.sqrt(2 * math.log(n) / n) if radius is None else radius
        r = check_float("radius", r, low=0.0, low_inclusive=False)
        G = _random_connected(
            lambda s: nx.random_geometric_graph(n, r, seed=s), seed, "random geometric"
        )
    elif name == "barbell":
        G = nx.barbell_graph(n // 2, n % 2)
    else:  # lollipop
        G = nx.lollipop_graph(n // 2, n - n // 2)
    G.graph["name"] = name
    return G


def _adjacency(G: Any) -> np.ndarray:
    """0/1 float64 adjacency (n, n) of a graph on nodes 0..n-1, or of a square array."""
    if hasattr(G, "nodes") and hasattr(G, "edges"):
        if G.is_directed():
            raise ValueError("G must be undirected (a networkx.Graph); got a directed graph")
        n = G.number_of_nodes()
        if set(G.nodes) != set(range(n)):
            raise ValueError(
                "G's nodes must be 0..n-1; relabel with networkx.convert_node_labels_to_integers"
            )
        A = np.zeros((n, n))
        for u, v in G.edges:
            if u != v:
                A[u, v] = A[v, u] = 1.0
        return A
    A = np.asarray(G, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(
            f"G must be a networkx graph or a square adjacency matrix, got shape {A.shape}"
        )
    if not np.all(np.isfinite(A)) or np.any(A < 0):
        raise ValueError("adjacency matrix G must have finite non-negative entries")
    if not np.array_equal(A != 0, (A != 0).T):
        raise ValueError("adjacency matrix G must be symmetric (an undirected graph)")
    A = (A != 0).astype(np.float64)
    np.fill_diagonal(A, 0.0)
    return A


def _connected(support: np.ndarray) -> bool:
    """Whether the graph whose edges are the nonzero entries is (strongly) connected."""
    n = support.shape[0]
    for M in (support, support.T):
        seen = np.zeros(n, dtype=bool)
        seen[0] = True
        frontier = seen.copy()
        while frontier.any():
            frontier = (M[frontier].any(axis=0)) & ~seen
            seen |= frontier
        if not seen.all():
            return False
    return True


def mixing_matrix(G: Any, rule: str = "metropolis") -> np.ndarray:
    """The symmetric, doubly stochastic mixing matrix of an undirected connected graph.

    With ``d_i`` the degree of node ``i`` (self-loops ignored):

    - ``"metropolis"`` (Metropolis-Hastings; Xiao, Boyd and Kim 2007):
      ``W_ij = 1 / (1 + max(d_i, d_j))`` on edges, ``W_ii = 1 - sum_j W_ij``. Needs
      only the neighbours' degrees, so each node can compute its row locally.
    - ``"lazy-metropolis"``: ``(I + W_metropolis) / 2``; every eigenvalue is in
      ``[0, 1]``, so no mode oscillates.
    - ``"max-degree"``: ``W_ij = 1 / (1 + d_max)`` on edges, ``W_ii = 1 - d_i / (1 +
      d_max)``. (The ``1 +`` keeps a positive self-weight, so even a bipartite graph
      has no eigenvalue -1.)

    On a ring both non-lazy rules give weights 1/3 and eigenvalues
    ``(1 + 2 cos(2 pi k / n)) / 3``.

    Args:
        G: A ``networkx.Graph`` on nodes ``0..n-1`` (e.g. from :func:`topology`), or a
            symmetric (n, n) adjacency matrix (nonzero entries are edges).
        rule: One of :data:`MIXING_RULES`.

    Returns:
        float64 array (n, n): non-negative, symmetric, rows and columns summing to 1,
        with ``W_ij > 0`` exactly on the edges and on the diagonal (every rule keeps
        a self-weight of at least ``1 / (1 + d_max)``).

    Raises:
        ValueError: If ``rule`` is unknown, ``G`` is directed, empty, not labelled
            ``0..n-1``, or disconnected.
    """
    check_choice("rule", rule, MIXING_RULES)
    A = _adjacency(G)
    n = A.shape[0]
    if n == 0:
        raise ValueError("G has no nodes")
    if n > 1 and not _connected(A != 0):
        raise ValueError("G is disconnected: gossip cannot reach consensus; use a connected graph")
    deg = A.sum(axis=1)
    if rule == "max-degree":
        W = A / (1.0 + deg.max())
    else:
        W = A / (1.0 + np.maximum(deg[:, None], deg[None, :]))
    np.fill_diagonal(W, 1.0 - W.sum(axis=1))
    if rule == "lazy-metropolis":
        W = 0.5 * (np.eye(n) + W)
    return W


def one_peer_exponential(n: int, t: int) -> np.ndarray:
    """Mixing matrix of the one-peer exponential graph at round ``t`` (Ying et al. 2021).

    With ``tau = ceil(log2 n)`` and ``h = 2^(t mod tau)``, node ``i`` averages its
    vector with that of node ``(i + h) mod n``: ``W_t = (I + P_h) / 2`` where ``P_h``
    is the cyclic shift by ``h``. Every node sends one message per round; for ``n`` a
    power of two the product of ``tau`` consecutive matrices is exactly ``11^T / n``
    (exact averaging in ``log2 n`` rounds).

    Args:
        n: Number of nodes, >= 2.
        t: Round index, >= 0.

    Returns:
        float64 (n, n), non-negative and doubly stochastic; symmetric only when
        ``h = n / 2``. Pass it per round, e.g. ``network.mix(x, W=one_peer_exponential(n, t))``.

    Raises:
        ValueError: If ``n < 2`` or ``t < 0``.
    """
    n = check_int("n", n, low=2)
    t = check_int("t", t, low=0)
    tau = max(1, (n - 1).bit_length())
    h = 2 ** (t % tau)
    W = 0.5 * np.eye(n)
    idx = np.arange(n)
    W[idx, (idx + h) % n] += 0.5
    return W


def default_mixing_atol(W: Any, n: int) -> float:
    """Tolerance of the doubly-stochastic check for the matrix ``W`` of size ``n``.

    ``1e-10`` for float64 and for inputs without a floating dtype (nested lists,
    integers); ``max(1e-10, 4 sqrt(n) eps)`` for a lower precision (float32:
    ``eps = 1.19e-7``; bfloat16 and float16 tensors too): rounding each weight of a
    row that sums to 1 moves the sum by at most ``eps / 2``, and a row normalized in
    that precision carries about ``sqrt(n)`` such errors.
    """
    dtype = getattr(W, "dtype", None)
    eps = 0.0
    if dtype is not None and hasattr(W, "detach"):  # torch: bfloat16 has no numpy dtype
        import torch

        eps = float(torch.finfo(dtype).eps) if dtype.is_floating_point else 0.0
    elif dtype is not None and np.issubdtype(np.dtype(dtype), np.floating):
        eps = float(np.finfo(dtype).eps)
    if eps <= float(np.finfo(np.float64).eps):
        return 1e-10
    return max(1e-10, 4.0 * float(np.sqrt(n)) * eps)


def check_mixing_matrix(
    W: Any,
    *,
    symmetric: bool = True,
    connected: bool = True,
    atol: float | None = None,
    name: str = "W",
) -> np.ndarray:
    """Validate a mixing matrix; return it as a float64 copy.

    Args:
        W: Square array (n, n) (numpy, torch or nested lists).
        symmetric: Also require ``W == W^T`` (what the spectral analysis of an
            undirected network needs).
        connected: Also require a (strongly) connected support. One round of a
            time-varying topology may be disconnected (one-peer graphs are); pass
            False for those.
        atol: Absolute tolerance of the sums and of the symmetry. ``None`` (default)
            picks it from the input's precision (:func:`default_mixing_atol`):
            ``1e-10`` for float64 (and for lists), ``4 sqrt(n) eps`` for lower
            precisions (a float32 ring of 16 nodes gets ``1.9e-6``).
        name: The argument's name, for the messages.

    Returns:
        float64 (n, n).

    Raises:
        ValueError: Naming the property that fails: not square, NaN or infinite
            entries, negative weights, a row or column not summing to 1, not symmetric,
            or a disconnected support (gossip would never reach consensus).
    """
    in_dtype = getattr(W, "dtype", None)
    tol_of = W
    if hasattr(W, "detach"):
        W = W.detach().cpu()
        W = (W.float() if str(in_dtype) == "torch.bfloat16" else W).numpy()
    M = np.array(W, dtype=np.float64, copy=True)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {M.shape}")
    atol = default_mixing_atol(tol_of, M.shape[0]) if atol is None else float(atol)
    if not atol > 0:
        raise ValueError(f"atol must be > 0, got {atol!r}")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} has NaN or infinite entries")
    if np.any(M < -atol):
        i, j = np.unravel_index(np.argmin(M), M.shape)
        raise ValueError(f"{name} has negative weights: {name}[{i}, {j}] = {M[i, j]:.3g}")
    rows, cols = M.sum(axis=1), M.sum(axis=0)
    if np.max(np.abs(rows - 1)) > atol or np.max(np.abs(cols - 1)) > atol:
        bad = "row" if np.max(np.abs(rows - 1)) > atol else "column"
        sums = rows if bad == "row" else cols
        k = int(np.argmax(np.abs(sums - 1)))
        # A float32 matrix sums to 1 only to ~1e-7: name the deviation and the fix, not
        # a rounded "sums to 1 (must be 1)".
        hint = ""
        if in_dtype is not None and str(in_dtype).replace("torch.", "") in (
            "float32",
            "float16",
            "bfloat16",
        ):
            hint = f"; {name} is {in_dtype}: pass a larger atol (e.g. 1e-6) or float64"
        raise ValueError(
            f"{name} is not doubly stochastic: {bad} {k} sums to 1 {sums[k] - 1:+.3g} "
            f"(must be 1 within atol={atol:g}){hint}"
        )
    if symmetric and np.max(np.abs(M - M.T)) > atol:
        raise ValueError(
            f"{name} is not symmetric (max |W - W^T| = "
            f"{np.max(np.abs(M - M.T)):.3g}); pass symmetric=False if that is meant"
        )
    # An edge is any weight above float64 round-off: a loose low-precision atol must not
    # erase the small weights of a large graph.
    support = np.abs(M) > min(atol, 1e-10)
    np.fill_diagonal(support, False)
    if connected and M.shape[0] > 1 and not _connected(support):
        raise ValueError(f"{name} is disconnected: gossip cannot reach consensus")
    return M


@dataclass(frozen=True)
class Spectrum:
    """Spectral quantities of a doubly stochastic mixing matrix.

    Attributes:
        eigenvalues: Every eigenvalue, float64 (n,) sorted descending for a symmetric
            ``W`` (``eigenvalues[0] == 1``); complex128 sorted by decreasing modulus
            otherwise.
        second_largest_modulus: ``beta``, the spectral radius of ``W - 11^T/n``
            (``max(|lambda_2|, |lambda_n|)`` when symmetric): the asymptotic
            per-round contraction of the disagreement (1 for a disconnected support).
        spectral_gap: ``1 - beta``.
        lambda_2: Second-largest eigenvalue (real part when W is not symmetric).
        lambda_min: Smallest eigenvalue (real part when W is not symmetric).
        contraction: ``||W - 11^T/n||_2``, the one-round worst-case contraction
            (equal to ``beta`` when W is symmetric).
        symmetric: Whether ``W`` is symmetric.
    """

    eigenvalues: np.ndarray
    second_largest_modulus: float
    spectral_gap: float
    lambda_2: float
    lambda_min: float
    contraction: float
    symmetric: bool

    @property
    def n(self) -> int:
        """Number of nodes."""
        return int(self.eigenvalues.shape[0])


def spectrum(W: Any, *, atol: float | None = None) -> Spectrum:
    """Every eigenvalue of a mixing matrix, its spectral gap and second-largest modulus.

    Args:
        W: Doubly stochastic (n, n) matrix (checked with :func:`check_mixing_matrix`;
            neither symmetry nor connectivity required).
        atol: Tolerance of that check and of the symmetry test; ``None`` picks it from
            ``W``'s precision (:func:`default_mixing_atol`).

    Returns:
        A :class:`Spectrum`. For ``n == 1`` the gap is 1 and ``beta`` is 0.

    Raises:
        ValueError: If ``W`` is not a valid mixing matrix.

    Example:
        >>> s = spectrum(mixing_matrix(topology("complete", 5)))
        >>> [round(float(v), 6) + 0.0 for v in s.eigenvalues]
        [1.0, 0.0, 0.0, 0.0, 0.0]
    """
    M = check_mixing_matrix(W, symmetric=False, connected=False, atol=atol)
    n = M.shape[0]
    if atol is None:
        atol = default_mixing_atol(W, n)
    J = np.full((n, n), 1.0 / n)
    sym = bool(np.max(np.abs(M - M.T)) <= atol)
    if sym:
        eig = np.linalg.eigvalsh(0.5 * (M + M.T))[::-1].copy()
        rest = eig[1:]
        beta = float(np.max(np.abs(rest))) if n > 1 else 0.0
        lam2 = float(rest[0]) if n > 1 else 1.0
        lam_min = float(eig[-1])
        contraction = beta
    else:
        eig = np.linalg.eigvals(M)
        eig = eig[np.argsort(-np.abs(eig), kind="stable")]
        beta = float(np.max(np.abs(np.linalg.eigvals(M - J)))) if n > 1 else 0.0
        real = np.sort(eig.real)[::-1]
        lam2 = float(real[1]) if n > 1 else 1.0
        lam_min = float(real[-1])
        contraction = float(np.linalg.norm(M - J, 2))
    return Spectrum(
        eigenvalues=eig,
        second_largest_modulus=beta,
        spectral_gap=1.0 - beta,
        lambda_2=lam2,
        lambda_min=lam_min,
        contraction=contraction,
        symmetric=sym,
    )
