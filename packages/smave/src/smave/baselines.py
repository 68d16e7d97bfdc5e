"""Baselines of Xia, Tong, Li and Zhu (2002): OPG, MAVE and refined MAVE (RMAVE).

No maintained Python implementation exists, so they are written here from the paper
and tested like the method. All work on whitened covariates ``z`` and a standardized
``y`` (see :class:`smave._base.SubspaceEstimator`).

* OPG: local linear fits in the ambient space at every point,
  ``b_j = argmin sum_i w_ij (y_i - a - b^T (z_i - z_j))^2``, then the top eigenvectors
  of ``(1/n) sum_j b_j b_j^T``. The kernel is Gaussian on the ``k`` nearest neighbours
  in the ambient space with the k-th distance as bandwidth (a nearest-neighbour
  bandwidth keeps a p-dimensional fit well posed; ``k > p + 1``).
* MAVE: minimizes ``sum_j sum_i w_ij (y_i - a_j - b_j^T B^T (z_i - z_j))^2`` over
  ``B`` and all ``(a_j, b_j)`` by alternating exact least squares (the B-step is one
  ``pd x pd`` linear system), with the ambient weights of OPG held fixed.
* RMAVE: as MAVE, but the weights are recomputed at every iteration in the current
  projected space with a dense Gaussian kernel ``K_h(B^T (z_i - z_j))`` over all pairs,
  which is what makes it accurate and what costs O(n^2) per iteration.

References:
    Xia, Tong, Li and Zhu (2002), "An adaptive estimation of dimension reduction
    space", Journal of the Royal Statistical Society B 64(3), 363-410.
"""

from __future__ import annotations

import numpy as np
from icml26_core.validation import check_choice, check_float, check_int
from scipy.spatial import cKDTree

from smave._base import SubspaceEstimator
from smave._init import basis_from_rows, moment_directions
from smave.criterion import gaussian_weights, local_linear_fit

__all__ = ["MAVE", "OPG", "RMAVE", "opg_directions"]

_CHUNK_ELEMENTS = 4_000_000  # bound on the temporaries of one block of centres


