"""scikit-learn estimators: :class:`ENMF` (the exterior method) and :class:`HALS` (baseline)."""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from icml26_core.validation import check_choice, check_float, check_int
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from enmf._linalg import exact_squared_error, squared_norm
from enmf.exterior import exterior_solve
from enmf.hals import Array, MatrixLike, Penalty, SolverResult, Trace, hals_solve, nnls_rows
from enmf.init import exterior_point, nndsvd, random_start
from enmf.path import path_to_orthant

_FROBENIUS = ("frobenius", 2, 2.0)


def _check_nonnegative(X: MatrixLike, who: str) -> None:
    data = X.data if sp.issparse(X) else X
    if data.size and data.min() < 0:
        count = int((data < 0).sum())
        raise ValueError(
            f"Negative values in data passed to {who} (argument X): found {count} "
            f"negative entries (minimum {float(data.min()):.4g}); X must be nonnegative. "
            "Shift or clip the data first."
        )


def _power_of_two_scale(X: MatrixLike) -> float:
    """A power of two near ``max(X)``: dividing by it is exact and brings X to O(1)."""
    data = X.data if sp.issparse(X) else X
    top = float(np.max(data)) if data.size else 0.0
    if top <= 0.0:
        return 1.0
    return math.ldexp(1.0, math.frexp(top)[1] - 1)


def _scaled(X: MatrixLike, c: float) -> MatrixLike:
    if c == 1.0:
        return X
    if sp.issparse(X):
        out = X.copy()
        out.data /= c
        return out
    return X / c


