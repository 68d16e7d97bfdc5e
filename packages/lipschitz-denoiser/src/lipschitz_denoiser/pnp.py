r"""Plug-and-play reconstruction: forward-backward and Douglas-Rachford with a denoiser.

For ``y = A x + noise`` and the data term :math:`f(x) = \tfrac12\|Ax - y\|^2`:

* forward-backward (PnP-FB): :math:`x_{k+1} = T x_k = D(x_k - \gamma A^\top(A x_k - y))`.
  With :math:`0 < \gamma \le 2/\|A\|^2` the gradient step has Lipschitz constant
  :math:`\max(1, |1 - \gamma\|A\|^2|) = 1`, so :math:`\mathrm{Lip}(T) \le \mathrm{Lip}(D)`:
  if D is a strict contraction (``PermutationDenoiser`` with ``lipschitz < 1``), T is a
  contraction, its fixed point is unique and the iterates converge to it
  geometrically from any start (Banach).
* Douglas-Rachford (PnP-DR, Ryu et al. 2019):
  :math:`x_k = \mathrm{prox}_{\gamma f}(z_k)`, :math:`z_{k+1} = z_k + D(2x_k - z_k) - x_k`,
  i.e. :math:`z_{k+1} = \tfrac12(I + R_D R_f) z_k` with reflections
  :math:`R = 2(\cdot) - I`. :math:`R_f` is nonexpansive for convex f, so
  :math:`\mathrm{Lip} \le \tfrac12(1 + \mathrm{Lip}(2D - I))` and the iteration is a
  contraction when :math:`2D - I` is one (``PermutationDenoiser`` with
  ``max_skip <= 0.5`` and ``lipschitz < 1``; see ``reflection_bound``).

References:
    The ICML 2026 paper (abstract only).
    Venkatakrishnan, Bouman, Wohlberg (2013), Plug-and-play priors for model based
    reconstruction. Ryu, Liu, Wang, Chen, Wang, Yin (2019), Plug-and-play methods
    provably converge with properly trained denoisers, ICML.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from lipschitz_denoiser._validation import check_image_batch, check_positive_int
from lipschitz_denoiser.operators import ImagingOperator

__all__ = ["PnPResult", "pnp_douglas_rachford", "pnp_forward_backward"]

Denoiser = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class PnPResult:
    """Outcome of a plug-and-play run.

    Attributes:
        x: The reconstruction (N, C, H, W).
        residuals: Fixed-point residual per iteration, ``||u_{k+1} - u_k|| / sqrt(numel)``
            (root mean square per pixel) of the iterated variable ``u`` (x for FB, z for DR).
        iterations: Iterations run.
        converged: Whether the last residual fell below ``tol``.
    """

    x: torch.Tensor
    residuals: list[float] = field(default_factory=list)
    iterations: int = 0
    converged: bool = False


def _check_common(y, operator, denoiser, iters, tol) -> None:
    check_image_batch(y, "y")
    if not isinstance(operator, ImagingOperator):
        raise TypeError(f"operator must be an ImagingOperator, got {type(operator).__name__}")
    if not callable(denoiser):
        raise TypeError(f"denoiser must be callable x -> D(x), got {type(denoiser).__name__}")
    check_positive_int(iters, "iters")
    if not (isinstance(tol, int | float) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")


def _norm_squared(operator, y) -> float:
    norm_sq = operator.norm_squared(tuple(operator.adjoint(y).shape))
    if not (math.isfinite(norm_sq) and norm_sq > 0):
        raise ValueError(
            f"operator must be nonzero with a finite norm, got ||A||^2 = {norm_sq} "
            "(e.g. a mask that observes no pixel)"
        )
    return norm_sq


def _start(y, operator, x0, norm_sq) -> torch.Tensor:
    if x0 is None:
        # A^T y / ||A||^2: the blurred image for a blur, nearest upsampling for SR.
        return operator.adjoint(y) / norm_sq
    check_image_batch(x0, "x0")
    return x0.clone()


def _rms(d: torch.Tensor) -> float:
    return float(d.norm() / math.sqrt(d.numel()))


@torch.no_grad()
def pnp_forward_backward(
    y: torch.Tensor,
    operator: ImagingOperator,
    denoiser: Denoiser,
    *,
    step: float | None = None,
    iters: int = 100,
    x0: torch.Tensor | None = None,
    tol: float = 0.0,
) -> PnPResult:
    r"""Plug-and-play forward-backward splitting :math:`x \leftarrow D(x - \gamma A^\top(Ax - y))`.

    Args:
        y: Measurements (N, C, h, w), the shape ``operator`` produces.
        operator: The forward operator ``A`` (blur, downsampling, mask, ...).
        denoiser: Callable ``D``: (N, C, H, W) -> (N, C, H, W), e.g.
            ``lambda x: model(x, sigma=0.02)``; called under ``torch.no_grad``.
        step: :math:`\gamma` in (0, 2 / ||A||^2]; default ``1 / ||A||^2``.
        iters: Maximum number of iterations, >= 1.
        x0: Start (N, C, H, W); default ``A^T y / ||A||^2``. Not modified.
        tol: Stop when the RMS fixed-point residual falls below ``tol`` (0: never).

    Returns:
        :class:`PnPResult` with the last iterate and the residual history.

    Raises:
        TypeError: If ``operator`` is not an ``ImagingOperator`` or ``denoiser`` is not callable.
        ValueError: On a step outside (0, 2/||A||^2], a zero operator, a bad shape, NaN
            or ``iters < 1``.

    Example:
        >>> from lipschitz_denoiser import Blur, gaussian_kernel
        >>> A = Blur(gaussian_kernel(5, 1.0))
        >>> y = A(torch.rand(1, 1, 32, 32))
        >>> res = pnp_forward_backward(y, A, lambda x: 0.9 * x, iters=50)
        >>> res.residuals[-1] < res.residuals[0]
        True
    """
    _check_common(y, operator, denoiser, iters, tol)
    norm_sq = _norm_squared(operator, y)
    gamma = 1.0 / norm_sq if step is None else step
    if not (isinstance(gamma, int | float) and 0 < gamma <= 2.0 / norm_sq * (1 + 1e-9)):
        raise ValueError(f"step must lie in (0, 2/||A||^2 = {2.0 / norm_sq:.4g}], got {step!r}")
    x = _start(y, operator, x0, norm_sq)
    result = PnPResult(x=x)
    for k in range(iters):
        x_new = denoiser(x - gamma * operator.adjoint(operator(x) - y))
        result.residuals.append(_rms(x_new - x))
        x = x_new
        result.iterations = k + 1
        if tol > 0 and result.residuals[-1] < tol:
            result.converged = True
            break
    result.x = x
    return result


@torch.no_grad()
def pnp_douglas_rachford(
    y: torch.Tensor,
    operator: ImagingOperator,
    denoiser: Denoiser,
    *,
    gamma: float = 1.0,
    iters: int = 100,
    x0: torch.Tensor | None = None,
    tol: float = 0.0,
) -> PnPResult:
    r"""Plug-and-play Douglas-Rachford splitting (PnP-DRS of Ryu et al., 2019).

    :math:`x_k = \mathrm{prox}_{\gamma f}(z_k)`, :math:`z_{k+1} = z_k + D(2x_k - z_k) - x_k`,
    returning :math:`x = \mathrm{prox}_{\gamma f}(z)` at the last ``z``.

    Args:
        y: Measurements (N, C, h, w).
        operator: The forward operator ``A``; its ``prox_data`` is used.
        denoiser: Callable ``D`` as in :func:`pnp_forward_backward`.
        gamma: Weight of the data term in the prox, > 0.
        iters: Maximum number of iterations, >= 1.
        x0: Start of ``z`` (N, C, H, W); default ``A^T y / ||A||^2``. Not modified.
        tol: Stop when the RMS residual of ``z`` falls below ``tol`` (0: never).

    Returns:
        :class:`PnPResult`; ``residuals`` are those of ``z``.

    Raises:
        TypeError: As :func:`pnp_forward_backward`.
        ValueError: If ``gamma <= 0``, the operator is zero, or on bad shapes.
    """
    _check_common(y, operator, denoiser, iters, tol)
    if not (isinstance(gamma, int | float) and math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be a positive number, got {gamma!r}")
    norm_sq = _norm_squared(operator, y)
    z = _start(y, operator, x0, norm_sq)
    result = PnPResult(x=z)
    for k in range(iters):
        x = operator.prox_data(z, y, gamma)
        z_new = z + denoiser(2 * x - z) - x
        result.residuals.append(_rms(z_new - z))
        z = z_new
        result.iterations = k + 1
        if tol > 0 and result.residuals[-1] < tol:
            result.converged = True
            break
    result.x = operator.prox_data(z, y, gamma)
    return result