def _ambient_neighbours(
    Z: np.ndarray, k: int, centers: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest points of ``Z`` to each centre (itself included), sorted by distance.

    Args:
        Z: float array (n, p).
        k: Neighbours per centre, ``k <= n``.
        centers: int array (m,) of centre indices, or None for every point.

    Returns:
        ``(dist, nb)``, both (m, k).
    """
    n, p = Z.shape
    Q = Z if centers is None else Z[centers]
    m = Q.shape[0]
    if p <= 15:
        dist, nb = cKDTree(Z).query(Q, k=k)
        return dist.reshape(m, k), nb.reshape(m, k)
    # brute force by blocks: a k-d tree degrades to it in high dimension anyway
    sq = np.sum(Z**2, axis=1)
    sq_q = np.sum(Q**2, axis=1)
    dist = np.empty((m, k))
    nb = np.empty((m, k), dtype=np.intp)
    step = max(1, _CHUNK_ELEMENTS // n)
    for s in range(0, m, step):
        J = slice(s, min(m, s + step))
        d2 = np.maximum(sq_q[J, None] - 2.0 * Q[J] @ Z.T + sq[None, :], 0.0)
        part = (
            np.argpartition(d2, k - 1, axis=1)[:, :k]
            if k < n
            else np.tile(np.arange(n), (d2.shape[0], 1))
        )
        d2k = np.take_along_axis(d2, part, axis=1)
        order = np.argsort(d2k, axis=1, kind="stable")
        nb[J] = np.take_along_axis(part, order, axis=1)
        dist[J] = np.sqrt(np.take_along_axis(d2k, order, axis=1))
    return dist, nb


def _ambient_k(n_neighbors, n: int, p: int) -> int:
    if isinstance(n_neighbors, str):
        return int(min(n, max(2 * (p + 1), 20)))
    return int(n_neighbors)


def _check_common(est) -> None:
    if not (isinstance(est.n_neighbors, str) and est.n_neighbors == "auto"):
        check_int("n_neighbors", est.n_neighbors, low=2)
    check_float("ridge", est.ridge, low=0.0, low_inclusive=False)


def _opg_matrix(
    Z: np.ndarray, y: np.ndarray, k: int, ridge: float, centers: np.ndarray | None = None
) -> np.ndarray:
    """``(1/m) sum_j b_j b_j^T`` from ambient local linear fits (p, p).

    Args:
        Z: float array (n, p), whitened covariates.
        y: float array (n,).
        k: Ambient neighbours per local fit.
        ridge: Ridge of the slopes relative to the squared neighbourhood radius.
        centers: int array (m,) of the centres ``j`` (None: every point, Xia et al.'s
            OPG); the neighbours are always searched among all n points.
    """
    n, p = Z.shape
    dist, nb = _ambient_neighbours(Z, k, centers)
    C = np.arange(n) if centers is None else np.asarray(centers)
    w, h = gaussian_weights(dist)
    M = np.zeros((p, p))
    step = max(1, _CHUNK_ELEMENTS // (k * p))
    for s in range(0, C.size, step):
        J = slice(s, min(C.size, s + step))
        U = Z[nb[J]] - Z[C[J]][:, None, :]
        _, b, _ = local_linear_fit(U, w[J], y[nb[J]], ridge * h[J] ** 2)
        M += b.T @ b
    return M / C.size


def opg_directions(
    Z: np.ndarray,
    y: np.ndarray,
    d: int,
    rng: np.random.RandomState,
    *,
    n_centers: int = 256,
    ridge: float = 1e-2,
) -> np.ndarray:
    """A cheap OPG start: local gradients at ``n_centers`` random centres only.

    Xia et al.'s OPG fits a local linear model at every point (O(n k p^2)); a start
    needs only the top eigenvectors of the mean outer product of gradients, which a
    random subset of centres estimates at O(n_centers (n p + k p^2)).

    Args:
        Z: float array (n, r), whitened covariates.
        y: float array (n,), standardized response.
        d: Number of directions.
        rng: Random state for the centres.
        n_centers: Centres to fit (all n if fewer).
        ridge: Ridge of the local slopes relative to the squared radius.

    Returns:
        float array (r, d) with orthonormal columns.
    """
    n, p = Z.shape
    k = _ambient_k("auto", n, p)
    centers = None if n <= n_centers else np.sort(rng.choice(n, n_centers, replace=False))
    return _top_eigenvectors(_opg_matrix(Z, y, k, ridge, centers), d)


def _top_eigenvectors(M: np.ndarray, d: int) -> np.ndarray:
    _, V = np.linalg.eigh(M)
    return np.ascontiguousarray(V[:, ::-1][:, :d])


def _orthonormalize(B: np.ndarray) -> np.ndarray:
    Q, R = np.linalg.qr(B)
    s = np.sign(np.diag(R))
    s[s == 0] = 1.0
    return Q * s


def _solve_b_step(A: np.ndarray, rhs: np.ndarray, p: int, d: int) -> np.ndarray:
    """Solve the ``pd x pd`` normal equations of the B-step; ``vec`` is column-major."""
    A = A.reshape(d * p, d * p)
    A = 0.5 * (A + A.T)
    A[np.diag_indices_from(A)] += 1e-10 * max(1.0, float(np.trace(A)) / (d * p))
    vecB = np.linalg.solve(A, rhs.T.reshape(-1))
    return vecB.reshape(d, p).T


def _subspace_change(B1: np.ndarray, B2: np.ndarray) -> float:
    return float(np.linalg.norm(B1 @ B1.T - B2 @ B2.T))


class OPG(SubspaceEstimator):
    """Outer product of gradients (Xia et al., 2002), a scikit-learn transformer.

    ``components_`` spans the top ``n_components`` eigenvectors of the average outer
    product ``(1/n) sum_j b_j b_j^T`` of local-linear gradient estimates (mapped back
    from whitened to X coordinates). Cost O(n k p^2 + n p^3): local fits in the ambient
    dimension p, the "curse of dimensionality" that SMAVE avoids.

    Args:
        n_components: Dimension ``d`` of the subspace, ``1 <= d < n_features``.
        n_neighbors: ``k`` nearest neighbours per local fit, or ``"auto"``
            (``max(2 (p + 1), 20)``, capped at n).
        ridge: Ridge of the local slopes relative to the squared neighbourhood radius.
        random_state: Unused (OPG is deterministic); kept for a uniform API.

    Attributes:
        components_: float array (n_components, n_features), orthonormal rows.
        mean_: float array (n_features,).
        eigenvalues_: float array (r,), eigenvalues of the OPG matrix, decreasing.
        n_neighbors_: The neighbourhood size used.

    References:
        Xia, Tong, Li and Zhu (2002), JRSS-B 64(3), section 3.

    Example:
        >>> import numpy as np
        >>> from smave import OPG
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(400, 4)); y = np.tanh(X[:, 0]) + 0.05 * rng.normal(size=400)
        >>> OPG(n_components=1).fit(X, y).components_.shape
        (1, 4)
    """

    def __init__(self, n_components: int = 1, *, n_neighbors="auto", ridge=1e-2, random_state=None):
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.ridge = ridge
        self.random_state = random_state

    def _check_params(self) -> None:
        _check_common(self)

    def _min_samples(self, d: int) -> int:
        if isinstance(self.n_neighbors, str):
            return d + 3
        return max(d + 3, int(self.n_neighbors))

    def _fit_whitened(self, Z, y, rng, W):
        n, p = Z.shape
        k = _ambient_k(self.n_neighbors, n, p)
        M = _opg_matrix(Z, y, k, self.ridge)
        evals = np.linalg.eigvalsh(M)[::-1]
        self.eigenvalues_ = evals
        self.n_neighbors_ = k
        return _top_eigenvectors(M, self.n_components)


class MAVE(SubspaceEstimator):
    """Minimum average variance estimation (Xia et al., 2002), a scikit-learn transformer.

    Minimizes the MAVE criterion
    ``sum_j sum_i w_ij (y_i - a_j - b_j^T B^T (z_i - z_j))^2`` over ``B`` and the local
    intercepts/slopes by alternating least squares, starting from OPG:

    * (a_j, b_j) step: a weighted local linear fit in the projected space, per centre;
    * B step: with the (a_j, b_j) fixed the criterion is quadratic in ``vec(B)``,
      solved exactly as one ``pd x pd`` system, then B is orthonormalized.

    With ``refine=False`` (MAVE) the weights are the ambient nearest-neighbour weights of
    OPG, fixed. With ``refine=True`` (RMAVE, also available as :class:`RMAVE`) they are
    recomputed at each iteration from a dense Gaussian kernel on the current projected
    points, ``w_ij ~ exp(-|B^T (z_i - z_j)|^2 / (2 h^2))``, ``h = bandwidth n^(-1/(d+4))``:
    O(n^2 (p + d^2) + n d^2 p^2 + (pd)^3) per iteration.

    Args:
        n_components: Dimension ``d`` of the subspace, ``1 <= d < n_features``.
        refine: Recompute weights in the projected space (RMAVE) or not (MAVE).
        n_neighbors: Ambient neighbourhood size of OPG/MAVE weights, or ``"auto"``.
        bandwidth: RMAVE kernel bandwidth factor, or ``"auto"`` (normal reference rule
            ``(4 / (d + 2))^(1/(d+4))`` for unit-variance projected coordinates).
        ridge: Ridge of the local slopes relative to the squared bandwidth.
        max_iter: Maximum number of alternating iterations.
        tol: Stop when ``||P_B - P_B'||_F`` between iterates falls below ``tol``.
        init: ``"opg"`` (Xia et al.'s choice), ``"moments"`` or an array
            (n_components, n_features) of starting directions.
        random_state: Unused (deterministic); kept for a uniform API.

    Attributes:
        components_: float array (n_components, n_features), orthonormal rows.
        mean_: float array (n_features,).
        n_iter_: Number of alternating iterations run.
        objective_history_: float array (n_iter_,), the MAVE criterion (weighted mean
            squared local residual) after each (a, b) step, decreasing for MAVE.

    References:
        Xia, Tong, Li and Zhu (2002), JRSS-B 64(3), sections 2-3.

    Example:
        >>> import numpy as np
        >>> from smave import RMAVE
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 4)); y = np.tanh(X[:, 1]) + 0.05 * rng.normal(size=300)
        >>> RMAVE(n_components=1).fit(X, y).transform(X).shape
        (300, 1)
    """

    def __init__(
        self,
        n_components: int = 1,
        *,
        refine: bool = False,
        n_neighbors="auto",
        bandwidth="auto",
        ridge=1e-2,
        max_iter: int = 30,
        tol: float = 1e-5,
        init="opg",
        random_state=None,
    ):
        self.n_components = n_components
        self.refine = refine
        self.n_neighbors = n_neighbors
        self.bandwidth = bandwidth
        self.ridge = ridge
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state

    def _check_params(self) -> None:
        _check_common(self)
        if not isinstance(self.refine, bool | np.bool_):
            raise TypeError(f"refine must be a bool, got {type(self.refine).__name__}")
        if not (isinstance(self.bandwidth, str) and self.bandwidth == "auto"):
            check_float("bandwidth", self.bandwidth, low=0.0, low_inclusive=False)
        check_int("max_iter", self.max_iter, low=1)
        check_float("tol", self.tol, low=0.0)
        if isinstance(self.init, str):
            check_choice("init", self.init, ("opg", "moments"))

    def _min_samples(self, d: int) -> int:
        if isinstance(self.n_neighbors, str):
            return d + 3
        return max(d + 3, int(self.n_neighbors))

    def _start(self, Z, y, W, k) -> np.ndarray:
        d = self.n_components
        if isinstance(self.init, str):
            if self.init == "opg":
                return _top_eigenvectors(_opg_matrix(Z, y, k, self.ridge), d)
            return moment_directions(Z, y, d)
        return basis_from_rows(self.init, W, d)

    def _fit_whitened(self, Z, y, rng, W):
        n, p = Z.shape
        d = self.n_components
        k = _ambient_k(self.n_neighbors, n, p)
        B = self._start(Z, y, W, k)
        if not self.refine:
            dist, nb = _ambient_neighbours(Z, k)
            w, h = gaussian_weights(dist)
        else:
            bw = self.bandwidth
            if isinstance(bw, str):
                bw = (4.0 / (d + 2)) ** (1.0 / (d + 4))
            h_glob = float(bw) * n ** (-1.0 / (d + 4))
        history = []
        for _ in range(self.max_iter):
            if self.refine:
                A, rhs, crit = _dense_projected_step(Z, y, B, h_glob, self.ridge)
            else:
                A, rhs, crit = _sparse_step(Z, y, B, nb, w, self.ridge * h**2)
            history.append(crit)
            B_new = _orthonormalize(_solve_b_step(A, rhs, p, d))
            change = _subspace_change(B_new, B)
            B = B_new
            if change < self.tol:
                break
        self.n_iter_ = len(history)
        self.objective_history_ = np.asarray(history)
        return B


class RMAVE(MAVE):
    """Refined MAVE (Xia et al., 2002): :class:`MAVE` with ``refine=True``.

    Weights are recomputed at every iteration from a dense Gaussian kernel in the
    current projected space (all n^2 pairs). See :class:`MAVE` for the arguments.

    Example:
        >>> import numpy as np
        >>> from smave import RMAVE
        >>> rng = np.random.default_rng(1)
        >>> X = rng.normal(size=(300, 3)); y = X[:, 0] ** 2 + 0.1 * rng.normal(size=300)
        >>> round(float(abs(RMAVE().fit(X, y).components_[0, 0])), 1)
        1.0
    """

    def __init__(
        self,
        n_components: int = 1,
        *,
        refine: bool = True,
        n_neighbors="auto",
        bandwidth="auto",
        ridge=1e-2,
        max_iter: int = 30,
        tol: float = 1e-5,
        init="opg",
        random_state=None,
    ):
        super().__init__(
            n_components,
            refine=refine,
            n_neighbors=n_neighbors,
            bandwidth=bandwidth,
            ridge=ridge,
            max_iter=max_iter,
            tol=tol,
            init=init,
            random_state=random_state,
        )


def _sparse_step(Z, y, B, nb, w, lam):
    """(a, b) step then the B-step normal equations on a fixed sparse localization.

    Returns:
        ``(A, rhs, criterion)``: A as a (d, p, d, p) tensor, rhs (p, d) and the weighted
        mean squared local residual at the current B.
    """
    n, p = Z.shape
    d = B.shape[1]
    k = nb.shape[1]
    A = np.zeros((d, p, d, p))
    rhs = np.zeros((p, d))
    crit = 0.0
    step = max(1, _CHUNK_ELEMENTS // (k * p))
    for s in range(0, n, step):
        J = slice(s, min(n, s + step))
        D = Z[nb[J]] - Z[J][:, None, :]
        yn = y[nb[J]]
        wj = w[J]
        a, b, r = local_linear_fit(D @ B, wj, yn, lam[J])
        crit += float(np.sum(wj * r**2))
        S = np.matmul((D * wj[:, :, None]).transpose(0, 2, 1), D)  # (c, p, p)
        A += np.einsum("ca,cb,cpq->apbq", b, b, S, optimize=True)
        e = np.einsum("ck,ckp->cp", wj * (yn - a[:, None]), D)
        rhs += e.T @ b
    return A, rhs, crit / n


def _dense_projected_step(Z, y, B, h, ridge):
    """RMAVE's (a, b) step and B-step normal equations with dense projected weights.

    Every centre j weighs every point i by ``K_h(B^T (z_i - z_j))`` (rows normalized);
    the n x n weight matrix is built block by block so memory stays O(block * n).
    """
    n, p = Z.shape
    d = B.shape[1]
    P = Z @ B
    PP = (P[:, :, None] * P[:, None, :]).reshape(n, d * d)
    Zy = np.hstack([Z, Z * y[:, None]])
    C = np.zeros((n, d * d))  # C_i = sum_j w_ij b_j b_j^T
    A = np.zeros((d, p, d, p))
    rhs = np.zeros((p, d))
    crit = 0.0
    lam = ridge * h**2
    step = max(1, _CHUNK_ELEMENTS // n)
    idx = np.arange(1, d + 1)
    for s in range(0, n, step):
        J = slice(s, min(n, s + step))
        PJ = P[J]
        sq = np.sum(PJ**2, axis=1)[:, None] - 2.0 * PJ @ P.T + np.sum(P**2, axis=1)[None, :]
        Wt = np.exp(-0.5 * np.maximum(sq, 0.0) / h**2)
        Wt /= Wt.sum(axis=1, keepdims=True)
        # weighted moments of u = P_i - P_j and y, for the local fits at the centres J
        wP = Wt @ P
        wy = Wt @ y
        wPP = (Wt @ PP).reshape(-1, d, d)
        wPy = Wt @ (P * y[:, None])
        wyy = Wt @ y**2
        su = wP - PJ
        suu = wPP - PJ[:, :, None] * wP[:, None, :] - wP[:, :, None] * PJ[:, None, :]
        suu += PJ[:, :, None] * PJ[:, None, :]
        suy = wPy - PJ * wy[:, None]
        c = PJ.shape[0]
        G = np.empty((c, d + 1, d + 1))
        G[:, 0, 0] = 1.0
        G[:, 0, 1:] = su
        G[:, 1:, 0] = su
        G[:, 1:, 1:] = suu
        G[:, idx, idx] += lam
        rh = np.concatenate([wy[:, None], suy], axis=1)
        theta = np.linalg.solve(G, rh[:, :, None])[:, :, 0]
        a, b = theta[:, 0], theta[:, 1:]
        # sum_i w (y - a - b^T u)^2 expanded in the moments
        bsuu_b = np.einsum("ca,cab,cb->c", b, suu, b)
        crit += float(
            np.sum(wyy - 2 * a * wy - 2 * np.sum(b * suy, 1) + a**2 + 2 * a * np.sum(b * su, 1))
            + np.sum(bsuu_b)
        )
        bb = (b[:, :, None] * b[:, None, :]).reshape(c, d * d)
        C += Wt.T @ bb
        M = Wt @ Zy  # (c, 2p): sum_i w z_i and sum_i w y_i z_i
        m, my = M[:, :p], M[:, p:]
        ZJ = Z[J]
        # sum_i w (z_i - z_j)(z_i - z_j)^T minus its sum_i w z_i z_i^T part (added below)
        for ia in range(d):
            for ib in range(d):
                coef = b[:, ia] * b[:, ib]
                zc = ZJ * coef[:, None]
                T = -zc.T @ m - m.T @ zc + zc.T @ ZJ
                A[ia, :, ib, :] += T
        e = my - wy[:, None] * ZJ - a[:, None] * m + a[:, None] * ZJ
        rhs += e.T @ b
    for ia in range(d):
        for ib in range(d):
            A[ia, :, ib, :] += (Z * C[:, ia * d + ib][:, None]).T @ Z
    return A, rhs, crit / n
