"""PASO for ``nn.Module``s: step-parallel training with a window of stacked iterates.

``PASO(model, loss_fn, batch_fn, ...).run(steps)`` trains ``model`` for ``steps``
optimizer steps by solving the triangular system of steps with
:func:`paso_optim.solver.solve_triangular`. The window's gradients are computed by

- ``backend="vmap"``: one ``torch.func.vmap(torch.func.grad(...))`` over
  ``torch.func.functional_call`` (the window and its batches stacked), on one device;
- ``backend="serial"``: one ``torch.func.grad`` per window row (the reference);
- ``backend="distributed"``: the window split in contiguous blocks over the ranks of an
  initialised ``torch.distributed`` process group (gloo on CPU, NCCL on GPU, e.g. started
  by ``torchrun``); each rank computes its block with ``vmap``, the blocks are
  all-gathered, and every rank rolls the same window forward (identical results on all
  ranks, no parameter broadcast needed).

Requirements made explicit: the batch of step ``t`` is a deterministic function
``batch_fn(t)`` (checked by calling it twice), the model's buffers do not change in
``forward`` (BatchNorm in train mode is refused: call ``model.eval()`` or use another
norm) and the update is one of the pure optimizers of :mod:`paso_optim.functional`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from icml26_core.validation import check_choice, check_float, check_int
from torch import nn

from paso_optim.functional import FunctionalOptimizer, Schedule, make_optimizer
from paso_optim.solver import solve_triangular

BACKENDS = ("vmap", "serial", "distributed")
_DEFAULT_LR = 1e-3


@dataclass
class PasoResult:
    """The outcome of :meth:`PASO.run` (the final parameters are loaded into the model).

    Attributes:
        steps: Optimizer steps ``T`` taken.
        rounds: Parallel rounds (``<= T``); ``T / rounds`` is the step reduction.
        grad_evals: Gradient evaluations (total work, ``>= T``).
        errors: Mean scaled window error per round.
        steps_per_round: Steps committed per round.
        wall_time: Seconds for the whole solve.
        params: Final parameters as one flat tensor, shape ``(n,)`` (left out of the repr).
        state: Final optimizer state (dict of flat tensors; left out of the repr).
    """

    steps: int
    rounds: int
    grad_evals: int
    errors: list[float] = field(default_factory=list)
    steps_per_round: list[int] = field(default_factory=list)
    wall_time: float = 0.0
    params: torch.Tensor | None = field(default=None, repr=False)
    state: dict[str, torch.Tensor] | None = field(default=None, repr=False)

    @property
    def step_reduction(self) -> float:
        """``T / rounds`` (1.0 for an empty run)."""
        return self.steps / self.rounds if self.rounds else 1.0


class _LossModule(nn.Module):
    """``forward(batch) = loss_fn(model, batch)``, so functional_call can swap the params."""

    def __init__(self, model: nn.Module, loss_fn: Callable[[nn.Module, Any], torch.Tensor]):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, batch: Any) -> torch.Tensor:
        return self.loss_fn(self.model, batch)


def _tree_map(fn: Callable[..., Any], *trees: Any) -> Any:
    first = trees[0]
    if isinstance(first, torch.Tensor):
        return fn(*trees)
    if isinstance(first, tuple | list):
        return type(first)(_tree_map(fn, *parts) for parts in zip(*trees, strict=True))
    if isinstance(first, dict):
        return {k: _tree_map(fn, *(t[k] for t in trees)) for k in first}
    raise TypeError(
        f"batch_fn must return a tensor or a tuple/list/dict of tensors, got {type(first).__name__}"
    )


def _equal(a: Any, b: Any) -> bool:
    ok = []

    def cmp(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        ok.append(x.shape == y.shape and bool(torch.equal(x, y)))
        return x

    try:
        _tree_map(cmp, a, b)
    except (ValueError, KeyError):
        return False
    return all(ok)


class PASO:
    """Step-parallel training of ``model`` (PASO): windows of ``window`` steps per round.

    Args:
        model: The module to train; its parameters (``requires_grad``) are the unknowns
            ``x_t`` and receive the final values. Buffers must not change in forward.
        loss_fn: ``loss_fn(model, batch) -> scalar tensor``, the loss of one step.
        batch_fn: ``batch_fn(t) -> batch`` (tensor or tuple/list/dict of tensors, the same
            shapes for every ``t``), a deterministic function of the 0-based step ``t``.
        optimizer: ``"sgd"``, ``"adam"``, ``"adamw"`` or a
            :class:`~paso_optim.functional.FunctionalOptimizer`.
        lr: Learning rate of a named ``optimizer``. With a ``FunctionalOptimizer`` object,
            ``lr``, ``scheduler`` and ``**hyper`` must be left out (it carries its own).
        window: Window size ``P`` >= 1 (gradients per round).
        tol: Error threshold >= 0 on ``error_scale * ||dx||^2 / n``; 0 is exact.
        ema_decay: Adapt the threshold by an EMA of the window's mean error (the
            authors' option), in ``[0, 1)``, or None (fixed).
        error_scale: Factor on the error (the authors use 1e6; the default 1 keeps ``tol``
            in units of squared parameter change per parameter).
        backend: ``"vmap"`` (the window in one vectorised call), ``"serial"`` or
            ``"distributed"`` (the window split over the ranks of an initialised
            ``torch.distributed`` group; every rank gets the same result).
        scheduler: ``t -> factor`` of ``lr`` at the true (0-based) step index, or None.
        check_determinism: Call ``batch_fn(0)`` twice and refuse a non-deterministic one.
        **hyper: Further optimizer arguments (``betas``, ``weight_decay``, ``momentum``...).

    Raises:
        TypeError/ValueError: On a bad argument, a non-deterministic ``batch_fn``, a
            ``loss_fn`` that does not return a scalar floating tensor on ``batch_fn(0)``,
            a model with BatchNorm or Dropout in train mode, or buffers that change in
            forward (named in the message).
    """

    def __init__(
        self,
        model: nn.Module,
        loss_fn: Callable[[nn.Module, Any], torch.Tensor],
        batch_fn: Callable[[int], Any],
        optimizer: str | FunctionalOptimizer = "adamw",
        lr: float = _DEFAULT_LR,
        window: int = 8,
        tol: float = 1e-9,
        ema_decay: float | None = None,
        error_scale: float = 1.0,
        backend: str = "vmap",
        scheduler: Schedule | None = None,
        check_determinism: bool = True,
        **hyper: Any,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not callable(loss_fn):
            raise TypeError("loss_fn must be callable: loss_fn(model, batch) -> scalar tensor")
        if not callable(batch_fn):
            raise TypeError("batch_fn must be callable: batch_fn(t) -> batch")
        self.model = model
        self.loss_fn = loss_fn
        self.batch_fn = batch_fn
        self.window = check_int("window", window, low=1)
        self.tol = check_float("tol", tol, low=0.0)
        if ema_decay is not None:
            check_float("ema_decay", ema_decay, low=0.0, high=1.0, high_inclusive=False)
        self.ema_decay = ema_decay
        self.error_scale = check_float("error_scale", error_scale, low=0.0, low_inclusive=False)
        self.backend = check_choice("backend", backend, BACKENDS)
        if self.backend == "distributed":
            import torch.distributed as dist

            if not (dist.is_available() and dist.is_initialized()):
                raise ValueError(
                    "backend='distributed' needs an initialised torch.distributed process "
                    "group: call torch.distributed.init_process_group (e.g. under torchrun) "
                    "on every rank before building PASO"
                )
        if isinstance(optimizer, FunctionalOptimizer):
            ignored = sorted(hyper) + (["scheduler"] if scheduler is not None else [])
            if lr != _DEFAULT_LR:
                ignored.insert(0, "lr")
            if ignored:
                raise ValueError(
                    f"{', '.join(ignored)} given with a FunctionalOptimizer object, which "
                    "carries its own lr, hyperparameters and schedule; pass them to "
                    "paso_optim.sgd/adam/adamw instead (or give optimizer as a name)"
                )
            self.optimizer = optimizer
        elif isinstance(optimizer, str):
            self.optimizer = make_optimizer(optimizer, lr, schedule=scheduler, **hyper)
        else:
            raise TypeError(
                "optimizer must be 'sgd', 'adam', 'adamw' or a FunctionalOptimizer, "
                f"got {type(optimizer).__name__}"
            )
        self._names = [n for n, p in model.named_parameters() if p.requires_grad]
        if not self._names:
            raise ValueError("model has no parameters with requires_grad=True")
        params = dict(model.named_parameters())
        self._shapes = [params[n].shape for n in self._names]
        self._numels = [params[n].numel() for n in self._names]
        self._wrapper = _LossModule(model, loss_fn)
        if check_determinism:
            self._check_batch_fn()
        self._check_model()
        self._grad = torch.func.grad(self._flat_loss)
        self._vgrad = torch.func.vmap(self._grad)

    # -- checks ---------------------------------------------------------------------
    def _check_batch_fn(self) -> None:
        if not _equal(self.batch_fn(0), self.batch_fn(0)):
            raise ValueError(
                "batch_fn is not deterministic: batch_fn(0) gave two different batches; "
                "PASO evaluates a step's batch more than once, so batch_fn(t) must depend "
                "on t only (seed a generator with t, or index a fixed permutation)"
            )

    def _check_model(self) -> None:
        for m in self.model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training:
                raise ValueError(
                    f"model contains {type(m).__name__} in train mode, whose running "
                    "statistics change in forward; PASO needs buffers that stay fixed: "
                    "call model.eval() for it (batch statistics frozen) or use LayerNorm/"
                    "GroupNorm"
                )
            if isinstance(m, nn.modules.dropout._DropoutNd) and m.training and m.p > 0:
                raise ValueError(
                    f"model contains {type(m).__name__}(p={m.p}) in train mode, which "
                    "draws a new random mask on every call; PASO evaluates each step's "
                    "loss more than once and needs it to be a deterministic function of "
                    "the parameters and t: call eval() on it or set p=0"
                )
        before = {n: b.clone() for n, b in self.model.named_buffers()}
        with torch.no_grad():
            loss = self.loss_fn(self.model, self.batch_fn(0))
        if not (isinstance(loss, torch.Tensor) and loss.ndim == 0 and loss.is_floating_point()):
            got = (
                f"a {loss.dtype} tensor of shape {tuple(loss.shape)}"
                if isinstance(loss, torch.Tensor)
                else type(loss).__name__
            )
            raise ValueError(
                f"loss_fn(model, batch_fn(0)) must return a scalar floating tensor, got {got} "
                "(reduce it, e.g. with .mean())"
            )
        if before:
            for n, b in self.model.named_buffers():
                if n in before and not torch.equal(before[n], b):
                    b.copy_(before[n])
                    raise ValueError(
                        f"model buffer {n!r} changed in forward; PASO needs buffers that "
                        "stay fixed (functional steps cannot carry them)"
                    )

    # -- flat parameters ------------------------------------------------------------
    def flat_params(self) -> torch.Tensor:
        """The model's trainable parameters as one flat tensor (a copy), shape ``(n,)``."""
        params = dict(self.model.named_parameters())
        return torch.cat([params[n].detach().reshape(-1) for n in self._names]).clone()

    def load_flat(self, x: torch.Tensor) -> None:
        """Copy the flat vector ``x`` into the model's parameters."""
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for n, chunk, shape in zip(
                self._names, x.split(self._numels), self._shapes, strict=True
            ):
                params[n].copy_(chunk.view(shape))

    def _unflatten(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {
            "model." + n: c.view(s)
            for n, c, s in zip(self._names, x.split(self._numels), self._shapes, strict=True)
        }

    def _flat_loss(self, x: torch.Tensor, batch: Any) -> torch.Tensor:
        return torch.func.functional_call(self._wrapper, self._unflatten(x), (batch,))

    # -- gradients of a window ------------------------------------------------------
    def grad_fn(self, X: torch.Tensor, ts: list[int]) -> torch.Tensor:
        """Gradients of the step-``ts[i]`` losses at rows ``X[i]``; ``X``: ``(p, n)``."""
        if self.backend == "distributed":
            return self._distributed_grads(X, ts)
        return self._local_grads(X, ts)

    def _local_grads(self, X: torch.Tensor, ts: list[int]) -> torch.Tensor:
        batches = [self.batch_fn(t) for t in ts]
        if self.backend == "serial" or len(ts) == 1:
            return torch.stack([self._grad(X[i], b) for i, b in enumerate(batches)])
        try:
            stacked = _tree_map(lambda *xs: torch.stack(xs), *batches)
        except RuntimeError as e:
            raise ValueError(
                f"backend='vmap' needs batches of one shape for every step; steps {ts[0]}.."
                f"{ts[-1]} differ ({e}); use equal batch sizes or backend='serial'"
            ) from None
        return self._vgrad(X, stacked)

    def _distributed_grads(self, X: torch.Tensor, ts: list[int]) -> torch.Tensor:
        import torch.distributed as dist

        world, rank = dist.get_world_size(), dist.get_rank()
        p, n = X.shape
        per = -(-p // world)  # rows per rank, the last ranks may get fewer (or none)
        lo, hi = min(rank * per, p), min((rank + 1) * per, p)
        local = torch.zeros(per, n, dtype=X.dtype, device=X.device)
        if hi > lo:
            local[: hi - lo] = self._local_grads(X[lo:hi], ts[lo:hi])
        blocks = [torch.empty_like(local) for _ in range(world)]
        dist.all_gather(blocks, local)
        return torch.cat(blocks)[:p]

    def run(self, steps: int) -> PasoResult:
        """Train for ``steps`` optimizer steps; loads the final parameters into the model.

        Returns:
            The :class:`PasoResult` (rounds, gradient evaluations, errors, wall time).

        Raises:
            ValueError: If ``steps`` is negative.
            FloatingPointError: On a non-finite gradient.
        """
        steps = check_int("steps", steps, low=0)
        x0 = self.flat_params()
        t0 = time.perf_counter()
        with torch.no_grad():
            sol = solve_triangular(
                self.optimizer.step,
                self.grad_fn,
                x0,
                self.optimizer.init(x0),
                steps,
                self.window,
                self.tol,
                ema_decay=self.ema_decay,
                error_scale=self.error_scale,
            )
        wall = time.perf_counter() - t0
        self.load_flat(sol.x)
        return PasoResult(
            steps=steps,
            rounds=sol.rounds,
            grad_evals=sol.grad_evals,
            errors=sol.errors,
            steps_per_round=sol.steps,
            wall_time=wall,
            params=sol.x,
            state=sol.state,
        )
