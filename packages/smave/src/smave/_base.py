"""What every estimator of the package shares: validation, whitening, transform."""

from __future__ import annotations

import numpy as np
from icml26_core.validation import check_int
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

_DTYPES = (np.float64, np.float32)


def whitening(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Center and whiten ``X`` on the directions it spans.

    Args:
        X: float array (n, p).

    Returns:
        ``(Z, mean, W)`` with ``Z = (X - mean) @ W`` of shape (n, r), ``Cov(Z) = I_r`` and
        ``W`` (p, r), where ``r`` is the numerical rank of the centred ``X``.
    """
    mean = X.mean(axis=0)
    Xc = X - mean
    cov = Xc.T @ Xc / X.shape[0]
    s, V = np.linalg.eigh(cov)
    keep = s > max(s.max(), 0.0) * 1e-10
    W = V[:, keep] / np.sqrt(s[keep])
    return Xc @ W, mean, W


def orthonormal_rows(W: np.ndarray, Bz: np.ndarray) -> np.ndarray:
    """Map a basis ``Bz`` (r, d) of the whitened space to orthonormal rows (d, p) in X space.

    The central subspace in X coordinates is spanned by ``W @ Bz``; an orthonormal basis
    of that span is returned, its sign fixed so that each row's largest entry is positive.
    """
    Q, _ = np.linalg.qr(W @ Bz)
    rows = Q.T
    big = np.argmax(np.abs(rows), axis=1)
    signs = np.sign(rows[np.arange(rows.shape[0]), big])
    signs[signs == 0] = 1.0
    return rows * signs[:, None]


def _check_target(y) -> np.ndarray:
    """``y`` as a float64 array, or a TypeError naming it if it is not numeric."""
    arr = np.asarray(y)
    if arr.dtype.kind in "biufc":  # complex: scikit-learn's validation rejects it
        return arr
    if arr.dtype.kind == "O":
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError):
            pass
    raise TypeError(
        f"y must be numeric (the response of a regression), got an array of dtype "
        f"{arr.dtype}; encode categories as numbers before a dimension reduction"
    )


class SubspaceEstimator(TransformerMixin, BaseEstimator):
    """Base class: a supervised linear dimension reduction ``X -> (X - mean_) @ components_.T``.

    Subclasses implement ``_fit_whitened(Z, y, rng, W) -> Bz`` on whitened covariates
    ``Z = (X - mean) @ W`` (n, r) and the standardized response ``y`` (n,), returning a
    basis (r, d) of the whitened space.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _min_samples(self, d: int) -> int:
        return d + 3

    def fit(self, X, y):
        """Estimate the dimension reduction subspace from ``X`` and ``y``.

        The computation runs in float64 whatever the input; ``components_`` and
        ``mean_`` are stored in the input's dtype (float32 stays float32, anything else
        becomes float64), so ``transform`` returns that dtype too.

        Args:
            X: array-like (n_samples, n_features), finite.
            y: array-like (n_samples,), numeric, finite and not constant.

        Returns:
            self, with ``components_`` (n_components, n_features) an orthonormal basis of
            the estimated subspace, ``mean_`` (n_features,), ``n_features_in_``.

        Raises:
            ValueError: ``n_components`` not smaller than ``n_features`` (or the rank of
                ``X``), NaN/inf, constant ``y``, or too few samples.
            TypeError: a non-numeric ``y``, or a hyperparameter of the wrong type.
        """
        if y is not None:
            y = _check_target(y)
        X, y = validate_data(
            self, X, y, dtype=list(_DTYPES), y_numeric=True, ensure_min_samples=2, copy=False
        )
        dtype = X.dtype
        X = X.astype(np.float64, copy=False)
        y = np.asarray(y, dtype=np.float64)
        n, p = X.shape
        d = check_int("n_components", self.n_components, low=1)
        if d >= p:
            raise ValueError(
                f"n_components={d} must be smaller than n_features={p}: a dimension "
                "reduction keeps fewer directions than there are features"
            )
        self._check_params()
        need = self._min_samples(d)
        if n < need:
            raise ValueError(
                f"n_samples={n} is too few for {type(self).__name__} with n_components={d}: "
                f"need at least {need} samples for the local linear fits"
            )
        y_std = float(np.std(y))
        if not y_std > 1e-12 * max(1.0, float(np.max(np.abs(y)))):
            raise ValueError(
                "y is constant: the response must vary for its conditional mean to "
                "define a dimension reduction subspace"
            )
        ys = (y - y.mean()) / y_std
        Z, mean, W = whitening(X)
        if d >= Z.shape[1]:
            raise ValueError(f"n_components={d} must be smaller than the rank of X ({Z.shape[1]})")
        rng = check_random_state(self.random_state)
        Bz = self._fit_whitened(Z, ys, rng, W)
        self.mean_ = mean.astype(dtype, copy=False)
        self.components_ = orthonormal_rows(W, Bz).astype(dtype, copy=False)
        self.basis_whitened_ = Bz
        self.whitening_ = W
        return self

    def _check_params(self) -> None:
        """Validate hyperparameters beyond ``n_components`` (subclasses extend)."""

    def _fit_whitened(
        self, Z: np.ndarray, y: np.ndarray, rng: np.random.RandomState, W: np.ndarray
    ) -> np.ndarray:
        raise NotImplementedError

    def transform(self, X):
        """Project ``X`` onto the estimated subspace.

        Args:
            X: array-like (n_samples, n_features).

        Returns:
            array (n_samples, n_components) of ``components_``'s dtype:
            ``(X - mean_) @ components_.T``.
        """
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=list(_DTYPES), reset=False)
        X = X.astype(self.components_.dtype, copy=False)
        return (X - self.mean_) @ self.components_.T

    def get_feature_names_out(self, input_features=None):
        """Names ``<class>0``, ``<class>1``, ... of the reduced coordinates."""
        check_is_fitted(self, "components_")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self.components_.shape[0])], dtype=object)
