"""scikit-learn estimators on the compiled SAG / SAGA / IAG solvers.

The objectives are scikit-learn's, so the coefficients agree with
``LogisticRegression(C=C, solver="sag"|"saga")`` and ``Ridge(alpha=alpha, solver="sag")``
at convergence:

- logistic: C sum_i log(1 + exp(-y_i (w^T x_i + b))) + ||w||^2 / 2, i.e. our per-sample
  average with alpha = 1/(C n); multiclass problems are solved one-vs-rest (one binary
  problem per class), not with the multinomial loss;
- ridge: ||y - Xw - b||^2 + alpha ||w||^2, i.e. alpha_ours = alpha / n.

The intercept b is never penalized. ``max_iter`` counts epochs after the initial pass;
``tol`` stops when max|x_new - x_old| / max|x_new| over an epoch falls below it (the
criterion scikit-learn's SAG uses).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sag_saga_iag.problems import LinearModelProblem
from sag_saga_iag.sampling import SAMPLINGS
from sag_saga_iag.solvers import STEP_RULES, solve


def _check_params(est: Any, reg_name: str) -> None:
    reg = getattr(est, reg_name)
    if isinstance(reg, bool) or not isinstance(reg, numbers.Real) or not np.isfinite(reg):
        raise TypeError(f"{reg_name} must be a finite real number, got {reg!r}")
    if reg_name == "C" and reg <= 0:
        raise ValueError(f"C must be > 0, got {reg!r}")
    if reg_name == "alpha" and reg < 0:
        raise ValueError(f"alpha must be >= 0, got {reg!r}")
    if (
        isinstance(est.max_iter, bool)
        or not isinstance(est.max_iter, numbers.Integral)
        or est.max_iter < 1
    ):
        raise ValueError(f"max_iter must be an integer >= 1, got {est.max_iter!r}")
    if isinstance(est.tol, bool) or not isinstance(est.tol, numbers.Real) or est.tol < 0:
        raise ValueError(f"tol must be a real number >= 0, got {est.tol!r}")
    if isinstance(est.step_size, str):
        if est.step_size not in STEP_RULES:
            raise ValueError(
                f"step_size must be a number > 0 or one of {STEP_RULES}, got {est.step_size!r}"
            )
    elif (
        isinstance(est.step_size, bool)
        or not isinstance(est.step_size, numbers.Real)
        or not est.step_size > 0
    ):
        raise ValueError(
            f"step_size must be a number > 0 or one of {STEP_RULES}, got {est.step_size!r}"
        )
    if est.sampling is not None and est.sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be None or one of {SAMPLINGS}, got {est.sampling!r}")


class _AggregatedGradientMixin:
    _method = "sag"

    def _fit_one(
        self, X: np.ndarray, target: np.ndarray, loss: str, alpha: float, rng: np.random.RandomState
    ) -> tuple[np.ndarray, float, int, bool]:
        prob = LinearModelProblem(
            X, target, loss=loss, alpha=alpha, fit_intercept=bool(self.fit_intercept)
        )
        res = solve(
            prob,
            self._method,
            step_size=self.step_size,
            n_epochs=int(self.max_iter),
            sampling=self.sampling,
            random_state=rng.randint(0, 2**31 - 1),
            tol=float(self.tol),
            record_objective=False,
        )
        if self.fit_intercept:
            return res.x[:-1], float(res.x[-1]), res.n_epochs, res.converged
        return res.x, 0.0, res.n_epochs, res.converged


class _AggregatedClassifier(_AggregatedGradientMixin, LinearClassifierMixin, BaseEstimator):
    """L2-regularized logistic regression fitted by an aggregated-gradient method.

    Args:
        C: Inverse regularization strength (> 0), as in scikit-learn.
        fit_intercept: Fit an unpenalized intercept.
        max_iter: Maximum epochs (>= 1).
        tol: Stopping tolerance on the relative change of the coefficients per epoch.
        step_size: A number > 0, ``"auto"`` (scikit-learn's steps; the theory step for
            IAG), ``"theory"`` or ``"classical"``.
        sampling: None (the method's default), ``"uniform"``, ``"reshuffle"``,
            ``"cyclic"`` or ``"markov"``.
        random_state: Seed of the sampler.

    Attributes:
        coef_: shape (1, n_features) for two classes, (n_classes, n_features) otherwise.
        intercept_: shape (1,) or (n_classes,).
        classes_: The class labels.
        n_iter_: Epochs run, one per binary problem, shape (n_problems,).
    """

    def __init__(
        self,
        C: float = 1.0,
        *,
        fit_intercept: bool = True,
        max_iter: int = 1000,
        tol: float = 1e-4,
        step_size: float | str = "auto",
        sampling: str | None = None,
        random_state: Any = None,
    ) -> None:
        self.C = C
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.step_size = step_size
        self.sampling = sampling
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> _AggregatedClassifier:
        """Fit the model to X of shape (n_samples, n_features) and labels y of shape (n_samples,).

        Raises:
            ValueError: On bad hyperparameters, NaN/inf in X, fewer than two classes, or
                mismatched lengths of X and y.
        """
        _check_params(self, "C")
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=1)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(f"y must hold at least 2 classes, got {self.classes_.size} class")
        rng = check_random_state(self.random_state)
        alpha = 1.0 / (self.C * X.shape[0])
        positives = self.classes_[1:] if self.classes_.size == 2 else self.classes_
        coefs, intercepts, iters = [], [], []
        all_converged = True
        for cls in positives:
            target = np.where(y == cls, 1.0, -1.0)
            w, b, it, conv = self._fit_one(X, target, "logistic", alpha, rng)
            coefs.append(w)
            intercepts.append(b)
            iters.append(it)
            all_converged &= conv
        if not all_converged and self.tol > 0:
            warnings.warn(
                f"{type(self).__name__} reached max_iter={self.max_iter} before tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.coef_ = np.array(coefs)
        self.intercept_ = np.array(intercepts)
        self.n_iter_ = np.array(iters)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, shape (n_samples, n_classes) (one-vs-rest, normalized)."""
        check_is_fitted(self)
        return self._predict_proba_lr(X)

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))


