r"""Functional forms of the updates: base rules, and the POGO and Landing manifold steps.

An orthogonal step is split in two visible pieces, as in optax:

1. a *base rule* maps the Euclidean gradient ``G`` of a parameter to a Euclidean
   direction ``D`` and updates its own state (momentum, Adam moments): :func:`sgd_direction`,
   :func:`adam_direction`, :func:`vadam_direction`, or a rule registered with
   :func:`register_base_rule`;
2. a *manifold step* moves the point along ``D`` while keeping it on the Stiefel
   manifold: :func:`pogo_update` (POGO) or :func:`landing_update` (Landing).

The manifold steps take points in the rows layout, ``X`` of shape ``(..., p, n)``
with ``X X^T = I_p`` (the optimizers transpose column-orthonormal parameters first);
they never invert or decompose a matrix, and every product is a batched matmul
of a ``(..., p, n)`` or ``(..., p, p)`` operand.

References:
    POGO: the ICML 2026 paper (``papers/pogo-optim.md``; the authors' release is
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

Tensor = torch.Tensor

#: Default largest step ``eta ||R||_F`` (per matrix) that POGO takes; see :func:`pogo_update`.
DEFAULT_MAX_STEP = 0.1

# --------------------------------------------------------------------------- base rules


def sgd_direction(
    grad: Tensor,
    state: MutableMapping[str, Any],
    *,
    momentum: float = 0.0,
    dampening: float = 0.0,
    nesterov: bool = False,
) -> Tensor:
    r"""SGD with (heavy-ball or Nesterov) momentum, exactly as :class:`torch.optim.SGD`.

    .. math::
        b_t = \mu b_{t-1} + (1 - \tau) g_t \ (b_1 = g_1), \qquad
        d_t = g_t + \mu b_t \text{ (Nesterov) or } b_t.

    Args:
        grad: Gradient ``g_t``, any shape.
        state: Per-parameter state; ``"momentum_buffer"`` is created and updated in place.
        momentum: Momentum factor ``mu >= 0`` (0 disables the buffer).
        dampening: Dampening ``tau`` of the momentum.
        nesterov: Use Nesterov momentum.

    Returns:
        The direction ``d_t`` (a new tensor or the buffer; do not modify it in place).
    """
    if momentum == 0.0:
        return grad
    buf = state.get("momentum_buffer")
    if buf is None:
        buf = torch.clone(grad).detach()
        state["momentum_buffer"] = buf
    else:
        buf.mul_(momentum).add_(grad, alpha=1.0 - dampening)
    return grad.add(buf, alpha=momentum) if nesterov else buf


def adam_direction(
    grad: Tensor,
    state: MutableMapping[str, Any],
    *,
    step: int,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> Tensor:
    r"""Adam's direction (elementwise second moment), as :class:`torch.optim.Adam` steps.

    .. math::
        m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t,\quad
        v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2,\quad
        d_t = \frac{m_t / (1-\beta_1^t)}{\sqrt{v_t / (1-\beta_2^t)} + \epsilon}.

    On an orthogonal parameter the elementwise scaling is not rotation-equivariant,
    so POGO's fixed points are then critical points of a rescaled gradient field;
    prefer :func:`vadam_direction` there.

    Args:
        grad: Gradient ``g_t``, any shape.
        state: Per-parameter state; ``"exp_avg"`` and ``"exp_avg_sq"`` created/updated.
        step: Step count ``t >= 1`` (for the bias corrections).
        betas: ``(beta1, beta2)`` in ``[0, 1)``.
        eps: Added to the denominator.

    Returns:
        The direction ``d_t``, a new tensor of ``grad``'s shape.
    """
    beta1, beta2 = betas
    if "exp_avg" not in state:
        state["exp_avg"] = torch.zeros_like(grad, memory_format=torch.preserve_format)
        state["exp_avg_sq"] = torch.zeros_like(grad, memory_format=torch.preserve_format)
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m.lerp_(grad, 1.0 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
    bc1 = 1.0 - beta1**step
    bc2 = 1.0 - beta2**step
    denom = (v.sqrt() / math.sqrt(bc2)).add_(eps)
    return (m / bc1).div_(denom)


def vadam_direction(
    grad: Tensor,
    state: MutableMapping[str, Any],
    *,
    step: int,
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
    and ``d_t`` rotates with the gradient (``g -> Q g`` gives ``d -> Q d``), which keeps
    POGO's fixed points at Riemannian critical points.

    Args:
        grad: Gradient ``g_t`` of shape ``(..., p, n)`` (or ``(n,)``).
        state: Per-parameter state; ``"exp_avg"`` (like ``grad``) and ``"exp_avg_sq"``
            (shape ``grad.shape[:-2]``) created/updated.
        step: Step count ``t >= 1``.
        betas: ``(beta1, beta2)`` in ``[0, 1)``.
        eps: Added to the denominator.

    Returns:
        The direction ``d_t``, a new tensor of ``grad``'s shape.
    """
    beta1, beta2 = betas
    dims = (-2, -1) if grad.dim() >= 2 else (-1,)
    if "exp_avg" not in state:
        state["exp_avg"] = torch.zeros_like(grad, memory_format=torch.preserve_format)
        state["exp_avg_sq"] = grad.new_zeros(grad.shape[: grad.dim() - len(dims)])
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m.lerp_(grad, 1.0 - beta1)
    v.mul_(beta2).add_(grad.square().sum(dim=dims), alpha=1.0 - beta2)
    bc1 = 1.0 - beta1**step
    bc2 = 1.0 - beta2**step
    denom = (v.sqrt() / math.sqrt(bc2)).add_(eps)
    for _ in dims:
        denom = denom.unsqueeze(-1)
    return (m / bc1).div_(denom)


