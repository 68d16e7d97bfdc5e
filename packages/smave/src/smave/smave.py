"""SMAVE: Riemannian stochastic gradient ascent of the MAVE criterion on St(p, d)."""

from __future__ import annotations

import warnings

import numpy as np
from icml26_core.validation import check_choice, check_float, check_int
from scipy.spatial import cKDTree

from smave._base import SubspaceEstimator
from smave._init import basis_from_rows, moment_directions, random_stiefel
from smave._localize import bandwidth_floor, kernel_weights, localize
from smave.baselines import opg_directions
from smave.criterion import (
    Localization,
    local_value_and_gradient,
    retract_qr,
    riemannian_gradient,
)

__all__ = [
    "SMAVE",
    "TiedNeighborsWarning",
    "default_max_iter",
    "default_n_neighbors",
    "ideal_neighbors",
    "neighbour_pool_size",
]

_VARIANTS = ("full", "simplified")
_INITS = ("auto", "moments", "opg", "random")
_START_CENTERS = 256  # centres on which init="auto" compares its candidate starts
_TIE_WARN_FRACTION = 0.01


class TiedNeighborsWarning(UserWarning):
    """Many projected neighbourhoods were tied (discrete covariates or duplicated rows).

    SMAVE widens such neighbourhoods until they span the projected directions (see the
    ``bandwidth_floor`` argument and the README), which keeps the local fits well
    posed; the warning says that the data are far from continuous along the estimate,
    where local smoothing in the projected space is least reliable.
    """


# K = n^(4/(d+4)) / 4 (kept from the first version; re-checked on validation seeds)
_BANDWIDTH_SCALE = 0.25


def default_n_neighbors(n_samples: int, n_components: int, n_distinct: int | None = None) -> int:
    """Neighbourhood size ``k`` of one local fit when ``n_neighbors="auto"``.

    ``K`` (:func:`ideal_neighbors`) clipped to ``[10 (d + 1), 50]``: the floor keeps the
    local slopes of small samples from fitting noise, the cap keeps a step cheap.
    """
    K = ideal_neighbors(n_samples, n_components, n_distinct)
    return int(min(n_samples, max(10 * (n_components + 1), min(K, 50))))


def ideal_neighbors(n_samples: int, n_components: int, n_distinct: int | None = None) -> int:
    """Number of points ``K`` inside the rate-optimal local-linear bandwidth.

    ``K ~ n^(4/(d+4))`` points fall within ``h ~ n^(-1/(d+4))``, the rate-optimal
    bandwidth of a local linear fit in d dimensions; we use ``K = n^(4/(d+4)) / 4`` and
    ``K >= 4 (d + 1)``, which keeps every local fit well posed.

    Duplicated rows do not add locations to smooth over: with ``n_distinct < n``
    distinct rows the rule counts locations, ``K_loc`` from ``n_distinct``, and ``K`` is
    that many locations' worth of points, ``K_loc * n / n_distinct``. Without this, a
    neighbourhood of k points could hold a handful of locations and its local linear
    fit would interpolate their means instead of smoothing.
    """
    n_loc = n_samples if n_distinct is None else max(1, min(int(n_distinct), n_samples))
    K_loc = round(_BANDWIDTH_SCALE * n_loc ** (4.0 / (n_components + 4)))
    K_loc = max(4 * (n_components + 1), K_loc)
    K = round(K_loc * n_samples / n_loc)
    return int(min(K, n_samples))


def default_max_iter(n_samples: int) -> int:
    """Step budget when ``max_iter="auto"``: 200 up to n = 4000, then ``200 sqrt(n / 4000)``.

    On validation seeds (``benchmarks/validate_constants.py``) 200 steps reach RMAVE's
    accuracy within 10% at n = 1000 and 4000 and 400 to 1600 steps do not do better; the
    growth beyond keeps the averaged SGD noise, ``~ (steps * batch)^(-1/2)``, from
    dominating the statistical error as n grows.
    """
    return round(200 * max(1.0, float(np.sqrt(n_samples / 4000.0))))


def neighbour_pool_size(n_samples: int, k: int, K: int) -> int:
    """Size of the random pool in which the ``k`` neighbours are searched.

    The ``k`` nearest points of a random pool of ``n k / K`` points span the same radius
    as the ``K`` nearest of all ``n``: the bandwidth stays rate optimal while a local fit
    costs O(k) instead of O(K). With ``k >= K`` the pool is the whole sample.
    """
    if k >= K:
        return n_samples
    return int(min(n_samples, max(k, np.ceil(n_samples * k / K))))


