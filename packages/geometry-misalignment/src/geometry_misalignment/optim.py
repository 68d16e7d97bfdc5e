"""Geometry-aware (Wasserstein natural-gradient) and geometry-calibrated optimizers.

Both optimizers need the pushed-forward batch to apply the metric G, so their
``step(closure)`` takes a closure that returns ``(loss, outputs)`` with
``outputs = T_theta(x)`` (shape ``(n, ...)``, the samples first) and *does not* call
``backward``: the optimizer differentiates ``loss`` itself and keeps the graph of
``outputs`` for the metric-vector products. ``p.grad`` is filled with the Euclidean
gradient as a by-product.

    def closure():
        out = model(x)
        return loss_fn(out, y), out
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from icml26_core.validation import check_float, check_int
from torch import Tensor

from geometry_misalignment.geometry import MetricOperator, lanczos_extremes

__all__ = [
    "EXACT_MAX_DIM",
    "SOLVERS",
    "CalibratedOptimizer",
    "WassersteinNaturalGradient",
    "conjugate_gradient",
]

Closure = Callable[[], tuple[Tensor, Tensor]]


def conjugate_gradient(
    matvec: Callable[[Tensor], Tensor],
    b: Tensor,
    *,
    max_iter: int = 50,
    rtol: float = 1e-10,
) -> tuple[Tensor, int, float]:
    """Solve ``A s = b`` for symmetric positive definite ``A`` by conjugate gradients.

    Args:
        matvec: ``v -> A v`` for vectors shaped like ``b``.
        b: Right-hand side, a 1-D tensor (float64 in the optimizers).
        max_iter: Most iterations; CG stops early if ``d^T A d <= 0`` (A not positive
            definite along a direction).
        rtol: Stop at ``|r| <= rtol |b|``.

    Returns:
        ``(s, iterations, relative residual)``; ``s`` has ``b``'s shape and dtype.

    Raises:
        TypeError: If ``b`` is not a floating tensor.
        ValueError: If ``b`` is not 1-D or not finite, ``max_iter < 1`` or ``rtol < 0``.
    """
    if not isinstance(b, Tensor) or not b.is_floating_point():
        got = b.dtype if isinstance(b, Tensor) else type(b).__name__
        raise TypeError(f"b must be a floating torch.Tensor, got {got}")
    if b.dim() != 1:
        raise ValueError(f"b must be a 1-D tensor, got shape {tuple(b.shape)}")
    if not bool(torch.isfinite(b).all()):
        raise ValueError("b contains NaN or inf")
    max_iter = check_int("max_iter", max_iter, low=1)
    rtol = check_float("rtol", rtol, low=0.0)
    s = torch.zeros_like(b)
    r = b.clone()
    d = r.clone()
    rr = float(r @ r)
    b_norm = rr**0.5
    if b_norm == 0.0:
        return s, 0, 0.0
    iters = 0
    while iters < max_iter:
        iters += 1
        ad = matvec(d)
        dad = float(d @ ad)
        if dad <= 0:
            break
        step = rr / dad
        s = s + step * d
        r = r - step * ad
        rr_new = float(r @ r)
        if rr_new**0.5 <= rtol * b_norm:
            rr = rr_new
            break
        d = r + (rr_new / rr) * d
        rr = rr_new
    return s, iters, rr**0.5 / b_norm


def _call(closure: Closure | None, who: str) -> tuple[Tensor, Tensor]:
    if closure is None:
        raise ValueError(f"{who}.step needs a closure returning (loss, outputs)")
    with torch.enable_grad():
        out = closure()
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(
            f"{who}: the closure must return (loss, outputs) with outputs = T_theta(x); "
            f"got {type(out).__name__}"
        )
    loss, outputs = out
    if not isinstance(loss, Tensor) or loss.dim() != 0:
        got = f"shape {tuple(loss.shape)}" if isinstance(loss, Tensor) else type(loss).__name__
        raise TypeError(
            f"{who}: loss (the closure's first return value) must be a scalar tensor, got {got}"
        )
    if not bool(torch.isfinite(loss.detach())):
        raise ValueError(f"{who}: loss is {float(loss)}; expected a finite value")
    return loss, outputs


def _gradients(loss: Tensor, params: list[Tensor]) -> list[Tensor]:
    grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    out = [torch.zeros_like(p) if g is None else g for g, p in zip(grads, params, strict=True)]
    for p, g in zip(params, out, strict=True):
        p.grad = g.detach().clone()
    return out


def _natural_direction(
    op: MetricOperator, grads: list[Tensor], damping: Tensor, max_iter: int, rtol: float
) -> tuple[list[Tensor], int, float]:
    """``(G + damping I)^-1 grad`` by CG, in float64."""
    g = op.flatten(grads).to(torch.float64)

    def matvec(v: Tensor) -> Tensor:
        return op.matvec(v) + damping * v

    s, iters, res = conjugate_gradient(matvec, g, max_iter=max_iter, rtol=rtol)
    return op.unflatten(s), iters, res


def _exact_direction(
    op: MetricOperator, grads: list[Tensor], damping: Tensor
) -> tuple[list[Tensor], float]:
    """``(G + damping I)^-1 grad`` with G formed densely, in float64.

    Cholesky where ``G + damping I`` is positive definite; otherwise (a singular G
    with zero damping) the minimum-norm solution ``pinv(G) grad``, the point CG
    started at zero converges to (``grad`` lies in the range of G).
    """
    g = op.flatten(grads).to(torch.float64)
    A = op.dense() + torch.diag(damping)
    L, info = torch.linalg.cholesky_ex(A)
    if int(info) == 0:
        s = torch.cholesky_solve(g[:, None], L)[:, 0]
    else:
        s = torch.linalg.pinv(A, hermitian=True) @ g
    g_norm = float(g.norm())
    res = float((A @ s - g).norm()) / g_norm if g_norm > 0 else 0.0
    return op.unflatten(s), res


SOLVERS = ("auto", "cg", "exact")
EXACT_MAX_DIM = 512  # "auto" forms G densely up to this many parameter entries


def _check_solver(solver: object, exact_max_dim: object, dim: int) -> tuple[str, int]:
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    max_dim = check_int("exact_max_dim", exact_max_dim, low=1)
    if solver == "exact" and dim > max_dim:
        raise ValueError(
            f"solver='exact' forms the {dim} x {dim} metric G, above exact_max_dim={max_dim} "
            "parameter entries: use solver='cg' (or 'auto', which switches to CG above it), "
            "or raise exact_max_dim"
        )
    return str(solver), max_dim


def _n_trainable(groups: list[dict[str, Any]]) -> int:
    return sum(p.numel() for p, _ in _trainable(groups))


def _trainable(groups: list[dict[str, Any]]) -> list[tuple[Tensor, dict[str, Any]]]:
    return [(p, g) for g in groups for p in g["params"] if p.requires_grad]


def _natural_step(
    groups: list[dict[str, Any]],
    loss: Tensor,
    outputs: Tensor,
    *,
    lr_key: str,
    damping_key: str,
    cg_iters: int,
    cg_tol: float,
    solver: str = "cg",
    exact_max_dim: int = EXACT_MAX_DIM,
) -> tuple[str, int, float]:
    pairs = _trainable(groups)
    params = [p for p, _ in pairs]
    grads = _gradients(loss, params)
    op = MetricOperator(outputs, params)
    damping = torch.cat(
        [torch.full((p.numel(),), float(g[damping_key]), dtype=torch.float64) for p, g in pairs]
    ).to(outputs.device)
    _check_solver(solver, exact_max_dim, op.dim)  # parameters may have been unfrozen
    if solver == "exact" or (solver == "auto" and op.dim <= exact_max_dim):
        direction, res = _exact_direction(op, grads, damping)
        used, iters = "exact", 0
    else:
        direction, iters, res = _natural_direction(op, grads, damping, cg_iters, cg_tol)
        used = "cg"
    with torch.no_grad():
        for (p, g), s in zip(pairs, direction, strict=True):
            p.add_(s.to(p.dtype), alpha=-float(g[lr_key]))
    return used, iters, res


class WassersteinNaturalGradient(torch.optim.Optimizer):
    """Geometry-aware steps ``theta <- theta - lr (G + damping I)^-1 grad F``.

    G is the Wasserstein information matrix of the batch the closure pushes forward
    (see :mod:`geometry_misalignment.geometry`). Two solves: ``"cg"``, conjugate
    gradients on metric-vector products (two reverse passes each; G is never formed),
    exact once the CG iterations reach the number of distinct eigenvalues of G; and
    ``"exact"``, G formed densely from the Jacobian (one vectorized reverse pass for
    all ``dim`` Jacobian-vector products) and ``G + damping I`` solved by Cholesky in
    float64 (the pseudo-inverse where it is singular, the minimum-norm solution CG
    also converges to). ``"auto"`` (the default) takes the exact solve for models
    with at most ``exact_max_dim`` trainable parameter entries and CG above. With
    ``lr = 1`` a step moves each
    particle ``T_theta(x_i)`` by about ``-n dF/dT(x_i)``, the Wasserstein gradient, as
    far as the model can follow it.

    Args:
        params: Parameters or parameter groups (``lr`` and ``damping`` per group; the
            solve couples all groups).
        lr: Step size, > 0 (dimensionless: 1 is a full Gauss-Newton step).
        damping: Tikhonov damping added to G, >= 0, in the units of G (squared output
            units per squared parameter unit). The default 1e-8 suits linear maps; a
            nonlinear map (an MLP) needs more (the experiment uses 1e-4): with a nearly
            singular G the exact solve takes the full, huge step that a CG capped at
            ``cg_iters`` would have truncated, so ``"auto"`` and ``"cg"`` then follow
            different trajectories.
        cg_iters: Most CG iterations per step, >= 1.
        cg_tol: CG stops at this relative residual.
        solver: ``"auto"``, ``"cg"`` or ``"exact"`` (see above).
        exact_max_dim: Most trainable parameter entries for the exact solve, >= 1
            (default 512: the dense J has ``outputs.numel() * dim`` entries and the
            Cholesky costs ``dim^3 / 3`` flops). ``"auto"`` switches to CG above it;
            ``"exact"`` raises above it.

    Attributes:
        last_solver: ``"cg"`` or ``"exact"``, the solve the last step used.
        last_cg_iters: CG iterations of the last step (0 for the exact solve).
        last_cg_residual: Relative residual ``|(G + damping I) s - grad| / |grad|`` of
            the last step's solve.

    Raises:
        ValueError: On a bad argument (named in the message), including
            ``solver="exact"`` with more than ``exact_max_dim`` trainable parameter
            entries (at construction, or at ``step`` if parameters were unfrozen);
            at ``step`` on a missing closure or a non-finite loss. TypeError: on a
            closure that does not return ``(loss, outputs)``.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1.0,
        damping: float = 1e-8,
        *,
        cg_iters: int = 50,
        cg_tol: float = 1e-10,
        solver: str = "auto",
        exact_max_dim: int = EXACT_MAX_DIM,
    ) -> None:
        defaults = {
            "lr": check_float("lr", lr, low=0.0, low_inclusive=False),
            "damping": check_float("damping", damping, low=0.0),
        }
        self.cg_iters = check_int("cg_iters", cg_iters, low=1)
        self.cg_tol = check_float("cg_tol", cg_tol, low=0.0)
        super().__init__(params, defaults)
        self.solver, self.exact_max_dim = _check_solver(
            solver, exact_max_dim, _n_trainable(self.param_groups)
        )
        self.last_solver = ""
        self.last_cg_iters = 0
        self.last_cg_residual = 0.0

    @torch.no_grad()
    def step(self, closure: Closure | None = None) -> Tensor:  # type: ignore[override]
        """One preconditioned step; returns the loss before the step."""
        loss, outputs = _call(closure, type(self).__name__)
        with torch.enable_grad():
            self.last_solver, self.last_cg_iters, self.last_cg_residual = _natural_step(
                self.param_groups,
                loss,
                outputs,
                lr_key="lr",
                damping_key="damping",
                cg_iters=self.cg_iters,
                cg_tol=self.cg_tol,
                solver=self.solver,
                exact_max_dim=self.exact_max_dim,
            )
        return loss.detach()