class _NMFEstimator(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Shared fit/transform logic; subclasses choose the start and the solver.

    ``fit`` works on ``X / c`` for a power of two ``c`` near ``max(X)`` (exact, and it
    keeps squared norms representable for data near the float64 limits) and maps the
    result back: ``W`` is multiplied by ``c``, penalties are rescaled to match.
    """

    _starts: tuple[str, ...] = ()
    _name = "NMF"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # -- validation -------------------------------------------------------------
    def _validate_params(self) -> None:
        if not (isinstance(self.n_components, str) and self.n_components == "auto"):
            check_int("n_components", self.n_components, low=1)
        check_int("max_iter", self.max_iter, low=1)
        check_float("tol", self.tol, low=0.0)
        check_choice("init", self.init, self._starts)
        check_float("alpha_W", self.alpha_W, low=0.0)
        if not (isinstance(self.alpha_H, str) and self.alpha_H == "same"):
            check_float("alpha_H", self.alpha_H, low=0.0)
        check_float("l1_ratio", self.l1_ratio, low=0.0, high=1.0)
        if isinstance(self.beta_loss, bool) or self.beta_loss not in _FROBENIUS:
            raise ValueError(
                f"beta_loss must be 'frobenius' (or 2) for {type(self).__name__}, got "
                f"{self.beta_loss!r}: the exterior start is the Frobenius-optimal SVD and "
                "the HALS updates minimize the squared error; for 'kullback-leibler' or "
                "'itakura-saito' use sklearn.decomposition.NMF(solver='mu')"
            )
        if not isinstance(self.verbose, bool):
            check_int("verbose", self.verbose, low=0)

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

    def _rank(self, X: MatrixLike, W: Any, H: Any) -> int:
        n, m = X.shape
        limit = min(n, m)
        r = self.n_components
        if isinstance(r, str):  # "auto"
            if self.init == "custom" and (H is not None or W is not None):
                r = np.shape(H)[0] if H is not None else np.shape(W)[1]
            else:
                r = limit
        if r > limit:
            raise ValueError(
                f"n_components={r} must be <= min(n_samples, n_features) "
                f"= {limit} for X with n_samples={n}, n_features={m}"
            )
        return int(r)

    def _penalty(self, X: MatrixLike, c: float) -> Penalty:
        n, m = X.shape
        alpha_W = float(self.alpha_W)
        alpha_H = alpha_W if isinstance(self.alpha_H, str) else float(self.alpha_H)
        l1 = float(self.l1_ratio)

        # scikit-learn's scaling of the penalties, then the change of units X -> X / c,
        # W -> W / c (H unchanged), divided through by c^2.
        def over(value: float, k: int) -> float:  # value / c^k, without forming c^k
            for _ in range(k):
                value = value / c if value else 0.0
            return value

        return Penalty(
            l1_W=over(m * alpha_W * l1, 1),
            l2_W=m * alpha_W * (1.0 - l1),
            l1_H=over(n * alpha_H * l1, 2),
            l2_H=over(n * alpha_H * (1.0 - l1), 2),
        )

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
                outside ``[1, min(n_samples, n_features)]``, a loss other than Frobenius,
                a bad ``W``/``H``, or a fit whose size does not fit in float64.
            TypeError: On a parameter of the wrong type.

        Warns:
            RuntimeWarning: If ``W`` or ``H`` is given without ``init="custom"`` (they
                are ignored, as in scikit-learn).
            ConvergenceWarning: If ``max_iter`` iterations did not reach ``tol``.
        """
        self._validate_params()
        X = self._validate_X(X, reset=True)
        if self.init != "custom" and (W is not None or H is not None):
            warnings.warn(
                f"When init!='custom', provided W or H are ignored. Set init='custom' to "
                f"use them as initialization (init={self.init!r} was given).",
                RuntimeWarning,
                stacklevel=2,
            )
        dtype = X.dtype
        r = self._rank(X, W, H)
        X64 = self._as_float64(X)
        c = _power_of_two_scale(X64)
        Xs = _scaled(X64, c)
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        rng = np.random.default_rng(seed)
        penalty = self._penalty(X64, c)

        t0 = time.perf_counter()
        if self.init == "custom":
            W0, H0 = self._custom_start(Xs, r, W, H, c)
        else:
            W0, H0 = self._start(Xs, r, rng)
        if self.verbose:
            print(
                f"[{type(self).__name__}] start ({self.init}) ready after "
                f"{time.perf_counter() - t0:.3f} s"
            )
        result = self._solve(
            Xs, W0, H0, t_offset=time.perf_counter() - t0, penalty=penalty,
            callback=self._verbose_callback(Xs) if self.verbose else None,
        )  # fmt: skip
        if not result.converged and result.n_iter >= self.max_iter:
            warnings.warn(
                f"Maximum number of iterations {self.max_iter} reached before the relative "
                f"KKT tolerance {self.tol} was met. Increase max_iter to improve convergence.",
                ConvergenceWarning,
                stacklevel=2,
            )
        W_out = result.W * c
        err = c * math.sqrt(exact_squared_error(Xs, result.W, result.H))
        if not (np.all(np.isfinite(W_out)) and math.isfinite(err)):
            raise ValueError(
                "the factorization of X does not fit in float64 (argument X: its largest "
                f"entry is {c:.3g} times the unit): rescale X first"
            )
        self.components_ = result.H.astype(dtype, copy=False)
        self.n_components_ = r
        self.n_iter_ = int(result.n_iter)
        self.reconstruction_err_ = err
        self.trace_ = Trace(
            list(result.trace.times), [c * e for e in result.trace.errors],
            list(result.trace.feasible),
        )  # fmt: skip
        if self.verbose:
            print(
                f"[{type(self).__name__}] {self.n_iter_} iterations, converged: "
                f"{result.converged}, ||X - WH||_F = {err:.6g}"
            )
        return W_out.astype(dtype, copy=False)

    def _verbose_callback(self, X: MatrixLike):
        x_norm = math.sqrt(squared_norm(X))
        every = 1 if int(self.verbose) > 1 else 10

        def callback(it: int, Wt: Array, H: Array) -> None:
            if it % every == 0:
                rel = math.sqrt(exact_squared_error(X, Wt.T, H)) / max(x_norm, 1e-300)
                print(f"[{type(self).__name__}] iteration {it:4d}: relative error {rel:.6f}")

        return callback

    def _custom_start(self, X: MatrixLike, r: int, W: Any, H: Any, c: float) -> tuple[Array, Array]:
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
        return checked[0] / c, checked[1]

    def _start(self, X: MatrixLike, r: int, rng: np.random.Generator) -> tuple[Array, Array]:
        raise NotImplementedError

    def _solve(
        self,
        X: MatrixLike,
        W0: Array,
        H0: Array,
        *,
        t_offset: float,
        penalty: Penalty,
        callback: Any,
    ) -> SolverResult:
        raise NotImplementedError

    # -- using a fit ------------------------------------------------------------
    def transform(self, X: Any) -> Array:
        """Nonnegative codes of ``X`` for the learned components.

        Solves ``min_{W >= 0} ||X - W components_||_F`` row by row (HALS to a relative
        projected-gradient tolerance of 1e-10; penalties are not applied), so each
        row's code does not depend on the other rows.

        Args:
            X: Shape (n_samples, n_features), nonnegative.

        Returns:
            ``W``, shape (n_samples, n_components), dtype of ``X`` (float32 or float64).
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        X64 = self._as_float64(X)
        c = _power_of_two_scale(X64)
        W = nnls_rows(_scaled(X64, c), self.components_.astype(np.float64)) * c
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
    ``0.5 ||X - W H||_F^2`` (plus scikit-learn's penalties when ``alpha_W > 0``).

    ``algorithm="paper"`` (default) runs the three stages of the authors' code:

    1. **Unconstrained optimum.** The truncated SVD ``X_r = A S B^T``, each singular pair
       signed and scaled by its positive parts (:func:`enmf.init.svd_factors`), so
       ``X_r = U V^T``.
    2. **Exterior point.** An orthogonal ``Q`` minimizing the negative mass
       ``sum(max(-[U; V] Q, 0))`` by ADMM (:func:`enmf.rotation.rotate_l1`); ``UQ (VQ)^T``
       is still ``X_r``. Then a **gradual path** to the orthant's boundary: the negative
       entries are lifted in ``path_steps`` equal steps, each followed by projected
       block-coordinate steps on the nonnegative ones (:func:`enmf.path.path_to_orthant`).
    3. **Plain HALS** from that feasible point until the projected gradient (the KKT
       residual) falls below ``tol`` times its first value.

    ``algorithm="extrapolated"`` is our earlier variant: the SVD rotated by alternating
    projection (squared distance), then HALS updates computed against extrapolated
    exterior points with accelerated sweeps (:func:`enmf.exterior.exterior_solve`), with
    no path.

    Args:
        n_components: Rank r, ``1 <= r <= min(n_samples, n_features)``, or ``"auto"``
            (from ``H``/``W`` with ``init="custom"``, else ``min(n_samples, n_features)``).
        algorithm: ``"paper"`` or ``"extrapolated"``.
        init: ``"svd"`` (the exterior point of the algorithm), ``"random"`` (a feasible
            random start, for ablation) or ``"custom"`` (``W``, ``H`` given to
            :meth:`fit_transform`).
        max_iter: Maximum number of HALS iterations (one update of ``W`` and ``H`` each).
        tol: Relative KKT tolerance: stop when the projected-gradient norm is below
            ``tol`` times its value at the first iteration.
        random_state: Seed of the randomized SVD used for large matrices (both sides
            > 256) and of ``init="random"``.
        rotation: ``"l1"`` (ADMM), ``"l2"`` (alternating projection) or ``"none"``;
            None: ``"l1"`` for ``"paper"``, ``"l2"`` for ``"extrapolated"``.
        path_steps: Lifts of the gradual path (``"paper"`` only); 0 clips at once.
        beta: First extrapolation weight in [0, 1] (``"extrapolated"`` only).
        accelerated: Repeat the cheap HALS sweeps per product (Gillis & Glineur, 2012);
            None: False for ``"paper"``, True for ``"extrapolated"``.
        rotation_max_iter: Iteration cap of the rotation (None: 4000 for ``"l1"``, 100
            for ``"l2"``).
        alpha_W: Regularization weight of ``W`` (scikit-learn's convention: the L1 part
            is ``n_features * alpha_W * l1_ratio * ||W||_1``, the L2 part
            ``0.5 * n_features * alpha_W * (1 - l1_ratio) * ||W||_F^2``), >= 0.
        alpha_H: The same for ``H`` (scaled by ``n_samples``), or ``"same"`` (default)
            for ``alpha_W``.
        l1_ratio: Mix of L1 and L2 penalty, in [0, 1].
        beta_loss: ``"frobenius"`` only (other losses raise ``ValueError``).
        verbose: 0 silent; 1 prints the stages and every 10th iteration; 2 every one.

    Attributes:
        components_: ``H``, shape (n_components, n_features), nonnegative.
        n_components_: The rank used.
        n_iter_: Number of HALS iterations run.
        reconstruction_err_: ``||X - W H||_F`` of the fit (Frobenius norm, as in
            scikit-learn's ``NMF`` with ``beta_loss="frobenius"``).
        exterior_distance_: The rotation's objective at the exterior point (negative
            mass for ``"l1"``, squared distance for ``"l2"``, in units of ``X / c``
            with ``c`` the power of two near ``max(X)``); None unless ``init="svd"``.
        path_steps_: Lifts the path made (None unless ``algorithm="paper"`` and
            ``init="svd"``).
        trace_: Wall time (s) and ``||X - W H||_F`` after each iteration (:class:`enmf.hals.Trace`).
        n_features_in_: Number of features seen in ``fit``.
        feature_names_in_: Names of those features, when ``X`` had string column names.

    References:
        eNMF: exterior nonnegative matrix factorization (ICML 2026; abstract
        only); the authors' code, github.com/roychowdhuryresearch/eNMF
        (read for the algorithm; this is our own implementation, see the README).

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
        n_components: int | str,
        *,
        algorithm: str = "paper",
        init: str = "svd",
        max_iter: int = 200,
        tol: float = 1e-4,
        random_state: int | np.random.RandomState | None = None,
        rotation: str | None = None,
        path_steps: int = 100,
        beta: float = 0.5,
        accelerated: bool | None = None,
        rotation_max_iter: int | None = None,
        alpha_W: float = 0.0,
        alpha_H: float | str = "same",
        l1_ratio: float = 0.0,
        beta_loss: str | float = "frobenius",
        verbose: int = 0,
    ) -> None:
        self.n_components = n_components
        self.algorithm = algorithm
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.rotation = rotation
        self.path_steps = path_steps
        self.beta = beta
        self.accelerated = accelerated
        self.rotation_max_iter = rotation_max_iter
        self.alpha_W = alpha_W
        self.alpha_H = alpha_H
        self.l1_ratio = l1_ratio
        self.beta_loss = beta_loss
        self.verbose = verbose

    def _validate_params(self) -> None:
        super()._validate_params()
        check_choice("algorithm", self.algorithm, ("paper", "extrapolated"))
        if self.rotation is not None:
            check_choice("rotation", self.rotation, ("l1", "l2", "none"))
        check_int("path_steps", self.path_steps, low=0)
        check_float("beta", self.beta, low=0.0, high=1.0)
        if self.accelerated is not None and not isinstance(self.accelerated, bool | np.bool_):
            raise TypeError(f"accelerated must be a bool or None, got {self.accelerated!r}")
        if self.rotation_max_iter is not None:
            check_int("rotation_max_iter", self.rotation_max_iter, low=0)

    @property
    def _paper(self) -> bool:
        return self.algorithm == "paper"

    def _start(self, X: MatrixLike, r: int, rng: np.random.Generator) -> tuple[Array, Array]:
        self.exterior_distance_ = None
        self.path_steps_ = None
        if self.init == "random":
            return random_start(X, r, rng)
        rotation = self.rotation or ("l1" if self._paper else "l2")
        W0, H0, rot = exterior_point(
            X, r, rng, rotation=rotation, signs="paper" if self._paper else "balanced",
            rotation_max_iter=self.rotation_max_iter,
        )  # fmt: skip
        self.exterior_distance_ = rot.distance
        if not self._paper:
            return W0, H0
        path = path_to_orthant(X, W0, H0, steps=self.path_steps)
        self.path_steps_ = path.n_steps
        return path.W, path.H

    def _custom_start(self, X, r, W, H, c):
        self.exterior_distance_ = None
        self.path_steps_ = None
        return super()._custom_start(X, r, W, H, c)

    def _solve(
        self,
        X: MatrixLike,
        W0: Array,
        H0: Array,
        *,
        t_offset: float,
        penalty: Penalty,
        callback: Any,
    ) -> SolverResult:
        accelerated = (not self._paper) if self.accelerated is None else bool(self.accelerated)
        if self._paper:
            return hals_solve(
                X,
                W0,
                H0,
                max_iter=self.max_iter,
                tol=self.tol,
                t_offset=t_offset,
                inner=accelerated,
                penalty=penalty,
                callback=callback,
            )
        return exterior_solve(
            X,
            W0,
            H0,
            max_iter=self.max_iter,
            tol=self.tol,
            beta0=self.beta,
            t_offset=t_offset,
            inner=accelerated,
            penalty=penalty,
            callback=callback,
        )


class HALS(_NMFEstimator):
    """Hierarchical alternating least squares NMF (baseline), scikit-learn API.

    Cyclic exact updates of one column of ``W`` (row of ``H``) at a time,
    ``w_k <- max(0, w_k + ((X H^T)_k - W (H H^T)_k) / (H H^T)_kk)``, alternating
    between the factors. Plain (the defaults), this is the same sequence of iterates
    as scikit-learn's ``NMF(solver="cd")`` (which updates the same coordinates in the
    same order, penalties included); our tests check that. ``accelerated`` repeats the
    cheap sweeps (Gillis & Glineur, 2012) and ``extrapolate`` adds the extrapolation
    with restarts of Ang & Gillis (2019): the same generic speed-ups that
    ``ENMF(algorithm="extrapolated")`` uses, from a feasible start.

    Args:
        n_components: Rank r, ``1 <= r <= min(n_samples, n_features)``, or ``"auto"``.
        init: ``"nndsvda"``, ``"nndsvd"``, ``"random"`` or ``"custom"``.
        max_iter: Maximum number of iterations.
        tol: Relative projected-gradient tolerance.
        random_state: Seed of ``init="random"`` and of the randomized SVD.
        accelerated: Repeat the cheap sweeps.
        extrapolate: Extrapolate the factors between iterations (weight starting at
            ``beta``), restarting when the error rises.
        beta: First extrapolation weight in [0, 1].
        alpha_W: Regularization weight of ``W`` (scikit-learn's convention: the L1 part
            is ``n_features * alpha_W * l1_ratio * ||W||_1``, the L2 part
            ``0.5 * n_features * alpha_W * (1 - l1_ratio) * ||W||_F^2``), >= 0.
        alpha_H: The same for ``H`` (scaled by ``n_samples``), or ``"same"`` (default)
            for ``alpha_W``.
        l1_ratio: Mix of L1 and L2 penalty, in [0, 1].
        beta_loss: ``"frobenius"`` only (other losses raise ``ValueError``).
        verbose: 0 silent; 1 prints the stages and every 10th iteration; 2 every one.

    Attributes:
        components_, n_components_, n_iter_, reconstruction_err_, trace_,
        n_features_in_: As in :class:`ENMF`.

    References:
        Cichocki & Phan (2009), Fast local algorithms for large scale nonnegative
        matrix and tensor factorizations, IEICE Trans. Fundamentals E92-A(3).
        Gillis & Glineur (2012), Accelerated multiplicative updates and hierarchical
        ALS algorithms for nonnegative matrix factorization, Neural Computation 24(4).
        Ang & Gillis (2019), Accelerating nonnegative matrix factorization algorithms
        using extrapolation, Neural Computation 31(2).

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
        n_components: int | str,
        *,
        init: str = "nndsvda",
        max_iter: int = 200,
        tol: float = 1e-4,
        random_state: int | np.random.RandomState | None = None,
        accelerated: bool = False,
        extrapolate: bool = False,
        beta: float = 0.5,
        alpha_W: float = 0.0,
        alpha_H: float | str = "same",
        l1_ratio: float = 0.0,
        beta_loss: str | float = "frobenius",
        verbose: int = 0,
    ) -> None:
        self.n_components = n_components
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.accelerated = accelerated
        self.extrapolate = extrapolate
        self.beta = beta
        self.alpha_W = alpha_W
        self.alpha_H = alpha_H
        self.l1_ratio = l1_ratio
        self.beta_loss = beta_loss
        self.verbose = verbose

    def _validate_params(self) -> None:
        super()._validate_params()
        check_float("beta", self.beta, low=0.0, high=1.0)
        for name in ("accelerated", "extrapolate"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")

    def _start(self, X: MatrixLike, r: int, rng: np.random.Generator) -> tuple[Array, Array]:
        if self.init == "nndsvd":
            return nndsvd(X, r, rng)
        if self.init == "nndsvda":
            return nndsvd(X, r, rng, fill="mean")
        return random_start(X, r, rng)

    def _solve(
        self,
        X: MatrixLike,
        W0: Array,
        H0: Array,
        *,
        t_offset: float,
        penalty: Penalty,
        callback: Any,
    ) -> SolverResult:
        if self.extrapolate:
            return exterior_solve(
                X,
                W0,
                H0,
                max_iter=self.max_iter,
                tol=self.tol,
                beta0=self.beta,
                t_offset=t_offset,
                inner=bool(self.accelerated),
                penalty=penalty,
                callback=callback,
            )
        return hals_solve(
            X,
            W0,
            H0,
            max_iter=self.max_iter,
            tol=self.tol,
            t_offset=t_offset,
            inner=bool(self.accelerated),
            penalty=penalty,
            callback=callback,
        )