class SMAVE(SubspaceEstimator):
    r"""Sufficient dimension reduction by stochastic Riemannian ascent of the MAVE criterion.

    SMAVE estimates a basis ``B`` (p, d) of the central mean subspace, i.e. ``E[y | x]``
    depends on ``x`` only through ``B^T x``. On whitened covariates ``z`` it maximizes the
    MAVE criterion written as a smooth function on the Stiefel manifold,

    .. math::
        F(B) = \frac1m \sum_j \Big[\sum_{i \in N_j} w_{ij} (y_i - \bar y_j)^2
               - \min_{a, b} \Big( \sum_{i \in N_j} w_{ij} (y_i - a - b^\top B^\top (z_i - z_j))^2
               + \lambda_j |b|^2 \Big) \Big],

    whose Riemannian gradient is closed form (see :mod:`smave.criterion`):
    ``grad F = G - B sym(B^T G)`` with ``G = (2/m) sum_j sum_i w_ij r_ij (z_i - z_j) b_j^T``.

    Algorithm (``variant="full"``)::

        B_0 = init (the better of moment directions and a subsampled OPG by default)
        for t = 0 .. max_iter - 1:
            every refresh_every steps: draw a random pool of n k / K points and build a
              k-d tree on their projections Z B_t (K = points in the rate-optimal
              bandwidth, see ideal_neighbors)
            draw a batch J of centres; N_j = their k nearest pool points in the projected
              space (sparse: O(|J| k log n)), widened where they are tied (see below),
              Gaussian weights from the current B_t
            xi_t = Riemannian gradient of F on the batch (O(|J| k p d))
            B_{t+1} = qf(B_t + eta_t xi_t),   eta_t = learning_rate (1 + t/20)^(-decay)
        B = top-d eigenvectors of the mean of B_t B_t^T over the last tail_average steps

    No step touches all pairs of points: the cost of an outer iteration (a tree refresh
    plus ``refresh_every`` steps) is O(n log n + refresh_every * batch_size * k * p * d),
    against O(n^2) per iteration for RMAVE.

    Ties. On discrete covariates or duplicated rows the k nearest projected points can
    all sit at one location; the bandwidth would collapse and the local slope would be
    unidentified. The bandwidth is therefore floored (``bandwidth_floor``), and a
    neighbourhood whose points do not span the d projected directions is widened to
    the smallest ball that does, its k points then drawn at random from that ball.
    A :class:`TiedNeighborsWarning` says when more than 1% of the neighbourhoods had all
    k points at distance zero.

    ``variant="simplified"`` is the version with the convergence guarantee: the
    neighbourhoods and weights are computed once (in the projected space of ``B_0``) and
    then held fixed, so the iterates run plain Riemannian SGD on one fixed smooth
    function (a finite sum over centres, with centres drawn uniformly) with
    Robbins-Monro steps (``1/2 < decay <= 1``): on the compact manifold with a Lipschitz
    gradient this converges almost surely to a stationary point, and the smallest
    expected squared gradient norm decays at the usual non-convex stochastic
    first-order rate ``O(T^(-1/2))`` (up to logarithms) with a ``T^(-1/2)`` step.

    Args:
        n_components: Dimension ``d`` of the subspace, ``1 <= d < n_features``.
        variant: ``"full"`` (neighbourhoods refreshed in the projected space) or
            ``"simplified"`` (fixed neighbourhoods; convergence guarantee).
        n_neighbors: Neighbourhood size ``k`` of a local fit, or ``"auto"``
            (:func:`default_n_neighbors`).
        neighbor_pool: Fraction of the sample in which neighbours are searched (a fresh
            random pool at each refresh), or ``"auto"`` (:func:`neighbour_pool_size`:
            the k nearest pool points then span the rate-optimal bandwidth).
        batch_size: Number of centres per stochastic step (capped at n_samples).
        max_iter: Number of stochastic steps, or ``"auto"`` (:func:`default_max_iter`:
            200 up to n = 4000, then growing like ``sqrt(n)``).
        learning_rate: Initial step ``eta_0`` (y is standardized and X whitened, so one
            value suits most data).
        decay: Exponent of the step decay, in (0.5, 1] for the convergence guarantee.
        refresh_every: Steps between rebuilds of the projected-space neighbour tree
            (``"full"`` only).
        ridge: Ridge of the local slopes relative to the squared bandwidth.
        bandwidth_floor: Floor of the projected bandwidth, as a fraction of the k-th
            neighbour distance that Gaussian data would give at its mode
            (:func:`smave._localize.bandwidth_floor`); binds on tied and near-tied
            projections. 0 disables the floor (the tie rule stays).
        tail_average: Fraction of the final steps whose projectors ``B B^T`` are averaged
            (Polyak-Ruppert averaging on the Grassmannian); the estimate is the top-d
            eigenspace of the mean. 0 returns the last iterate.
        init: ``"auto"`` (moment directions and a subsampled OPG, the one with the
            larger criterion ``F`` on 256 common centres), ``"moments"`` (linear trend
            plus residual pHd), ``"opg"`` (OPG's local gradients at 256 random
            centres), ``"random"``, or an array (n_components, n_features) of starting
            directions in X coordinates.
        tol: Stop when the subspace moves less than ``tol`` (in ``||P - P'||_F``)
            between two tree refreshes.
        random_state: Seed or ``RandomState`` for the batches, pools and starts.

    Attributes:
        components_: array (n_components, n_features) of the input's float dtype,
            orthonormal basis of the estimated subspace in X coordinates.
        mean_: array (n_features,), the mean removed before projection.
        init_: The start used: ``"moments"``, ``"opg"``, ``"random"`` or ``"array"``.
        start_objective_: dict, the criterion of each candidate start with
            ``init="auto"`` (empty otherwise).
        n_iter_: Number of steps taken.
        n_neighbors_: The neighbourhood size used.
        neighbor_pool_size_: Number of points in each neighbour pool.
        bandwidth_floor_: The bandwidth floor used (whitened projected units).
        n_distinct_rows_: Number of distinct rows of ``X``; the bandwidth rule counts
            locations, not duplicated points (see :func:`ideal_neighbors`).
        tied_fraction_: Fraction of the localized centres whose k nearest projected
            points were all at distance zero.
        fixed_localization_: The :class:`smave.criterion.Localization` (on the whitened
            data) whose criterion the simplified variant ascends; None for ``"full"``.
        objective_history_: float array (n_iter_,), batch values of ``F``.
        grad_norm_history_: float array (n_iter_,), batch Riemannian gradient norms.
        n_features_in_: Number of features seen in ``fit``.

    Raises:
        ValueError: On invalid hyperparameters or data (see ``fit``).
        TypeError: On a hyperparameter or target of the wrong type.

    Warns:
        TiedNeighborsWarning: When more than 1% of the neighbourhoods were tied.

    References:
        SMAVE (ICML 2026, abstract only; our design where the abstract is
        silent: see the package README). Xia, Tong, Li and Zhu (2002), JRSS-B 64(3).
        Bonnabel (2013), "Stochastic gradient descent on Riemannian manifolds", IEEE TAC.

    Example:
        >>> import numpy as np
        >>> from smave import SMAVE, subspace_distance
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(1000, 6)); beta = np.array([[1, 1, 0, 0, 0, 0]]) / 2**0.5
        >>> y = np.sin(X @ beta[0]) + 0.1 * rng.normal(size=1000)
        >>> est = SMAVE(n_components=1, random_state=0).fit(X, y)
        >>> bool(subspace_distance(est.components_, beta) < 0.2)
        True
    """

    def __init__(
        self,
        n_components: int = 1,
        *,
        variant: str = "full",
        n_neighbors: int | str = "auto",
        neighbor_pool: float | str = "auto",
        batch_size: int = 32,
        max_iter: int | str = "auto",
        learning_rate: float = 0.5,
        decay: float = 0.6,
        refresh_every: int = 20,
        ridge: float = 1e-2,
        bandwidth_floor: float = 0.5,
        tail_average: float = 0.5,
        init: str | np.ndarray = "auto",
        tol: float = 1e-5,
        random_state=None,
    ) -> None:
        self.n_components = n_components
        self.variant = variant
        self.n_neighbors = n_neighbors
        self.neighbor_pool = neighbor_pool
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.decay = decay
        self.refresh_every = refresh_every
        self.ridge = ridge
        self.bandwidth_floor = bandwidth_floor
        self.tail_average = tail_average
        self.init = init
        self.tol = tol
        self.random_state = random_state

    def _check_params(self) -> None:
        check_choice("variant", self.variant, _VARIANTS)
        if not (isinstance(self.n_neighbors, str) and self.n_neighbors == "auto"):
            check_int("n_neighbors", self.n_neighbors, low=2)
        if not (isinstance(self.neighbor_pool, str) and self.neighbor_pool == "auto"):
            check_float("neighbor_pool", self.neighbor_pool, low=0.0, high=1.0, low_inclusive=False)
        check_int("batch_size", self.batch_size, low=1)
        if not (isinstance(self.max_iter, str) and self.max_iter == "auto"):
            check_int("max_iter", self.max_iter, low=1)
        check_int("refresh_every", self.refresh_every, low=1)
        check_float("learning_rate", self.learning_rate, low=0.0, low_inclusive=False)
        check_float("decay", self.decay, low=0.0)
        check_float("ridge", self.ridge, low=0.0, low_inclusive=False)
        check_float("bandwidth_floor", self.bandwidth_floor, low=0.0)
        check_float("tail_average", self.tail_average, low=0.0, high=1.0)
        check_float("tol", self.tol, low=0.0)
        if isinstance(self.init, str):
            check_choice("init", self.init, _INITS)

    def _min_samples(self, d: int) -> int:
        if isinstance(self.n_neighbors, str):
            return d + 3
        return max(d + 3, int(self.n_neighbors))

    def _sizes(self, Z: np.ndarray) -> tuple[int, int, int, float, int]:
        """``(k, K, n_pool, h_floor, n_distinct)`` of the localization on whitened ``Z``."""
        n, d = Z.shape[0], self.n_components
        n_distinct = int(np.unique(Z, axis=0).shape[0])
        K = ideal_neighbors(n, d, n_distinct)
        if isinstance(self.n_neighbors, str):
            k = default_n_neighbors(n, d, n_distinct)
        else:
            k = int(self.n_neighbors)
        if isinstance(self.neighbor_pool, str):
            n_pool = neighbour_pool_size(n, k, K)
        else:
            n_pool = int(min(n, max(k, np.ceil(self.neighbor_pool * n))))
        h_floor = bandwidth_floor(n, max(k, K), d, self.bandwidth_floor)
        return k, K, n_pool, h_floor, n_distinct

    def _fit_whitened(self, Z, y, rng, W):
        n = Z.shape[0]
        d = self.n_components
        k, _, n_pool, h_floor, n_distinct = self._sizes(Z)
        m = min(self.batch_size, n)
        T = default_max_iter(n) if isinstance(self.max_iter, str) else int(self.max_iter)
        self._ties = [0, 0]  # centres localized, centres with all k neighbours tied
        B, self.init_, self.start_objective_ = self._start(Z, y, rng, W, k, n_pool, h_floor)
        fixed = None
        if self.variant == "simplified":
            fixed = self._fixed_localization(Z, B, k, _pool(n, n_pool, rng), h_floor, rng)
        values, norms = [], []
        tree, B_ref, pool, P_pool = None, B, None, None
        tail_start = T - round(self.tail_average * T)
        if self.tail_average == 0:
            tail_start = T
        P_sum, n_avg = np.zeros((Z.shape[1], Z.shape[1])), 0
        for t in range(T):
            if self.variant == "full" and t % self.refresh_every == 0:
                if t > 0 and _dist(B, B_ref) < self.tol:
                    break
                B_ref = B
                pool = _pool(n, n_pool, rng)
                P_pool = Z[pool] @ B
                tree = cKDTree(P_pool)
            J = rng.randint(0, n, size=m)
            Zc = Z[J]
            if self.variant == "simplified":
                nb, w, lam = fixed.neighbors[J], fixed.weights[J], fixed.ridge[J]
                Zn = Z[nb.ravel()]
                U = (Zn @ B).reshape(m, k, -1) - (Zc @ B)[:, None, :]
            else:
                nb, Zn, U, w, h = self._local(Z, B, Zc, tree, pool, P_pool, k, h_floor, rng)
                lam = self.ridge * h**2
            value, G = local_value_and_gradient(Zn, Zc, U, y[nb], w, lam)
            xi = riemannian_gradient(B, G)
            eta = self.learning_rate * (1.0 + t / 20.0) ** (-self.decay)
            B = retract_qr(B, eta * xi)
            values.append(value)
            norms.append(float(np.linalg.norm(xi)))
            if t >= tail_start:
                P_sum += B @ B.T
                n_avg += 1
        if n_avg > 0:
            # Polyak-Ruppert averaging on the Grassmannian: the top-d eigenvectors of the
            # mean projector of the tail iterates (basis invariant, damps the SGD noise)
            B = np.ascontiguousarray(np.linalg.eigh(P_sum / n_avg)[1][:, ::-1][:, :d])
        n_loc, n_tied = self._ties
        del self._ties
        self.n_iter_ = len(values)
        self.n_neighbors_ = k
        self.neighbor_pool_size_ = n_pool
        self.bandwidth_floor_ = h_floor
        self.n_distinct_rows_ = n_distinct
        self.tied_fraction_ = n_tied / max(1, n_loc)
        self.fixed_localization_ = fixed
        self.objective_history_ = np.asarray(values)
        self.grad_norm_history_ = np.asarray(norms)
        if self.tied_fraction_ > _TIE_WARN_FRACTION:
            warnings.warn(
                f"SMAVE: {self.tied_fraction_:.0%} of the neighbourhoods had all {k} "
                "projected neighbours at distance zero (discrete covariates or duplicated "
                "rows); they were widened to span the projected directions. Local "
                "smoothing is least reliable on such data: compare with RMAVE or jitter "
                "the discrete columns.",
                TiedNeighborsWarning,
                stacklevel=3,
            )
        return B

    def _local(self, Z, B, Zc, tree, pool, P_pool, k, h_floor, rng):
        """Tie-aware neighbourhoods of the centres ``Zc`` and their kernel weights at B."""
        m = Zc.shape[0]
        Pc = Zc @ B
        nbh = localize(tree, pool, P_pool, Pc, k, h_floor, rng)
        self._ties[0] += m
        self._ties[1] += nbh.n_tied
        nb = nbh.neighbors
        Zn = Z[nb.ravel()]
        U = (Zn @ B).reshape(m, k, -1) - Pc[:, None, :]
        dist = np.linalg.norm(U, axis=2)
        h = np.maximum(np.maximum(dist.max(axis=1), h_floor), 1e-12)
        return nb, Zn, U, kernel_weights(dist, h), h

    def _criterion(self, Z, y, B, J, pool, k, h_floor, rng) -> float:
        """``F(B)`` on the centres ``J`` with B's own tie-aware localization."""
        P_pool = Z[pool] @ B
        tree = cKDTree(P_pool)
        nb, Zn, U, w, h = self._local(Z, B, Z[J], tree, pool, P_pool, k, h_floor, rng)
        value, _ = local_value_and_gradient(Zn, Z[J], U, y[nb], w, self.ridge * h**2)
        return value

    def _start(self, Z, y, rng, W, k, n_pool, h_floor) -> tuple[np.ndarray, str, dict]:
        d = self.n_components
        if not isinstance(self.init, str):
            return basis_from_rows(self.init, W, d), "array", {}
        if self.init == "moments":
            return moment_directions(Z, y, d), "moments", {}
        if self.init == "random":
            return random_stiefel(Z.shape[1], d, rng), "random", {}
        opg = opg_directions(Z, y, d, rng, n_centers=_START_CENTERS, ridge=self.ridge)
        if self.init == "opg":
            return opg, "opg", {}
        # "auto": the candidate with the larger criterion on common centres and pool
        n = Z.shape[0]
        J = rng.randint(0, n, size=min(n, _START_CENTERS))
        pool = _pool(n, n_pool, rng)
        cands = {"moments": moment_directions(Z, y, d), "opg": opg}
        scores = {
            name: self._criterion(Z, y, B, J, pool, k, h_floor, rng) for name, B in cands.items()
        }
        best = max(scores, key=scores.get)
        return cands[best], best, scores

    def _fixed_localization(
        self, Z, B, k: int, pool: np.ndarray, h_floor: float, rng
    ) -> Localization:
        n = len(Z)
        P_pool = Z[pool] @ B
        nb, _, _, w, h = self._local(Z, B, Z, cKDTree(P_pool), pool, P_pool, k, h_floor, rng)
        return Localization(np.arange(n), nb, w, self.ridge * h**2)


def _pool(n: int, size: int, rng: np.random.RandomState) -> np.ndarray:
    if size >= n:
        return np.arange(n)
    return np.sort(rng.choice(n, size, replace=False))


def _dist(B1: np.ndarray, B2: np.ndarray) -> float:
    return float(np.linalg.norm(B1 @ B1.T - B2 @ B2.T))
