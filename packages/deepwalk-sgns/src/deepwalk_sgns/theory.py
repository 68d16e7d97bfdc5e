"""The linearised SGNS matrix, its target subspace, alignment, closed-form embeddings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from icml26_core.validation import check_float, check_int

from .graph import as_adjacency


def _cooccurrence(adj: sp.csr_array, window: int) -> np.ndarray:
    """S = (1/(T vol)) sum_{r=1..T} A (D^-1 A)^(r-1), dense (n, n)."""
    deg = np.asarray(adj.sum(axis=1)).ravel()
    vol = float(deg.sum())
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    P = sp.csr_array(sp.diags_array(inv) @ adj)
    term = adj.toarray()
    S = term.copy()
    for _ in range(window - 1):
        term = np.asarray((P.T @ term.T).T)  # sparse @ dense: term P
        S += term
    return S / (window * vol)


def sgns_matrix(
    graph: Any, window: int = 5, negative: int = 5, *, negative_power: float = 1.0
) -> np.ndarray:
    """The SGNS gradient linearised at zero: ``M = S - k pi q^T`` (dense, float64).

    ``S = (1/(T vol)) sum_{r=1..T} A (D^-1 A)^(r-1)`` is the probability that a
    (center, context) pair drawn from stationary walks at distance ``r`` uniform in
    ``1..T`` is ``(u, v)``; ``pi = deg / vol`` is the law of the center and ``q`` that of
    a negative, ``q ~ deg^negative_power``. Near ``W = C = 0`` the expected per-pair
    SGNS loss has ``-dL/dW = (1/2) M C`` and ``-dL/dC = (1/2) M^T W`` (README,
    "Derivation"). With ``negative_power = 1`` (DeepWalk's noise), ``q = pi`` and M is
    symmetric.

    Args:
        graph: Anything :func:`~deepwalk_sgns.graph.as_adjacency` takes.
        window: T, the context window (>= 1).
        negative: k, negatives per positive pair (>= 1).
        negative_power: Exponent of the degree in the noise law (0.75 in word2vec).

    Returns:
        M, float64 ``(n, n)``.
    """
    window = check_int("window", window, low=1)
    negative = check_int("negative", negative, low=1)
    negative_power = check_float("negative_power", negative_power, low=0.0)
    adj = as_adjacency(graph)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    pi = deg / deg.sum()
    q = deg**negative_power
    q = q / q.sum()
    return _cooccurrence(adj, window) - negative * np.outer(pi, q)


@dataclass(frozen=True)
class TargetSubspace:
    """The top-``rank`` eigenvectors of M by |eigenvalue|.

    Attributes:
        basis: float64 ``(n, rank)``, orthonormal columns.
        eigenvalues: float64 ``(rank + 1,)`` (or fewer when n is small), sorted by
            decreasing absolute value; the last is the first one left out.
        rank: r.
        gap_ratio: ``|l_r| / |l_{r+1}|`` (inf when the next one is 0 or absent).
    """

    basis: np.ndarray
    eigenvalues: np.ndarray
    rank: int
    gap_ratio: float

    @property
    def chance(self) -> float:
        """The energy of a random direction in the subspace, ``r / n``."""
        return self.rank / self.basis.shape[0]


def target_subspace(
    M: np.ndarray, rank: int | None = None, *, max_rank: int = 20
) -> TargetSubspace:
    """The column space the small-init SGNS trajectory aligns with.

    The linear dynamics ``W' = M C / 2, C' = M^T W / 2`` grow each eigen-direction of a
    symmetric M at the rate ``|lambda| / 2`` (W + C along positive, W - C along negative
    eigenvalues), so W concentrates on the top eigenvectors by |eigenvalue|; the first
    one is the negative degree direction (eigenvalue near ``(1 - k) ||pi||^2``-scale).
    For an asymmetric M (``negative_power != 1``) the left singular vectors are used.

    Args:
        M: ``(n, n)`` from :func:`sgns_matrix`, or any other target matrix.
        rank: r; by default the r in ``[2, min(max_rank, n - 1)]`` with the largest gap
            ratio (pass K for a K-block SBM).
        max_rank: Upper end of the automatic search.

    Returns:
        The :class:`TargetSubspace`.
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 2:
        raise ValueError(f"M must be a square (n, n) matrix with n >= 2; got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError("M has NaN or infinite entries")
    n = M.shape[0]
    if rank is not None:
        rank = check_int("rank", rank, low=1, high=n - 1)
    symmetric = np.allclose(M, M.T, rtol=1e-10, atol=1e-14 * max(np.abs(M).max(), 1e-300))
    want = (rank if rank is not None else check_int("max_rank", max_rank, low=2)) + 1
    if symmetric and n > 1000 and want < n // 4:
        from scipy.sparse.linalg import eigsh

        # ARPACK for the few largest |eigenvalues| of a large M; a fixed start vector
        # makes the result a function of M
        vals, vecs = eigsh((M + M.T) / 2, k=want, which="LM", v0=np.ones(n) / np.sqrt(n))
        order = np.argsort(-np.abs(vals), kind="stable")
        vals, vecs = vals[order], vecs[:, order]
    elif symmetric:
        vals, vecs = np.linalg.eigh((M + M.T) / 2)
        order = np.argsort(-np.abs(vals), kind="stable")
        vals, vecs = vals[order], vecs[:, order]
    else:
        vecs, vals, _ = np.linalg.svd(M)
    mags = np.abs(vals)
    if rank is None:
        max_rank = check_int("max_rank", max_rank, low=2)
        hi = min(max_rank, n - 1)
        if hi < 2:
            raise ValueError(f"the graph is too small for a rank search (n = {n})")
        ratios = mags[1:hi] / np.maximum(mags[2 : hi + 1], 1e-300)
        rank = int(np.argmax(ratios)) + 2
    rank = check_int("rank", rank, low=1, high=min(n - 1, mags.size - 1))
    nxt = mags[rank]
    gap = float(mags[rank - 1] / nxt) if nxt > 0 else float("inf")
    return TargetSubspace(
        basis=np.ascontiguousarray(vecs[:, :rank]),
        eigenvalues=vals[: rank + 1].copy(),
        rank=rank,
        gap_ratio=gap,
    )


@dataclass(frozen=True)
class Alignment:
    """How much of W lies in span(U).

    Attributes:
        energy: ``||U^T W||_F^2 / ||W||_F^2`` in [0, 1]; 1 when W is inside span(U),
            about r/n for a random W.
        angles: Principal angles between span(W) and span(U), radians, ascending.
    """

    energy: float
    angles: np.ndarray


def energy(W: np.ndarray, U: np.ndarray) -> float:
    """``||U^T W||_F^2 / ||W||_F^2`` for orthonormal U (n, r) and W (n, d)."""
    tot = float(np.einsum("ij,ij->", W, W))
    if tot == 0.0:
        return float("nan")
    P = U.T @ W
    return float(np.einsum("ij,ij->", P, P) / tot)


def alignment(W: np.ndarray, U: Any) -> Alignment:
    """The energy fraction of W in span(U) and the principal angles.

    Args:
        W: float ``(n, d)`` embedding.
        U: ``(n, r)`` with orthonormal columns, or a :class:`TargetSubspace`.

    Returns:
        The :class:`Alignment`.
    """
    if isinstance(U, TargetSubspace):
        U = U.basis
    W = np.asarray(W, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    if W.ndim != 2 or U.ndim != 2 or W.shape[0] != U.shape[0]:
        raise ValueError(f"W (n, d) and U (n, r) must share n; got {W.shape} and {U.shape}")
    if not np.allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-8):
        raise ValueError("U must have orthonormal columns")
    from scipy.linalg import subspace_angles

    return Alignment(energy=energy(W, U), angles=np.sort(subspace_angles(W, U)))


def spectral_embedding(M: np.ndarray, dim: int) -> np.ndarray:
    """The top-``dim`` eigenvectors of M by |eigenvalue|, scaled by sqrt|eigenvalue|."""
    t = target_subspace(M, rank=dim)
    return t.basis * np.sqrt(np.abs(t.eigenvalues[:dim]))


def netmf_embedding(graph: Any, dim: int, window: int = 5, negative: int = 5) -> np.ndarray:
    """NetMF's closed form (Qiu et al., WSDM 2018, small-T variant).

    ``log max(vol / (b T) sum_{r=1..T} (D^-1 A)^r D^-1, 1)`` factorised by a truncated
    SVD, ``U_d sqrt(Sigma_d)``.

    Returns:
        float64 ``(n, dim)``.
    """
    adj = as_adjacency(graph)
    dim = check_int("dim", dim, low=1, high=adj.shape[0] - 1)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    S = _cooccurrence(adj, window) * window * deg.sum()  # sum_r A (D^-1 A)^(r-1)
    inv = 1.0 / deg
    # (D^-1 A)^r D^-1 = D^-1 [A (D^-1 A)^(r-1)] D^-1
    Mn = deg.sum() / (negative * window) * (inv[:, None] * S * inv[None, :])
    L = np.log(np.maximum(Mn, 1.0))
    U, s, _ = np.linalg.svd(L)
    return U[:, :dim] * np.sqrt(s[:dim])


def cluster_ari(
    embedding: np.ndarray, labels: np.ndarray, *, normalize: bool = False, seed: int = 0
) -> float:
    """Adjusted Rand index of k-means (K = number of labels) on the rows of ``embedding``.

    Args:
        embedding: float ``(n, d)``.
        labels: int ``(n,)`` true blocks.
        normalize: Scale rows to unit norm first.
        seed: k-means seed (10 restarts).

    Returns:
        The ARI, 1 for a perfect recovery, about 0 by chance.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    X = np.asarray(embedding, dtype=np.float64)
    y = np.asarray(labels)
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"embedding (n, d) and labels (n,) must share n; got {X.shape}, {y.shape}")
    if normalize:
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        X = X / np.where(norms > 0, norms, 1.0)
    k = int(np.unique(y).size)
    pred = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(X)
    return float(adjusted_rand_score(y, pred))
