"""DeepWalk trained by skip-gram with negative sampling, in minibatches of pairs."""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int
from sklearn.base import BaseEstimator, TransformerMixin

from .graph import _walks, as_adjacency, skipgram_pairs
from .theory import energy, sgns_matrix, target_subspace


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def sgns_loss(
    W: np.ndarray, C: np.ndarray, centers: np.ndarray, contexts: np.ndarray, negatives: np.ndarray
) -> float:
    """The SGNS loss summed over a batch of pairs.

    ``sum_b [ -log s(w_u . c_v) - sum_j log s(-w_u . c_{n_bj}) ]`` with ``s`` the
    logistic function, ``u = centers[b]``, ``v = contexts[b]``, ``n_bj = negatives[b, j]``.

    Args:
        W: Center (input) embeddings ``(n, d)``.
        C: Context (output) embeddings ``(n, d)``.
        centers: int ``(B,)``.
        contexts: int ``(B,)``.
        negatives: int ``(B, k)``.

    Returns:
        The summed loss (a float, nats).
    """
    Wu = W[centers]
    xp = np.einsum("bd,bd->b", Wu, C[contexts])
    xn = np.einsum("bd,bkd->bk", Wu, C[negatives])
    return float(-_log_sigmoid(xp).sum() - _log_sigmoid(-xn).sum())


