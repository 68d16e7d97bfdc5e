"""Helpers around the optimizers: a vmap-batched loss for modules, and a numpy ``minimize``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

__all__ = ["MinimizeResult", "batched_loss", "minimize"]


def batched_loss(
    model: Any,
    loss_fn: Callable[..., Any],
    *batch: Any,
    params: list[Any] | None = None,
    chunk_size: int | None = None,
) -> Callable[[Any], Any]:
    """A ``batched_closure`` for an ``nn.Module``: the loss at many flat parameter vectors.

    ``f(X)`` with ``X`` of shape ``(m, d)`` (the module's parameters, flattened
    row-major and concatenated in ``model.named_parameters()`` order, which is the order
    the optimizer must see them in) returns the ``m`` losses
    ``loss_fn(model(*inputs), target)`` as a tensor of shape ``(m,)``, by
    ``torch.func.vmap`` over ``torch.func.functional_call``. Buffers are shared.
    With ``chunk_size`` the ``m`` rows go through the model ``chunk_size`` at a time
    (``vmap(..., chunk_size=)``), so that the activations of only that many copies are
    alive at once (memory ``O(chunk_size)`` instead of ``O(m)``; the losses are the same).

    Args:
        model: The ``torch.nn.Module``.
        loss_fn: ``loss_fn(output, *targets) -> scalar`` (e.g. ``F.cross_entropy``).
        *batch: ``inputs, target``: the batch, kept fixed; all but the last go to the
            model, the last to ``loss_fn``.
        params: Names of the parameters the optimizer holds, in its order (default:
            all of ``model.named_parameters()``); the others stay at their values.
        chunk_size: Rows evaluated per vmap call (>= 1), or None for all at once.

    Returns:
        The function ``f``.

    Raises:
        ValueError: If ``batch`` has fewer than two entries, ``chunk_size < 1``, or a
            name in ``params`` is not a parameter of ``model``; ``f(X)`` raises it if
            ``X`` is not of shape ``(m, d)``.
        TypeError: If ``model`` is not an ``nn.Module``.
    """
    import torch
    from torch.func import functional_call, vmap

    if len(batch) < 2:
        raise ValueError("batch must be (inputs..., target), got fewer than two tensors")
    if chunk_size is not None:
        chunk_size = check_int("chunk_size", chunk_size, low=1)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    *inputs, target = batch
    named = dict(model.named_parameters())
    names = list(named) if params is None else list(params)
    unknown = [n for n in names if n not in named]
    if unknown:
        raise ValueError(
            f"params: {unknown} are not parameter names of the model (known: {list(named)})"
        )
    shapes = [named[n].shape for n in names]
    sizes = [math.prod(s) for s in shapes]

    def one(flat: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(flat, sizes)
        p = {n: t.view(s) for n, t, s in zip(names, pieces, shapes, strict=True)}
        return loss_fn(functional_call(model, p, tuple(inputs)), target)

    vm = vmap(one, chunk_size=chunk_size)

    d = sum(sizes)

    def f(X: torch.Tensor) -> torch.Tensor:
        if not isinstance(X, torch.Tensor) or X.ndim != 2 or X.shape[1] != d:
            got = tuple(X.shape) if isinstance(X, torch.Tensor) else type(X).__name__
            raise ValueError(f"X must be a tensor of shape (m, {d}), got {got}")
        with torch.no_grad():
            return vm(X)

    return f


@dataclass
class MinimizeResult:
    """The outcome of :func:`minimize`.

    Attributes:
        x: The last iterate, float64 array of the shape of ``x0``.
        fun: ``f(x)`` at the last iterate (one extra query, counted).
        nfev: Function evaluations used (<= budget).
        nit: Steps taken.
        history: ``f`` at the start of every step (the base query of the step); empty
            with ``central=True``, whose steps make no base query.
    """

    x: np.ndarray
    fun: float
    nfev: int
    nit: int
    history: list[float] = field(default_factory=list)


def minimize(
    f: Callable[[np.ndarray], float],
    x0: Any,
    budget: int,
    *,
    lr: float = 1e-2,
    block_size: int | None = None,
    fd_step: float = 1e-2,
    central: bool = False,
    momentum: float = 0.0,
    normalize: bool = False,
) -> MinimizeResult:
    """Minimize a black-box ``f: R^d -> R`` with CoCD within ``budget`` evaluations.

    The same update as :class:`cocd.CoCD` (see its docstring), on float64 numpy
    arrays: cyclic blocks of ``k`` coordinates refreshed by finite differences, every
    coordinate moved along the partly stale estimate. Stops before a step whose
    queries would exceed the budget (one query is kept for the final ``f(x)``).

    Args:
        f: The objective; called with a float64 array shaped like ``x0``, returns a
            finite scalar. It is never called outside the budget.
        x0: Starting point, array-like of floats (any shape; flattened internally).
        budget: Total number of calls of ``f`` (>= 2).
        lr: Step size (> 0).
        block_size: Coordinates refreshed per step; None picks it from ``budget`` with
            :func:`cocd.block_size_for_budget`.
        fd_step: Finite-difference step ``h`` (> 0).
        central: Central differences (``2k`` calls per step).
        momentum: Heavy-ball coefficient in ``[0, 1)``.
        normalize: Scale the step by ``1 / n_blocks``.

    Returns:
        A :class:`MinimizeResult`.

    Raises:
        ValueError: On bad arguments, an empty or non-finite ``x0``, or a
            non-finite/non-scalar ``f``.
        TypeError: If ``f`` is not callable, or ``x0`` is not numeric.

    Example:
        >>> import numpy as np
        >>> res = minimize(lambda x: float(((x - 1.0) ** 2).sum()), np.zeros(4), 2000,
        ...                lr=0.1, block_size=2, fd_step=1e-6, central=True)
        >>> bool(np.allclose(res.x, 1.0, atol=1e-6)), res.nfev <= 2000
        (True, True)
    """
    from cocd.optim import block_size_for_budget

    if not callable(f):
        raise TypeError(f"f must be callable, got {type(f).__name__}")
    try:
        x = np.array(x0, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as e:
        raise TypeError(f"x0 must be an array-like of floats, got {type(x0).__name__}") from e
    shape = x.shape
    x = x.reshape(-1)
    d = x.size
    if d == 0:
        raise ValueError("x0 must have at least one entry")
    if not np.isfinite(x).all():
        raise ValueError("x0 must be finite")
    budget = check_int("budget", budget, low=2)
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    fd_step = check_float("fd_step", fd_step, low=0.0, low_inclusive=False)
    momentum = check_float("momentum", momentum, low=0.0, high=1.0, high_inclusive=False)
    if block_size is None:
        k = block_size_for_budget(d, budget, central=central)
    else:
        k = check_int("block_size", block_size, low=1, high=d)
    per_step = 2 * k if central else k + 1
    sweep = 2 * d if central else d + math.ceil(d / k)
    if budget < sweep:
        warnings.warn(f"budget={budget} is below one sweep ({sweep} calls)", stacklevel=2)

    nfev = 0

    def call(z: np.ndarray) -> float:
        nonlocal nfev
        nfev += 1
        out = f(z.reshape(shape))
        if out is None:
            raise ValueError("f returned None; it must return a finite scalar")
        try:
            v = np.asarray(out, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError(f"f must return a finite scalar, got {type(out).__name__}") from e
        if v.size != 1 or not np.isfinite(v).all():
            raise ValueError(f"f must return a finite scalar, got {v!r}")
        return float(v.reshape(()))

    g = np.zeros(d)
    buf = np.zeros(d)
    scale = 1.0 / math.ceil(d / k) if normalize else 1.0
    cursor, nit, history = 0, 0, []
    while nfev + per_step + 1 <= budget:
        idx = (cursor + np.arange(k)) % d
        if central:
            for i in idx:
                e = np.zeros(d)
                e[i] = fd_step
                g[i] = (call(x + e) - call(x - e)) / (2 * fd_step)
        else:
            f0 = call(x)
            history.append(f0)
            for i in idx:
                e = np.zeros(d)
                e[i] = fd_step
                g[i] = (call(x + e) - f0) / fd_step
        direction = g
        if momentum > 0:
            buf = g.copy() if nit == 0 else momentum * buf + g
            direction = buf
        x = x - lr * scale * direction
        cursor = int((idx[-1] + 1) % d)
        nit += 1
    fun = call(x)
    return MinimizeResult(x=x.reshape(shape), fun=fun, nfev=nfev, nit=nit, history=history)
