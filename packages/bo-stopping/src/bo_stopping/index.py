"""The Pandora's Box Gittins index of a Gaussian belief, solved in log space.

For a point whose value is believed to be ``f ~ N(mu, sigma^2)`` and whose
evaluation costs ``c``, the Gittins index (Weitzman's reservation value) with
cost multiplier ``lmbda`` is the unique ``g`` with

    E[(f - g)^+] = sigma * h((mu - g) / sigma) = lmbda * c,   h(u) = phi(u) + u Phi(u).

``h`` is increasing and log-concave, so we solve ``log h(u) = log(lmbda c) - log sigma``
for ``u`` by a safeguarded Newton iteration started left of the root (where it
converges monotonically), and return ``g = mu - sigma * u``. ``log h`` is
:func:`log_h`, our own evaluation through the Mills ratio (public BoTorch and torch
special functions only), accurate far into the tails, so the index stays finite and
smooth when ``lmbda * c / sigma`` is tiny (``u -> -inf``) or huge.

The gradient is obtained by implicit differentiation of
``F(g, mu, sigma, c) = sigma h((mu - g)/sigma) - lmbda c = 0``:

    dg/dmu = 1,   dg/dsigma = phi(u) / Phi(u),   dg/dlog(lmbda c) = -lmbda c / Phi(u),

each evaluated as an exponential of a difference of logs.

References:
    The paper: "Cost-aware stopping for Bayesian optimization" (ICML 2026,
    abstract only); the index: Weitzman (1979), "Optimal search
    for the best alternative", and Xie et al. (2024), "Cost-aware Bayesian
    optimization via the Pandora's Box Gittins index".
"""

from __future__ import annotations

import math

import torch
from botorch.utils.probability.utils import log_ndtr, log_phi
from botorch.utils.safe_math import log1mexp
from torch import Tensor

__all__ = ["gittins_index", "log_expected_improvement_at", "log_h", "solve_scaled_index"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_SQRT_PI_OVER_2 = 0.5 * math.log(math.pi / 2)
_NEWTON_STEPS = 100


def log_h(u: Tensor) -> Tensor:
    r"""``log h(u)`` with ``h(u) = phi(u) + u Phi(u) = E[(Z + u)^+]``, ``Z ~ N(0, 1)``.

    ``sigma * h((mu - t) / sigma)`` is the expected improvement of ``N(mu, sigma^2)``
    over ``t``. For ``u > -1`` the sum is computed as written. For ``u <= -1`` the two
    terms nearly cancel, so we write ``h(u) = phi(u) (1 - |u| R(|u|))`` with the Mills
    ratio ``R(z) = Phi(-z) / phi(z) = sqrt(pi / 2) erfcx(z / sqrt(2))``, and take
    ``log1mexp`` of ``log(|u| R(|u|))``. Beyond ``|u| > 1 / sqrt(eps)`` that logarithm
    rounds to 0; there the asymptotic expansion ``1 - z R(z) = z^-2 (1 + O(z^-2))`` gives
    ``log h(u) = log phi(u) - 2 log|u|``. Masked branches keep gradients finite.

    Args:
        u: Tensor of any shape, float32 or float64.

    Returns:
        ``log h(u)``, same shape and dtype; differentiable (``d log h / du = Phi(u) / h(u)``).

    Raises:
        TypeError: If ``u`` is not float32 or float64.

    References:
        Mills ratio and its asymptotic series: Abramowitz & Stegun (1964), 7.1.23 and
        26.2.12; the same rearrangement is used by Ament et al. (2023), "Unexpected
        improvements to expected improvement for Bayesian optimization" (LogEI).

    Example:
        >>> float(log_h(torch.tensor(0.0, dtype=torch.float64)))  # log phi(0)
        -0.9189...
    """
    if u.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"u must be float32 or float64, got {u.dtype}")
    cut = -1.0
    big = -1e6 if u.dtype == torch.float64 else -1e3
    u_up = u.masked_fill(u < cut, cut)  # masked_fill keeps gradients at the cut
    phi_up = torch.exp(log_phi(u_up))
    log_up = torch.log(phi_up + u_up * torch.special.ndtr(u_up))
    u_lo = u.masked_fill(u > cut, cut)
    z = -u_lo.masked_fill(u_lo < big, big)  # in [1, 1e6]: the Mills-ratio branch
    log_zr = torch.log(z) + _LOG_SQRT_PI_OVER_2 + torch.log(torch.special.erfcx(z / math.sqrt(2)))
    tail = torch.where(
        u_lo > big, log1mexp(log_zr.clamp_max(-torch.finfo(u.dtype).tiny)), -2 * torch.log(-u_lo)
    )
    log_lo = log_phi(u_lo) + tail
    return torch.where(u > cut, log_up, log_lo)


