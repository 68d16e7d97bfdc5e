"""How the spectrum of a mixing matrix sets the consensus error of decentralized SGD.

D-SGD (adapt-then-combine) on ``n`` nodes with a symmetric doubly stochastic ``W``:

``X^{t+1} = W (X^t - eta G^t)``, with ``X, G`` of shape (n, d).

Write ``W = sum_k lambda_k u_k u_k^T`` (``u_1 = 1/sqrt(n)``, ``lambda_1 = 1``) and
``c_k = u_k^T X``. The consensus error ``Xi = (1/n) sum_i ||x_i - x_bar||^2`` is
``(1/n) sum_{k>=2} ||c_k||^2``. In the *linear-noise model* (the gradient ``g_i =
zeta_i + xi_i`` has a fixed local bias ``zeta_i`` and a zero-mean noise ``xi_i`` with
``E||xi_i||^2 = sigma^2``, independent over nodes and steps; curvature is neglected)
each mode evolves alone, ``c_k <- lambda_k (c_k - eta u_k^T G)``, and its stationary
second moment gives:

- **homogeneous** (``zeta = 0``): ``E||c_k||^2 = eta^2 sigma^2 lambda_k^2 / (1 -
  lambda_k^2)``, so

  ``Xi_hom = eta^2 sigma^2 * (1/n) sum_{k>=2} lambda_k^2 / (1 - lambda_k^2)``,

  a *mean over every eigenvalue*: the star (Metropolis weights, n = 16) has the ring's
  gap but fourteen slow modes at 15/16, and pays for all of them; the ring pays for a
  few slow modes and many fast ones.
- **heterogeneous** (deterministic bias, projected ``zeta_k = u_k^T Z``): the fixed
  point ``c_k = -eta lambda_k zeta_k / (1 - lambda_k)`` gives

  ``Xi_het = eta^2 * (1/n) sum_{k>=2} lambda_k^2 ||zeta_k||^2 / (1 - lambda_k)^2``,

  which, for bias spread over all modes, is dominated by the slowest mode: the
  *spectral gap*, ``lambda_2^2 / (1 - lambda_2)^2``.

With an isotropic curvature ``mu`` (every node's loss ``mu/2 ||x - b_i||^2``) the
modes are exactly ``c_k <- lambda_k ((1 - eta mu) c_k - eta u_k^T (Z + Xi))`` and the
closed forms hold exactly with ``1 - lambda_k^2`` replaced by ``1 - rho_k^2`` and
``1 - lambda_k`` by ``1 - rho_k``, ``rho_k = lambda_k (1 - eta mu)``; pass ``mu`` to
:meth:`SpectralProfile.predicted_consensus`. Combine-then-adapt (``X <- W X - eta
G``) has ``rho_k = lambda_k - eta mu`` and numerators 1 instead of ``lambda_k^2``.

The prior analyses bound everything by the spectral gap ``1 - beta`` (``beta =
max(|lambda_2|, |lambda_n|)``); their predictor of the consensus error is ``1 / (1 -
beta)`` (or its square).

References:
    The ICML 2026 paper "dsgd-topology" (abstract in ``shared/papers``): all
    eigenvalues of W affect the rate. The two closed forms above are our derivation in
    the linear-noise model (the paper's exact weighting is not public). Prior
    gap-based analysis: Koloskova et al., "A unified theory of decentralized SGD with
    changing topology and local updates", ICML 2020.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from icml26_core.decentralized import check_mixing_matrix
from icml26_core.validation import check_choice, check_float

__all__ = ["ScheduleProfile", "SpectralProfile", "schedule_profile", "spectral_profile"]

ORDERS = ("atc", "cta")


def _as_zeta(zeta: Any, n: int) -> np.ndarray:
    if hasattr(zeta, "detach"):
        zeta = zeta.detach().cpu().numpy()
    try:
        Z = np.array(zeta, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"zeta must be a numeric array (n, ...), got {type(zeta).__name__}: {e}"
        ) from None
    if Z.ndim == 1:
        Z = Z[:, None]
    if Z.ndim < 2 or Z.shape[0] != n:
        raise ValueError(
            f"zeta must have one row per node, shape ({n}, ...), got shape {np.shape(zeta)}"
        )
    Z = Z.reshape(n, -1)
    if not np.all(np.isfinite(Z)):
        raise ValueError("zeta has NaN or infinite entries")
    return Z - Z.mean(axis=0)  # the mean bias moves the average, not the consensus


@dataclass(frozen=True)
class SpectralProfile:
    """Spectral quantities of a symmetric mixing matrix, and the consensus they predict.

    Attributes:
        eigenvalues: float64 (n,), descending; ``eigenvalues[0] == 1``.
        eigenvectors: float64 (n, n), column ``k`` the unit eigenvector ``u_k``.
        lambda_2: Second-largest eigenvalue.
        beta: Second-largest modulus ``max(|lambda_2|, |lambda_n|)``.
        spectral_gap: ``1 - beta``.
        inverse_gap: ``1 / (1 - beta)``, the prior analysis's predictor.
        all_eigenvalue: ``(1/n) sum_{k>=2} lambda_k^2 / (1 - lambda_k^2)``, the
            homogeneous factor (``Xi_hom / (eta^2 sigma^2)``).
        gap_heterogeneous: ``lambda_2^2 / (1 - lambda_2)^2``, the heterogeneous factor
            of the slowest mode.
        heterogeneous: ``(1/n) sum_{k>=2} lambda_k^2 ||zeta_k||^2 / (1 - lambda_k)^2``
            with ``zeta`` projected on the eigenvectors (``Xi_het / eta^2``), or None
            when no ``zeta`` was given.
        zeta_modes: float64 (n,), ``||zeta_k||^2`` per mode (entry 0 is 0), or None.
        n: Number of nodes.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    lambda_2: float
    beta: float
    spectral_gap: float
    inverse_gap: float
    all_eigenvalue: float
    gap_heterogeneous: float
    heterogeneous: float | None
    zeta_modes: np.ndarray | None
    n: int

    def predicted_consensus(
        self,
        eta: float,
        sigma2: float = 0.0,
        *,
        mu: float = 0.0,
        order: str = "atc",
    ) -> float:
        """Stationary consensus error ``Xi_hom + Xi_het`` of D-SGD with step ``eta``.

        Args:
            eta: Step size, > 0.
            sigma2: Gradient-noise variance per node, ``E||xi_i||^2`` (summed over the
                coordinates), >= 0.
            mu: Isotropic curvature, >= 0 (0: the linear-noise model).
            order: ``"atc"`` (adapt-then-combine, ``X <- W(X - eta G)``) or ``"cta"``
                (combine-then-adapt, ``X <- W X - eta G``).

        Returns:
            ``(1/n) E sum_i ||x_i - x_bar||^2`` at stationarity; the bias part is 0
            when the profile has no ``zeta``.

        Raises:
            ValueError: On a non-positive ``eta``, a negative ``sigma2`` or ``mu``, an
                unknown ``order``, or a mode that does not contract (``|lambda_k (1 -
                eta mu)| >= 1`` for atc, ``|lambda_k - eta mu| >= 1`` for cta).
        """
        eta = check_float("eta", eta, low=0.0, low_inclusive=False)
        sigma2 = check_float("sigma2", sigma2, low=0.0)
        mu = check_float("mu", mu, low=0.0)
        check_choice("order", order, ORDERS)
        lam = self.eigenvalues[1:]
        rho = lam * (1.0 - eta * mu) if order == "atc" else lam - eta * mu
        if np.any(np.abs(rho) >= 1.0):
            raise ValueError(
                f"a mode does not contract: |lambda_k (1 - eta mu)| >= 1 with eta={eta}, "
                f"mu={mu}; lower eta or mu"
            )
        num_noise = lam**2 if order == "atc" else np.ones_like(lam)
        noise = eta**2 * sigma2 * float(np.sum(num_noise / (1.0 - rho**2))) / self.n
        bias = 0.0
        if self.zeta_modes is not None:
            num_bias = lam**2 if order == "atc" else np.ones_like(lam)
            bias = eta**2 * float(np.sum(num_bias * self.zeta_modes[1:] / (1.0 - rho) ** 2))
            bias /= self.n
        return noise + bias


