"""Finite sums f(x) = (1/n) sum_i f_i(x): a generic per-sample oracle and linear models.

:class:`FiniteSum` wraps any per-sample gradient oracle ``grad_i(x, i)``; the solvers
then keep one d-vector per sample in memory. :class:`LinearModelProblem` is the fast
path for f_i(x) = s_i phi(a_i^T W + b, y_i) + r(W): the gradient of the data term is
a_i times K scalars (K = 1, or the number of classes for the multinomial loss), so the
memory is K scalars per sample and the inner loop is compiled, for dense arrays and
for CSR matrices (with just-in-time updates of the coordinates a sample does not touch).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from icml26_core.validation import check_choice, check_float, check_int

from sag_saga_iag._validation import as_matrix

LOSSES = ("logistic", "squared", "multinomial")
"""Losses of the linear-model fast path (see :class:`LinearModelProblem`)."""

_LOSS_CURVATURE = {"logistic": 0.25, "squared": 1.0, "multinomial": 0.5}
"""sup over z of the largest eigenvalue of phi''(z, y): 1/4, 1, and 1/2 for the softmax
cross-entropy (the Hessian diag(p) - p p^T has eigenvalues <= 1/2, attained at K = 2)."""

_DENSE_EIG_MAX = 2000  # above this many coordinates, L comes from Lanczos, not eigvalsh


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

    l1 = 0.0
    sparse = False

    def __init__(
        self,
        n: int,
        dim: int,
        grad_i: Callable[[np.ndarray, int], np.ndarray],
        value: Callable[[np.ndarray], float] | None = None,
        *,
        smoothness: Smoothness | None = None,
    ) -> None:
        self.n = check_int("n", n, low=1)
        self.dim = check_int("dim", dim, low=1)
        if not callable(grad_i):
            raise TypeError(f"grad_i must be callable grad_i(x, i), got {type(grad_i).__name__}")
        if value is not None and not callable(value):
            raise TypeError(f"value must be callable value(x) or None, got {type(value).__name__}")
        self._grad_i = grad_i
        self._value = value
        self._smoothness = smoothness
        self.sw_sum = float(self.n)

    def grad_i(self, x: np.ndarray, i: int) -> np.ndarray:
        """Gradient of f_i at x, shape (dim,), float64.

        Raises:
            ValueError: If the oracle returns a wrong shape.
        """
        g = np.asarray(self._grad_i(x, int(i)), dtype=np.float64)
        if g.shape != (self.dim,):
            raise ValueError(f"grad_i returned shape {g.shape}, expected ({self.dim},)")
        return g

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """Full gradient (1/n) sum_i grad f_i(x), shape (dim,)."""
        return np.mean([self.grad_i(x, i) for i in range(self.n)], axis=0)

    def gradient_mapping(self, x: np.ndarray, step: float) -> np.ndarray:
        """The gradient (a FiniteSum has no proximal term), shape (dim,)."""
        return self.gradient(x)

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

    def sample_constants(self) -> tuple[float, float, float | None]:
        """(L_bar, L_max, mu) from :meth:`smoothness`."""
        s = self.smoothness()
        return s.L_bar, s.L_max, s.mu


class LinearModelProblem:
    r"""Regularized, weighted empirical risk of a linear model, with scalar per-sample memory.

    f(x) = (1/n) sum_i s_i phi(a_i^T W + b, y_i) + (alpha/2) ||W||^2
           + l1 ||W||_1 + nu sum_jk W_jk^2 / (1 + W_jk^2),

    with W of shape (d, K) and an unpenalized intercept b of shape (K,) when
    ``fit_intercept``. ``x`` is the flat vector of the (d + 1, K) matrix [W; b] in row
    order (just W without the intercept), so ``x.reshape(-1, K)`` gives it back. The
    losses phi:

    - ``"logistic"``: log(1 + exp(-y z)), labels y in {-1, +1}, K = 1;
    - ``"squared"``: (z - y)^2 / 2, real targets, K = 1;
    - ``"multinomial"``: -log softmax(z)_y (the softmax cross-entropy), integer labels
      y in {0, ..., K - 1}, K >= 2.

    The l1 term is handled by proximal steps (SAGA, IAG); the last term is a smooth
    non-convex regularizer (|d^2/dt^2| <= 2 nu, dense data only). Weights s_i >= 0
    multiply the sample's loss, so integer weights equal repeating rows (the minimizer
    is the same; scikit-learn's ``sample_weight`` in sag/saga works the same way).

    Args:
        X: Samples, shape (n, d): a dense array or a scipy.sparse matrix (kept as CSR).
            float32 and float64 are kept (other dtypes become float64); the array is not
            copied when it is already a C-ordered float array, and never modified.
        y: Targets, shape (n,).
        loss: ``"logistic"``, ``"squared"`` or ``"multinomial"``.
        alpha: L2 coefficient (>= 0) on W. For scikit-learn's ``LogisticRegression(C)``
            use alpha = 1 / (C n); for ``Ridge(alpha_sk)`` use alpha = alpha_sk / n.
        l1: L1 coefficient (>= 0) on W (for ``l1_ratio`` in scikit-learn:
            alpha = (1 - l1_ratio) / (C n), l1 = l1_ratio / (C n)).
        fit_intercept: Add an unpenalized intercept.
        nonconvex: nu >= 0, weight of the non-convex regularizer (dense X only).
        sample_weight: Weights s_i >= 0, shape (n,), not all zero; None means ones.
        n_classes: K for the multinomial loss (default: max label + 1).

    Raises:
        TypeError: If an argument has the wrong type.
        ValueError: If shapes disagree, values are not finite, labels do not fit the
            loss, weights are negative or all zero, or ``nonconvex`` meets sparse X.

    Example:
        >>> import numpy as np
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> prob = LinearModelProblem(X, np.array([1.0, -1.0, 1.0]), alpha=0.1)
        >>> round(prob.value(np.zeros(2)), 6)
        0.693147
    """

    def __init__(
        self,
        X: Any,
        y: Any,
        *,
        loss: str = "logistic",
        alpha: float = 0.0,
        l1: float = 0.0,
        fit_intercept: bool = False,
        nonconvex: float = 0.0,
        sample_weight: Any = None,
        n_classes: int | None = None,
    ) -> None:
        self.X = as_matrix(X, "X")
        self.sparse = sp.issparse(self.X)
        self.n, self.n_features = self.X.shape
        self.loss = check_choice("loss", loss, LOSSES)
        self.y = _as_targets(y, self.n)
        if self.loss == "logistic" and not np.all(np.abs(self.y) == 1.0):
            raise ValueError("y must hold labels in {-1, +1} for loss='logistic'")
        if self.loss == "multinomial":
            if np.any(self.y < 0) or np.any(self.y != np.round(self.y)):
                raise ValueError("y must hold integer labels 0, ..., K-1 for loss='multinomial'")
            k = (
                int(self.y.max()) + 1
                if n_classes is None
                else check_int("n_classes", n_classes, low=2)
            )
            if k < 2 or self.y.max() >= k:
                raise ValueError(
                    f"loss='multinomial' needs n_classes >= 2 above every label, got {k}"
                )
            self.n_outputs = k
        else:
            self.n_outputs = 1
        self.alpha = check_float("alpha", alpha, low=0.0)
        self.l1 = check_float("l1", l1, low=0.0)
        self.nonconvex = check_float("nonconvex", nonconvex, low=0.0)
        if self.nonconvex and self.sparse:
            raise ValueError("nonconvex > 0 needs dense X (the sparse path updates lazily)")
        if not isinstance(fit_intercept, bool | np.bool_):
            raise TypeError(f"fit_intercept must be a bool, got {fit_intercept!r}")
        self.fit_intercept = bool(fit_intercept)
        self.sample_weight = _as_weights(sample_weight, self.n)
        self.sw_sum = float(self.sample_weight.sum())
        self.n_rows = self.n_features + int(self.fit_intercept)  # rows of [W; b]
        self.dim = self.n_rows * self.n_outputs
        self._smooth: Smoothness | None = None

    # -- layout ------------------------------------------------------------
    @property
    def A(self) -> Any:
        """The design matrix with a trailing column of ones when ``fit_intercept``.

        A copy (sparse stays sparse); the solvers read ``X`` and never build this.
        """
        if not self.fit_intercept:
            return self.X
        ones = np.ones((self.n, 1), dtype=self.X.dtype)
        if self.sparse:
            return sp.hstack([self.X, sp.csr_matrix(ones)], format="csr")
        return np.hstack([self.X, ones])

    @property
    def penalized(self) -> np.ndarray:
        """0/1 mask over x of the penalized entries (W; not the intercept), shape (dim,)."""
        mask = np.ones((self.n_rows, self.n_outputs))
        if self.fit_intercept:
            mask[-1] = 0.0
        return mask.ravel()

    def _split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        M = np.asarray(x, dtype=np.float64).reshape(self.n_rows, self.n_outputs)
        b = M[-1] if self.fit_intercept else np.zeros(self.n_outputs)
        return M[: self.n_features], b

    def margins(self, x: np.ndarray) -> np.ndarray:
        """Z = X W + b, shape (n, K), float64."""
        W, b = self._split(x)
        return np.asarray(self.X @ W, dtype=np.float64) + b

    def loss_derivative(self, Z: np.ndarray) -> np.ndarray:
        """s_i d phi(z_i, y_i) / dz_i for margins Z of shape (n, K); shape (n, K)."""
        Z = np.asarray(Z, dtype=np.float64).reshape(self.n, self.n_outputs)
        return _dloss(self.loss, Z, self.y, self.sample_weight)

    def data_gradient(self, table: np.ndarray) -> np.ndarray:
        """(1/n) sum_i [a_i; 1] table_i^T, the data term's gradient from per-sample scalars.

        Args:
            table: s_i phi'(z_i, y_i) per sample, shape (n, K).

        Returns:
            Shape (n_rows, K) (the intercept row last), float64.
        """
        G = np.asarray(self.X.T @ table, dtype=np.float64) / self.n
        if self.fit_intercept:
            G = np.vstack([G, table.sum(axis=0, keepdims=True) / self.n])
        return G

    # -- whole-sum pieces --------------------------------------------------
    def value(self, x: np.ndarray) -> float:
        """f(x), float (the l1 term included)."""
        Z = self.margins(x)
        if self.loss == "logistic":
            per = np.logaddexp(0.0, -self.y * Z[:, 0])
        elif self.loss == "squared":
            per = 0.5 * (Z[:, 0] - self.y) ** 2
        else:
            m = Z.max(axis=1)
            lse = m + np.log(np.exp(Z - m[:, None]).sum(axis=1))
            per = lse - Z[np.arange(self.n), self.y.astype(np.int64)]
        data = float(per @ self.sample_weight) / self.n
        W, _ = self._split(x)
        reg = 0.5 * self.alpha * float(np.sum(W * W)) + self.l1 * float(np.sum(np.abs(W)))
        if self.nonconvex:
            reg += self.nonconvex * float(np.sum(W * W / (1.0 + W * W)))
        return data + reg

    has_value = True

    def regularizer_gradient(self, x: np.ndarray) -> np.ndarray:
        """Gradient of the smooth regularizers (alpha/2)||W||^2 + nu sum W^2/(1+W^2), (dim,)."""
        w = np.asarray(x, dtype=np.float64) * self.penalized
        return self.alpha * w + self.nonconvex * 2.0 * w / (1.0 + w * w) ** 2

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """Gradient of the smooth part of f at x (all but the l1 term), shape (dim,)."""
        G = self.data_gradient(self.loss_derivative(self.margins(x)))
        return G.ravel() + self.regularizer_gradient(x)

    def prox(self, v: np.ndarray, step: float) -> np.ndarray:
        """Proximal map of step * l1 ||W||_1: soft-thresholding of the penalized entries."""
        v = np.asarray(v, dtype=np.float64)
        if not self.l1:
            return v.copy()
        t = step * self.l1 * self.penalized
        return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)

    def gradient_mapping(self, x: np.ndarray, step: float) -> np.ndarray:
        """(x - prox_{step l1}(x - step grad f(x))) / step: the gradient when l1 = 0.

        It is zero exactly at the minimizers; its size is what the stopping test reads.
        """
        x = np.asarray(x, dtype=np.float64)
        g = self.gradient(x)
        if not self.l1:
            return g
        return (x - self.prox(x - step * g, step)) / step

    def grad_i(self, x: np.ndarray, i: int) -> np.ndarray:
        """Gradient of f_i at x (smooth part), shape (dim,)."""
        i = int(i)
        row = self.X[i]
        a = np.asarray(row.toarray() if self.sparse else row, dtype=np.float64).ravel()
        W, b = self._split(x)
        z = (a @ W + b)[None, :]
        g = _dloss(self.loss, z, self.y[i : i + 1], self.sample_weight[i : i + 1])[0]
        if self.fit_intercept:
            a = np.append(a, 1.0)
        return np.outer(a, g).ravel() + self.regularizer_gradient(x)

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """Hessian of the smooth part of f at x, shape (dim, dim) (dense; small problems)."""
        A = self.A
        A = np.asarray(A.toarray() if self.sparse else A, dtype=np.float64)
        Z = self.margins(x)
        s = self.sample_weight
        K = self.n_outputs
        if self.loss == "multinomial":
            P = _softmax(Z)
            H = np.zeros((self.n_rows, K, self.n_rows, K))
            for k in range(K):
                for m in range(k, K):
                    c = s * (P[:, k] * ((k == m) - P[:, m]))
                    block = (A.T * c) @ A / self.n
                    H[:, k, :, m] = block
                    H[:, m, :, k] = block
            H = H.reshape(self.dim, self.dim)
        else:
            if self.loss == "logistic":
                sig = _sigmoid(Z[:, 0])
                curv = sig * (1.0 - sig)
            else:
                curv = np.ones(self.n)
            H = (A.T * (curv * s)) @ A / self.n
        w = np.asarray(x, dtype=np.float64) * self.penalized
        diag = self.alpha * self.penalized
        if self.nonconvex:
            diag = diag + self.nonconvex * self.penalized * (2.0 - 6.0 * w * w) / (1.0 + w * w) ** 3
        H[np.diag_indices_from(H)] += diag
        return H

    # -- constants ---------------------------------------------------------
    def _row_sq(self) -> np.ndarray:
        X = self.X
        if self.sparse:
            sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
        else:
            sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        return sq + float(self.fit_intercept)

    def sample_constants(self) -> tuple[float, float, float | None]:
        """(L_bar, L_max, mu) without the eigenvalue computation that L needs.

        L_i = c s_i (||a_i||^2 + [intercept]) + alpha + 2 nu, with c = 1/4 (logistic),
        1 (squared) or 1/2 (multinomial); mu as in :meth:`smoothness`.
        """
        c = _LOSS_CURVATURE[self.loss]
        L_i = c * self.sample_weight * self._row_sq() + self.alpha + 2.0 * self.nonconvex
        return float(L_i.mean()), float(L_i.max()), self._mu()

    def _mu(self) -> float | None:
        if self.nonconvex > 0:
            return None
        if self.loss != "squared":
            return 0.0 if self.fit_intercept else self.alpha
        if self.sparse or self.n_rows > _DENSE_EIG_MAX:
            return 0.0 if self.fit_intercept else self.alpha  # a valid lower bound
        H = self.hessian(np.zeros(self.dim))
        return float(max(np.linalg.eigvalsh(H)[0], 0.0))

    def _gram_top(self) -> float:
        """Largest eigenvalue of A^T S A / n (S = diag of the weights)."""
        s = self.sample_weight
        if not self.sparse and self.n_rows <= _DENSE_EIG_MAX:
            A = np.asarray(self.A, dtype=np.float64)
            return float(np.linalg.eigvalsh((A.T * s) @ A / self.n)[-1])
        from scipy.sparse.linalg import LinearOperator, eigsh

        X = self.X

        def mv(v: np.ndarray) -> np.ndarray:
            v = np.asarray(v, dtype=np.float64).ravel()
            z = np.asarray(X @ v[: self.n_features], dtype=np.float64)
            if self.fit_intercept:
                z = z + v[-1]
            u = s * z
            out = np.asarray(X.T @ u, dtype=np.float64) / self.n
            if self.fit_intercept:
                out = np.append(out, u.sum() / self.n)
            return out

        op = LinearOperator((self.n_rows, self.n_rows), matvec=mv, dtype=np.float64)
        top = float(eigsh(op, k=1, which="LA", tol=1e-8, return_eigenvectors=False)[0])
        # Lanczos approaches the top eigenvalue from below: pad it, never above the trace bound
        trace_bound = float(s @ self._row_sq()) / self.n
        return min(top * (1.0 + 1e-6) + 1e-12, trace_bound)

    def smoothness(self) -> Smoothness:
        """Constants L, L_bar, L_max and mu of the smooth part (see :class:`Smoothness`).

        L_i = c s_i (||a_i||^2 + [intercept]) + alpha + 2 nu (see
        :meth:`sample_constants`); L = c lambda_max(A^T S A / n) + alpha + 2 nu (exact
        for dense problems up to 2000 coordinates, Lanczos padded upward otherwise).
        mu is alpha for the logistic and multinomial losses without intercept, the
        smallest Hessian eigenvalue for the squared loss (alpha, or 0 with an intercept,
        on sparse or large problems), 0 with an unpenalized intercept, and None with the
        non-convex term. Computed once and cached.
        """
        if self._smooth is None:
            L_bar, L_max, mu = self.sample_constants()
            c = _LOSS_CURVATURE[self.loss]
            L = c * self._gram_top() + self.alpha + 2.0 * self.nonconvex
            self._smooth = Smoothness(L=float(L), L_bar=L_bar, L_max=L_max, mu=mu)
        return self._smooth


def _as_targets(y: Any, n: int) -> np.ndarray:
    try:
        arr = np.array(y, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"y must be a numeric array of shape ({n},), got {type(y).__name__}"
        ) from exc
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"y must have shape ({n},) to match X, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("y must hold finite values, got NaN or inf")
    return arr


def _as_weights(sample_weight: Any, n: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n)
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        sample_weight = np.full(n, float(sample_weight))
    try:
        sw = np.array(sample_weight, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"sample_weight must be a numeric array of shape ({n},), got "
            f"{type(sample_weight).__name__}"
        ) from exc
    if sw.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), got {sw.shape}")
    if not np.all(np.isfinite(sw)) or np.any(sw < 0):
        raise ValueError("sample_weight must hold finite values >= 0")
    if not sw.sum() > 0:
        raise ValueError("sample_weight must not be all zero")
    return sw


def _dloss(loss: str, Z: np.ndarray, y: np.ndarray, sw: np.ndarray) -> np.ndarray:
    """Weighted derivatives s_i phi'(z_i, y_i), shape (n, K)."""
    if loss == "logistic":
        yy = y[:, None]
        g = -yy * _sigmoid(-yy * Z)
    elif loss == "squared":
        g = Z - y[:, None]
    else:
        g = _softmax(Z)
        g[np.arange(Z.shape[0]), y.astype(np.int64)] -= 1.0
    return g * sw[:, None]


def _sigmoid(t: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function 1 / (1 + exp(-t))."""
    t = np.asarray(t, dtype=np.float64)
    out = np.empty_like(t)
    pos = t >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    e = np.exp(t[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def _softmax(Z: np.ndarray) -> np.ndarray:
    """Row-wise softmax of Z (n, K), shifted by the row maximum."""
    E = np.exp(Z - Z.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def column_scale_ratio(X: Any) -> float:
    """Max / min over the nonzero columns of the largest absolute entry (1.0 if all zero).

    A large ratio (1e3 and more) makes the steps of SAG/SAGA tiny for every column but
    the largest; the solvers' convergence warning names it.
    """
    if sp.issparse(X):
        m = np.asarray(abs(X).max(axis=0).toarray(), dtype=np.float64).ravel()
    else:
        m = np.max(np.abs(np.asarray(X, dtype=np.float64)), axis=0) if np.size(X) else np.ones(1)
    m = m[m > 0]
    return float(m.max() / m.min()) if m.size else 1.0


__all__ = ["LOSSES", "FiniteSum", "LinearModelProblem", "Smoothness", "column_scale_ratio"]