@dataclass(frozen=True)
class BaseRule:
    """A named base update rule: gradient -> Euclidean direction, with per-parameter state.

    Attributes:
        name: The name used in param groups (``base="vadam"``).
        direction: ``direction(grad, state, group, step) -> Tensor``; may update ``state``
            in place, must not modify ``grad``.
        hyperparameters: Names of the group entries the rule reads (documentation).
    """

    name: str
    direction: Callable[[Tensor, MutableMapping[str, Any], Mapping[str, Any], int], Tensor]
    hyperparameters: tuple[str, ...] = ()


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
            g, s, momentum=grp["momentum"], dampening=grp["dampening"], nesterov=grp["nesterov"]
        ),
        ("momentum", "dampening", "nesterov"),
    )
)
register_base_rule(
    BaseRule(
        "adam",
        lambda g, s, grp, t: adam_direction(g, s, step=t, betas=grp["betas"], eps=grp["eps"]),
        ("betas", "eps"),
    )
)
register_base_rule(
    BaseRule(
        "vadam",
        lambda g, s, grp, t: vadam_direction(g, s, step=t, betas=grp["betas"], eps=grp["eps"]),
        ("betas", "eps"),
    )
)

# ------------------------------------------------------------------------ manifold steps


def relative_gradient(x: Tensor, direction: Tensor) -> Tensor:
    r"""The relative gradient ``R = (D - X D^T X) / 2`` at a point of the manifold.

    For ``X X^T = I_p`` this equals the Landing relative gradient
    ``(X X^T D - X D^T X) / 2`` (``skew(D^T X) X^T`` transposed into the rows layout),
    is tangent (``X R^T`` is skew-symmetric), and vanishes exactly at the Riemannian
    critical points of a function with Euclidean gradient ``D``. Two matrix products.

    Args:
        x: Point, shape ``(..., p, n)``, rows layout.
        direction: Euclidean direction ``D``, same shape.

    Returns:
        ``R``, a new tensor of ``x``'s shape.
    """
    w = torch.matmul(x, direction.mT)  # (..., p, p)
    return (direction - torch.matmul(w, x)).mul_(0.5)


#: Coefficients of the series (1 + t)^(-1/2) = 1 - t/2 + 3t^2/8 - 5t^3/16 + ...
_INV_SQRT_SERIES = (1.0, -0.5, 0.375, -0.3125, 0.2734375)


