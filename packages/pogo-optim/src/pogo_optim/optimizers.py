r"""The optimizers: :class:`POGO` and the :class:`Landing` baseline.

Both share the param-group machinery of :class:`StiefelOptimizer`: a group with
``orthogonal=True`` holds matrices (or batches of matrices) kept on the Stiefel
manifold; a group with ``orthogonal=False`` is updated by the base rule alone
(``p <- p - lr * d``, exactly :class:`torch.optim.SGD` or :class:`torch.optim.Adam`),
so one optimizer object trains a whole model.

Plumbing shared with :mod:`torch.optim` (same names, same meaning):

- ``foreach``: parameters of one group with the same shape, dtype and device are
  stacked and updated by one batched call (base rule and manifold step), instead of
  a Python loop per parameter; the default (None) does so unless ``differentiable``.
- ``capturable``: the step count lives on the parameter's device and the step reads
  nothing back to the host, so a step can be captured in a CUDA graph (pass ``lr`` as
  a tensor on the device to change it after capture).
- ``differentiable``: the step runs with autograd on, so gradients flow through it.
- ``state["step"]`` is a float32 tensor (on the CPU unless capturable), so
  ``torch.compile`` does not specialize on the count; ``lr`` may be a one-element
  tensor.
- ``nonfinite_grad``: what a NaN or inf gradient does (see :class:`POGO`).

Half-precision parameters (float16, bfloat16) are updated in float32: the gradient,
the base rule's state and the manifold step are float32 and only the result is
rounded to the parameter's dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import torch
from icml26_core.validation import check_choice, check_float, check_int

from pogo_optim.functional import (
    DEFAULT_MAX_STEP,
    BaseRule,
    _landing_step,
    _leading,
    _pogo_step,
    get_base_rule,
)
from pogo_optim.stiefel import LAYOUTS, as_rows, orthogonality_error, project

ParamsT = Iterable[torch.Tensor] | Iterable[dict[str, Any]]
Tensor = torch.Tensor

NONFINITE_CHOICES = ("skip", "raise", "ignore")

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
    "foreach": None,
    "capturable": False,
    "differentiable": False,
    "fused": None,
    "nonfinite_grad": "skip",
}

#: Dtype in which a parameter of a given dtype is updated (half precision: float32).
_COMPUTE_DTYPE = {torch.float16: torch.float32, torch.bfloat16: torch.float32}


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return _COMPUTE_DTYPE.get(dtype, dtype)


def _real_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.empty((), dtype=dtype).real.dtype if dtype.is_complex else dtype


def _init_tolerance(dtype: torch.dtype, p: int) -> float:
    """Largest ``||X X^H - I||_F`` accepted as orthonormal at construction.

    ``max(1e-4, 100 eps) sqrt(p)``, capped at 0.5: storing an orthonormal matrix in
    bfloat16 already moves it by about ``eps sqrt(p) / 3`` (0.02 at p = 64).
    """
    eps = torch.finfo(_real_dtype(dtype)).eps
    return min(0.5, max(1e-4, 100 * eps) * math.sqrt(max(p, 1)))


def _is_compiling() -> bool:
    return torch.compiler.is_compiling()


def _copy_all(dst: Sequence[Tensor], src: Sequence[Tensor]) -> None:
    """``dst[i].copy_(src[i])`` for all ``i`` in one foreach call."""
    torch._foreach_copy_(list(dst), list(src))


class StiefelOptimizer(torch.optim.Optimizer):
    """Shared machinery: validation, base rules, mixed groups, ``step(closure)``.

    Subclasses implement :meth:`_manifold_step` (the update of one orthogonal tensor,
    or of a stack of them, in the rows layout) and list their own hyperparameters in
    ``_EXTRA_DEFAULTS``.
    """

    _EXTRA_DEFAULTS: ClassVar[dict[str, Any]] = {}

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        if not isinstance(defaults.get("differentiable"), bool):
            raise TypeError(
                f"differentiable must be a bool, got {defaults.get('differentiable')!r}"
            )
        super().__init__(params, defaults)

    # ------------------------------------------------------------------ validation
    def _validate_hyperparameters(self, group: dict[str, Any]) -> None:
        lr = group["lr"]
        if isinstance(lr, Tensor):
            if lr.numel() != 1 or not torch.is_floating_point(lr):
                raise ValueError(
                    f"lr: a tensor learning rate must hold one real float, got shape "
                    f"{tuple(lr.shape)} and dtype {lr.dtype}"
                )
            check_float("lr", float(lr.detach()), low=0.0)
        else:
            group["lr"] = check_float("lr", lr, low=0.0)
        get_base_rule(group["base"])
        group["momentum"] = check_float("momentum", group["momentum"], low=0.0)
        group["dampening"] = check_float("dampening", group["dampening"], low=0.0, high=1.0)
        for flag in (
            "nesterov",
            "maximize",
            "orthogonal",
            "project_init",
            "capturable",
            "differentiable",
        ):
            if not isinstance(group[flag], bool):
                raise TypeError(f"{flag} must be a bool, got {group[flag]!r}")
        for flag in ("foreach", "fused"):
            if group[flag] is not None and not isinstance(group[flag], bool):
                raise TypeError(f"{flag} must be a bool or None, got {group[flag]!r}")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(
                "nesterov=True requires momentum > 0 and dampening = 0, got "
                f"momentum={group['momentum']!r}, dampening={group['dampening']!r}"
            )
        betas = group["betas"]
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
        group["betas"] = tuple(
            check_float(f"betas[{i}]", b, low=0.0, high=1.0, high_inclusive=False)
            for i, b in enumerate(betas)
        )
        group["eps"] = check_float("eps", group["eps"], low=0.0)
        group["weight_decay"] = check_float("weight_decay", group["weight_decay"], low=0.0)
        check_choice("layout", group["layout"], LAYOUTS)
        check_choice("nonfinite_grad", group["nonfinite_grad"], NONFINITE_CHOICES)
        if group["fused"]:
            raise ValueError(
                "fused=True is not available: there is no fused kernel for POGO or "
                "Landing; foreach (the default) already updates same-shape parameters "
                "with one batched call"
            )
        if group["foreach"] and self.defaults["differentiable"]:
            raise ValueError("foreach=True does not support differentiable=True")
        if group["capturable"] and group["nonfinite_grad"] == "raise":
            raise ValueError(
                "nonfinite_grad='raise' reads the gradient's finiteness on the host, which "
                "capturable=True forbids; use 'skip' (masked on the device) or 'ignore'"
            )

    @torch.no_grad()
    def _validate_orthogonal_params(self, group: dict[str, Any], index: int) -> None:
        layout = group["layout"]
        for j, param in enumerate(group["params"]):
            where = f"param group {index}, parameter {j} (shape {tuple(param.shape)})"
            if not (torch.is_floating_point(param) or param.is_complex()):
                raise TypeError(
                    f"{where}: orthogonal parameters must be real floating point or "
                    f"complex, got {param.dtype}"
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
            if param.numel() == 0:
                continue  # an empty batch: nothing to check, and steps leave it empty
            if not torch.isfinite(param).all():
                raise ValueError(f"{where}: contains NaN or inf")
            work = torch.complex128 if param.is_complex() else torch.float64
            err = float(orthogonality_error(x.detach().to(work)).max())
            tol = self._init_tolerance(param.dtype, p, group)
            if err > tol:
                if not group["project_init"]:
                    raise ValueError(
                        f"{where}: not on the Stiefel manifold, ||X X^H - I||_F = {err:.3g} "
                        f"> {tol:.3g}. Initialize it orthogonal (torch.nn.init.orthogonal_ for "
                        "one matrix, pogo_optim.random_stiefel for a batch) or pass "
                        "project_init=True to project it once (by an SVD) here"
                    )
                param.copy_(project(param.detach().to(work), layout).to(param.dtype))

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a param group (validated like the constructor's groups).

        Raises:
            ValueError: On an invalid hyperparameter, a 1-D or ``p > n`` orthogonal
                parameter, or a non-orthonormal one without ``project_init=True``.
            TypeError: On a hyperparameter of the wrong type, a non-float orthogonal
                parameter, or a non-bool flag.
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
        """Largest ``||X X^H - I||_F`` accepted as a starting point."""
        return _init_tolerance(dtype, p)

    # ------------------------------------------------------------- checkpoints
    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        # Fill keys added after a checkpoint was written, as torch's optimizers do,
        # and turn integer step counts (older releases) into tensors.
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in {**COMMON_DEFAULTS, **self._EXTRA_DEFAULTS}.items():
                group.setdefault(key, value)
            for p in group["params"]:
                st = self.state.get(p)
                if st and "step" in st and not isinstance(st["step"], Tensor):
                    st["step"] = self._new_step(float(st["step"]), p, group)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict (as :meth:`torch.optim.Optimizer.load_state_dict`).

        torch casts floating-point state to each parameter's dtype; the state of a
        half-precision parameter is float32 here (see the module docstring), so it is
        restored from the checkpoint in float32 instead of being rounded to half.
        """
        ids = [i for g in state_dict["param_groups"] for i in g["params"]]
        params = [p for g in self.param_groups for p in g["params"]]
        keep: dict[int, dict[str, Tensor]] = {}
        for pid, p in zip(ids, params, strict=False):
            st = state_dict["state"].get(pid)
            cdt = _compute_dtype(p.dtype)
            if st and cdt != p.dtype:
                keep[id(p)] = {
                    k: v.to(device=p.device, dtype=cdt)
                    for k, v in st.items()
                    if k != "step" and isinstance(v, Tensor) and v.is_floating_point()
                }
        super().load_state_dict(state_dict)
        for p in params:
            if id(p) in keep:
                self.state[p].update(keep[id(p)])

    # ------------------------------------------------------------------------ step
    def _manifold_step(self, x: Tensor, d: Tensor, group: dict[str, Any]) -> Tensor:
        """The update of ``x`` (rows layout, any leading batch) along direction ``d``."""
        raise NotImplementedError

    @staticmethod
    def _new_step(value: float, p: Tensor, group: dict[str, Any]) -> Tensor:
        device = p.device if group["capturable"] else torch.device("cpu")
        return torch.tensor(value, dtype=torch.float32, device=device)

    def _step_tensor(self, state: dict[str, Any], p: Tensor, group: dict[str, Any]) -> Tensor:
        """``state["step"]`` as a float32 tensor on the right device (created at 0)."""
        step = state.get("step")
        want = p.device if group["capturable"] else torch.device("cpu")
        if not isinstance(step, Tensor):
            step = self._new_step(float(step or 0), p, group)
            state["step"] = step
        elif step.device != want:
            step = step.to(device=want, dtype=torch.float32)
            state["step"] = step
        return step

    def _use_foreach(self, group: dict[str, Any]) -> bool:
        if group["foreach"] is None:
            return not self.defaults["differentiable"]
        return group["foreach"]

    @staticmethod
    def _grad(group: dict[str, Any], p: Tensor) -> Tensor:
        """The gradient the base rule sees: maximize, weight decay, compute dtype."""
        g = p.grad
        cdt = _compute_dtype(p.dtype)
        if g.dtype != cdt:
            g = g.to(cdt)
        if group["maximize"]:
            g = -g
        if group["weight_decay"] != 0:
            g = g.add(p if p.dtype == cdt else p.to(cdt), alpha=group["weight_decay"])
        return g

    def _new_value(self, group: dict[str, Any], x: Tensor, d: Tensor) -> Tensor:
        """Updated value of ``x`` (parameter layout, compute dtype) along ``d``."""
        if group["orthogonal"]:
            layout = group["layout"]
            new = self._manifold_step(as_rows(x, layout), as_rows(d, layout), group)
            return as_rows(new, layout)
        lr = group["lr"]
        if isinstance(lr, Tensor):
            return x - d * lr
        return torch.add(x, d, alpha=-lr)

    def step(self, closure: Callable[[], float | Tensor] | None = None):
        """Perform one optimization step.

        Args:
            closure: Optional callable that re-evaluates the model and returns the
                loss; it runs with gradients enabled.

        Returns:
            The closure's loss, or None.

        Raises:
            RuntimeError: On a sparse gradient.
            ValueError: With ``nonfinite_grad="raise"``, on a NaN or inf gradient
                (naming the parameter); nothing is updated for that parameter.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.set_grad_enabled(self.defaults["differentiable"]):
            for index, group in enumerate(self.param_groups):
                self._step_group(group, index)
        return loss

    def _step_group(self, group: dict[str, Any], index: int) -> None:
        rule = get_base_rule(group["base"])
        entries = []
        for j, p in enumerate(group["params"]):
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
            entries.append((j, p))
        if not entries:
            return
        sync_free = group["capturable"] or _is_compiling()
        if not self._use_foreach(group) or len(entries) == 1:
            for j, p in entries:
                self._update_one(group, index, rule, j, p, sync_free)
            return
        buckets: dict[tuple, list[tuple[int, Tensor]]] = {}
        for j, p in entries:
            state = self.state[p]
            key: tuple = (p.device, p.dtype, tuple(p.shape), tuple(sorted(state)))
            if not sync_free and "step" in state:
                key += (float(state["step"]),)  # one count per stacked call
            buckets.setdefault(key, []).append((j, p))
        for members in buckets.values():
            if len(members) == 1 or (sync_free and not rule.batched):
                for j, p in members:
                    self._update_one(group, index, rule, j, p, sync_free)
            else:
                self._update_stacked(group, index, rule, members, sync_free)

    def _nonfinite(self, group: dict[str, Any], where: str) -> None:
        if group["nonfinite_grad"] == "raise":
            raise ValueError(
                f"{where}: the gradient contains NaN or inf (nonfinite_grad='raise'); "
                "nothing was updated for it"
            )

    def _source(self, p: Tensor, cdt: torch.dtype) -> Tensor:
        """The parameter's value to update from, in the compute dtype.

        With ``differentiable`` a copy, so that the in-place write of the result does
        not overwrite a tensor that autograd saved for the backward pass.
        """
        if cdt != p.dtype:
            return p.to(cdt)
        return p.clone() if self.defaults["differentiable"] else p

    def _update_one(
        self,
        group: dict[str, Any],
        index: int,
        rule: BaseRule,
        j: int,
        p: Tensor,
        sync_free: bool,
    ) -> None:
        """Update one parameter (the per-parameter path)."""
        g = self._grad(group, p)
        state = self.state[p]
        step = self._step_tensor(state, p, group)
        check = group["nonfinite_grad"] != "ignore"
        cdt = _compute_dtype(p.dtype)
        if not sync_free:
            if check and not bool(torch.isfinite(g).all()):
                self._nonfinite(group, f"param group {index}, parameter {j}")
                return  # skipped: parameter, state and step count untouched
            step.add_(1)
            d = rule.direction(g, state, group, float(step))
            if not group["orthogonal"] and cdt == p.dtype and not isinstance(group["lr"], Tensor):
                p.add_(d, alpha=-group["lr"])  # exactly torch.optim.SGD / Adam
            else:
                p.copy_(self._new_value(group, self._source(p, cdt), d))
            return
        # Sync-free (capturable, or under torch.compile): a non-finite gradient is masked
        # on the device with torch.where instead of branching on the host.
        t = step + 1
        saved = {k: v.clone() for k, v in state.items() if k != "step" and isinstance(v, Tensor)}
        d = rule.direction(g, state, group, t)
        x = self._source(p, cdt)
        new = self._new_value(group, x, d)
        if not check:
            p.copy_(new)
            step.copy_(t)
            return
        ok = torch.isfinite(g).all()
        p.copy_(torch.where(ok, new, x))
        for k, v in state.items():
            if k != "step" and isinstance(v, Tensor):
                old = saved.get(k)
                v.copy_(torch.where(ok, v, old if old is not None else torch.zeros_like(v)))
        step.copy_(torch.where(ok, t, step))

    def _update_stacked(
        self,
        group: dict[str, Any],
        index: int,
        rule: BaseRule,
        members: list[tuple[int, Tensor]],
        sync_free: bool,
    ) -> None:
        """Update same-shape parameters with one batched call (the ``foreach`` path)."""
        params = [p for _, p in members]
        cdt = _compute_dtype(params[0].dtype)
        g = torch.stack([self._grad(group, p) for p in params])
        check = group["nonfinite_grad"] != "ignore"
        ok = torch.isfinite(g.reshape(len(params), -1)).all(1) if check else None
        if not sync_free and ok is not None:
            flags = ok.tolist()  # one host read for the whole stack
            if not all(flags):
                bad = [j for (j, _), f in zip(members, flags, strict=True) if not f]
                self._nonfinite(group, f"param group {index}, parameter(s) {bad}")
                keep = [i for i, f in enumerate(flags) if f]
                if not keep:
                    return
                members = [members[i] for i in keep]
                params = [p for _, p in members]
                g = g[keep]
            ok = None
        states = [self.state[p] for p in params]
        steps = [self._step_tensor(s, p, group) for s, p in zip(states, params, strict=True)]
        keys = [k for k, v in states[0].items() if k != "step" and isinstance(v, Tensor)]
        fresh = not keys
        x = torch.stack(params)
        if x.dtype != cdt:
            x = x.to(cdt)
        if rule.batched:
            stacked = {k: torch.stack([s[k] for s in states]) for k in keys}
            if sync_free:
                t = torch.stack(steps) + 1
                d = rule.direction(g, stacked, group, t)
            else:
                torch._foreach_add_(steps, 1)
                d = rule.direction(g, stacked, group, float(steps[0]))
            new = self._new_value(group, x, d)
            if ok is not None:  # sync-free skip: keep the old values where not finite
                new = torch.where(_leading(ok, new.dim()), new, x)
                for k, v in stacked.items():
                    old = torch.stack([s[k] for s in states]) if not fresh else torch.zeros_like(v)
                    stacked[k] = torch.where(_leading(ok, v.dim()), v, old)
                t = torch.where(ok, t, t - 1)
            for k, v in stacked.items():
                if fresh or k not in states[0]:
                    for s, vi in zip(states, v.unbind(0), strict=True):
                        s[k] = vi.clone()
                else:
                    _copy_all([s[k] for s in states], v.unbind(0))
            if sync_free:
                _copy_all(steps, t.unbind(0))
        else:  # a rule that is not batched: its directions one by one, then one manifold step
            torch._foreach_add_(steps, 1)
            d = torch.stack(
                [
                    rule.direction(gi, s, group, float(st))
                    for gi, s, st in zip(g.unbind(0), states, steps, strict=True)
                ]
            )
            new = self._new_value(group, x, d)
        _copy_all(params, new.unbind(0))


class POGO(StiefelOptimizer):
    r"""POGO: optimization on the Stiefel manifold with any base update rule.

    For each orthogonal matrix ``X`` (rows layout, ``X X^H = I_p``, ``p <= n``;
    columns-layout parameters are transposed first) with gradient ``G``:

    .. math::
        D &= \mathrm{base}(G)
            &&\text{(SGD+momentum, Adam, VectorAdam: Euclidean direction)} \\
        R &= \tfrac12 (D - X D^H X)
            &&\text{(relative gradient, tangent at } X) \\
        M &= X - \eta R,\quad \eta = \min(\mathrm{lr}, s_{\max}/\|R\|_F)
            &&\text{(Landing-style step)} \\
        X^+ &= \bigl(I - \tfrac12 T + \tfrac38 T^2\bigr) M,\quad T = M M^H - I
            &&\text{(normalization: polar-factor series)}

    **5 matrix products per step** (``X D^H``, ``(X D^H) X``, ``M M^H``, ``T T``,
    ``P M``), each at most ``O(p^2 n)``, batched over every leading dimension; no
    inverse and no decomposition. ``normalization_order=1`` replaces the last line by
    one Newton-Schulz step ``3M/2 - M M^H M / 2`` (4 products). Since ``R`` is
    tangent, ``M M^H - I`` is of order ``eta^2 ||R||^2``; the normalization leaves an
    error of order ``eta^6 ||R||^6`` and cubes any earlier one; with the step capped
    at ``eta ||R||_F <= max_step = 0.1`` (a trust region that only binds for long
    steps) that error is below ``6e-7`` per step, so the iterates stay orthogonal to
    working precision at every step (see :func:`pogo_optim.functional.pogo_update`).
    The step is a fixed point exactly where ``R = 0``, i.e. at Riemannian critical
    points (for SGD and VectorAdam).

    Square real matrices keep the sign of their determinant: POGO stays in the
    connected component of ``O(n)`` it starts in (``SO(n)`` for a rotation). Complex
    parameters are kept unitary (``X X^H = I``). Half-precision parameters are updated
    in float32 and rounded, so their orthogonality error is the rounding of the
    stored matrix (about ``eps sqrt(p) / 3``: 2e-3 in float16 and 2e-2 in bfloat16 at
    ``p = 64``) and does not grow with the number of steps.

    Groups with ``orthogonal=False`` take the plain base step ``p <- p - lr * D``
    (identical to :class:`torch.optim.SGD` with ``base="sgd"`` and to
    :class:`torch.optim.Adam` with ``base="adam"``).

    Args:
        params: Parameters or param-group dicts. Orthogonal parameters have shape
            ``(..., p, n)`` with orthonormal rows (``layout="rows"``) or ``(..., n, p)``
            with orthonormal columns (``layout="columns"``), ``p <= n``; real
            (float16 to float64) or complex. An empty batch (``(0, p, n)``) is allowed.
        lr: Learning rate, a float or a one-element tensor; with ``base="vadam"`` the
            Frobenius length of a step.
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
        foreach: Update same-shape parameters of a group with one stacked, batched call
            (default None: yes, unless ``differentiable``). Numerically the same update
            as the per-parameter loop (up to the rounding of batched products).
        capturable: Keep ``state["step"]`` on the parameter's device and read nothing
            back to the host during a step, so that it can be captured in a CUDA graph
            (non-finite gradients are then masked with ``torch.where``). Pass ``lr`` as a
            device tensor to change it after capture.
        differentiable: Run the step with autograd enabled, so that gradients flow
            through it (e.g. for meta-learning); the parameters updated in place must
            then be non-leaf tensors.
        fused: Accepted for compatibility with :mod:`torch.optim`; only None or False
            (there is no fused kernel).
        nonfinite_grad: What a NaN or inf in a parameter's gradient does: ``"skip"``
            (default) leaves that parameter, its base-rule state and its step count
            exactly as they were, so the run continues as if the step had not
            happened for it; ``"raise"`` raises a ``ValueError`` naming the parameter
            (not with ``capturable``); ``"ignore"`` does not check (the NaN spreads into
            the parameter and the state, as in :mod:`torch.optim`). The check costs one
            pass over the gradients and, unless capturable, one host read per stack
            of parameters (per parameter without foreach).

    Raises:
        ValueError: On an invalid hyperparameter (naming it), a 1-D parameter or one
            with ``p > n`` marked orthogonal, a non-orthonormal starting point
            without ``project_init=True``, ``fused=True``, or ``foreach=True`` with
            ``differentiable=True``.
        TypeError: On a hyperparameter of the wrong type, a non-float orthogonal
            parameter or a non-bool flag.

    References:
        The ICML 2026 POGO paper (abstract only); authors' release:
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
        lr: float | Tensor = 1e-2,
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
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        nonfinite_grad: str = "skip",
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
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            nonfinite_grad=nonfinite_grad,
        )
        super().__init__(params, defaults)

    def _validate_extra(self, group: dict[str, Any]) -> None:
        group["normalization_order"] = check_int(
            "normalization_order", group["normalization_order"], low=1, high=4
        )
        group["max_step"] = check_float(
            "max_step", group["max_step"], low=0.0, low_inclusive=False, high=1.0
        )

    def _manifold_step(self, x, d, group):
        return _pogo_step(x, d, group["lr"], group["normalization_order"], group["max_step"])