def _not_a_name(W: Any, name: str) -> None:
    if isinstance(W, str):
        raise TypeError(
            f"{name} must be a mixing matrix, got the string {W!r}: use "
            f"mixing_schedule({W!r}, n).W (or the schedule itself for schedule_profile)"
        )


def spectral_profile(W: Any, zeta: Any = None, *, atol: float | None = None) -> SpectralProfile:
    """Spectral gap, the all-eigenvalue quantity and the heterogeneous quantity of ``W``.

    Args:
        W: Symmetric doubly stochastic mixing matrix (n, n) (e.g.
            ``mixing_matrix(topology("ring", 16))``).
        zeta: Optional local gradient biases ``zeta_i = grad f_i(x) - grad f(x)``, one
            row per node, shape (n,) or (n, ...) (numpy or torch); their node mean is
            removed. Projected on the eigenvectors of ``W`` for
            :attr:`SpectralProfile.heterogeneous`.
        atol: Tolerance of the validity checks; ``None`` (default) picks it from
            ``W``'s precision (``icml26_core.decentralized.default_mixing_atol``:
            ``1e-10`` for float64, ``4 sqrt(n) eps`` for float32).

    Returns:
        A :class:`SpectralProfile`.

    Raises:
        TypeError: If ``W`` is a topology name (use ``mixing_schedule(name, n).W``) or
            ``zeta`` is not numeric.
        ValueError: If ``W`` is not square, has negative weights, is not doubly
            stochastic to ``atol``, not symmetric (the eigen-decomposition needs it) or
            disconnected; if ``zeta`` has the wrong number of rows or non-finite
            entries.

    Example:
        >>> from dsgd_topology import mixing_matrix, topology
        >>> p = spectral_profile(mixing_matrix(topology("ring", 16)))
        >>> round(p.inverse_gap, 2), round(p.all_eigenvalue, 3)
        (19.71, 1.472)
    """
    _not_a_name(W, "W")
    if atol is not None:
        atol = check_float("atol", atol, low=0.0, low_inclusive=False)
    M = check_mixing_matrix(W, symmetric=True, connected=True, atol=atol, name="W")
    n = M.shape[0]
    vals, vecs = np.linalg.eigh(0.5 * (M + M.T))
    order = np.argsort(-vals, kind="stable")
    vals, vecs = vals[order], vecs[:, order]
    vals[0] = 1.0
    vals[np.abs(vals) < 1e-12] = 0.0  # round-off of exact zeros (complete graph)
    rest = vals[1:]
    beta = float(np.max(np.abs(rest))) if n > 1 else 0.0
    lam2 = float(rest[0]) if n > 1 else 0.0
    all_eig = float(np.sum(rest**2 / (1.0 - rest**2))) / n if n > 1 else 0.0
    zeta_modes = None
    het = None
    if zeta is not None:
        Z = _as_zeta(zeta, n)
        proj = vecs.T @ Z  # (n, d): row k is zeta_k
        zeta_modes = np.sum(proj * proj, axis=1)
        zeta_modes[0] = 0.0  # the mean was removed; round-off only
        het = float(np.sum(rest**2 * zeta_modes[1:] / (1.0 - rest) ** 2)) / n
    return SpectralProfile(
        eigenvalues=vals,
        eigenvectors=vecs,
        lambda_2=lam2,
        beta=beta,
        spectral_gap=1.0 - beta,
        inverse_gap=1.0 / (1.0 - beta) if beta < 1 else float("inf"),
        all_eigenvalue=all_eig,
        gap_heterogeneous=lam2**2 / (1.0 - lam2) ** 2,
        heterogeneous=het,
        zeta_modes=zeta_modes,
        n=n,
    )