def solve_scaled_index(log_target: Tensor) -> Tensor:
    """Solve ``log h(u) = log_target`` for ``u``, elementwise, with ``h(u) = phi(u) + u Phi(u)``.

    Args:
        log_target: Tensor of any shape, float32/float64, the right-hand side
            ``log(lmbda * c) - log(sigma)``; ``+inf`` gives ``+inf``, ``-inf`` gives ``-inf``.

    Returns:
        ``u`` with the shape and dtype of ``log_target`` (no gradient is tracked).

    Example:
        >>> u = solve_scaled_index(torch.tensor([-5.0, 0.0, 5.0], dtype=torch.float64))
    """
    y = log_target.detach()
    finite = torch.isfinite(y)
    y_f = torch.where(finite, y, torch.zeros_like(y))
    # Two lower bounds on the root, valid where stated, so Newton starts on its left:
    # h(u) <= phi(u)/(1+u^2) for u <= 0 gives u_tail with log phi(u_tail) = y;
    # h(u) <= phi(0) + u for u >= 0 gives exp(y) - phi(0).
    u_tail = -torch.sqrt(torch.clamp(-2.0 * (y_f + _LOG_SQRT_2PI), min=0.0))
    u_body = torch.clamp(torch.exp(torch.clamp(y_f, max=700.0)) - 0.4, min=0.0)
    u = torch.where(y_f < -_LOG_SQRT_2PI, u_tail, u_body)
    tol = 4 * torch.finfo(u.dtype).eps
    for _ in range(_NEWTON_STEPS):
        lh = log_h(u)
        # d log h / du = Phi(u) / h(u) > 0; log h concave, so from the left each step
        # stays left of the root and moves right (monotone convergence).
        slope = torch.exp(log_ndtr(u) - lh)
        step = (y_f - lh) / slope
        u_new = u + torch.clamp(step, min=0.0)
        if torch.all(torch.abs(u_new - u) <= tol * (1.0 + torch.abs(u))):
            u = u_new
            break
        u = u_new
    inf = torch.full_like(u, math.inf)
    return torch.where(finite, u, torch.where(y > 0, inf, -inf))


class _GittinsIndex(torch.autograd.Function):
    """``g(mu, sigma, log(lmbda c))`` with the implicit-function gradient."""

    @staticmethod
    def forward(mean: Tensor, sigma: Tensor, log_cost: Tensor) -> Tensor:  # type: ignore[override]
        u = solve_scaled_index(log_cost - torch.log(sigma))
        return mean - sigma * u

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:  # type: ignore[override]
        mean, sigma, log_cost = inputs
        ctx.save_for_backward(mean, sigma, log_cost, output)

    @staticmethod
    def backward(ctx, grad_out: Tensor):  # type: ignore[override]
        mean, sigma, log_cost, g = ctx.saved_tensors
        u = (mean - g) / sigma
        log_Phi = log_ndtr(u)
        d_sigma = torch.exp(log_phi(u) - log_Phi)
        d_log_cost = -torch.exp(log_cost - log_Phi)
        return grad_out, grad_out * d_sigma, grad_out * d_log_cost


def gittins_index(
    mean: Tensor, sigma: Tensor, cost: Tensor | float, lmbda: float = 1.0, *, log_cost: bool = False
) -> Tensor:
    """Pandora's Box Gittins index of ``N(mean, sigma^2)`` with evaluation cost ``lmbda * cost``.

    The index ``g`` solves ``E[(f - g)^+] = lmbda * cost`` for ``f ~ N(mean, sigma^2)``
    (maximization). Opening the box (evaluating the point) is worth its cost
    exactly when ``g`` exceeds the best value in hand.

    Args:
        mean: Posterior mean, any shape, float32/float64, objective units.
        sigma: Posterior standard deviation, broadcastable to ``mean``, > 0.
        cost: Evaluation cost (objective units), broadcastable, > 0; or its
            logarithm if ``log_cost=True`` (then any real value).
        lmbda: Cost multiplier ``lambda > 0`` (1 when costs are already in
            objective units).
        log_cost: Whether ``cost`` is given as ``log(cost)``.

    Returns:
        The index, with the broadcast shape of the inputs; differentiable in
        ``mean``, ``sigma`` and ``cost`` by implicit differentiation.

    Raises:
        ValueError: If ``lmbda <= 0``, if ``sigma`` has an entry <= 0, or if
            ``cost`` has an entry <= 0 (when ``log_cost=False``).

    Example:
        >>> g = gittins_index(torch.tensor(0.0), torch.tensor(1.0), 0.1)
        >>> float(g)  # EI(g) = 0.1 for a standard normal: g is about 0.90
        0.9...
    """
    if not isinstance(lmbda, int | float) or not math.isfinite(lmbda) or lmbda <= 0:
        raise ValueError(f"lmbda must be a finite number > 0, got {lmbda!r}")
    mean = torch.as_tensor(mean)
    sigma = torch.as_tensor(sigma, dtype=mean.dtype, device=mean.device)
    cost = torch.as_tensor(cost, dtype=mean.dtype, device=mean.device)
    if torch.any(sigma <= 0):
        raise ValueError(f"sigma must be > 0 everywhere, got min {float(sigma.min())}")
    if log_cost:
        log_c = cost
    else:
        if torch.any(cost <= 0):
            raise ValueError(f"cost must be > 0 everywhere, got min {float(cost.min())}")
        log_c = torch.log(cost)
    mean, sigma, log_c = torch.broadcast_tensors(mean, sigma, log_c + math.log(lmbda))
    return _GittinsIndex.apply(mean, sigma, log_c)


def log_expected_improvement_at(mean: Tensor, sigma: Tensor, threshold: Tensor | float) -> Tensor:
    """``log E[(f - threshold)^+]`` for ``f ~ N(mean, sigma^2)``, stable in the tails.

    Args:
        mean: Posterior mean, any shape.
        sigma: Posterior standard deviation, broadcastable, > 0.
        threshold: The value to improve on, broadcastable.

    Returns:
        The log expected improvement, broadcast shape.
    """
    mean = torch.as_tensor(mean)
    sigma = torch.as_tensor(sigma, dtype=mean.dtype, device=mean.device)
    threshold = torch.as_tensor(threshold, dtype=mean.dtype, device=mean.device)
    return log_h((mean - threshold) / sigma) + torch.log(sigma)