def _scatter(idx: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Sum of ``rows[b]`` into row ``idx[b]`` of an (n, d) zero matrix (bincount, exact order)."""
    d = rows.shape[-1]
    flat = (idx.reshape(-1, 1) * d + np.arange(d)).ravel()
    return np.bincount(flat, weights=rows.reshape(-1), minlength=n * d).reshape(n, d)


def sgns_gradients(
    W: np.ndarray, C: np.ndarray, centers: np.ndarray, contexts: np.ndarray, negatives: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Gradients of :func:`sgns_loss` with respect to W and C, each ``(n, d)``.

    With ``g+ = s(x+) - 1`` and ``g- = s(x-)``: ``dW_u = g+ c_v + sum_j g-_j c_{n_j}``,
    ``dC_v = g+ w_u``, ``dC_{n_j} = g-_j w_u``, summed over the batch (np.bincount, so
    the sum has a fixed order and a seed gives the same bits every time).
    """
    n = W.shape[0]
    Wu, Cv, Cn = W[centers], C[contexts], C[negatives]
    gp = _sigmoid(np.einsum("bd,bd->b", Wu, Cv)) - 1.0
    gn = _sigmoid(np.einsum("bd,bkd->bk", Wu, Cn))
    dW = gp[:, None] * Cv + np.einsum("bk,bkd->bd", gn, Cn)
    dC = _scatter(contexts, gp[:, None] * Wu, n) + _scatter(
        negatives, gn[:, :, None] * Wu[:, None, :], n
    )
    return _scatter(centers, dW, n), dC


class DeepWalkSGNS(TransformerMixin, BaseEstimator):
    """DeepWalk node embeddings trained by skip-gram with negative sampling (SGNS).

    ``walks_per_node`` uniform random walks of ``walk_length`` nodes start at every
    node; every (center, context) pair at distance 1..``window`` along a walk, in both
    directions, is a positive pair. Each epoch shuffles the pairs and takes minibatches
    of ``batch_size`` of them; each positive gets ``negative`` negatives drawn from
    ``deg^negative_power``. A step is plain gradient descent on the SGNS loss summed
    over the batch, ``W -= lr * dL/dW``, ``C -= lr * dL/dC`` (``lr`` is per pair, as in
    word2vec; constant, no decay). W and C start i.i.d. ``N(0, init_scale^2)``: the
    "small norm" initialisation of the paper at the default.

    Args:
        dim: d, the embedding dimension (< n).
        walk_length: Nodes per walk (> window).
        walks_per_node: Walks started at each node.
        window: T, the context window.
        negative: k, negatives per positive pair.
        negative_power: Exponent of the degree in the noise law (1.0 = the degree
            distribution, 0.75 = word2vec).
        init_scale: Std of each entry of W and C at the start; None means
            ``1e-3 / sqrt(dim)`` (rows of norm about 1e-3).
        lr: Step size per pair.
        batch_size: Positive pairs per step.
        epochs: Passes over the pairs.
        max_steps: Stop after this many steps (None: all epochs).
        record_every: Record the trajectory every this many steps (0: only at the
            start and the end).
        seed: Seed of every random draw (walks, init, shuffles, negatives); the same
            seed gives bit-identical results.
        allow_isolated: Accept isolated nodes.

    Attributes:
        embedding_: float64 ``(n, d)``, W at the end.
        context_: float64 ``(n, d)``, C at the end.
        n_steps_: Steps taken.
        trajectory_: dict of 1-D arrays: ``step``, ``w_norm`` (||W||_F), ``c_norm``,
            and, when a target is known, ``energy`` (:func:`~deepwalk_sgns.energy` of W
            in the target subspace).
        target_: The :class:`~deepwalk_sgns.TargetSubspace` or the ``(n, r)`` basis
            the alignment is measured against (None when not recorded).
        peak_embedding_: W at the recorded step of highest energy (None without a target).
        peak_step_: That step.

    Example:
        >>> from deepwalk_sgns import DeepWalkSGNS, sbm_graph
        >>> adj, y = sbm_graph((20, 20), 0.5, 0.05, seed=0)
        >>> emb = DeepWalkSGNS(dim=4, epochs=1, seed=0).fit_transform(adj)
        >>> emb.shape
        (40, 4)
    """

    def __init__(
        self,
        dim: int = 16,
        walk_length: int = 40,
        walks_per_node: int = 10,
        window: int = 5,
        negative: int = 5,
        negative_power: float = 1.0,
        init_scale: float | None = None,
        lr: float = 0.02,
        batch_size: int = 1024,
        epochs: int = 1,
        max_steps: int | None = None,
        record_every: int = 10,
        seed: int | None = 0,
        allow_isolated: bool = False,
    ) -> None:
        self.dim = dim
        self.walk_length = walk_length
        self.walks_per_node = walks_per_node
        self.window = window
        self.negative = negative
        self.negative_power = negative_power
        self.init_scale = init_scale
        self.lr = lr
        self.batch_size = batch_size
        self.epochs = epochs
        self.max_steps = max_steps
        self.record_every = record_every
        self.seed = seed
        self.allow_isolated = allow_isolated

    def _validate(self, n: int) -> dict[str, Any]:
        p = {
            "dim": check_int("dim", self.dim, low=1),
            "walk_length": check_int("walk_length", self.walk_length, low=2),
            "walks_per_node": check_int("walks_per_node", self.walks_per_node, low=1),
            "window": check_int("window", self.window, low=1),
            "negative": check_int("negative", self.negative, low=1),
            "negative_power": check_float("negative_power", self.negative_power, low=0.0),
            "lr": check_float("lr", self.lr, low=0.0, low_inclusive=False),
            "batch_size": check_int("batch_size", self.batch_size, low=1),
            "epochs": check_int("epochs", self.epochs, low=1),
            "record_every": check_int("record_every", self.record_every, low=0),
        }
        if p["dim"] >= n:
            raise ValueError(f"dim must be < the number of nodes n = {n}; got {p['dim']}")
        if p["window"] >= p["walk_length"]:
            raise ValueError(
                f"window must be < walk_length = {p['walk_length']}; got {p['window']}"
            )
        scale = 1e-3 / np.sqrt(p["dim"]) if self.init_scale is None else self.init_scale
        p["init_scale"] = check_float("init_scale", scale, low=0.0, low_inclusive=False)
        p["max_steps"] = (
            None if self.max_steps is None else check_int("max_steps", self.max_steps, low=1)
        )
        return p

    def fit(
        self, graph: Any, y: Any = None, *, target: Any = "auto", callback: Any = None
    ) -> DeepWalkSGNS:
        """Embed the nodes of ``graph``.

        Args:
            graph: A networkx graph, a scipy sparse adjacency (n, n), a ``(2, E)`` edge
                index, or an ``icml26_core.datasets.Graph``; undirected, weights >= 0.
            y: Ignored (scikit-learn convention).
            target: What the trajectory's ``energy`` is measured against: an ``(n, r)``
                orthonormal basis, a :class:`~deepwalk_sgns.TargetSubspace`, ``"auto"``
                (the default: ``target_subspace(sgns_matrix(graph, window, negative))``
                when n <= 3000, else none) or None (no alignment recorded).
            callback: Called as ``callback(step, W, C)`` at every recorded step (read
                only: copy what you keep; do not modify W or C).

        Returns:
            self.

        Raises:
            ValueError: On bad hyperparameters (naming them) or a bad graph.
        """
        adj = as_adjacency(graph, allow_isolated=self.allow_isolated)
        n = adj.shape[0]
        p = self._validate(n)
        if isinstance(target, str):
            if target != "auto":
                raise ValueError(f"target must be 'auto', None or an (n, r) basis; got {target!r}")
            target = (
                target_subspace(
                    sgns_matrix(adj, p["window"], p["negative"], negative_power=p["negative_power"])
                )
                if n <= 3000
                else None
            )
        basis = getattr(target, "basis", target)
        if basis is not None:
            basis = np.asarray(basis, dtype=np.float64)
            if basis.ndim != 2 or basis.shape[0] != n:
                raise ValueError(f"target must have shape (n = {n}, r); got {basis.shape}")
        rng = np.random.default_rng(self.seed)
        walks = _walks(adj, p["walk_length"], p["walks_per_node"], rng)
        centers, contexts = skipgram_pairs(walks, p["window"])
        deg = np.asarray(adj.sum(axis=1)).ravel()
        q = deg ** p["negative_power"]
        cdf = np.cumsum(q / q.sum())
        cdf[-1] = 1.0
        d, s = p["dim"], p["init_scale"]
        W = rng.standard_normal((n, d)) * s
        C = rng.standard_normal((n, d)) * s
        k, B, lr = p["negative"], p["batch_size"], p["lr"]
        steps_per_epoch = -(-centers.size // B)
        total = steps_per_epoch * p["epochs"]
        if p["max_steps"] is not None:
            total = min(total, p["max_steps"])
        rec: dict[str, list[float]] = {"step": [], "w_norm": [], "c_norm": []}
        if basis is not None:
            rec["energy"] = []
        best = (-1.0, 0, W.copy())

        def record(step: int) -> None:
            nonlocal best
            rec["step"].append(step)
            rec["w_norm"].append(float(np.linalg.norm(W)))
            rec["c_norm"].append(float(np.linalg.norm(C)))
            if basis is not None:
                e = energy(W, basis)
                rec["energy"].append(e)
                if e > best[0]:
                    best = (e, step, W.copy())
            if callback is not None:
                callback(step, W, C)

        record(0)
        step = 0
        every = p["record_every"]
        while step < total:
            order = rng.permutation(centers.size)
            for b in range(steps_per_epoch):
                if step >= total:
                    break
                idx = order[b * B : (b + 1) * B]
                u, v = centers[idx], contexts[idx]
                neg = np.searchsorted(cdf, rng.random((idx.size, k)), side="right")
                gW, gC = sgns_gradients(W, C, u, v, np.minimum(neg, n - 1))
                W -= lr * gW
                C -= lr * gC
                step += 1
                if every and step % every == 0 and step < total:
                    record(step)
        record(step)
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(C))):
            raise FloatingPointError(
                "the embeddings diverged (non-finite); lower lr or batch_size (the step is a "
                "sum over the batch, so a node's step grows with batch_size / n)"
            )
        self.embedding_ = W
        self.context_ = C
        self.n_steps_ = step
        self.n_pairs_ = int(centers.size)
        self.trajectory_ = {key: np.asarray(val) for key, val in rec.items()}
        self.target_ = target
        self.peak_embedding_ = best[2] if basis is not None else None
        self.peak_step_ = best[1] if basis is not None else None
        self.n_features_in_ = n
        return self

    def fit_transform(self, graph: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Fit and return ``embedding_`` (n, d)."""
        return self.fit(graph, y, **fit_params).embedding_

    def transform(self, graph: Any = None) -> np.ndarray:
        """The embedding of the fitted graph (transductive: ``graph`` is not re-embedded)."""
        if not hasattr(self, "embedding_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("DeepWalkSGNS is not fitted yet; call fit(graph) first")
        return self.embedding_
