"""Finite sums f(x) = (1/n) sum_i f_i(x): a generic per-sample oracle and linear models.

:class:`FiniteSum` wraps any per-sample gradient oracle ``grad_i(x, i)``; the solvers
then keep one d-vector per sample in memory. :class:`LinearModelProblem` is the fast
path for f_i(x) = phi(a_i^T x, y_i) + r(x): the gradient of the data term is a scalar
times a_i, so the memory is one scalar per sample and the inner loop is compiled.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sag_saga_iag._validation import (
    as_matrix,
    as_vector,
    check_choice,
    check_count,
    check_nonnegative,
)

LOSSES = ("logistic", "squared")
"""Losses of the linear-model fast path: log(1 + exp(-y z)) with y in {-1, +1}; (z - y)^2 / 2."""

_LOSS_CURVATURE = {"logistic": 0.25, "squared": 1.0}  # sup of phi''(z, y) over z


@dataclass(frozen=True)
class Smoothness:
    """Constants of a finite sum that the step sizes and the bounds read.

    Attributes:
        L: Smoothness constant of the average f (Lipschitz constant of its gradient).
        L_bar: Mean of the per-sample constants L_i.
        L_max: Largest per-sample constant L_i.
        mu: Strong convexity constant of f (a valid lower bound), or None when f is
            not known to be strongly convex (for instance with the non-convex regularizer).
    """

    L: float
    L_bar: float
    L_max: float
    mu: float | None

    @property
    def condition_number(self) -> float:
        """L_bar / mu (inf when mu is None or 0)."""
        if not self.mu:
            return float("inf")
        return self.L_bar / self.mu


class FiniteSum:
    """A finite sum given by a per-sample gradient oracle.

    f(x) = (1/n) sum_{i<n} f_i(x), with ``grad_i(x, i)`` returning the gradient of f_i
    at x as an array of shape (dim,).

    Args:
        n: Number of components, >= 1.
        dim: Dimension of x, >= 1.
        grad_i: ``grad_i(x, i) -> ndarray (dim,)``; must not keep a reference to ``x``.
        value: Optional ``value(x) -> float`` returning f(x); needed for the history of
            objective values and suboptimality.
        smoothness: Optional :class:`Smoothness` constants, needed for step sizes
            ``"auto"`` and ``"theory"``.

    Raises:
        TypeError: If ``grad_i`` or ``value`` is not callable.
        ValueError: If ``n`` or ``dim`` is < 1.

    Example:
        >>> import numpy as np
        >>> c = np.array([[1.0], [3.0]])
        >>> prob = FiniteSum(2, 1, lambda x, i: x - c[i], smoothness=Smoothness(1, 1, 1, 1))
        >>> prob.gradient(np.zeros(1))
        array([-2.])
    """

    def __init__(
        self,
        n: int,
        dim: int,
        grad_i: Callable[[np.ndarray, int], np.ndarray],
        value: Callable[[np.ndarray], float] | None = None,
        *,
        smoothness: Smoothness | None = None,
    ) -> None:
        self.n = check_count(n, "n")
        self.dim = check_count(dim, "dim")
        if not callable(grad_i):
            raise TypeError(f"grad_i must be callable grad_i(x, i), got {type(grad_i).__name__}")
        if value is not None and not callable(value):
            raise TypeError(f"value must be callable value(x) or None, got {type(value).__name__}")
        self._grad_i = grad_i
        self._value = value
        self._smoothness = smoothness

    def grad_i(self, x: np.ndarray, i: int) -> np.ndarray:
        """Gradient of f_i at x, shape (dim,), float64.

        Raises:
            ValueError: If the oracle returns a wrong shape or non-finite values.
        """
        g = np.asarray(self._grad_i(x, int(i)), dtype=np.float64)
        if g.shape != (self.dim,):
            raise ValueError(f"grad_i returned shape {g.shape}, expected ({self.dim},)")
        return g

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """Full gradient (1/n) sum_i grad f_i(x), shape (dim,)."""
        return np.mean([self.grad_i(x, i) for i in range(self.n)], axis=0)

    def value(self, x: np.ndarray) -> float:
        """f(x).

        Raises:
            ValueError: If no ``value`` function was given.
        """
        if self._value is None:
            raise ValueError("this FiniteSum has no value function; pass value=... to record f(x)")
        return float(self._value(x))

    @property
    def has_value(self) -> bool:
        """Whether f(x) can be evaluated."""
        return self._value is not None

    def smoothness(self) -> Smoothness:
        """The smoothness constants given at construction.

        Raises:
            ValueError: If none were given.
        """
        if self._smoothness is None:
            raise ValueError(
                "this FiniteSum has no smoothness constants; pass smoothness=Smoothness(...) "
                "or give a numeric step_size"
            )
        return self._smoothness


class LinearModelProblem:
    """Regularized empirical risk of a linear model, with scalar per-sample memory.

    f(x) = (1/n) sum_i phi(a_i^T x, y_i) + (alpha/2) ||w||^2 + nu sum_j w_j^2 / (1 + w_j^2),

    where x = w (dim d) or x = (w, b) with an unpenalized intercept b when
    ``fit_intercept`` (then a_i is the sample with a trailing 1). phi is the logistic
    loss log(1 + exp(-y z)) with labels y in {-1, +1} or the squared loss (z - y)^2 / 2.
    The last term is a smooth non-convex regularizer (|d^2/dt^2| <= 2 nu).

    Args:
        X: Samples, shape (n, d), finite; copied, never modified.
        y: Targets, shape (n,); labels in {-1, +1} for the logistic loss.
        loss: ``"logistic"`` or ``"squared"``.
        alpha: L2 coefficient (>= 0) on w. For scikit-learn's ``LogisticRegression(C)``
            use alpha = 1 / (C n); for ``Ridge(alpha_sk)`` use alpha = alpha_sk / n.
        fit_intercept: Append an unpenalized intercept.
        nonconvex: nu >= 0, weight of the non-convex regularizer.

    Raises:
        TypeError: If an argument has the wrong type.
        ValueError: If shapes disagree, values are not finite, or logistic labels are
            not in {-1, +1}.

    Example:
        >>> import numpy as np
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> prob = LinearModelProblem(X, np.array([1.0, -1.0, 1.0]), alpha=0.1)
        >>> round(prob.value(np.zeros(2)), 6)
        0.693147
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        *,
        loss: str = "logistic",
        alpha: float = 0.0,
        fit_intercept: bool = False,
        nonconvex: float = 0.0,
    ) -> None:
        X = as_matrix(X, "X")
        self.n, self.n_features = X.shape
        self.y = as_vector(y, self.n, "y")
        self.loss = check_choice(loss, "loss", LOSSES)
        if self.loss == "logistic" and not np.all(np.abs(self.y) == 1.0):
            raise ValueError("y must hold labels in {-1, +1} for loss='logistic'")
        self.alpha = check_nonnegative(alpha, "alpha")
        self.nonconvex = check_nonnegative(nonconvex, "nonconvex")
        if not isinstance(fit_intercept, bool | np.bool_):
            raise TypeError(f"fit_intercept must be a bool, got {fit_intercept!r}")
        self.fit_intercept = bool(fit_intercept)
        self.A = np.hstack([X, np.ones((self.n, 1))]) if self.fit_intercept else X
        self.dim = self.A.shape[1]
        self.penalized = np.ones(self.dim)
        if self.fit_intercept:
            self.penalized[-1] = 0.0

    # -- per-sample pieces -------------------------------------------------
    def loss_derivative(self, z: np.ndarray) -> np.ndarray:
        """phi'(z_i, y_i) for margins z of shape (n,)."""
        if self.loss == "logistic":
            return -self.y * _sigmoid(-self.y * z)
        return z - self.y

    def regularizer_gradient(self, x: np.ndarray) -> np.ndarray:
        """Gradient of (alpha/2)||w||^2 + nu sum w_j^2/(1+w_j^2), shape (dim,)."""
        w = x * self.penalized
        return self.alpha * w + self.nonconvex * 2.0 * w / (1.0 + w * w) ** 2

    def grad_i(self, x: np.ndarray, i: int) -> np.ndarray:
        """Gradient of f_i at x, shape (dim,)."""
        a = self.A[int(i)]
        d = self.loss_derivative_single(float(a @ x), int(i))
        return d * a + self.regularizer_gradient(x)

    def loss_derivative_single(self, z: float, i: int) -> float:
        """phi'(z, y_i) for one sample."""
        yi = self.y[i]
        if self.loss == "logistic":
            t = -yi * z
            sig = 1.0 / (1.0 + math.exp(-t)) if t >= 0 else math.exp(t) / (1.0 + math.exp(t))
            return float(-yi * sig)
        return float(z - yi)

    # -- whole-sum pieces --------------------------------------------------
    def value(self, x: np.ndarray) -> float:
        """f(x), float."""
        z = self.A @ x
        if self.loss == "logistic":
            data = np.mean(np.logaddexp(0.0, -self.y * z))
        else:
            data = 0.5 * np.mean((z - self.y) ** 2)
        w = x * self.penalized
        reg = 0.5 * self.alpha * (w @ w)
        if self.nonconvex:
            reg += self.nonconvex * np.sum(w * w / (1.0 + w * w))
        return float(data + reg)

    has_value = True

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """Full gradient of f at x, shape (dim,)."""
        return self.A.T @ self.loss_derivative(self.A @ x) / self.n + self.regularizer_gradient(x)

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """Hessian of f at x, shape (dim, dim)."""
        z = self.A @ x
        if self.loss == "logistic":
            s = _sigmoid(z)
            curv = s * (1.0 - s)
        else:
            curv = np.ones(self.n)
        H = (self.A.T * curv) @ self.A / self.n
        w = x * self.penalized
        diag = self.alpha * self.penalized
        if self.nonconvex:
            diag = diag + self.nonconvex * self.penalized * (2.0 - 6.0 * w * w) / (1.0 + w * w) ** 3
        H[np.diag_indices_from(H)] += diag
        return H

    def smoothness(self) -> Smoothness:
        """Constants L, L_bar, L_max and mu of this problem (see :class:`Smoothness`).

        L_i = c ||a_i||^2 + alpha + 2 nu with c = 1/4 (logistic) or 1 (squared); L uses
        the largest eigenvalue of A^T A / n. mu is alpha for the logistic loss without
        intercept, the smallest Hessian eigenvalue for the squared loss, 0 for the
        logistic loss with an unpenalized intercept, and None with the non-convex term.
        """
        c = _LOSS_CURVATURE[self.loss]
        reg = self.alpha + 2.0 * self.nonconvex
        row_sq = np.einsum("ij,ij->i", self.A, self.A)
        L_i = c * row_sq + reg
        gram_top = np.linalg.eigvalsh(self.A.T @ self.A / self.n)[-1]
        L = c * gram_top + reg
        mu: float | None
        if self.nonconvex > 0:
            mu = None
        elif self.loss == "squared":
            mu = float(max(np.linalg.eigvalsh(self.hessian(np.zeros(self.dim)))[0], 0.0))
        else:
            mu = 0.0 if self.fit_intercept else self.alpha
        return Smoothness(L=float(L), L_bar=float(L_i.mean()), L_max=float(L_i.max()), mu=mu)


def _sigmoid(t: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function 1 / (1 + exp(-t))."""
    out = np.empty_like(t, dtype=np.float64)
    pos = t >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    e = np.exp(t[~pos])
    out[~pos] = e / (1.0 + e)
    return out
