"""scikit-learn estimators: :class:`ENMF` (the exterior method) and :class:`HALS` (baseline)."""

from __future__ import annotations

import numbers
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from enmf._linalg import exact_squared_error
from enmf.exterior import exterior_solve
from enmf.hals import Array, MatrixLike, SolverResult, hals_solve, nnls_rows
from enmf.init import exterior_point, nndsvd, random_start


def _check_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _check_float(name: str, value: Any, low: float, high: float = np.inf) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not np.isfinite(value)
        or not low <= value <= high
    ):
        raise ValueError(f"{name} must be a real number in [{low}, {high}], got {value!r}")


def _check_nonnegative(X: MatrixLike, who: str) -> None:
    data = X.data if sp.issparse(X) else X
    if data.size and data.min() < 0:
        count = int((data < 0).sum())
        raise ValueError(
            f"Negative values in data passed to {who} (argument X): found {count} "
            f"negative entries (minimum {float(data.min()):.4g}); X must be nonnegative. "
            "Shift or clip the data first."
        )


class _NMFEstimator(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Shared fit/transform logic; subclasses choose the start and the solver."""

    _starts: tuple[str, ...] = ()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # -- validation -------------------------------------------------------------
    def _validate_params(self) -> None:
        _check_int("n_components", self.n_components, 1)
        _check_int("max_iter", self.max_iter, 1)
        _check_float("tol", self.tol, 0.0)
        if self.init not in self._starts:
            raise ValueError(f"init must be one of {self._starts}, got {self.init!r}")

    def _validate_X(self, X: Any, *, reset: bool) -> MatrixLike:
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse=("csr", "csc"),
            dtype=[np.float64, np.float32],
            ensure_min_samples=1,
            ensure_min_features=1,
        )
        _check_nonnegative(X, type(self).__name__)
        return X

    def _check_rank(self, X: MatrixLike) -> int:
        n, m = X.shape
        limit = min(n, m)
        if self.n_components > limit:
            raise ValueError(
                f"n_components={self.n_components} must be <= min(n_samples, n_features) "
                f"= {limit} for X with n_samples={n}, n_features={m}"
            )
        return int(self.n_components)

    @staticmethod
    def _as_float64(X: MatrixLike) -> MatrixLike:
        if sp.issparse(X):
            return sp.csr_matrix(X, dtype=np.float64)
        return np.asarray(X, dtype=np.float64)

    # -- fitting ----------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, **params: Any) -> _NMFEstimator:
        """Learn the factorization of ``X``; see :meth:`fit_transform`.

        Returns:
            self.
        """
        self.fit_transform(X, **params)
        return self

    def fit_transform(
        self, X: Any, y: Any = None, W: Array | None = None, H: Array | None = None
    ) -> Array:
        """Learn ``X ~ W H`` with ``W, H >= 0`` and return ``W``.

        Args:
            X: Data, shape (n_samples, n_features), nonnegative, finite; dense array or
                scipy sparse (csr/csc). float32 input gives float32 output.
            y: Ignored.
            W: Start for ``W`` (n_samples, n_components) when ``init="custom"``.
            H: Start for ``H`` (n_components, n_features) when ``init="custom"``.

        Returns:
            ``W``, shape (n_samples, n_components), nonnegative.

        Raises:
            ValueError: On negative, NaN or infinite entries, empty or 1-D ``X``, a rank
                outside ``[1, min(n_samples, n_features)]`` or an invalid parameter.
        """
        self._validate_params()
        X = self._validate_X(X, reset=True)
        dtype = X.dtype
        r = self._check_rank(X)
        X64 = self._as_float64(X)
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        rng = np.random.default_rng(seed)

        t0 = time.perf_counter()
        W0, H0 = self._start(X64, r, rng, W, H)
        result = self._solve(X64, W0, H0, t_offset=time.perf_counter() - t0)
        self.components_ = result.H.astype(dtype, copy=False)
        self.n_components_ = r
        self.n_iter_ = int(result.n_iter)
        self.reconstruction_err_ = float(np.sqrt(exact_squared_error(X64, result.W, result.H)))
        self.trace_ = result.trace
        return result.W.astype(dtype, copy=False)

    def _custom_start(self, X: MatrixLike, r: int, W: Any, H: Any) -> tuple[Array, Array]:
        n, m = X.shape
        checked = []
        for name, value, shape in (("W", W, (n, r)), ("H", H, (r, m))):
            if value is None:
                raise ValueError(f'init="custom" needs {name} of shape {shape}, got None')
            arr = np.asarray(value, dtype=np.float64)
            if arr.shape != shape:
                raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
            if not np.all(np.isfinite(arr)) or arr.min(initial=0.0) < 0:
                raise ValueError(f"{name} must be finite and nonnegative")
            checked.append(arr.copy())
        return checked[0], checked[1]

    def _start(
        self, X: MatrixLike, r: int, rng: np.random.Generator, W: Any, H: Any
    ) -> tuple[Array, Array]:
        raise NotImplementedError

    def _solve(self, X: MatrixLike, W0: Array, H0: Array, *, t_offset: float) -> SolverResult:
        raise NotImplementedError

    # -- using a fit ------------------------------------------------------------
    def transform(self, X: Any) -> Array:
        """Nonnegative codes of ``X`` for the learned components.

        Solves ``min_{W >= 0} ||X - W components_||_F`` row by row (HALS to a relative
        projected-gradient tolerance of 1e-10), so each row's code does not depend on
        the other rows.

        Args:
            X: Shape (n_samples, n_features), nonnegative.

        Returns:
            ``W``, shape (n_samples, n_components), dtype of ``X`` (float32 or float64).
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        W = nnls_rows(self._as_float64(X), self.components_.astype(np.float64))
        return W.astype(X.dtype, copy=False)

    def inverse_transform(self, X: Any) -> Array:
        """Map codes back to data space: ``X @ components_``.

        Args:
            X: Codes, shape (n_samples, n_components).

        Returns:
            Shape (n_samples, n_features).
        """
        check_is_fitted(self)
        X = np.asarray(X.toarray() if sp.issparse(X) else X)
        if X.ndim != 2 or X.shape[1] != self.n_components_:
            raise ValueError(f"X must have shape (n_samples, {self.n_components_}), got {X.shape}")
        return X @ self.components_

    @property
    def _n_features_out(self) -> int:
        return self.components_.shape[0]


class ENMF(_NMFEstimator):
    r"""Exterior nonnegative matrix factorization, a drop-in for ``sklearn.decomposition.NMF``.

    Finds ``W >= 0`` (n_samples, r) and ``H >= 0`` (r, n_features) minimizing
    ``0.5 ||X - W H||_F^2`` in three stages:

    1. **Unconstrained optimum.** The truncated SVD ``X_r = A S B^T`` gives the best
       rank-r factorization ``X_r = U V^T`` with ``U = A S^{1/2}``, ``V = B S^{1/2}``.
    2. **Exterior point.** An orthogonal ``Q`` minimizing
       ``||min(UQ, 0)||^2 + ||min(VQ, 0)||^2`` (alternating orthant projection and
       Procrustes, :func:`enmf.rotation.rotate_to_orthant`) keeps ``UQ (VQ)^T = X_r``
       and brings both factors closest to the orthant.
    3. **Exterior iterations.** HALS updates computed against extrapolated, possibly
       infeasible factors, with an adaptive extrapolation weight and restarts
       (:func:`enmf.exterior.exterior_solve`), until the projected gradient of the
       feasible iterate (the KKT residual) falls below ``tol`` times its first value.

    Args:
        n_components: Rank r, ``1 <= r <= min(n_samples, n_features)``.
        init: ``"svd"`` (the exterior point above), ``"random"`` (a feasible random
            start, for ablation) or ``"custom"`` (``W`` and ``H`` given to
            :meth:`fit_transform`).
        max_iter: Maximum number of iterations (one update of ``W`` and ``H`` each).
        tol: Relative KKT tolerance: stop when the projected-gradient norm is below
            ``tol`` times its value after the first iteration.
        random_state: Seed of the randomized SVD used for large matrices (min side
            > 1000) and of ``init="random"``.
        beta: First extrapolation weight in [0, 1]; 0 gives plain HALS updates.
        rotation_max_iter: Iteration cap of the rotation (0 keeps the sign-fixed SVD).
        accelerated: Repeat the cheap HALS sweeps per product with ``X`` (Gillis &
            Glineur, 2012).

    Attributes:
        components_: ``H``, shape (n_components, n_features), nonnegative.
        n_components_: The rank used.
        n_iter_: Number of iterations run.
        reconstruction_err_: ``||X - W H||_F`` of the fit (Frobenius norm, as in
            scikit-learn's ``NMF`` with ``beta_loss="frobenius"``).
        exterior_distance_: Squared distance of the rotated SVD factors to the orthant
            (``None`` unless ``init="svd"``).
        trace_: Wall time and error after each iteration (:class:`enmf.hals.Trace`).
        n_features_in_: Number of features seen in ``fit``.
        feature_names_in_: Names of those features, when ``X`` had string column names.

    References:
        eNMF: exterior nonnegative matrix factorization (ICML 2026), abstract in
        ``papers/enmf.md``; our reading of it is in the package README.

    Example:
        >>> import numpy as np
        >>> from enmf import ENMF
        >>> X = np.random.default_rng(0).random((40, 12))
        >>> model = ENMF(n_components=3, random_state=0)
        >>> W = model.fit_transform(X)
        >>> W.shape, model.components_.shape, bool((W >= 0).all())
        ((40, 3), (3, 12), True)
    """

    _starts = ("svd", "random", "custom")

    def __init__(
        self,
        n_components: int,
        *,
        init: str = "svd",
        max_iter: int = 200,
        tol: float = 1e-4,
        random_state: int | np.random.RandomState | None = None,
        beta: float = 0.5,
        rotation_max_iter: int = 100,
        accelerated: bool = True,
    ) -> None:
        self.n_components = n_components
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.beta = beta
        self.rotation_max_iter = rotation_max_iter
        self.accelerated = accelerated

    def _validate_params(self) -> None:
        super()._validate_params()
        _check_float("beta", self.beta, 0.0, 1.0)
        _check_int("rotation_max_iter", self.rotation_max_iter, 0)

    def _start(
        self, X: MatrixLike, r: int, rng: np.random.Generator, W: Any, H: Any
    ) -> tuple[Array, Array]:
        self.exterior_distance_ = None
        if self.init == "svd":
            W0, H0, rot = exterior_point(X, r, rng, rotation_max_iter=self.rotation_max_iter)
            self.exterior_distance_ = rot.distance
            return W0, H0
        if self.init == "random":
            return random_start(X, r, rng)
        return self._custom_start(X, r, W, H)

    def _solve(self, X: MatrixLike, W0: Array, H0: Array, *, t_offset: float) -> SolverResult:
        return exterior_solve(
            X,
            W0,
            H0,
            max_iter=self.max_iter,
            tol=self.tol,
            beta0=self.beta,
            t_offset=t_offset,
            inner=bool(self.accelerated),
        )


class HALS(_NMFEstimator):
    """Hierarchical alternating least squares NMF (baseline), scikit-learn API.

    Cyclic exact updates of one column of ``W`` (row of ``H``) at a time,
    ``w_k <- max(0, w_k + ((X H^T)_k - W (H H^T)_k) / (H H^T)_kk)``, alternating
    between the factors. Without acceleration this is the same sequence of iterates
    as scikit-learn's ``NMF(solver="cd")`` (which updates the same coordinates in the
    same order); our tests check that.

    Args:
        n_components: Rank r, ``1 <= r <= min(n_samples, n_features)``.
        init: ``"nndsvda"``, ``"nndsvd"``, ``"random"`` or ``"custom"``.
        max_iter: Maximum number of iterations.
        tol: Relative projected-gradient tolerance.
        random_state: Seed of ``init="random"`` and of the randomized SVD.
        accelerated: Repeat the cheap sweeps (Gillis & Glineur, 2012).

    Attributes:
        components_, n_components_, n_iter_, reconstruction_err_, trace_,
        n_features_in_: As in :class:`ENMF`.

    References:
        Cichocki & Phan (2009), Fast local algorithms for large scale nonnegative
        matrix and tensor factorizations, IEICE Trans. Fundamentals E92-A(3).

    Example:
        >>> import numpy as np
        >>> from enmf import HALS
        >>> X = np.random.default_rng(0).random((40, 12))
        >>> W = HALS(n_components=3, random_state=0).fit_transform(X)
        >>> W.shape
        (40, 3)
    """

    _starts = ("nndsvda", "nndsvd", "random", "custom")

    def __init__(
        self,
        n_components: int,
        *,
        init: str = "nndsvda",
        max_iter: int = 200,
        tol: float = 1e-4,
        random_state: int | np.random.RandomState | None = None,
        accelerated: bool = False,
    ) -> None:
        self.n_components = n_components
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.accelerated = accelerated

    def _start(
        self, X: MatrixLike, r: int, rng: np.random.Generator, W: Any, H: Any
    ) -> tuple[Array, Array]:
        if self.init == "nndsvd":
            return nndsvd(X, r, rng)
        if self.init == "nndsvda":
            return nndsvd(X, r, rng, fill="mean")
        if self.init == "random":
            return random_start(X, r, rng)
        return self._custom_start(X, r, W, H)

    def _solve(self, X: MatrixLike, W0: Array, H0: Array, *, t_offset: float) -> SolverResult:
        return hals_solve(
            X,
            W0,
            H0,
            max_iter=self.max_iter,
            tol=self.tol,
            t_offset=t_offset,
            inner=bool(self.accelerated),
        )