class Landing(StiefelOptimizer):
    r"""The Landing algorithm (Ablin et al., 2024), with the same base rules, as a baseline.

    For each orthogonal matrix ``X`` (rows layout) with base direction ``D``:

    .. math::
        \Lambda(X) = \tfrac12 (X X^H D - X D^H X) + \lambda (X X^H - I) X,
        \qquad X^+ = X - \eta \Lambda(X),

    with ``eta = min(lr, eta*)`` where ``eta*`` is a safe step keeping
    ``||X X^H - I||_F <= safe_step`` (derived like the paper's lemma; see
    :func:`pogo_optim.functional.landing_safe_step`).
    The iterates are *infeasible*: they stay near the manifold, not on it. 4 matrix
    products per step, 5 with the safe step. The authors' reference code applies
    momentum to the relative gradient of square matrices; we apply the base rule to
    the Euclidean gradient, like POGO, so both use the same base rules.

    Args:
        params: As :class:`POGO`.
        lr: Learning rate (a float or a one-element tensor).
        lambda_regul: Attraction ``lambda > 0`` towards the manifold.
        safe_step: Radius of the safe region in ``(0, 1)``, or None for a fixed step.
        base, momentum, dampening, nesterov, betas, eps, weight_decay, maximize,
        orthogonal, layout, project_init: As :class:`POGO` (default base ``"sgd"``).
        foreach, capturable, differentiable, fused, nonfinite_grad: As :class:`POGO`.

    Raises:
        ValueError: As :class:`POGO`, and on ``lambda_regul <= 0`` or ``safe_step``
            outside ``(0, 1)``.
        TypeError: As :class:`POGO`.

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
        lr: float | Tensor = 1e-2,
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
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        nonfinite_grad: str = "skip",
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
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            nonfinite_grad=nonfinite_grad,
        )
        super().__init__(params, defaults)

    def _validate_extra(self, group: dict[str, Any]) -> None:
        group["lambda_regul"] = check_float(
            "lambda_regul", group["lambda_regul"], low=0.0, low_inclusive=False
        )
        if group["safe_step"] is not None:
            group["safe_step"] = check_float(
                "safe_step",
                group["safe_step"],
                low=0.0,
                high=1.0,
                low_inclusive=False,
                high_inclusive=False,
            )

    def _init_tolerance(self, dtype: torch.dtype, p: int, group: dict[str, Any]) -> float:
        # Landing's iterates are infeasible: a checkpoint of a run sits inside the
        # safe region, not on the manifold, and must load.
        radius = group["safe_step"] if group["safe_step"] is not None else 0.5
        return max(radius, _init_tolerance(dtype, p))

    def _manifold_step(self, x, d, group):
        return _landing_step(x, d, group["lr"], group["lambda_regul"], group["safe_step"])
