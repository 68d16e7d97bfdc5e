r"""Functional forms of the updates: base rules, and the POGO and Landing manifold steps.

An orthogonal step is split in two visible pieces, as in optax:

1. a *base rule* maps the Euclidean gradient ``G`` of a parameter to a Euclidean
   direction ``D`` and updates its own state (momentum, Adam moments): :func:`sgd_direction`,
   :func:`adam_direction`, :func:`vadam_direction`, or a rule registered with
   :func:`register_base_rule`;
2. a *manifold step* moves the point along ``D`` while keeping it on the Stiefel
   manifold: :func:`pogo_update` (POGO) or :func:`landing_update` (Landing).

The manifold steps take points in the rows layout, ``X`` of shape ``(..., p, n)``
with ``X X^H = I_p`` (the optimizers transpose column-orthonormal parameters first);
they never invert or decompose a matrix, and every product is a batched matmul
of a ``(..., p, n)`` or ``(..., p, p)`` operand. Real and complex tensors are both
supported: ``^H`` is the conjugate transpose (the plain transpose for real tensors),
and complex points are unitary (``p = n``) or have orthonormal complex rows. The
gradient of a complex parameter is torch's (the conjugate Wirtinger derivative,
the steepest-ascent direction for the real inner product ``Re tr(A^H B)``).

A step count ``step`` is a Python number, or a tensor (0-d, or of shape ``(k,)``
for ``k`` stacked parameters, one count each) when the caller must not read it on
the host (CUDA graphs, ``torch.compile``); the base rules accept both.

References:
    POGO: the ICML 2026 paper (abstract only; the authors' release is
    ``pogo-torch``, https://github.com/adrianjav/pogo).
    Landing: P. Ablin, S. Vary, B. Gao, P.-A. Absil, "Infeasible deterministic,
    stochastic, and variance-reduction algorithms for optimization under
    orthogonality constraints", JMLR 2024; P. Ablin and G. Peyré, "Fast and accurate
    optimization on the orthogonal manifold without retraction", AISTATS 2022.
    VectorAdam: S. Ling, N. Sharp, A. Jacobson, "VectorAdam for rotation equivariant
    geometry optimization", NeurIPS 2022.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import torch
from icml26_core.validation import check_float, check_int

Tensor = torch.Tensor
Step = int | float | Tensor
LR = float | Tensor

#: Default largest step ``eta ||R||_F`` (per matrix) that POGO takes; see :func:`pogo_update`.
DEFAULT_MAX_STEP = 0.1

# --------------------------------------------------------------------------- base rules


def _leading(t: Tensor, ndim: int) -> Tensor:
    """Reshape a ``(k,)`` per-parameter tensor so it broadcasts over ``ndim`` dims."""
    if t.dim() == 1 and ndim > 1:
        return t.reshape(-1, *([1] * (ndim - 1)))
    return t


def _bias_corrections(step: Step, betas: tuple[float, float], like: Tensor):
    """``(1 - beta1^t, sqrt(1 - beta2^t))`` as floats, or as tensors for a tensor ``t``.

    A tensor count is cast to the real dtype of ``like`` first, so that a float64
    update gets float64 corrections (a float32 count is exact up to 2^24 steps).
    """
    beta1, beta2 = betas
    if isinstance(step, Tensor):
        t = step.to(like.real.dtype if like.is_complex() else like.dtype)
        return 1.0 - torch.pow(beta1, t), (1.0 - torch.pow(beta2, t)).sqrt()
    return 1.0 - beta1**step, math.sqrt(1.0 - beta2**step)


def sgd_direction(
    grad: Tensor,
    state: MutableMapping[str, Any],
    *,
    momentum: float = 0.0,
    dampening: float = 0.0,
    nesterov: bool = False,
    step: Step | None = None,
) -> Tensor:
    r"""SGD with (heavy-ball or Nesterov) momentum, exactly as :class:`torch.optim.SGD`.

    .. math::
        b_t = \mu b_{t-1} + (1 - \tau) g_t \ (b_1 = g_1), \qquad
        d_t = g_t + \mu b_t \text{ (Nesterov) or } b_t.

    Args:
        grad: Gradient ``g_t``, any shape, real or complex.
        state: Per-parameter state; ``"momentum_buffer"`` is created and updated in place.
        momentum: Momentum factor ``mu >= 0`` (0 disables the buffer).
        dampening: Dampening ``tau`` of the momentum.
        nesterov: Use Nesterov momentum.
        step: Step count ``t``. Only a tensor count matters: then the buffer starts at
            zero and ``b_1 = g_1`` is selected with ``torch.where`` (no host read).

    Returns:
        The direction ``d_t`` (a new tensor or the buffer; do not modify it in place).
    """
    if momentum == 0.0:
        return grad
    buf = state.get("momentum_buffer")
    if isinstance(step, Tensor):
        if buf is None:
            buf = torch.zeros_like(grad, memory_format=torch.preserve_format)
            state["momentum_buffer"] = buf
        first = _leading(step == 1, grad.dim())
        buf.copy_(torch.where(first, grad, buf * momentum + (1.0 - dampening) * grad))
    elif buf is None:
        buf = torch.clone(grad)  # tracked by autograd only in differentiable mode
        state["momentum_buffer"] = buf
    else:
        buf.mul_(momentum).add_(grad, alpha=1.0 - dampening)
    return grad.add(buf, alpha=momentum) if nesterov else buf


def adam_direction(
    grad: Tensor,
    state: MutableMapping[str, Any],
    *,
    step: Step,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> Tensor:
    r"""Adam's direction (elementwise second moment), as :class:`torch.optim.Adam` steps.

    .. math::
        m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t,\quad
        v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2,\quad
        d_t = \frac{m_t / (1-\beta_1^t)}{\sqrt{v_t / (1-\beta_2^t)} + \epsilon}.

    Complex gradients are treated as pairs of reals (``torch.view_as_real``), as
    :class:`torch.optim.Adam` does. On an orthogonal parameter the elementwise scaling
    is not rotation-equivariant, so POGO's fixed points are then critical points of a
    rescaled gradient field; prefer :func:`vadam_direction` there.

    Args:
        grad: Gradient ``g_t``, any shape (``(k, ...)`` with a ``(k,)`` step tensor).
        state: Per-parameter state; ``"exp_avg"`` and ``"exp_avg_sq"`` created/updated.
        step: Step count ``t >= 1`` (for the bias corrections): a number or a tensor.
        betas: ``(beta1, beta2)`` in ``[0, 1)``.
        eps: Added to the denominator.

    Returns:
        The direction ``d_t``, a new tensor of ``grad``'s shape and dtype.
    """
    if "exp_avg" not in state:
        state["exp_avg"] = torch.zeros_like(grad, memory_format=torch.preserve_format)
        state["exp_avg_sq"] = torch.zeros_like(grad, memory_format=torch.preserve_format)
    m, v, g = state["exp_avg"], state["exp_avg_sq"], grad
    if grad.is_complex():
        m, v, g = torch.view_as_real(m), torch.view_as_real(v), torch.view_as_real(grad)
    m.lerp_(g, 1.0 - betas[0])
    v.mul_(betas[1]).addcmul_(g, g, value=1.0 - betas[1])
    bc1, bc2_sqrt = _bias_corrections(step, betas, g)
    if isinstance(bc1, Tensor):
        bc1, bc2_sqrt = _leading(bc1, g.dim()), _leading(bc2_sqrt, g.dim())
    denom = (v.sqrt() / bc2_sqrt).add_(eps)
    d = (m / bc1).div_(denom)
    return torch.view_as_complex(d) if grad.is_complex() else d


def vadam_direction(
    grad: Tensor,
    state: MutableMapping[str, Any],
    *,
    step: Step,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> Tensor:
    r"""VectorAdam: Adam with one second moment per matrix (rotation-equivariant).

    The second moment tracks the squared Frobenius norm of each matrix's gradient
    (reduced over the last two dimensions; over the last one for a 1-D tensor):

    .. math::
        v_t = \beta_2 v_{t-1} + (1-\beta_2)\,\|g_t\|_F^2,\qquad
        d_t = \frac{m_t / (1-\beta_1^t)}{\sqrt{v_t / (1-\beta_2^t)} + \epsilon},

    so ``||d_t||_F`` is about 1 and ``lr`` is the length of a step in Frobenius norm,
    and ``d_t`` rotates with the gradient (``g -> Q g`` gives ``d -> Q d``, ``Q``
    orthogonal or unitary), which keeps POGO's fixed points at Riemannian critical
    points. For complex gradients ``||g||_F^2 = sum |g_ij|^2``.

    Args:
        grad: Gradient ``g_t`` of shape ``(..., p, n)`` (or ``(n,)``), real or complex.
        state: Per-parameter state; ``"exp_avg"`` (like ``grad``) and ``"exp_avg_sq"``
            (shape ``grad.shape[:-2]``, real) created/updated.
        step: Step count ``t >= 1``: a number or a tensor (0-d, or ``(k,)`` for a
            stacked ``(k, ...)`` gradient).
        betas: ``(beta1, beta2)`` in ``[0, 1)``.
        eps: Added to the denominator.

    Returns:
        The direction ``d_t``, a new tensor of ``grad``'s shape and dtype.
    """
    dims = (-2, -1) if grad.dim() >= 2 else (-1,)
    if "exp_avg" not in state:
        real = grad.real.dtype if grad.is_complex() else grad.dtype
        state["exp_avg"] = torch.zeros_like(grad, memory_format=torch.preserve_format)
        state["exp_avg_sq"] = grad.new_zeros(grad.shape[: grad.dim() - len(dims)], dtype=real)
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m.lerp_(grad, 1.0 - betas[0])
    sq = torch.view_as_real(grad).square().sum(-1) if grad.is_complex() else grad.square()
    v.mul_(betas[1]).add_(sq.sum(dim=dims), alpha=1.0 - betas[1])
    bc1, bc2_sqrt = _bias_corrections(step, betas, v)
    if isinstance(bc1, Tensor):
        bc1, bc2_sqrt = _leading(bc1, grad.dim()), _leading(bc2_sqrt, v.dim())
    denom = (v.sqrt() / bc2_sqrt).add_(eps)
    for _ in dims:
        denom = denom.unsqueeze(-1)
    return (m / bc1).div_(denom)


@dataclass(frozen=True)
class BaseRule:
    """A named base update rule: gradient -> Euclidean direction, with per-parameter state.

    Attributes:
        name: The name used in param groups (``base="vadam"``).
        direction: ``direction(grad, state, group, step) -> Tensor``; may update ``state``
            in place, must not modify ``grad``. ``step`` is the count after this step,
            a Python number, or a tensor in capturable mode and under ``torch.compile``.
        hyperparameters: Names of the group entries the rule reads (documentation).
        batched: Whether ``direction`` is elementwise or per matrix (it reduces at most
            over the last two dimensions), so that it can run once on ``k`` same-shape
            parameters stacked along a new leading dimension, with their states stacked
            the same way and ``step`` a ``(k,)`` tensor. The optimizers' grouped path
            (``foreach``) then makes one call per group of same-shape parameters; rules
            that are not batched get one call per parameter (the manifold step is
            still batched). In capturable mode a rule's fresh state must be all zeros
            or equivalent to zeros (the skip of a non-finite step resets to zeros).
    """

    name: str
    direction: Callable[[Tensor, MutableMapping[str, Any], Mapping[str, Any], Step], Tensor]
    hyperparameters: tuple[str, ...] = ()
    batched: bool = False


_BASE_RULES: dict[str, BaseRule] = {}


def register_base_rule(rule: BaseRule, *, overwrite: bool = False) -> None:
    """Make a base rule available to :class:`~pogo_optim.POGO` and :class:`~pogo_optim.Landing`.

    Args:
        rule: The rule; its ``name`` is what param groups pass as ``base``.
        overwrite: Replace a rule already registered under the same name.

    Raises:
        TypeError: If ``rule`` is not a :class:`BaseRule`.
        ValueError: If the name is taken and ``overwrite`` is False.
    """
    if not isinstance(rule, BaseRule):
        raise TypeError(f"rule must be a BaseRule, got {type(rule).__name__}")
    if rule.name in _BASE_RULES and not overwrite:
        raise ValueError(f"a base rule named {rule.name!r} is already registered")
    _BASE_RULES[rule.name] = rule


def get_base_rule(name: str) -> BaseRule:
    """Return the registered base rule ``name``.

    Raises:
        ValueError: If no rule has that name.
    """
    try:
        return _BASE_RULES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"Invalid base: {name!r}; expected one of {sorted(_BASE_RULES)} "
            "(or a name added with register_base_rule)"
        ) from None


def base_rule_names() -> list[str]:
    """Names of the registered base rules."""
    return sorted(_BASE_RULES)


register_base_rule(
    BaseRule(
        "sgd",
        lambda g, s, grp, t: sgd_direction(
            g,
            s,
            momentum=grp["momentum"],
            dampening=grp["dampening"],
            nesterov=grp["nesterov"],
            step=t,
        ),
        ("momentum", "dampening", "nesterov"),
        batched=True,
    )
)
register_base_rule(
    BaseRule(
        "adam",
        lambda g, s, grp, t: adam_direction(g, s, step=t, betas=grp["betas"], eps=grp["eps"]),
        ("betas", "eps"),
        batched=True,
    )
)
register_base_rule(
    BaseRule(
        "vadam",
        lambda g, s, grp, t: vadam_direction(g, s, step=t, betas=grp["betas"], eps=grp["eps"]),
        ("betas", "eps"),
        batched=True,
    )
)

# ------------------------------------------------------------------------ manifold steps


def relative_gradient(x: Tensor, direction: Tensor) -> Tensor:
    r"""The relative gradient ``R = (D - X D^H X) / 2`` at a point of the manifold.

    For ``X X^H = I_p`` this equals the Landing relative gradient
    ``(X X^H D - X D^H X) / 2`` (``skew(D^H X) X^H`` transposed into the rows layout),
    is tangent (``X R^H`` is skew-Hermitian), and vanishes exactly at the Riemannian
    critical points of a function with Euclidean gradient ``D``. Two matrix products.

    Args:
        x: Point, shape ``(..., p, n)``, rows layout, real or complex.
        direction: Euclidean direction ``D``, same shape and dtype.

    Returns:
        ``R``, a new tensor of ``x``'s shape.
    """
    w = torch.matmul(x, direction.mH)  # (..., p, p)
    return (direction - torch.matmul(w, x)).mul_(0.5)


#: Coefficients of the series (1 + t)^(-1/2) = 1 - t/2 + 3t^2/8 - 5t^3/16 + ...
_INV_SQRT_SERIES = (1.0, -0.5, 0.375, -0.3125, 0.2734375)


def normalize(m: Tensor, order: int = 2) -> Tensor:
    r"""Pull ``M`` back towards the manifold: ``(I + T)^{-1/2} M`` to ``order`` terms.

    With ``T = M M^H - I``, the polar factor of ``M`` is ``(I + T)^{-1/2} M``; we use
    its series truncated after ``T^order``:

    .. math::
        N_1(M) = (I - \tfrac12 T) M = \tfrac32 M - \tfrac12 M M^H M
        \quad\text{(Newton-Schulz)},\qquad
        N_2(M) = (I - \tfrac12 T + \tfrac38 T^2) M .

    A singular value ``s`` of ``M`` with ``s^2 = 1 + delta`` is mapped to one with
    ``s'^2 - 1 = -3 delta^2 / 4 + O(delta^3)`` (order 1) or ``5 delta^3 / 8 + O(delta^4)``
    (order 2); both contract for ``|delta| <= 1``. Cost: ``order + 1`` matrix products
    (``M M^H``, ``order - 1`` products of ``p x p`` matrices, and one with ``M``).

    Args:
        m: Tensor of shape ``(..., p, n)``, ``p <= n``, real or complex.
        order: Number of series terms after the identity, 1 to 4.

    Returns:
        The normalized tensor, a new tensor of ``m``'s shape.
    """
    p = m.shape[-2]
    eye = torch.eye(p, dtype=m.dtype, device=m.device)
    t = torch.matmul(m, m.mH) - eye
    c = _INV_SQRT_SERIES
    poly = c[order] * t + c[order - 1] * eye  # Horner: ((c_k T + c_{k-1}) T + ...) + c_0
    for k in range(order - 2, -1, -1):
        poly = torch.matmul(poly, t) + c[k] * eye
    return torch.matmul(poly, m)


def _pogo_step(x: Tensor, direction: Tensor, lr: LR, normalization_order: int, max_step: float):
    """The POGO step without input checks (what the optimizers call)."""
    r = relative_gradient(x, direction)
    rnorm = torch.linalg.matrix_norm(r, keepdim=True)
    cap = max_step / rnorm.clamp_min(torch.finfo(rnorm.dtype).tiny)
    eta = torch.minimum(cap, lr) if isinstance(lr, Tensor) else cap.clamp_max(lr)
    return normalize(x - eta * r, normalization_order)


def _check_point(name: str, x: Tensor, direction: Tensor, lr: Any) -> None:
    """Shape, dtype and finiteness checks shared by the functional manifold steps."""
    if not isinstance(x, Tensor) or not isinstance(direction, Tensor):
        raise TypeError(f"{name}: x and direction must be tensors")
    if not (torch.is_floating_point(x) or x.is_complex()):
        raise TypeError(f"{name}: x must be real floating point or complex, got {x.dtype}")
    if x.dim() < 2 or x.shape[-2] > x.shape[-1]:
        raise ValueError(
            f"{name}: x must have shape (..., p, n) with p <= n (rows layout), got {tuple(x.shape)}"
        )
    if direction.shape != x.shape or direction.dtype != x.dtype:
        raise ValueError(
            f"{name}: direction must match x, got shape {tuple(direction.shape)} "
            f"({direction.dtype}) for x of shape {tuple(x.shape)} ({x.dtype})"
        )
    if isinstance(lr, Tensor):
        if lr.numel() != 1 or lr.is_complex() or not torch.is_floating_point(lr):
            raise ValueError(f"{name}: a tensor lr must be one real float, got {lr!r}")
    else:
        check_float("lr", lr, low=0.0)
    if not bool(torch.isfinite(x).all() & torch.isfinite(direction).all()):
        raise ValueError(f"{name}: x or direction contains NaN or inf")


def _check_distance(name: str, dist: Tensor) -> None:
    worst = float(dist.max()) if dist.numel() else 0.0
    if not worst < 1.0:
        raise ValueError(
            f"{name}: x is at distance ||X X^H - I||_F = {worst:.3g} >= 1 from the Stiefel "
            "manifold, where the step does not contract back to it (iterates would "
            "diverge); start from an orthonormal point (pogo_optim.project(x) gives the "
            "closest one)"
        )


def pogo_update(
    x: Tensor,
    direction: Tensor,
    lr: LR,
    *,
    normalization_order: int = 2,
    max_step: float = DEFAULT_MAX_STEP,
    check: bool = True,
) -> Tensor:
    r"""One POGO step in the rows layout: relative-gradient step, then normalization.

    .. math::
        W &= X D^H, \qquad R = \tfrac12 (D - W X), \qquad
        \eta = \min\bigl(\mathrm{lr},\ s_{\max} / \|R\|_F\bigr), \\
        M &= X - \eta R, \qquad T = M M^H - I, \qquad
        X^+ = \bigl(I - \tfrac12 T + \tfrac38 T^2\bigr) M .

    The last line is the series of the polar factor ``(M M^H)^{-1/2} M`` to second
    order (:func:`normalize`; ``normalization_order=1`` gives the Newton-Schulz step
    ``3M/2 - M M^H M / 2``). Because ``R`` is tangent (``X R^H`` is skew-Hermitian),
    ``M M^H = X X^H + eta^2 R R^H``: from a point on the manifold ``||T|| <= eta^2 ||R||^2``,
    and the normalization leaves an error ``||X+ X+^H - I|| = O(eta^6 ||R||^6)``
    (``O(eta^4 ||R||^4)`` at order 1) while shrinking any earlier error to its cube
    (square). The step is capped, ``eta ||R||_F <= max_step`` (a trust region, like
    clipping the update's norm): with the default ``max_step = 0.1`` the error
    added by one step is at most ``5/8 * 0.1^6 ~ 6e-7`` (order 2), so the iterates
    stay orthogonal to working precision at *every* step whatever the learning
    rate; the cap only binds for steps longer than 0.1 in Frobenius norm (e.g. SGD
    with large gradients), which it shortens instead of letting them leave the
    manifold. Any ``max_step <= 1`` keeps ``||T|| <= 1`` where the normalization
    contracts.

    The step is continuous in ``lr``, so a square real ``X`` keeps the sign of its
    determinant: POGO moves inside ``SO(n)`` (or inside the other component of
    ``O(n)``), never between them.

    Cost: **5 matrix products** (``X D^H``, ``W X``, ``M M^H``, ``T T`` (``p x p``),
    ``P M``), each at most ``O(p^2 n)`` flops per matrix; ``3 + normalization_order``
    in general. No inverse, no decomposition. ``check=True`` adds one product
    (``X X^H``, for the distance guard) and a host synchronization; the optimizers
    skip both (their iterates stay on the manifold by construction).

    Args:
        x: Point, shape ``(..., p, n)`` with ``p <= n``, rows layout, real or complex
            (not modified).
        direction: Euclidean direction ``D`` from the base rule, same shape and dtype.
        lr: Learning rate (step length), ``>= 0``: a float or a one-element tensor.
        normalization_order: Terms of the normalization series, 1 to 4.
        max_step: Cap on the step's Frobenius length ``eta ||R||_F``, in ``(0, 1]``.
        check: Validate the inputs and guard the distance to the manifold.

    Returns:
        The new point ``X+``, a new tensor of ``x``'s shape.

    Raises:
        ValueError: With ``check``: on mismatched shapes or dtypes, ``p > n``, a
            negative ``lr``, an out-of-range ``normalization_order`` or ``max_step``,
            NaN or inf in ``x`` or ``direction``, or ``x`` at distance
            ``||X X^H - I||_F >= 1`` from the manifold (where the normalization no
            longer contracts and iterates diverge).
        TypeError: With ``check``: on non-tensor or integer inputs.

    Example:
        >>> import torch
        >>> from pogo_optim import pogo_update, random_stiefel, orthogonality_error
        >>> x = random_stiefel(10, 3, 8, generator=torch.Generator().manual_seed(0))
        >>> x1 = pogo_update(x, torch.randn(10, 3, 8), lr=0.05)
        >>> bool(orthogonality_error(x1).max() < 1e-5)
        True
    """
    if check:
        _check_point("pogo_update", x, direction, lr)
        normalization_order = check_int("normalization_order", normalization_order, low=1, high=4)
        max_step = check_float("max_step", max_step, low=0.0, low_inclusive=False, high=1.0)
        _check_distance("pogo_update", _distance(x))
    return _pogo_step(x, direction, lr, normalization_order, max_step)


def _distance(x: Tensor) -> Tensor:
    eye = torch.eye(x.shape[-2], dtype=x.dtype, device=x.device)
    return torch.linalg.matrix_norm(torch.matmul(x, x.mH) - eye)


def landing_safe_step(distance: Tensor, rel_norm: Tensor, lambda_regul: float, eps: float):
    r"""Largest Landing step that provably keeps ``||X X^H - I||_F <= eps``.

    Our derivation, in the spirit of the safe step-size lemma of Ablin et al.
    (2024). In the columns layout ``Y`` (``Y^H Y = I + Delta``, ``d = ||Delta||_F``), the
    field is ``Lambda = psi Y + lambda Y Delta`` with ``psi`` skew-Hermitian
    (``a = ||psi||_F``). ``Y^H psi Y`` is skew-Hermitian and ``Delta`` Hermitian, so

    .. math::
        \Delta^+ = \Delta - 2\eta\lambda (I + \Delta)\Delta + \eta^2 \Lambda^H\Lambda,
        \qquad \|\Lambda\|_F^2 = \|\psi Y\|_F^2 + \lambda^2 \|Y\Delta\|_F^2
        \le (1 + d)(a^2 + \lambda^2 d^2),

    and for ``eta <= 1 / (2 lambda (1 + d))``,
    ``||Delta+|| <= d - eta alpha + eta^2 beta`` with ``alpha = 2 lambda d (1 - d)`` and
    ``beta = (1 + d)(a^2 + lambda^2 d^2)``. This is ``<= eps`` for

    .. math::
        \eta \le \eta^* = \min\Bigl(\frac{\alpha + \sqrt{\alpha^2 + 4\beta(\epsilon - d)}}
        {2\beta},\ \frac{1}{2\lambda(1+d)}\Bigr).

    Outside the safe region (``d > eps``) the root does not exist and we return the
    step ``alpha / (2 beta)`` that minimizes the bound, which moves back towards it.

    Args:
        distance: ``d``, shape ``(...)``.
        rel_norm: ``a``, shape ``(...)``.
        lambda_regul: Weight ``lambda > 0`` of the attraction to the manifold.
        eps: Radius ``eps`` of the safe region, ``0 < eps < 1``.

    Returns:
        ``eta*``, shape ``(...)`` (``inf`` where ``a = d = 0``: any step is safe).
    """
    d, a, lam = distance, rel_norm, lambda_regul
    alpha = 2 * lam * d * (1 - d)
    beta = (1 + d) * (a**2 + lam**2 * d**2)
    disc = alpha**2 + 4 * beta * (eps - d)
    root = (alpha + disc.clamp_min(0.0).sqrt()) / (2 * beta)
    eta = torch.where(disc >= 0, root, alpha / (2 * beta))
    return torch.minimum(torch.nan_to_num(eta, nan=torch.inf), 1 / (2 * lam * (1 + d)))


def _landing_step(
    x: Tensor, direction: Tensor, lr: LR, lambda_regul: float, safe_step: float | None
) -> Tensor:
    """The Landing step without input checks (what the optimizers call)."""
    p = x.shape[-2]
    eye = torch.eye(p, dtype=x.dtype, device=x.device)
    s = torch.matmul(x, x.mH)
    w = torch.matmul(x, direction.mH)
    field = torch.matmul(s, direction).mul_(0.5)
    field += torch.matmul(lambda_regul * (s - eye) - 0.5 * w, x)
    if safe_step is None:
        return x - lr * field
    # ||psi||_F^2 = (Re tr(D D^H S) - Re tr(W W)) / 2 with psi = skew(D^H X), from p x p
    # products (tr(A B) = sum(A * B^T))
    ddt = torch.matmul(direction, direction.mH)
    a2 = 0.5 * ((ddt * s.mT).sum(dim=(-2, -1)) - (w * w.mT).sum(dim=(-2, -1)))
    a = (a2.real if a2.is_complex() else a2).clamp_min(0.0).sqrt()
    d = torch.linalg.matrix_norm(s - eye)
    eta = landing_safe_step(d, a, lambda_regul, safe_step)
    eta = torch.minimum(eta, lr) if isinstance(lr, Tensor) else eta.clamp_max(lr)
    return x - eta[..., None, None] * field


def landing_update(
    x: Tensor,
    direction: Tensor,
    lr: LR,
    *,
    lambda_regul: float = 1.0,
    safe_step: float | None = 0.5,
    check: bool = True,
) -> Tensor:
    r"""One Landing step (Ablin et al., 2024) in the rows layout.

    .. math::
        S = X X^H,\quad W = X D^H,\quad
        \Lambda(X) = \tfrac12 (S D - W X) + \lambda (S - I) X,\quad
        X^+ = X - \eta \Lambda(X),

    where ``(S D - W X) / 2`` is the relative gradient (``psi(X) X`` in the paper's
    columns layout) and ``lambda (S - I) X`` the gradient of the penalty
    ``lambda ||X X^H - I||_F^2 / 4``. ``eta = min(lr, eta*)`` with the safe step
    :func:`landing_safe_step` when ``safe_step`` is set. The iterate leaves the
    manifold (by at most ``safe_step``) and is only attracted back.

    Cost: 4 matrix products (``X X^H``, ``X D^H``, ``S D``, ``(lambda (S - I) - W / 2) X``),
    plus ``D D^H`` for the safe step's ``||psi||_F``.

    Args:
        x: Point, shape ``(..., p, n)``, rows layout, real or complex (not modified).
        direction: Euclidean direction ``D`` from the base rule, same shape and dtype.
        lr: Learning rate, ``>= 0``: a float or a one-element tensor.
        lambda_regul: Attraction ``lambda > 0``.
        safe_step: Radius ``eps`` of the safe region in ``(0, 1)``, or None for a fixed step.
        check: Validate the inputs and guard the distance to the manifold (a host
            synchronization; the optimizers skip it).

    Returns:
        The new point, a new tensor of ``x``'s shape.

    Raises:
        ValueError: With ``check``: on mismatched shapes or dtypes, ``p > n``, a
            negative ``lr``, ``lambda_regul <= 0``, ``safe_step`` outside ``(0, 1)``,
            NaN or inf in the inputs, or ``x`` at distance ``||X X^H - I||_F >= 1``
            (outside the region where the attraction to the manifold is guaranteed).
        TypeError: With ``check``: on non-tensor or integer inputs.
    """
    if check:
        _check_point("landing_update", x, direction, lr)
        lambda_regul = check_float("lambda_regul", lambda_regul, low=0.0, low_inclusive=False)
        if safe_step is not None:
            safe_step = check_float(
                "safe_step",
                safe_step,
                low=0.0,
                high=1.0,
                low_inclusive=False,
                high_inclusive=False,
            )
        _check_distance("landing_update", _distance(x))
    return _landing_step(x, direction, lr, lambda_regul, safe_step)