class _AggregatedRegressor(_AggregatedGradientMixin, RegressorMixin, BaseEstimator):
    """Ridge regression fitted by an aggregated-gradient method.

    Args:
        alpha: Regularization strength (>= 0), as in scikit-learn's Ridge.
        fit_intercept: Fit an unpenalized intercept.
        max_iter: Maximum epochs (>= 1).
        tol: Stopping tolerance on the relative change of the coefficients per epoch.
        step_size: A number > 0, ``"auto"``, ``"theory"`` or ``"classical"``.
        sampling: None (the method's default) or a sampling scheme name.
        random_state: Seed of the sampler.

    Attributes:
        coef_: shape (n_features,).
        intercept_: float.
        n_iter_: Epochs run.
    """

    def __init__(
        self,
        alpha: float = 1.0,
        *,
        fit_intercept: bool = True,
        max_iter: int = 1000,
        tol: float = 1e-4,
        step_size: float | str = "auto",
        sampling: str | None = None,
        random_state: Any = None,
    ) -> None:
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.step_size = step_size
        self.sampling = sampling
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> _AggregatedRegressor:
        """Fit to X of shape (n_samples, n_features) and targets y of shape (n_samples,).

        Raises:
            ValueError: On bad hyperparameters, NaN/inf, or mismatched X and y.
        """
        _check_params(self, "alpha")
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=1)
        rng = check_random_state(self.random_state)
        w, b, it, conv = self._fit_one(X, y, "squared", float(self.alpha) / X.shape[0], rng)
        if not conv and self.tol > 0:
            warnings.warn(
                f"{type(self).__name__} reached max_iter={self.max_iter} before tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.coef_ = w
        self.intercept_ = b
        self.n_iter_ = it
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions X @ coef_ + intercept_, shape (n_samples,)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_


class SAGLogisticRegression(_AggregatedClassifier):
    """Logistic regression by SAG (uniform sampling); see :class:`_AggregatedClassifier`.

    Example:
        >>> from sklearn.datasets import load_breast_cancer
        >>> from sklearn.preprocessing import StandardScaler
        >>> X, y = load_breast_cancer(return_X_y=True)
        >>> X = StandardScaler().fit_transform(X)
        >>> clf = SAGLogisticRegression(C=1.0, random_state=0).fit(X, y)
        >>> clf.coef_.shape
        (1, 30)
    """

    _method = "sag"


class SAGALogisticRegression(_AggregatedClassifier):
    """Logistic regression by SAGA (uniform sampling)."""

    _method = "saga"


class IAGLogisticRegression(_AggregatedClassifier):
    """Logistic regression by IAG (cyclic order, the theory step by default)."""

    _method = "iag"


class SAGRidge(_AggregatedRegressor):
    """Ridge regression by SAG (uniform sampling).

    Example:
        >>> from sklearn.datasets import load_diabetes
        >>> X, y = load_diabetes(return_X_y=True)
        >>> SAGRidge(alpha=1e-3, random_state=0).fit(X, y).coef_.shape
        (10,)
    """

    _method = "sag"


class SAGARidge(_AggregatedRegressor):
    """Ridge regression by SAGA (uniform sampling)."""

    _method = "saga"


class IAGRidge(_AggregatedRegressor):
    """Ridge regression by IAG (cyclic order, the theory step by default)."""

    _method = "iag"
