"""A scikit-learn estimator of the top principal direction from compressed measurements."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, check_random_state, validate_data

from . import _kernels as k
from .oja import CompressedOja
from .schedules import TheorySchedule, as_schedule, default_t0

MEASUREMENTS = ("adaptive", "nonadaptive", "full", "coordinate")


class CompressedOjaPCA(TransformerMixin, BaseEstimator):
    """Top principal direction of a stream, reading two scalar measurements per row.

    ``partial_fit`` treats each row x as a sample it can only measure: it asks for two
    unit directions, reads the two projections ``<direction, x>`` and updates (the row
    itself is not used otherwise). ``measurement="full"`` is fully observed Oja (it reads
    all of x) and ``"coordinate"`` observes 2 random coordinates of x (Gonen, Rosenbaum,
    Eldar and Shalev-Shwartz, 2016, with r = 2); both are baselines.

    The data must be centered: measurements cannot remove a mean the estimator never
    sees, so ``transform`` does not center either.

    Args:
        measurement: ``"adaptive"`` (the paper's scheme: along the estimate w and a random
            direction orthogonal to it), ``"nonadaptive"`` (two random directions
            independent of w), ``"full"`` or ``"coordinate"``.
        learning_rate: ``"theory"`` (eta_t = alpha / (eigengap (t + t0)); needs
            ``eigengap``), a positive float (constant step) or a callable ``t -> eta_t``.
        eigengap: Delta = lambda1 - lambda2 > 0 of the data's covariance, for ``"theory"``.
        t0: Schedule offset >= 0; None gives d^p (p = 1, 2, 3 for full, adaptive,
            non-adaptive and coordinate), the theory's d^p lambda1 / Delta with
            lambda1 / Delta taken as 1 (pass ``t0`` when you know the ratio).
        alpha: Numerator of the theory schedule (> 1/2 for the 1/t rate).
        n_passes: Passes over the rows in :meth:`fit` (each in a new random order).
        random_state: Seed of the directions, the start and the row order.

    Attributes:
        components_: (1, n_features) float64 unit estimate of the top eigenvector.
        explained_variance_: (1,) running mean of an unbiased estimate of w^T Sigma w
            (y1^2 = <w, x>^2 for adaptive and full).
        n_measurements_: Scalar measurements read (2 per row; n_features for full).
        n_samples_seen_: Rows seen.
        n_features_in_: Number of features.

    Raises:
        ValueError: From ``fit``/``partial_fit``: fewer than 2 features, NaN or inf,
            an all-zero batch, ``learning_rate="theory"`` without ``eigengap > 0``,
            ``t0 < 0``, or an unknown ``measurement``.

    Example:
        >>> import numpy as np
        >>> from compressed_oja import CompressedOjaPCA
        >>> X = np.random.default_rng(0).standard_normal((20000, 5)) * [2.0, 1, 1, 1, 1]
        >>> pca = CompressedOjaPCA(eigengap=3.0, random_state=0).fit(X)
        >>> abs(pca.components_[0, 0]) > 0.9
        True
    """

    def __init__(
        self,
        measurement: str = "adaptive",
        learning_rate: str | float | Callable[[int], float] = "theory",
        eigengap: float | None = None,
        t0: float | None = None,
        alpha: float = 2.0,
        n_passes: int = 1,
        random_state: int | np.random.RandomState | None = None,
    ) -> None:
        self.measurement = measurement
        self.learning_rate = learning_rate
        self.eigengap = eigengap
        self.t0 = t0
        self.alpha = alpha
        self.n_passes = n_passes
        self.random_state = random_state

    # -- setup ---------------------------------------------------------------------
    def _schedule(self, d: int) -> Callable[[int], float]:
        if isinstance(self.learning_rate, str):
            if self.learning_rate != "theory":
                raise ValueError(
                    f"learning_rate must be 'theory', a positive float or a callable, "
                    f"got {self.learning_rate!r}"
                )
            if self.eigengap is None:
                raise ValueError(
                    "learning_rate='theory' needs eigengap (lambda1 - lambda2 > 0 of the "
                    "covariance); pass eigengap=... or a float learning_rate"
                )
            t0 = default_t0(d, self.measurement) if self.t0 is None else self.t0
            return TheorySchedule(float(self.eigengap), float(t0), float(self.alpha))
        return as_schedule(self.learning_rate)

    def _start(self, d: int) -> None:
        if self.measurement not in MEASUREMENTS:
            raise ValueError(f"measurement must be one of {MEASUREMENTS}, got {self.measurement!r}")
        if self.t0 is not None and not (isinstance(self.t0, Real) and self.t0 >= 0):
            raise ValueError(f"t0 must be a number >= 0 or None, got {self.t0!r}")
        schedule = self._schedule(d)
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        self._rng = np.random.default_rng(seed)
        if self.measurement in ("adaptive", "nonadaptive"):
            self._oja = CompressedOja(
                d, schedule, measurement=self.measurement, random_state=self._rng
            )
            self._w = self._oja._w  # the same array: one state
        else:
            self._oja = None
            w = self._rng.standard_normal(d)
            k.normalize_(w)
            self._w = w
        self._eta = schedule
        self._ev_sum = 0.0
        self.n_samples_seen_ = 0
        self.n_measurements_ = 0

    # -- fitting -------------------------------------------------------------------
    def partial_fit(self, X, y=None):
        """Update with a batch of rows, in order.

        Args:
            X: (n_samples, n_features) array-like of centered rows.
            y: Ignored.

        Returns:
            self.
        """
        first = not hasattr(self, "components_")
        # after the first batch the feature-count check must speak first (sklearn's contract)
        X = validate_data(
            self, X, reset=first, dtype=np.float64, ensure_min_features=2 if first else 1, order="C"
        )
        if not np.any(X):
            raise ValueError("X is all zeros: a zero stream has no principal direction")
        if first:
            self._start(X.shape[1])
        self._update(X)
        return self

    def fit(self, X, y=None):
        """Fit from scratch: ``n_passes`` passes over the rows, each in a random order.

        Args:
            X: (n_samples, n_features) array-like of centered rows.
            y: Ignored.

        Returns:
            self.
        """
        if not (isinstance(self.n_passes, int | np.integer) and self.n_passes >= 1):
            raise ValueError(f"n_passes must be an integer >= 1, got {self.n_passes!r}")
        X = validate_data(self, X, reset=True, dtype=np.float64, ensure_min_features=2, order="C")
        if not np.any(X):
            raise ValueError("X is all zeros: a zero stream has no principal direction")
        for attr in ("components_", "explained_variance_"):
            self.__dict__.pop(attr, None)
        self._start(X.shape[1])
        for _ in range(int(self.n_passes)):
            self._update(X[self._rng.permutation(X.shape[0])])
        return self

    def _update(self, X: np.ndarray) -> None:
        d = X.shape[1]
        w = self._w
        ev = 0.0
        if self._oja is not None:
            adaptive = self.measurement == "adaptive"
            for x in X:
                D = self._oja.ask()
                y1, y2 = D @ x  # the only access to the row: two projections
                ev += y1 * y1 if adaptive else d * d * y1 * y2 * (D[0] @ w) * (D[1] @ w)
                self._oja.tell(y1, y2)
            self.n_measurements_ += 2 * X.shape[0]
        elif self.measurement == "full":
            t = self.n_samples_seen_
            for x in X:
                t += 1
                y1 = float(w @ x)
                ev += y1 * y1
                k.full_step_(w, x, float(self._eta(t)))
            self.n_measurements_ += d * X.shape[0]
        else:
            t = self.n_samples_seen_
            pairs = np.argsort(self._rng.random((X.shape[0], d)), axis=1)[:, :2]
            for x, (i, j) in zip(X, pairs, strict=True):
                t += 1
                xi, xj = float(x[i]), float(x[j])
                ev += (
                    d / 2 * (xi * xi * w[i] ** 2 + xj * xj * w[j] ** 2)
                    + d * (d - 1) * xi * xj * w[i] * w[j]
                )
                k.coordinate_step_(w, int(i), int(j), xi, xj, float(self._eta(t)))
            self.n_measurements_ += 2 * X.shape[0]
        self._ev_sum += ev
        self.n_samples_seen_ += X.shape[0]
        self.components_ = w.copy()[None, :]
        self.explained_variance_ = np.array([self._ev_sum / self.n_samples_seen_])

    def transform(self, X):
        """Project rows on the estimated direction: ``X @ components_.T``.

        Args:
            X: (n_samples, n_features) array-like.

        Returns:
            (n_samples, 1) float64 scores.
        """
        check_is_fitted(self, "components_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.components_.T

    def get_feature_names_out(self, input_features=None):
        """Output feature names: ``["compressedojapca0"]``."""
        check_is_fitted(self, "components_")
        return np.asarray(["compressedojapca0"], dtype=object)