def normalize(m: Tensor, order: int = 2) -> Tensor:
    r"""Pull ``M`` back towards the manifold: ``(I + T)^{-1/2} M`` to ``order`` terms.

    With ``T = M M^T - I``, the polar factor of ``M`` is ``(I + T)^{-1/2} M``; we use
    its series truncated after ``T^order``:

    .. math::
        N_1(M) = (I - \tfrac12 T) M = \tfrac32 M - \tfrac12 M M^\top M
        \quad\text{(Newton-Schulz)},\qquad
        N_2(M) = (I - \tfrac12 T + \tfrac38 T^2) M .

    A singular value ``s`` of ``M`` with ``s^2 = 1 + delta`` is mapped to one with
    ``s'^2 - 1 = -3 delta^2 / 4 + O(delta^3)`` (order 1) or ``5 delta^3 / 8 + O(delta^4)``
    (order 2); both contract for ``|delta| <= 1``. Cost: ``order + 1`` matrix products
    (``M M^T``, ``order - 1`` products of ``p x p`` matrices, and one with ``M``).

    Args:
        m: Tensor of shape ``(..., p, n)``, ``p <= n``.
        order: Number of series terms after the identity, 1 to 4.

    Returns:
        The normalized tensor, a new tensor of ``m``'s shape.
    """
    p = m.shape[-2]
    eye = torch.eye(p, dtype=m.dtype, device=m.device)
    t = torch.matmul(m, m.mT) - eye
    c = _INV_SQRT_SERIES
    poly = c[order] * t + c[order - 1] * eye  # Horner: ((c_k T + c_{k-1}) T + ...) + c_0
    for k in range(order - 2, -1, -1):
        poly = torch.matmul(poly, t) + c[k] * eye
    return torch.matmul(poly, m)


def pogo_update(
    x: Tensor,
    direction: Tensor,
    lr: float,
    *,
    normalization_order: int = 2,
    max_step: float = DEFAULT_MAX_STEP,
) -> Tensor:
    r"""One POGO step in the rows layout: relative-gradient step, then normalization.

    .. math::
        W &= X D^\top, \qquad R = \tfrac12 (D - W X), \qquad
        \eta = \min\bigl(\mathrm{lr},\ s_{\max} / \|R\|_F\bigr), \\
        M &= X - \eta R, \qquad T = M M^\top - I, \qquad
        X^+ = \bigl(I - \tfrac12 T + \tfrac38 T^2\bigr) M .

    The last line is the series of the polar factor ``(M M^T)^{-1/2} M`` to second
    order (:func:`normalize`; ``normalization_order=1`` gives the Newton-Schulz step
    ``3M/2 - M M^T M / 2``). Because ``R`` is tangent (``X R^T`` is skew),
    ``M M^T = X X^T + eta^2 R R^T``: from a point on the manifold ``||T|| <= eta^2 ||R||^2``,
    and the normalization leaves an error ``||X+ X+^T - I|| = O(eta^6 ||R||^6)``
    (``O(eta^4 ||R||^4)`` at order 1) while shrinking any earlier error to its cube
    (square). The step is capped, ``eta ||R||_F <= max_step`` (a trust region, like
    clipping the update's norm): with the default ``max_step = 0.1`` the error
    added by one step is at most ``5/8 * 0.1^6 ~ 6e-7`` (order 2), so the iterates
    stay orthogonal to working precision at *every* step whatever the learning
    rate; the cap only binds for steps longer than 0.1 in Frobenius norm (e.g. SGD
    with large gradients), which it shortens instead of letting them leave the
    manifold. Any ``max_step <= 1`` keeps ``||T|| <= 1`` where the normalization
    contracts.

    Cost: **5 matrix products** (``X D^T``, ``W X``, ``M M^T``, ``T T`` (``p x p``),
    ``P M``), each at most ``O(p^2 n)`` flops per matrix; ``3 + normalization_order``
    in general. No inverse, no decomposition.

    Args:
        x: Point, shape ``(..., p, n)`` with ``p <= n``, rows layout (not modified).
        direction: Euclidean direction ``D`` from the base rule, same shape.
        lr: Learning rate (step length), ``>= 0``.
        normalization_order: Terms of the normalization series, 1 to 4.
        max_step: Cap on the step's Frobenius length ``eta ||R||_F``, in ``(0, 1]``.

    Returns:
        The new point ``X+``, a new tensor of ``x``'s shape.
    """
    r = relative_gradient(x, direction)
    rnorm = torch.linalg.matrix_norm(r, keepdim=True)
    eta = torch.clamp(max_step / rnorm.clamp_min(torch.finfo(r.dtype).tiny), max=lr)
    return normalize(x - eta * r, normalization_order)