class CalibratedOptimizer(torch.optim.Optimizer):
    """Geometry-calibrated optimization: estimate misalignment, precondition only when needed.

    Every ``every`` steps, ``kappa`` of the batch's metric G is estimated by
    ``n_iter`` Lanczos products; while ``kappa > threshold`` the steps are
    :class:`WassersteinNaturalGradient` steps (``precond_lr``, ``damping``), otherwise
    plain steps of the ``base`` optimizer on the Euclidean gradient.

    Args:
        params: Parameters or parameter groups (shared with the base optimizer).
        base: A ``torch.optim.Optimizer`` class; built as ``base(params, **base_kwargs)``.
        threshold: Misalignment above which preconditioning is on, >= 1.
        every: Steps between two estimates, >= 1 (the first step estimates).
        precond_lr: Step size of the preconditioned steps, > 0.
        damping: Damping of G, >= 0.
        n_iter: Lanczos iterations per estimate, >= 2.
        cg_iters: CG iterations per preconditioned step, >= 1.
        solver: Solve of the preconditioned steps, ``"auto"``, ``"cg"`` or ``"exact"``
            (as :class:`WassersteinNaturalGradient`).
        exact_max_dim: Most trainable parameter entries for the exact solve, >= 1.
        **base_kwargs: Passed to ``base`` (e.g. ``lr=1e-2``).

    Attributes:
        kappa: The last estimate (``nan`` before the first step).
        preconditioning: Whether the last step was preconditioned.
        n_preconditioned: Number of preconditioned steps so far.

    Raises:
        TypeError: If ``base`` is not an Optimizer class; ValueError on a bad argument.
    """

    def __init__(
        self,
        params: Iterable[Any],
        base: type[torch.optim.Optimizer] = torch.optim.Adam,
        threshold: float = 10.0,
        every: int = 10,
        *,
        precond_lr: float = 1.0,
        damping: float = 1e-8,
        n_iter: int = 20,
        cg_iters: int = 50,
        solver: str = "auto",
        exact_max_dim: int = EXACT_MAX_DIM,
        **base_kwargs: Any,
    ) -> None:
        if not (isinstance(base, type) and issubclass(base, torch.optim.Optimizer)):
            raise TypeError(f"base must be a torch.optim.Optimizer class, got {base!r}")
        self.threshold = check_float("threshold", threshold, low=1.0)
        self.every = check_int("every", every, low=1)
        self.n_iter = check_int("n_iter", n_iter, low=2)
        self.cg_iters = check_int("cg_iters", cg_iters, low=1)
        self.base = base(params, **base_kwargs)
        defaults = {
            "precond_lr": check_float("precond_lr", precond_lr, low=0.0, low_inclusive=False),
            "damping": check_float("damping", damping, low=0.0),
        }
        # Same group dicts as the base optimizer: lr schedulers act on both.
        super().__init__(self.base.param_groups, defaults)
        self.solver, self.exact_max_dim = _check_solver(
            solver, exact_max_dim, _n_trainable(self.param_groups)
        )
        self.kappa = float("nan")
        self.preconditioning = False
        self.n_preconditioned = 0
        self.n_steps = 0
        self.n_estimates = 0
        self._gen = torch.Generator().manual_seed(0)

    def _estimate(self, outputs: Tensor) -> float:
        params = [p for p, _ in _trainable(self.param_groups)]
        op = MetricOperator(outputs, params)
        lmax, lmin = lanczos_extremes(
            op.matvec, op.dim, self.n_iter, generator=self._gen, device=outputs.device
        )
        self.n_estimates += 1
        return float("inf") if lmin <= 0 else lmax / lmin

    @torch.no_grad()
    def step(self, closure: Closure | None = None) -> Tensor:  # type: ignore[override]
        """One step (preconditioned or base); returns the loss before the step."""
        loss, outputs = _call(closure, type(self).__name__)
        with torch.enable_grad():
            if self.n_steps % self.every == 0:
                self.kappa = self._estimate(outputs)
                self.preconditioning = self.kappa > self.threshold
            if self.preconditioning:
                _natural_step(
                    self.param_groups,
                    loss,
                    outputs,
                    lr_key="precond_lr",
                    damping_key="damping",
                    cg_iters=self.cg_iters,
                    cg_tol=1e-10,
                    solver=self.solver,
                    exact_max_dim=self.exact_max_dim,
                )
                self.n_preconditioned += 1
            else:
                _gradients(loss, [p for p, _ in _trainable(self.param_groups)])
        if not self.preconditioning:
            self.base.step()
        self.n_steps += 1
        return loss.detach()

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients (through the base optimizer)."""
        self.base.zero_grad(set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """The base optimizer's state plus the calibration state."""
        return {
            "base": self.base.state_dict(),
            "calibration": {
                "kappa": self.kappa,
                "preconditioning": self.preconditioning,
                "n_preconditioned": self.n_preconditioned,
                "n_steps": self.n_steps,
                "n_estimates": self.n_estimates,
                "precond_lr": [g["precond_lr"] for g in self.param_groups],
                "damping": [g["damping"] for g in self.param_groups],
                # the Lanczos start vectors' generator: a reloaded run draws the same ones
                "generator": self._gen.get_state(),
            },
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output."""
        cal = state_dict["calibration"]
        self.base.load_state_dict(state_dict["base"])
        self.param_groups = self.base.param_groups
        for g, lr, d in zip(self.param_groups, cal["precond_lr"], cal["damping"], strict=True):
            g["precond_lr"], g["damping"] = lr, d
        self.kappa = float(cal["kappa"])
        self.preconditioning = bool(cal["preconditioning"])
        self.n_preconditioned = int(cal["n_preconditioned"])
        self.n_steps = int(cal["n_steps"])
        self.n_estimates = int(cal["n_estimates"])
        if "generator" in cal:  # absent from state dicts of 0.1.0 before the second review
            self._gen.set_state(cal["generator"])