@dataclass(frozen=True)
class ScheduleProfile:
    """The predictors of :class:`SpectralProfile` for a time-varying schedule ``t -> W_t``.

    A time-varying topology (the one-peer exponential graph) has no single spectrum.
    In the same linear-noise model, the consensus deviations ``D = (I - J) X`` obey
    ``D <- W_t (D - eta (I - J) G)`` (atc), so their stationary second moments follow
    from the exact recursions, over the nodes only (n x n, independent of the model
    size), in units of ``eta^2 sigma^2`` and ``eta^2``:

    - noise: ``C <- W_t (C + P) W_t^T`` (``P = I - J``), the homogeneous factor is the
      time average of ``tr(C_t) / n`` at the periodic steady state;
    - bias: ``B <- W_t (B + P)``, ``Xi_het / eta^2`` is the time average of
      ``||B_t Z||_F^2 / n``, i.e. ``tr(Z^T M Z) / n`` with ``M = mean_t B_t^T B_t``.

    For a static ``W`` both equal :class:`SpectralProfile`'s closed forms (the
    all-eigenvalue mean and ``Xi_het``). The gap analog is the per-round contraction
    over one period, ``beta = ||W_{p-1} ... W_0 - J||_2^(1/p)`` (``0`` for the one-peer
    exponential graph on a power of two: exact averaging in ``log2 n`` rounds).

    Attributes:
        period: Rounds after which the schedule repeats.
        beta: The per-round contraction factor above.
        inverse_gap: ``1 / (1 - beta)``.
        all_eigenvalue: Time-averaged stationary ``Xi_hom / (eta^2 sigma^2)``.
        gap_heterogeneous: ``beta^2 / (1 - beta)^2``.
        heterogeneous: Time-averaged ``Xi_het / eta^2`` for the given ``zeta``, or None.
        bias_matrix: float64 (n, n), ``M`` above (``heterogeneous = tr(Z^T M Z) / n``).
        n: Number of nodes.
        order, mu, eta_mu: The order and curvature factor the recursions used.
    """

    period: int
    beta: float
    inverse_gap: float
    all_eigenvalue: float
    gap_heterogeneous: float
    heterogeneous: float | None
    bias_matrix: np.ndarray
    n: int
    order: str = "atc"
    eta_mu: float = 0.0

    def with_zeta(self, zeta: Any) -> ScheduleProfile:
        """The same profile with :attr:`heterogeneous` computed for ``zeta`` (n, ...)."""
        Z = _as_zeta(zeta, self.n)
        het = float(np.sum(Z * (self.bias_matrix @ Z))) / self.n
        return ScheduleProfile(**{**self.__dict__, "heterogeneous": het})

    def predicted_consensus(self, eta: float, sigma2: float = 0.0) -> float:
        """Stationary time-averaged consensus error ``eta^2 (sigma2 * hom + het)``.

        Args:
            eta: Step size, > 0 (the curvature factor ``eta mu`` was fixed when the
                profile was computed).
            sigma2: Gradient-noise variance per node, ``E||xi_i||^2``, >= 0.

        Raises:
            ValueError: On a non-positive ``eta`` or a negative ``sigma2``.
        """
        eta = check_float("eta", eta, low=0.0, low_inclusive=False)
        sigma2 = check_float("sigma2", sigma2, low=0.0)
        het = 0.0 if self.heterogeneous is None else self.heterogeneous
        return eta**2 * (sigma2 * self.all_eigenvalue + het)