def landing_safe_step(distance: Tensor, rel_norm: Tensor, lambda_regul: float, eps: float):
    r"""Largest Landing step that provably keeps ``||X X^T - I||_F <= eps``.

    Our derivation, in the spirit of the safe step-size lemma of Ablin et al.
    (2024). In the columns layout ``Y`` (``Y^T Y = I + Delta``, ``d = ||Delta||_F``), the
    field is ``Lambda = psi Y + lambda Y Delta`` with ``psi`` skew (``a = ||psi||_F``).
    ``Y^T psi Y`` is skew and ``Delta`` symmetric, so

    .. math::
        \Delta^+ = \Delta - 2\eta\lambda (I + \Delta)\Delta + \eta^2 \Lambda^\top\Lambda,
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


def landing_update(
    x: Tensor,
    direction: Tensor,
    lr: float,
    *,
    lambda_regul: float = 1.0,
    safe_step: float | None = 0.5,
) -> Tensor:
    r"""One Landing step (Ablin et al., 2024) in the rows layout.

    .. math::
        S = X X^\top,\quad W = X D^\top,\quad
        \Lambda(X) = \tfrac12 (S D - W X) + \lambda (S - I) X,\quad
        X^+ = X - \eta \Lambda(X),

    where ``(S D - W X) / 2`` is the relative gradient (``psi(X) X`` in the paper's
    columns layout) and ``lambda (S - I) X`` the gradient of the penalty
    ``lambda ||X X^T - I||_F^2 / 4``. ``eta = min(lr, eta*)`` with the safe step
    :func:`landing_safe_step` when ``safe_step`` is set. The iterate leaves the
    manifold (by at most ``safe_step``) and is only attracted back.

    Cost: 4 matrix products (``X X^T``, ``X D^T``, ``S D``, ``(lambda (S - I) - W / 2) X``),
    plus ``D D^T`` for the safe step's ``||psi||_F``.

    Args:
        x: Point, shape ``(..., p, n)``, rows layout (not modified).
        direction: Euclidean direction ``D`` from the base rule, same shape.
        lr: Learning rate, ``>= 0``.
        lambda_regul: Attraction ``lambda > 0``.
        safe_step: Radius ``eps`` of the safe region in ``(0, 1)``, or None for a fixed step.

    Returns:
        The new point, a new tensor of ``x``'s shape.
    """
    p = x.shape[-2]
    eye = torch.eye(p, dtype=x.dtype, device=x.device)
    s = torch.matmul(x, x.mT)
    w = torch.matmul(x, direction.mT)
    field = torch.matmul(s, direction).mul_(0.5)
    field += torch.matmul(lambda_regul * (s - eye) - 0.5 * w, x)
    if safe_step is None:
        return x - lr * field
    # ||psi||_F^2 = (tr(D D^T S) - tr(W W)) / 2 with psi = skew(D^T X), from p x p products
    ddt = torch.matmul(direction, direction.mT)
    a2 = 0.5 * ((ddt * s).sum(dim=(-2, -1)) - (w * w.mT).sum(dim=(-2, -1)))
    a = a2.clamp_min(0.0).sqrt()
    d = torch.linalg.matrix_norm(s - eye)
    eta = landing_safe_step(d, a, lambda_regul, safe_step).clamp(max=lr)
    return x - eta[..., None, None] * field
