"""scikit-learn estimators on the compiled SAG / SAGA / IAG solvers.

Drop-in replacements for ``LogisticRegression(solver="sag" | "saga")`` and
``Ridge(solver="sag" | "saga")``: the same objectives, so the coefficients agree with
scikit-learn's at convergence, the same hyperparameter names, and the options users
rely on: ``sample_weight``, float32 kept end to end, sparse (CSR) input with
just-in-time updates, L1 and elastic-net penalties (SAGA), the multinomial loss for
three classes or more, ``warm_start`` and ``verbose``.

- logistic: C sum_i s_i loss_i + (1 - l1_ratio) ||w||^2 / 2 + l1_ratio ||w||_1, i.e. our
  per-sample average with alpha = (1 - l1_ratio) / (C n) and l1 = l1_ratio / (C n);
  binary problems use the logistic loss, three classes or more the multinomial
  (softmax) loss, as scikit-learn does;
- ridge: sum_i s_i (y_i - w^T x_i - b)^2 + alpha ||w||^2, i.e. alpha_ours = alpha / n.

The intercept b is never penalized. ``max_iter`` counts epochs after the initial pass.
``tol`` is compared with the max-norm of the gradient mapping of the objective
normalized by the sum of the sample weights (for the logistic loss, the gradient that
scikit-learn's lbfgs compares with its ``tol``); unlike scikit-learn's sag/saga test on
the change of the coefficients, it is not met by an iterate that merely moves slowly.
A fit that ends before ``tol`` emits a ``ConvergenceWarning``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from icml26_core.validation import check_choice, check_float, check_int
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sag_saga_iag.problems import LinearModelProblem
from sag_saga_iag.sampling import SAMPLINGS
from sag_saga_iag.solvers import STEP_RULES, SolverResult, solve

_DTYPES = [np.float64, np.float32]


def _check_common(est: Any) -> None:
    check_int("max_iter", est.max_iter, low=1)
    check_float("tol", est.tol, low=0.0)
    if isinstance(est.step_size, str):
        check_choice("step_size", est.step_size, STEP_RULES)
    else:
        check_float("step_size", est.step_size, low=0.0, low_inclusive=False)
    if est.sampling is not None:
        check_choice("sampling", est.sampling, SAMPLINGS)
    if not isinstance(est.warm_start, bool | np.bool_):
        raise TypeError(f"warm_start must be a bool, got {est.warm_start!r}")
    if not isinstance(est.fit_intercept, bool | np.bool_):
        raise TypeError(f"fit_intercept must be a bool, got {est.fit_intercept!r}")
    v = est.verbose
    check_int("verbose", int(v) if isinstance(v, bool | np.bool_) else v, low=0)


class _AggregatedGradientMixin:
    _method = "sag"

    def _run(self, prob: LinearModelProblem, x0: np.ndarray | None) -> SolverResult:
        rng = check_random_state(self.random_state)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            res = solve(
                prob,
                self._method,
                x0,
                step_size=self.step_size,
                n_epochs=int(self.max_iter),
                sampling=self.sampling,
                random_state=rng.randint(0, 2**31 - 1),
                tol=float(self.tol),
                record_objective=False,
                verbose=int(self.verbose),
            )
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                warnings.warn(
                    f"{type(self).__name__}: {w.message}", ConvergenceWarning, stacklevel=3
                )
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return res

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.input_tags.sparse = True
        return tags


class _AggregatedClassifier(_AggregatedGradientMixin, ClassifierMixin, BaseEstimator):
    """Logistic regression fitted by an aggregated-gradient method.

    Args:
        C: Inverse regularization strength, > 0 (``np.inf``: no penalty), as in
            scikit-learn.
        l1_ratio: Elastic-net mixing in [0, 1]: the penalty is
            (1 - l1_ratio) ||w||^2 / 2 + l1_ratio ||w||_1 (SAGA and IAG only; SAG needs 0).
        fit_intercept: Fit an unpenalized intercept.
        max_iter: Maximum epochs (>= 1).
        tol: Stop when the max-norm of the gradient mapping (the gradient without l1) of
            the weight-normalized objective is <= tol.
        step_size: A number > 0, ``"auto"`` (scikit-learn's steps; the theory step for
            IAG), ``"theory"`` or ``"classical"``.
        sampling: None (the method's default), ``"uniform"``, ``"reshuffle"``,
            ``"cyclic"`` or ``"markov"``.
        random_state: Seed of the sampler (int, RandomState or None).
        warm_start: Start from the previous ``coef_``/``intercept_`` when their shapes fit.
        verbose: 0 for silence; >= 1 prints one line per epoch.

    Attributes:
        coef_: Shape (1, n_features) for two classes, (n_classes, n_features) for three
            or more (multinomial loss); X's dtype (float32 or float64).
        intercept_: Shape (1,) or (n_classes,).
        classes_: The class labels, shape (n_classes,).
        n_features_in_: Number of features seen in ``fit``.
        n_iter_: Epochs run, shape (1,).

    Raises:
        ValueError: In ``fit``, on bad hyperparameters, NaN/inf in X, fewer than two
            classes, mismatched lengths, negative or all-zero ``sample_weight``, or
            ``l1_ratio > 0`` with SAG.
    """

    def __init__(
        self,
        C: float = 1.0,
        *,
        l1_ratio: float = 0.0,
        fit_intercept: bool = True,
        max_iter: int = 1000,
        tol: float = 1e-4,
        step_size: float | str = "auto",
        sampling: str | None = None,
        random_state: Any = None,
        warm_start: bool = False,
        verbose: int = 0,
    ) -> None:
        self.C = C
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.step_size = step_size
        self.sampling = sampling
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> _AggregatedClassifier:
        """Fit to X of shape (n_samples, n_features) (dense or sparse) and labels y (n_samples,).

        Args:
            X: Training data; float32 stays float32, sparse input is used as CSR.
            y: Class labels.
            sample_weight: Weights >= 0 per sample, shape (n_samples,); integer weights
                give the same fit as repeating rows.

        Returns:
            self.
        """
        C = check_float("C", self.C, low=0.0, low_inclusive=False, finite=False)
        l1_ratio = check_float("l1_ratio", self.l1_ratio, low=0.0, high=1.0)
        if l1_ratio > 0 and self._method == "sag":
            raise ValueError(
                f"l1_ratio > 0 needs SAGA or IAG (proximal steps), got l1_ratio={l1_ratio} "
                "with SAG; use SAGALogisticRegression"
            )
        _check_common(self)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=_DTYPES, order="C")
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"y must hold at least 2 classes, got {classes.size} class")
        n = X.shape[0]
        strength = 0.0 if np.isinf(C) else 1.0 / (C * n)
        code = np.searchsorted(classes, y)
        K = classes.size
        if K == 2:
            prob = LinearModelProblem(
                X,
                np.where(code == 1, 1.0, -1.0),
                loss="logistic",
                alpha=(1.0 - l1_ratio) * strength,
                l1=l1_ratio * strength,
                fit_intercept=bool(self.fit_intercept),
                sample_weight=sample_weight,
            )
        else:
            prob = LinearModelProblem(
                X,
                code.astype(np.float64),
                loss="multinomial",
                n_classes=K,
                alpha=(1.0 - l1_ratio) * strength,
                l1=l1_ratio * strength,
                fit_intercept=bool(self.fit_intercept),
                sample_weight=sample_weight,
            )
        n_out = 1 if K == 2 else K
        x0 = None
        if self.warm_start and getattr(self, "coef_", None) is not None:
            coef, icpt = np.asarray(self.coef_), np.asarray(self.intercept_)
            if coef.shape == (n_out, X.shape[1]):
                M = coef.T if not self.fit_intercept else np.vstack([coef.T, icpt[None, :]])
                x0 = np.asarray(M, dtype=np.float64).ravel()
        res = self._run(prob, x0)
        M = res.x.reshape(prob.n_rows, n_out)
        self.classes_ = classes
        self.coef_ = np.ascontiguousarray(M[: X.shape[1]].T, dtype=X.dtype)
        b = M[-1] if self.fit_intercept else np.zeros(n_out)
        self.intercept_ = np.asarray(b, dtype=X.dtype)
        self.n_iter_ = np.array([res.n_epochs])
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores X coef_^T + intercept_: shape (n_samples,) for two classes, else (n, K)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=_DTYPES, reset=False)
        scores = X @ self.coef_.T + self.intercept_
        scores = np.asarray(scores)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class labels, shape (n_samples,)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, shape (n_samples, n_classes): sigmoid (binary) or softmax."""
        scores = np.asarray(self.decision_function(X), dtype=np.float64)
        if scores.ndim == 1:
            p1 = np.where(
                scores >= 0,
                1.0 / (1.0 + np.exp(-np.abs(scores))),
                np.exp(-np.abs(scores)) / (1.0 + np.exp(-np.abs(scores))),
            )
            out = np.column_stack([1.0 - p1, p1])
        else:
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            out = e / e.sum(axis=1, keepdims=True)
        return out.astype(self.coef_.dtype, copy=False)

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log of :meth:`predict_proba`, shape (n_samples, n_classes)."""
        scores = np.asarray(self.decision_function(X), dtype=np.float64)
        if scores.ndim == 1:
            scores = np.column_stack([np.zeros_like(scores), scores])
        m = scores.max(axis=1, keepdims=True)
        lse = m + np.log(np.exp(scores - m).sum(axis=1, keepdims=True))
        return (scores - lse).astype(self.coef_.dtype, copy=False)


class _AggregatedRegressor(_AggregatedGradientMixin, RegressorMixin, BaseEstimator):
    """Ridge regression fitted by an aggregated-gradient method.

    Args:
        alpha: Regularization strength (>= 0), as in scikit-learn's Ridge.
        fit_intercept: Fit an unpenalized intercept.
        max_iter: Maximum epochs (>= 1).
        tol: Stop when the max-norm of the gradient of the weight-normalized objective
            (1/(2 sum s_i)) (sum_i s_i (y_i - w^T x_i - b)^2 + alpha ||w||^2) is <= tol.
        step_size: A number > 0, ``"auto"``, ``"theory"`` or ``"classical"``.
        sampling: None (the method's default) or a sampling scheme name.
        random_state: Seed of the sampler.
        warm_start: Start from the previous ``coef_``/``intercept_`` when their shape fits.
        verbose: 0 for silence; >= 1 prints one line per epoch.

    Attributes:
        coef_: Shape (n_features,), X's dtype.
        intercept_: Float.
        n_features_in_: Number of features seen in ``fit``.
        n_iter_: Epochs run.

    Raises:
        ValueError: In ``fit``, on bad hyperparameters, NaN/inf, mismatched X and y, or
            bad ``sample_weight``.
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
        warm_start: bool = False,
        verbose: int = 0,
    ) -> None:
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.step_size = step_size
        self.sampling = sampling
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> _AggregatedRegressor:
        """Fit to X of shape (n_samples, n_features) (dense or sparse) and targets y (n_samples,).

        Args:
            X: Training data; float32 stays float32, sparse input is used as CSR.
            y: Targets.
            sample_weight: Weights >= 0 per sample, shape (n_samples,).

        Returns:
            self.
        """
        alpha = check_float("alpha", self.alpha, low=0.0)
        _check_common(self)
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=_DTYPES, order="C", y_numeric=True
        )
        prob = LinearModelProblem(
            X,
            y,
            loss="squared",
            alpha=alpha / X.shape[0],
            fit_intercept=bool(self.fit_intercept),
            sample_weight=sample_weight,
        )
        x0 = None
        if self.warm_start and getattr(self, "coef_", None) is not None:
            coef = np.asarray(self.coef_, dtype=np.float64).ravel()
            if coef.shape == (X.shape[1],):
                x0 = np.append(coef, float(self.intercept_)) if self.fit_intercept else coef
        res = self._run(prob, x0)
        self.coef_ = np.asarray(res.x[: X.shape[1]], dtype=X.dtype)
        self.intercept_ = float(res.x[-1]) if self.fit_intercept else 0.0
        self.n_iter_ = res.n_epochs
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions X coef_ + intercept_, shape (n_samples,)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=_DTYPES, reset=False)
        out = np.asarray(X @ self.coef_).ravel() + self.intercept_
        return out.astype(X.dtype, copy=False)


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
    """Logistic regression by SAGA (uniform sampling), with L1 / elastic net via ``l1_ratio``."""

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
