"""Execute a pipeline schedule in one process, exactly: same order, same weight versions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from amdp_pipeline.schedule import Schedule

__all__ = ["EmulationResult", "Emulator", "check_chain"]


def check_chain(stages: Sequence[nn.Module], example_input: torch.Tensor) -> torch.Tensor:
    """Run ``example_input`` through the stages once (no gradients) to check they chain.

    Stages with randomness (dropout) or running statistics (batch norm in training mode)
    draw random numbers or update their statistics in this pass, like any forward.

    Args:
        stages: The stage modules, in order.
        example_input: A stage-0 input (e.g. a minibatch's input tensor).

    Returns:
        The last stage's output.

    Raises:
        ValueError: Naming the first stage whose input the previous output does not fit,
            or that does not return a tensor.
    """
    x = example_input
    with torch.no_grad():
        for j, stage in enumerate(stages):
            try:
                x = stage(x)
            except (RuntimeError, TypeError, ValueError, IndexError) as exc:
                shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
                raise ValueError(
                    f"stages do not chain: stages[{j}] fails on the output of "
                    f"{'example_input' if j == 0 else f'stages[{j - 1}]'} (shape {shape}): {exc}"
                ) from exc
            if not isinstance(x, torch.Tensor):
                raise ValueError(f"stages[{j}] must return a tensor, got {type(x).__name__}")
    return x


def _describe(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)}, dtype {x.dtype}"
    return f"a {type(x).__name__}"


@dataclass
class EmulationResult:
    """What :meth:`Emulator.run` returns.

    Attributes:
        losses: Per minibatch, the loss computed by the last stage's backward (the
            weights it used), unscaled.
        updates: Optimizer updates applied per stage.
        recomputed: Backward passes that recomputed their forward with newer weights.
    """

    losses: list[float] = field(default_factory=list)
    updates: list[int] = field(default_factory=list)
    recomputed: int = 0


class Emulator:
    """Run a :class:`~amdp_pipeline.Schedule`'s actions in one process, in commit order.

    Each F runs its stage with the weights it finds and keeps its input and graph; each B
    back-propagates the gradient from the next stage (the loss at the last stage)
    through that graph when the stage's weights have not changed since the F. When they
    have, it recomputes the stage's forward from the stored input first: with the
    current weights (no stashing: the B back-propagates through the newer weights) or
    with the F's stashed weights (``schedule.stash``).
    Parameter gradients are summed per update (per step: losses scaled by ``1/m``;
    PipeDream: one minibatch per update, unscaled), and a ``"U"`` action applies them
    with that stage's optimizer. Replicas of a stage in different pipelines hold equal
    weights at every moment (they update together with summed gradients), so one copy
    per stage is exact (for stages without randomness such as dropout, whose recomputed
    forward would draw new masks).

    Args:
        stages: S modules; stage j maps the output of stage j-1 (the minibatch input
            for j = 0) to its output; the last one's output goes to ``loss_fn``.
        schedule: From :func:`~amdp_pipeline.make_schedule` with ``n_stages == S``.
        optimizer_factory: ``params -> torch.optim.Optimizer``, called once per stage.
        loss_fn: ``(output, target) -> scalar tensor``, a mean over the minibatch.
        example_input: If given, the stages are checked to chain on it at construction.

    Raises:
        ValueError: If ``len(stages) != schedule.n_stages``, the stages do not chain on
            ``example_input``, or a stage has no parameters.
        TypeError: On a bad ``schedule`` or non-callable factory/loss.

    Example:
        >>> import torch
        >>> from amdp_pipeline import Emulator, make_schedule
        >>> stages = [torch.nn.Linear(3, 3), torch.nn.Linear(3, 1)]
        >>> sched = make_schedule(2, minibatches_per_step=2, n_steps=1, method="gpipe")
        >>> emu = Emulator(stages, sched, lambda p: torch.optim.SGD(p, lr=0.1),
        ...                torch.nn.functional.mse_loss)
        >>> data = [(torch.ones(4, 3), torch.zeros(4, 1))] * 2
        >>> len(emu.run(data).losses)
        2
    """

    def __init__(
        self,
        stages: Sequence[nn.Module],
        schedule: Schedule,
        optimizer_factory: Callable[[Any], torch.optim.Optimizer],
        loss_fn: Callable[[torch.Tensor, Any], torch.Tensor],
        *,
        example_input: torch.Tensor | None = None,
    ) -> None:
        if not isinstance(schedule, Schedule):
            raise TypeError(f"schedule must be a Schedule, got {type(schedule).__name__}")
        stages = list(stages)
        if len(stages) != schedule.n_stages:
            raise ValueError(
                f"stages has {len(stages)} modules but the schedule has "
                f"n_stages={schedule.n_stages}"
            )
        for j, st in enumerate(stages):
            if not isinstance(st, nn.Module):
                raise TypeError(f"stages[{j}] must be an nn.Module, got {type(st).__name__}")
            if not any(True for _ in st.parameters()):
                raise ValueError(f"stages[{j}] has no parameters")
        if not callable(optimizer_factory):
            raise TypeError("optimizer_factory must be callable: params -> Optimizer")
        if not callable(loss_fn):
            raise TypeError("loss_fn must be callable: (output, target) -> scalar")
        if example_input is not None:
            check_chain(stages, example_input)
        self.stages = stages
        self.schedule = schedule
        self.loss_fn = loss_fn
        self.optimizers = [optimizer_factory(list(st.parameters())) for st in stages]
        self._names = [[n for n, _ in st.named_parameters()] for st in stages]

    def run(self, minibatches: Iterable[tuple[Any, Any]]) -> EmulationResult:
        """Execute the whole schedule on ``minibatches``.

        Args:
            minibatches: ``(input, target)`` pairs, one per minibatch of the schedule
                (``schedule.n_minibatches`` of them, in order: minibatch i belongs to
                step ``i // m``).

        Returns:
            An :class:`EmulationResult`; the stages' parameters are trained in place.

        Raises:
            TypeError: If an item is not an ``(input, target)`` pair or its input is not
                a tensor.
            ValueError: If the number of minibatches differs from the schedule's, a
                stage fails on its input (naming the stage and the minibatch), ``loss_fn``
                fails or does not return a scalar tensor, or the weight versions met
                differ from the schedule's (a bug).
        """
        data = list(minibatches)
        sch = self.schedule
        if len(data) != sch.n_minibatches:
            raise ValueError(
                f"minibatches has {len(data)} items; the schedule needs {sch.n_minibatches}"
            )
        for i, item in enumerate(data):
            if not isinstance(item, tuple | list) or len(item) != 2:
                raise TypeError(
                    f"minibatches[{i}] must be an (input, target) pair, got {type(item).__name__}"
                )
            if not isinstance(item[0], torch.Tensor):
                raise TypeError(
                    f"minibatches[{i}][0] (the input) must be a torch.Tensor, "
                    f"got {type(item[0]).__name__}"
                )
        s = sch.n_stages
        every = sch.update == "every"
        scale = 1.0 if every else 1.0 / sch.minibatches_per_step
        version = [0] * s
        inputs: dict[tuple[int, int], Any] = {}
        outputs: dict[tuple[int, int], Any] = {}
        grads_in: dict[tuple[int, int], torch.Tensor] = {}
        graphs: dict[tuple[int, int], tuple[Any, Any]] = {}
        a_f_version: dict[tuple[int, int], int] = {}
        buffers: list[dict[int, list[torch.Tensor]]] = [{} for _ in range(s)]
        stash: list[dict[int, dict[str, torch.Tensor]]] = [{} for _ in range(s)]
        stash_users: list[dict[int, int]] = [{} for _ in range(s)]
        res = EmulationResult(losses=[float("nan")] * len(data), updates=[0] * s)
        for a in sorted(sch.actions, key=lambda a: a.seq):
            j, i = a.stage, a.minibatch
            if a.version != version[j] and a.kind != "U":
                raise ValueError(f"stage {j} at version {version[j]}, schedule says {a.version}")
            stage = self.stages[j]
            if a.kind == "F":
                x = data[i][0] if j == 0 else outputs.pop((i, j - 1))
                inputs[(i, j)] = x
                a_f_version[(i, j)] = version[j]
                if sch.stash:
                    if version[j] not in stash[j]:
                        stash[j][version[j]] = {
                            n: p.detach().clone() for n, p in stage.named_parameters()
                        }
                    stash_users[j][version[j]] = stash_users[j].get(version[j], 0) + 1
                with torch.enable_grad():
                    xin = x.detach().requires_grad_() if x.is_floating_point() else x
                    try:
                        out = stage(xin)
                    except (RuntimeError, TypeError, ValueError, IndexError) as exc:
                        src = f"minibatches[{i}][0]" if j == 0 else f"stages[{j - 1}]'s output"
                        raise ValueError(
                            f"stages[{j}] fails on minibatch {i} (its input, {src}, has shape "
                            f"{tuple(x.shape)}, dtype {x.dtype}): {exc}"
                        ) from exc
                if not isinstance(out, torch.Tensor):
                    raise ValueError(f"stages[{j}] must return a tensor, got {type(out).__name__}")
                graphs[(i, j)] = (xin, out)
                outputs[(i, j)] = out.detach()
            elif a.kind == "B":
                x = inputs.pop((i, j))
                xin, out = graphs.pop((i, j))
                f_version = a_f_version.pop((i, j))
                if j == s - 1:
                    outputs.pop((i, j), None)
                params = [p for p in stage.parameters()]
                use_stash = sch.stash and a.weights != version[j]
                with torch.enable_grad():
                    wrt = params
                    if use_stash:  # the F's weights, from the stash
                        wts = {n: w.requires_grad_() for n, w in stash[j][a.weights].items()}
                        xin = x.detach().requires_grad_() if x.is_floating_point() else x
                        out = torch.func.functional_call(stage, wts, (xin,))
                        wrt = [wts[n] for n in self._names[j]]
                    elif a.weights != f_version:  # newer weights: recompute
                        xin = x.detach().requires_grad_() if x.is_floating_point() else x
                        out = stage(xin)
                    if j == s - 1:
                        try:
                            loss = self.loss_fn(out, data[i][1])
                        except (RuntimeError, TypeError, ValueError, IndexError) as exc:
                            raise ValueError(
                                f"loss_fn fails on minibatch {i}: the last stage's output has "
                                f"shape {tuple(out.shape)}, minibatches[{i}][1] (the target) "
                                f"is {_describe(data[i][1])}: {exc}"
                            ) from exc
                        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                            raise ValueError(
                                f"loss_fn must return a scalar tensor, got {_describe(loss)} "
                                f"on minibatch {i}"
                            )
                        res.losses[i] = float(loss.detach())
                        root, gout = loss * scale, None
                    else:
                        root, gout = out, grads_in.pop((i, j + 1))
                    targets = list(wrt) + ([xin] if xin.requires_grad and j > 0 else [])
                    g = torch.autograd.grad(root, targets, grad_outputs=gout, allow_unused=True)
                if sch.stash:
                    stash_users[j][a.weights] -= 1
                    if stash_users[j][a.weights] == 0 and a.weights != version[j]:
                        del stash[j][a.weights]
                res.recomputed += int(a.recompute)
                if j > 0:
                    grads_in[(i, j)] = g[-1]
                key = i if every else sch.step_of(i)
                pg = [
                    torch.zeros_like(p) if gi is None else gi
                    for p, gi in zip(params, g, strict=False)
                ]
                buf = buffers[j].get(key)
                if buf is None:
                    buffers[j][key] = pg
                else:
                    for b, gi in zip(buf, pg, strict=True):
                        b.add_(gi)
            else:  # "U"
                key = i if every else sch.step_of(i)
                buf = buffers[j].pop(key)
                for p, b in zip(stage.parameters(), buf, strict=True):
                    p.grad = b
                self.optimizers[j].step()
                for p in stage.parameters():
                    p.grad = None
                version[j] += 1
                res.updates[j] += 1
                if sch.stash:
                    for v in [v for v, c in stash_users[j].items() if c == 0 and v != version[j]]:
                        stash[j].pop(v, None)
                        del stash_users[j][v]
        return res