def _period(schedule: Any, n: int, max_period: int) -> int:
    first = [np.asarray(schedule(t), dtype=np.float64) for t in range(max_period)]
    for p in range(1, max_period // 2 + 1):
        if all(np.array_equal(first[t], first[t + p]) for t in range(max_period - p)):
            return p
    raise ValueError(f"the schedule does not repeat within {max_period // 2} rounds; pass period")


def schedule_profile(
    schedule: Any,
    zeta: Any = None,
    *,
    period: int | None = None,
    eta_mu: float = 0.0,
    order: str = "atc",
    tol: float = 1e-12,
    max_rounds: int = 1_000_000,
) -> ScheduleProfile:
    """Stationary consensus predictors of a (time-varying) mixing schedule.

    Args:
        schedule: A :class:`~dsgd_topology.MixingSchedule` or any function ``t ->
            W_t`` with an ``n`` attribute, or a fixed (n, n) matrix; every ``W_t``
            doubly stochastic.
        zeta: Optional local gradient biases, one row per node (as in
            :func:`spectral_profile`).
        period: Rounds after which the schedule repeats; found by comparing the first
            rounds when None (the one-peer exponential graph: ``ceil(log2 n)``).
        eta_mu: Curvature factor ``eta * mu`` >= 0 of ``mu/2 ||x||^2`` losses (0: the
            linear-noise model).
        order: ``"atc"`` or ``"cta"``.
        tol: Relative change of the period averages at which the recursion stops.
        max_rounds: Cap on the rounds iterated.

    Returns:
        A :class:`ScheduleProfile`.

    Raises:
        TypeError: If ``schedule`` is a topology name (use ``mixing_schedule(name, n)``).
        ValueError: If ``tol`` is not positive, ``max_rounds`` < 1, ``period`` < 1,
            ``eta_mu`` outside [0, 1), a ``W_t`` is not doubly stochastic or has
            negative weights, the product over a period does not contract (the union
            graph is disconnected), no period is found, or the recursion does not
            converge in ``max_rounds``.

    Example:
        >>> from dsgd_topology import mixing_schedule
        >>> p = schedule_profile(mixing_schedule("one_peer_exponential", 16))
        >>> p.period, round(p.beta, 6), round(p.all_eigenvalue, 4)
        (4, 0.0, 0.6875)
    """
    from icml26_core.validation import check_int

    check_choice("order", order, ORDERS)
    eta_mu = check_float("eta_mu", eta_mu, low=0.0, high=1.0, high_inclusive=False)
    tol = check_float("tol", tol, low=0.0, low_inclusive=False)
    max_rounds = check_int("max_rounds", max_rounds, low=1)
    _not_a_name(schedule, "schedule")
    if hasattr(schedule, "static") and schedule.static:
        mats = [check_mixing_matrix(schedule.W, symmetric=False, name="schedule")]
    elif callable(schedule):
        n0 = getattr(schedule, "n", None)
        if n0 is None:
            raise ValueError("schedule must have an n attribute (use MixingSchedule(fn, n=n))")
        p = _period(schedule, int(n0), 2 * int(n0) + 2) if period is None else period
        p = check_int("period", p, low=1)
        mats = [
            check_mixing_matrix(schedule(t), symmetric=False, connected=False, name="schedule")
            for t in range(p)
        ]
    else:
        mats = [check_mixing_matrix(schedule, symmetric=False, name="schedule")]
    n = mats[0].shape[0]
    p = len(mats)
    J = np.full((n, n), 1.0 / n)
    P = np.eye(n) - J
    Phi = np.eye(n)
    for W in mats:
        Phi = W @ Phi
    contraction = float(np.linalg.norm(Phi - J, 2))
    if contraction >= 1.0 - 1e-12:
        raise ValueError(
            "the product of one period of W_t does not contract (disconnected union graph)"
        )
    beta = contraction ** (1.0 / p)
    beta = 0.0 if beta < 1e-9 else beta
    rho = 1.0 - eta_mu
    C = np.zeros((n, n))
    B = np.zeros((n, n))
    prev_hom = prev_m = None
    rounds = 0
    while True:
        hom, M = 0.0, np.zeros((n, n))
        for W in mats:
            if order == "atc":
                C = W @ (rho**2 * C + P) @ W.T
                B = W @ (rho * B + P)
            else:
                C = (W - eta_mu * np.eye(n)) @ C @ (W - eta_mu * np.eye(n)).T + P
                B = (W - eta_mu * np.eye(n)) @ B + P
            hom += float(np.trace(C)) / n / p
            M += B.T @ B / p
        rounds += p
        if prev_hom is not None and prev_m is not None:
            if abs(hom - prev_hom) <= tol * max(hom, 1e-300) and np.max(
                np.abs(M - prev_m)
            ) <= tol * max(float(np.max(np.abs(M))), 1e-300):
                break
        if rounds >= max_rounds:
            raise ValueError(f"the recursion did not converge in {max_rounds} rounds")
        prev_hom, prev_m = hom, M
    prof = ScheduleProfile(
        period=p,
        beta=beta,
        inverse_gap=1.0 / (1.0 - beta),
        all_eigenvalue=hom,
        gap_heterogeneous=beta**2 / (1.0 - beta) ** 2,
        heterogeneous=None,
        bias_matrix=M,
        n=n,
        order=order,
        eta_mu=eta_mu,
    )
    return prof if zeta is None else prof.with_zeta(zeta)
