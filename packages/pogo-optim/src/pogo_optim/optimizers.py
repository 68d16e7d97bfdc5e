r"""The optimizers: :class:`POGO` and the :class:`Landing` baseline.

Both share the param-group machinery of :class:`StiefelOptimizer`: a group with
``orthogonal=True`` holds matrices (or batches of matrices) kept on the Stiefel
manifold; a group with ``orthogonal=False`` is updated by the base rule alone
(``p <- p - lr * d``, exactly :class:`torch.optim.SGD` or :class:`torch.optim.Adam`),
so one optimizer object trains a whole model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import torch

from pogo_optim.functional import DEFAULT_MAX_STEP, get_base_rule, landing_update, pogo_update
from pogo_optim.stiefel import LAYOUTS, as_rows, orthogonality_error, project

ParamsT = Iterable[torch.Tensor] | Iterable[dict[str, Any]]

#: Defaults shared by both optimizers; ``__setstate__`` fills them into old checkpoints.
COMMON_DEFAULTS: dict[str, Any] = {
    "momentum": 0.0,
    "dampening": 0.0,
    "nesterov": False,
    "betas": (0.9, 0.999),
    "eps": 1e-8,
    "weight_decay": 0.0,
    "maximize": False,
    "orthogonal": True,
    "layout": "rows",
    "project_init": False,
}


def _init_tolerance(dtype: torch.dtype, p: int) -> float:
    """Largest ``||X X^T - I||_F`` accepted as orthonormal at construction."""
    return max(1e-4, 100 * torch.finfo(dtype).eps) * math.sqrt(p)


class StiefelOptimizer(torch.optim.Optimizer):
    """Shared machinery: validation, base rules, mixed groups, ``step(closure)``.

    Subclasses implement :meth:`_manifold_step` (the update of one orthogonal tensor
    in the rows layout) and list their own hyperparameters in ``_EXTRA_DEFAULTS``.
    """

    _EXTRA_DEFAULTS: ClassVar[dict[str, Any]] = {}

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        super().__init__(params, defaults)

    # ------------------------------------------------------------------ validation
    def _validate_hyperparameters(self, group: dict[str, Any]) -> None:
        lr = group["lr"]
        if isinstance(lr, torch.Tensor) or not isinstance(lr, int | float) or not lr >= 0.0:
            raise ValueError(f"Invalid lr: {lr!r}; expected a float >= 0")
        get_base_rule(group["base"])
        if not 0.0 <= group["momentum"]:
            raise ValueError(f"Invalid momentum: {group['momentum']!r}; expected a float >= 0")
        if not 0.0 <= group["dampening"] <= 1.0:
            raise ValueError(f"Invalid dampening: {group['dampening']!r}; expected 0 <= x <= 1")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(
                "nesterov=True requires momentum > 0 and dampening = 0, got "
                f"momentum={group['momentum']!r}, dampening={group['dampening']!r}"
            )
        betas = group["betas"]
        if (
            not isinstance(betas, tuple | list)
            or len(betas) != 2
            or not all(0.0 <= b < 1.0 for b in betas)
        ):
            raise ValueError(f"Invalid betas: {betas!r}; expected two floats in [0, 1)")
        group["betas"] = tuple(float(b) for b in betas)
        if not group["eps"] >= 0.0:
            raise ValueError(f"Invalid eps: {group['eps']!r}; expected a float >= 0")
        if not group["weight_decay"] >= 0.0:
            raise ValueError(
                f"Invalid weight_decay: {group['weight_decay']!r}; expected a float >= 0"
            )
        if group["layout"] not in LAYOUTS:
            raise ValueError(f"Invalid layout: {group['layout']!r}; expected one of {LAYOUTS}")
        for flag in ("nesterov", "maximize", "orthogonal", "project_init"):
            if not isinstance(group[flag], bool):
                raise TypeError(f"{flag} must be a bool, got {group[flag]!r}")

    @torch.no_grad()
    def _validate_orthogonal_params(self, group: dict[str, Any], index: int) -> None:
        layout = group["layout"]
        for j, param in enumerate(group["params"]):
            where = f"param group {index}, parameter {j} (shape {tuple(param.shape)})"
            if not torch.is_floating_point(param):
                raise TypeError(
                    f"{where}: orthogonal parameters must be real floating point, got {param.dtype}"
                )
            if param.dim() < 2:
                raise ValueError(
                    f"{where}: a parameter marked orthogonal needs shape (..., p, n) with "
                    "p <= n (rows) or (..., n, p) (columns); put 1-D parameters in a group "
                    "with orthogonal=False"
                )
            x = as_rows(param, layout)
            p, n = x.shape[-2:]
            if p > n:
                other = "columns" if layout == "rows" else "rows"
                raise ValueError(
                    f"{where}: layout={layout!r} needs p <= n orthonormal vectors of length "
                    f"n, got p={p} > n={n}; use layout={other!r} for this shape"
                )
            if not torch.isfinite(param).all():
                raise ValueError(f"{where}: contains NaN or inf")
            err = float(orthogonality_error(x.detach().double()).max())
            tol = self._init_tolerance(param.dtype, p, group)
            if err > tol:
                if not group["project_init"]:
                    raise ValueError(
                        f"{where}: not on the Stiefel manifold, ||X X^T - I||_F = {err:.3g} "
                        f"> {tol:.3g}. Initialize it orthogonal (torch.nn.init.orthogonal_ for "
                        "one matrix, pogo_optim.random_stiefel for a batch) or pass "
                        "project_init=True to project it once (by an SVD) here"
                    )
                param.copy_(project(param.detach().double(), layout).to(param.dtype))

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a param group (validated like the constructor's groups).

        Raises:
            ValueError: On an invalid hyperparameter, a 1-D or ``p > n`` orthogonal
                parameter, or a non-orthonormal one without ``project_init=True``.
            TypeError: On a non-float orthogonal parameter or a non-bool flag.
        """
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        try:
            self._validate_hyperparameters(group)
            self._validate_extra(group)
            if group["orthogonal"]:
                self._validate_orthogonal_params(group, len(self.param_groups) - 1)
        except (ValueError, TypeError):
            self.param_groups.pop()
            raise

    def _validate_extra(self, group: dict[str, Any]) -> None:
        """Validate the subclass's own hyperparameters."""

    def _init_tolerance(self, dtype: torch.dtype, p: int, group: dict[str, Any]) -> float:
        """Largest ``||X X^T - I||_F`` accepted as a starting point."""
        return _init_tolerance(dtype, p)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        # Fill keys added after a checkpoint was written, as torch's optimizers do.
        for group in self.param_groups:
            for key, value in {**COMMON_DEFAULTS, **self._EXTRA_DEFAULTS}.items():
                group.setdefault(key, value)

    # ------------------------------------------------------------------------ step
    def _manifold_step(self, x: torch.Tensor, d: torch.Tensor, group: dict[str, Any]):
        raise NotImplementedError

    @torch.no_grad()
    def step(self, closure: Callable[[], float | torch.Tensor] | None = None):
        """Perform one optimization step.

        Args:
            closure: Optional callable that re-evaluates the model and returns the
                loss; it runs with gradients enabled.

        Returns:
            The closure's loss, or None.

        Raises:
            RuntimeError: On a sparse gradient.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            rule = get_base_rule(group["base"])
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad
                if grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                if group["maximize"]:
                    grad = -grad
                if group["weight_decay"] != 0:
                    grad = grad.add(param, alpha=group["weight_decay"])
                state = self.state[param]
                state["step"] = state.get("step", 0) + 1
                direction = rule.direction(grad, state, group, state["step"])
                if group["orthogonal"]:
                    layout = group["layout"]
                    new = self._manifold_step(
                        as_rows(param, layout), as_rows(direction, layout), group
                    )
                    param.copy_(as_rows(new, layout))
                else:
                    param.add_(direction, alpha=-group["lr"])
        return loss


class POGO(StiefelOptimizer):
    r"""POGO: optimization on the Stiefel manifold with any base update rule.

    For each orthogonal matrix ``X`` (rows layout, ``X X^T = I_p``, ``p <= n``;
    columns-layout parameters are transposed first) with gradient ``G``:

    .. math::
        D &= \mathrm{base}(G)
            &&\text{(SGD+momentum, Adam, VectorAdam: Euclidean direction)} \\
        R &= \tfrac12 (D - X D^\top X)
            &&\text{(relative gradient, tangent at } X) \\
        M &= X - \eta R,\quad \eta = \min(\mathrm{lr}, s_{\max}/\|R\|_F)
            &&\text{(Landing-style step)} \\
        X^+ &= \bigl(I - \tfrac12 T + \tfrac38 T^2\bigr) M,\quad T = M M^\top - I
            &&\text{(normalization: polar-factor series)}

    **5 matrix products per step** (``X D^T``, ``(X D^T) X``, ``M M^T``, ``T T``,
    ``P M``), each at most ``O(p^2 n)``, batched over every leading dimension; no
    inverse and no decomposition. ``normalization_order=1`` replaces the last line by
    one Newton-Schulz step ``3M/2 - M M^T M / 2`` (4 products). Since ``R`` is
    tangent, ``M M^T - I`` is of order ``eta^2 ||R||^2``; the normalization leaves an
    error of order ``eta^6 ||R||^6`` and cubes any earlier one; with the step capped
    at ``eta ||R||_F <= max_step = 0.1`` (a trust region that only binds for long
    steps) that error is below ``6e-7`` per step, so the iterates stay orthogonal to
    working precision at every step (see :func:`pogo_optim.functional.pogo_update`).
    The step is a fixed point exactly where ``R = 0``, i.e. at Riemannian critical
    points (for SGD and VectorAdam).

    Groups with ``orthogonal=False`` take the plain base step ``p <- p - lr * D``
    (identical to :class:`torch.optim.SGD` with ``base="sgd"`` and to
    :class:`torch.optim.Adam` with ``base="adam"``).

    Args:
        params: Parameters or param-group dicts. Orthogonal parameters have shape
            ``(..., p, n)`` with orthonormal rows (``layout="rows"``) or ``(..., n, p)``
            with orthonormal columns (``layout="columns"``), ``p <= n``.
        lr: Learning rate; with ``base="vadam"`` the Frobenius length of a step.
        base: Base rule: ``"vadam"`` (VectorAdam, default), ``"adam"``, ``"sgd"``, or a
            name added with :func:`pogo_optim.register_base_rule`.
        momentum: SGD momentum factor (``base="sgd"``).
        dampening: SGD dampening.
        nesterov: SGD Nesterov momentum.
        betas: Adam/VectorAdam coefficients ``(beta1, beta2)``.
        eps: Adam/VectorAdam denominator term.
        weight_decay: L2 penalty added to the gradient (a no-op direction on an
            orthogonal parameter for ``"sgd"``; shrinks non-orthogonal ones).
        maximize: Maximize the objective instead.
        orthogonal: Whether the group's parameters are kept on the Stiefel manifold.
        layout: ``"rows"`` or ``"columns"``.
        project_init: Project non-orthonormal starting points onto the manifold (one
            SVD at construction) instead of raising.
        normalization_order: Terms of the series of the polar factor used to normalize
            (1: Newton-Schulz, 4 products per step; 2: default, 5 products).
        max_step: Cap on a step's Frobenius length ``eta ||R||_F`` per matrix, in
            ``(0, 1]``; the default 0.1 guarantees an orthogonality error below 1e-6
            per step (raise it for very long steps, at the cost of that guarantee).

    Raises:
        ValueError: On an invalid hyperparameter (naming it), a 1-D parameter or one
            with ``p > n`` marked orthogonal, or a non-orthonormal starting point
            without ``project_init=True``.
        TypeError: On a non-float orthogonal parameter or a non-bool flag.

    References:
        The ICML 2026 POGO paper (``papers/pogo-optim.md``); authors' release:
        ``pogo-torch`` (https://github.com/adrianjav/pogo). Landing: Ablin et al.,
        JMLR 2024. VectorAdam: Ling et al., NeurIPS 2022.

    Example:
        >>> import torch
        >>> from pogo_optim import POGO, random_stiefel
        >>> w = torch.nn.Parameter(random_stiefel(100, 8, 16))  # 100 matrices, rows orthonormal
        >>> b = torch.nn.Parameter(torch.zeros(16))
        >>> opt = POGO([{"params": [w]}, {"params": [b], "orthogonal": False, "base": "adam"}],
        ...            lr=1e-2)
        >>> loss = (w.sum(0) @ torch.ones(16) - 1).pow(2).sum() + b.pow(2).sum()
        >>> loss.backward()
        >>> opt.step()
        >>> bool((w @ w.mT - torch.eye(8)).norm(dim=(-2, -1)).max() < 1e-5)
        True
    """

    _EXTRA_DEFAULTS: ClassVar[dict[str, Any]] = {
        "base": "vadam",
        "normalization_order": 2,
        "max_step": DEFAULT_MAX_STEP,
    }

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        *,
        base: str = "vadam",
        momentum: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        maximize: bool = False,
        orthogonal: bool = True,
        layout: str = "rows",
        project_init: bool = False,
        normalization_order: int = 2,
        max_step: float = DEFAULT_MAX_STEP,
    ) -> None:
        defaults = dict(
            lr=lr,
            base=base,
            momentum=momentum,
            dampening=dampening,
            nesterov=nesterov,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            orthogonal=orthogonal,
            layout=layout,
            project_init=project_init,
            normalization_order=normalization_order,
            max_step=max_step,
        )
        super().__init__(params, defaults)

    def _validate_extra(self, group: dict[str, Any]) -> None:
        k = group["normalization_order"]
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 4:
            raise ValueError(f"Invalid normalization_order: {k!r}; expected an int in 1..4")
        s = group["max_step"]
        if isinstance(s, bool) or not isinstance(s, int | float) or not 0 < s <= 1:
            raise ValueError(f"Invalid max_step: {s!r}; expected a float in (0, 1]")

    def _manifold_step(self, x, d, group):
        return pogo_update(
            x,
            d,
            group["lr"],
            normalization_order=group["normalization_order"],
            max_step=group["max_step"],
        )


class Landing(StiefelOptimizer):
    r"""The Landing algorithm (Ablin et al., 2024) with the same base rules, as a baseline.

    For each orthogonal matrix ``X`` (rows layout) with base direction ``D``:

    .. math::
        \Lambda(X) = \tfrac12 (X X^\top D - X D^\top X) + \lambda (X X^\top - I) X,
        \qquad X^+ = X - \eta \Lambda(X),

    with ``eta = min(lr, eta*)`` where ``eta*`` is a safe step keeping
    ``||X X^T - I||_F <= safe_step`` (derived like the paper's lemma; see
    :func:`pogo_optim.functional.landing_safe_step`).
    The iterates are *infeasible*: they stay near the manifold, not on it. 4 matrix
    products per step, 5 with the safe step. The authors' reference code applies
    momentum to the relative gradient of square matrices; we apply the base rule to
    the Euclidean gradient, like POGO, so both use the same base rules.

    Args:
        params: As :class:`POGO`.
        lr: Learning rate.
        lambda_regul: Attraction ``lambda > 0`` towards the manifold.
        safe_step: Radius of the safe region in ``(0, 1)``, or None for a fixed step.
        base, momentum, dampening, nesterov, betas, eps, weight_decay, maximize,
        orthogonal, layout, project_init: As :class:`POGO` (default base ``"sgd"``).

    Raises:
        ValueError: As :class:`POGO`, and on ``lambda_regul <= 0`` or ``safe_step``
            outside ``(0, 1)``.

    References:
        P. Ablin, S. Vary, B. Gao, P.-A. Absil, "Infeasible deterministic, stochastic,
        and variance-reduction algorithms for optimization under orthogonality
        constraints", JMLR 2024.

    Example:
        >>> import torch
        >>> from pogo_optim import Landing
        >>> w = torch.nn.Parameter(torch.nn.init.orthogonal_(torch.empty(8, 16)))
        >>> opt = Landing([w], lr=0.1, momentum=0.9)
        >>> (w @ torch.ones(16)).sum().backward()
        >>> opt.step()
    """

    _EXTRA_DEFAULTS: ClassVar[dict[str, Any]] = {
        "base": "sgd",
        "lambda_regul": 1.0,
        "safe_step": 0.5,
    }

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        *,
        lambda_regul: float = 1.0,
        safe_step: float | None = 0.5,
        base: str = "sgd",
        momentum: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        maximize: bool = False,
        orthogonal: bool = True,
        layout: str = "rows",
        project_init: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            lambda_regul=lambda_regul,
            safe_step=safe_step,
            base=base,
            momentum=momentum,
            dampening=dampening,
            nesterov=nesterov,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            orthogonal=orthogonal,
            layout=layout,
            project_init=project_init,
        )
        super().__init__(params, defaults)

    def _validate_extra(self, group: dict[str, Any]) -> None:
        lam = group["lambda_regul"]
        if isinstance(lam, bool) or not isinstance(lam, int | float) or not lam > 0:
            raise ValueError(f"Invalid lambda_regul: {lam!r}; expected a float > 0")
        eps = group["safe_step"]
        if eps is not None and (
            isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < 1
        ):
            raise ValueError(f"Invalid safe_step: {eps!r}; expected a float in (0, 1) or None")

    def _init_tolerance(self, dtype: torch.dtype, p: int, group: dict[str, Any]) -> float:
        # Landing's iterates are infeasible: a checkpoint of a run sits inside the
        # safe region, not on the manifold, and must load.
        radius = group["safe_step"] if group["safe_step"] is not None else 0.5
        return max(radius, _init_tolerance(dtype, p))

    def _manifold_step(self, x, d, group):
        return landing_update(
            x, d, group["lr"], lambda_regul=group["lambda_regul"], safe_step=group["safe_step"]
        )
