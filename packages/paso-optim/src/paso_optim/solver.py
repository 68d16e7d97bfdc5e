"""The triangular system of optimizer steps, solved window by window (PASO's core).

Training for ``T`` steps is the triangular nonlinear system

    x_{t+1}, s_{t+1} = Phi_t(x_t, s_t, grad f_t(x_t)),   t = 0 .. T-1,

whose unique solution is the sequential trajectory. :func:`solve_triangular` keeps a
window of ``P`` guessed iterates ``x_b .. x_{b+P-1}`` (``x_b`` exact), evaluates their
``P`` gradients in one call of ``grad_fn`` (the parallel part), rolls ``Phi`` forward
sequentially from the exact ``(x_b, s_b)`` with those gradients (cheap), measures
``err_i = scale * ||x_{b+i}^new - x_{b+i}^old||^2 / n`` for ``i = 1 .. P-1`` and slides
the window to the first ``i`` with ``err_i > tol`` (all of it when none is). ``x_{b+1}``
is always exact, so every round commits at least one step: at most ``T`` rounds, and with
``tol = 0`` the result is the sequential trajectory (the paper's two statements). Guesses
beyond the rolled-out part are copies of the last rolled-out iterate.

Source: the abstract of the ICML 2026 paper (PASO) and the authors' ``cv_v2.py``
(github.com/Jianrong-Lu/PASO) for the window rule, the 1e6 error scale and the EMA
threshold ``tol <- decay * tol + (1 - decay) * mean(err)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from icml26_core.validation import check_float, check_int

StepFn = Callable[[torch.Tensor, Any, torch.Tensor, int], tuple[torch.Tensor, Any]]
GradFn = Callable[[torch.Tensor, list[int]], torch.Tensor]


@dataclass
class SolveResult:
    """What :func:`solve_triangular` returns.

    Attributes:
        x: Final iterate ``x_T``, shape ``(n,)``.
        state: Optimizer state ``s_T``.
        rounds: Parallel rounds (calls of ``grad_fn``), ``<= T``.
        grad_evals: Gradients evaluated in all (total work; ``>= T``).
        steps: Steps committed per round (sums to ``T``).
        errors: Mean scaled error of each round's window.
        thresholds: The threshold each round used (constant without EMA).
    """

    x: torch.Tensor
    state: Any
    rounds: int
    grad_evals: int
    steps: list[int] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    thresholds: list[float] = field(default_factory=list)


def solve_triangular(
    step_fn: StepFn,
    grad_fn: GradFn,
    x0: torch.Tensor,
    state0: Any,
    T: int,
    window: int = 8,
    tol: float = 1e-9,
    *,
    ema_decay: float | None = None,
    error_scale: float = 1.0,
) -> SolveResult:
    """Solve ``x_{t+1}, s_{t+1} = step_fn(x_t, s_t, grad_fn(x_t, t), t)`` for ``t < T``.

    Args:
        step_fn: The pure update ``(x, state, g, t) -> (x', state')``; must not modify
            its inputs (e.g. :meth:`paso_optim.functional.FunctionalOptimizer.step`).
        grad_fn: ``(X, ts) -> G``: gradients of the step-``ts[i]`` losses at the rows
            ``X[i]``; ``X`` and ``G`` have shape ``(p, n)``, ``p <= window``. This is the
            call PASO parallelises.
        x0: Initial iterate, shape ``(n,)``, floating dtype.
        state0: Initial optimizer state (any object ``step_fn`` accepts).
        T: Number of steps, >= 0.
        window: Window size ``P`` >= 1 (gradients per round). ``P = 1`` is sequential.
        tol: Threshold on the scaled error, >= 0. 0 reproduces the sequential trajectory.
        ema_decay: If given (in ``[0, 1)``), the threshold is updated after each round to
            ``ema_decay * tol + (1 - ema_decay) * mean window error`` (the authors').
        error_scale: Factor on ``||dx||^2 / n`` (the authors use 1e6), > 0.

    Returns:
        The :class:`SolveResult`.

    Raises:
        TypeError/ValueError: On a bad argument (named in the message).
        FloatingPointError: If ``grad_fn`` returns a non-finite gradient (the step and
            round are named).
    """
    if not callable(step_fn):
        raise TypeError(
            f"step_fn must be callable (x, state, g, t) -> (x', state'), got {step_fn!r}"
        )
    if not callable(grad_fn):
        raise TypeError(f"grad_fn must be callable (X, ts) -> G, got {grad_fn!r}")
    T = check_int("T", T, low=0)
    window = check_int("window", window, low=1)
    tol = check_float("tol", tol, low=0.0)
    error_scale = check_float("error_scale", error_scale, low=0.0, low_inclusive=False)
    if ema_decay is not None:
        ema_decay = check_float("ema_decay", ema_decay, low=0.0, high=1.0, high_inclusive=False)
    if not isinstance(x0, torch.Tensor) or x0.ndim != 1 or not x0.is_floating_point():
        raise ValueError(
            "x0 must be a 1-d floating tensor, got "
            f"{type(x0).__name__} {getattr(x0, 'shape', '')} {getattr(x0, 'dtype', '')}"
        )
    n = x0.numel()
    x_b, s_b = x0, state0
    guesses = x0.unsqueeze(0).repeat(min(window, max(T, 1)), 1)  # rows: x_b .. x_{b+P-1}
    res = SolveResult(x=x0, state=state0, rounds=0, grad_evals=0)
    b = 0
    while b < T:
        p = min(window, T - b)
        guesses = guesses[:p]
        guesses[0] = x_b
        ts = list(range(b, b + p))
        G = grad_fn(guesses, ts)
        if not isinstance(G, torch.Tensor):
            raise TypeError(
                f"grad_fn must return a torch.Tensor of shape {(p, n)}, got {type(G).__name__}"
            )
        if tuple(G.shape) != (p, n):
            raise ValueError(f"grad_fn returned shape {tuple(G.shape)}, expected {(p, n)}")
        bad = ~torch.isfinite(G).all(dim=1)
        if bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            raise FloatingPointError(
                f"non-finite gradient at step {b + i} (round {res.rounds + 1}); "
                "lower the learning rate or check the loss"
            )
        res.rounds += 1
        res.grad_evals += p
        # sequential roll-out from the exact (x_b, s_b) with the window's gradients
        xs, ss = [x_b], [s_b]
        x, s = x_b, s_b
        for i in range(p):
            x, s = step_fn(x, s, G[i], b + i)
            xs.append(x)
            ss.append(s)
        new = torch.stack(xs)  # x_b .. x_{b+p}, shape (p + 1, n)
        if p > 1:
            err = (new[1:p] - guesses[1:p]).pow(2).sum(dim=1).mul(error_scale / n)
            over = (err > tol).nonzero()
            k = int(over[0, 0]) + 1 if over.numel() else p  # commit steps b+1 .. b+k
            mean_err = float(err.mean())
        else:
            k, mean_err = 1, 0.0
        res.steps.append(k)
        res.errors.append(mean_err)
        res.thresholds.append(tol)
        if ema_decay is not None:
            tol = ema_decay * tol + (1.0 - ema_decay) * mean_err
        b += k
        x_b, s_b = new[k], ss[k]
        # next window: the rolled-out iterates after the new start, then copies of the last
        p_next = min(window, T - b)
        if p_next > 0:
            rest = new[k : k + p_next]
            if rest.shape[0] < p_next:
                pad = new[-1:].expand(p_next - rest.shape[0], n)
                rest = torch.cat([rest, pad])
            guesses = rest.clone()
    res.x, res.state = x_b, s_b
    return res


def sequential(
    step_fn: StepFn, grad_fn: GradFn, x0: torch.Tensor, state0: Any, T: int
) -> tuple[torch.Tensor, Any]:
    """The reference: ``T`` sequential steps with one gradient each (``window=1``).

    Args:
        step_fn: The pure update ``(x, state, g, t) -> (x', state')``.
        grad_fn: ``(X, ts) -> G`` as for :func:`solve_triangular`; called with
            ``X`` of shape ``(1, n)`` and ``ts = [t]``.
        x0: Initial iterate, shape ``(n,)``.
        state0: Initial optimizer state.
        T: Number of steps, >= 0.

    Returns:
        ``(x_T, s_T)``.

    Raises:
        TypeError/ValueError: If ``T`` is not an integer >= 0.
    """
    T = check_int("T", T, low=0)
    x, s = x0, state0
    for t in range(T):
        g = grad_fn(x.unsqueeze(0), [t])[0]
        x, s = step_fn(x, s, g, t)
    return x, s
