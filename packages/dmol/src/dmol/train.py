"""Trainers: DMoL's unlocked per-block updates, and the backpropagation baselines.

All trainers share one interface: ``step(x, y, *context)`` performs one update and
returns the losses it computed (a detached 1-D tensor), and ``predict(x, *context)``
returns the prediction that the trained model would serve.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from icml26_core.validation import check_choice, check_int
from torch import nn

from dmol.net import DMoLNet, describe

__all__ = ["BPTrainer", "DMoLTrainer", "LossFn", "OptimizerFactory"]

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
OptimizerFactory = Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]


def _check_common(net: Any, loss_fn: Any, optimizer_factory: Any) -> None:
    if not isinstance(net, DMoLNet):
        raise TypeError(f"net: expected a dmol.DMoLNet, got {type(net).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn: expected a callable loss(z, y), got {type(loss_fn).__name__}")
    if not callable(optimizer_factory):
        raise TypeError(
            "optimizer_factory: expected a callable params -> torch.optim.Optimizer, got "
            f"{type(optimizer_factory).__name__}"
        )


def _loss(loss_fn: LossFn, z: torch.Tensor, y: Any, index: int | None = None) -> torch.Tensor:
    """``loss_fn(z, y)``; an error raised inside it gets a note naming ``y``'s shape."""
    try:
        return loss_fn(z, y)
    except Exception as exc:
        name = "z" if index is None else f"z_{index + 1}"
        exc.add_note(
            f"dmol: raised by loss_fn({name}, y) on {describe(name, z)} and {describe('y', y)}"
        )
        raise


def _scalar(loss: Any, index: int | None = None) -> torch.Tensor:
    where = "" if index is None else f" at depth {index + 1}"
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
        raise ValueError(f"loss_fn: must return a scalar tensor{where}, got {loss!r:.60}")
    if not torch.isfinite(loss):
        raise ValueError(f"loss_fn: returned a non-finite loss {loss.item()}{where}")
    return loss


class DMoLTrainer:
    """Unlocked training of a :class:`~dmol.DMoLNet`: one optimizer per block.

    ``step`` walks the depths in order: block ``l`` forward (its input detached) ->
    belief ``z_l`` -> local loss ``loss_fn(z_l, y)`` -> backward (reaches block ``l``
    and head ``l`` only) -> that block's optimizer step. Block ``l`` is updated as soon
    as its own loss is known; it never waits for a gradient from above, and only one
    block's activation graph is alive at a time.

    The net may be grown or truncated between steps (:meth:`DMoLNet.grow`,
    :meth:`DMoLNet.truncate`): optimizers for new blocks are made on the next step,
    those of removed blocks are dropped.

    Args:
        net: The network.
        loss_fn: ``loss_fn(z, y)`` -> scalar tensor (e.g. ``F.cross_entropy``).
        optimizer_factory: ``params -> torch.optim.Optimizer``, called once per block
            with that block's and its head's parameters (any torch optimizer works,
            e.g. ``lambda p: torch.optim.Adam(p, lr=1e-3)``).

    Raises:
        TypeError: If an argument has the wrong type.
    """

    def __init__(self, net: DMoLNet, loss_fn: LossFn, optimizer_factory: OptimizerFactory) -> None:
        _check_common(net, loss_fn, optimizer_factory)
        self.net = net
        self.loss_fn = loss_fn
        self.optimizer_factory = optimizer_factory
        # (block, its optimizer): the block itself, not its id, so that a new block made
        # after a truncation never inherits a freed block's optimizer
        self._optimizers: list[tuple[nn.Module | None, torch.optim.Optimizer | None]] = []

    def optimizer(self, index: int) -> torch.optim.Optimizer:
        """The optimizer of block ``index`` (made on first use).

        Raises:
            TypeError, ValueError: If ``index`` is not an integer in ``0..depth-1``.
            TypeError: If ``optimizer_factory`` does not return a ``torch.optim.Optimizer``.
        """
        index = check_int("index", index, low=0, high=self.net.depth - 1)
        block = self.net.blocks[index]
        while len(self._optimizers) <= index:
            self._optimizers.append((None, None))
        owner, opt = self._optimizers[index]
        if owner is not block or opt is None:
            opt = self.optimizer_factory(self.net.block_parameters(index))
            if not isinstance(opt, torch.optim.Optimizer):
                raise TypeError(
                    "optimizer_factory: must return a torch.optim.Optimizer, got "
                    f"{type(opt).__name__}"
                )
            self._optimizers[index] = (block, opt)
        return opt

    def step(self, x: torch.Tensor, y: torch.Tensor, *context: Any) -> torch.Tensor:
        """One unlocked update of every block, in depth order.

        Args:
            x: Input of the first block.
            y: Target passed to ``loss_fn``.
            *context: Extra arguments for every block.

        Returns:
            The local losses ``[L_1, ..., L_L]`` (before each block's update), shape
            ``(depth,)``, detached.

        Raises:
            ValueError: If ``loss_fn`` returns a non-scalar or non-finite loss.
            TypeError: If ``optimizer_factory`` does not return a
                ``torch.optim.Optimizer``.
            Exception: What a block, head or ``loss_fn`` raises on a wrong ``x``, ``y``
                or context, with a note naming it (shape, dtype).
        """
        self.net.train()
        del self._optimizers[self.net.depth :]
        h, z = x, None
        losses = []
        for index in range(self.net.depth):
            opt = self.optimizer(index)
            h, z = self.net.block_forward(index, h, z, *context)
            loss = _scalar(_loss(self.loss_fn, z, y, index), index)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        return torch.stack(losses)

    @torch.no_grad()
    def objectives(self, x: torch.Tensor, y: torch.Tensor, *context: Any) -> torch.Tensor:
        """The local objectives ``loss_fn(z_l, y)`` at every depth, in eval mode.

        Returns:
            Shape ``(depth,)``, detached.
        """
        was = self.net.training
        self.net.eval()
        try:
            beliefs = self.net(x, *context, all_depths=True)
            return torch.stack(
                [_loss(self.loss_fn, z, y, i).detach() for i, z in enumerate(beliefs)]
            )
        finally:
            self.net.train(was)

    @torch.no_grad()
    def predict(self, x: torch.Tensor, *context: Any, depth: int | None = None) -> torch.Tensor:
        """The belief ``z_L`` (or ``z_depth``) in eval mode, without gradients.

        Args:
            x: Input of the first block.
            *context: Extra arguments for every block.
            depth: Early exit at this depth (``1..net.depth``); default the last.

        Returns:
            The belief, e.g. logits ``(batch, classes)``.
        """
        was = self.net.training
        self.net.eval()
        try:
            return self.net(x, *context, depth=depth)
        finally:
            self.net.train(was)


class BPTrainer:
    """Backpropagation baselines on the same blocks and heads as a :class:`~dmol.DMoLNet`.

    ``mode="final"``: end-to-end BP through all blocks with the last head only,
    ``H_L(B_L(...B_1(x)))``. ``mode="deep_supervision"``: end to end, the sum of every
    head's loss ``sum_l loss_fn(H_l(h_l), y)`` (Lee et al. 2015). One optimizer over all
    trained parameters, made once here; the prediction is the last head's output. Do not
    grow or truncate the net afterwards (the optimizer would not hold the new
    parameters and a new last head would stay zero): make a new ``BPTrainer`` instead.

    Args:
        net: The network (its ``belief`` is ignored: BP does not refine).
        loss_fn: ``loss_fn(pred, y)`` -> scalar tensor.
        optimizer_factory: ``params -> torch.optim.Optimizer``, called once.
        mode: ``"final"`` or ``"deep_supervision"``.

    Raises:
        TypeError: If an argument has the wrong type, or ``optimizer_factory`` does not
            return a ``torch.optim.Optimizer``.
        ValueError: If ``mode`` is unknown; from :meth:`step`, if the net was grown or
            truncated after construction.
    """

    MODES = ("final", "deep_supervision")

    def __init__(
        self,
        net: DMoLNet,
        loss_fn: LossFn,
        optimizer_factory: OptimizerFactory,
        *,
        mode: str = "final",
    ) -> None:
        _check_common(net, loss_fn, optimizer_factory)
        self.mode = check_choice("mode", mode, self.MODES)
        self.net = net
        self.loss_fn = loss_fn
        params = list(net.blocks.parameters())
        if mode == "final":
            params += list(net.heads[-1].parameters())
        else:
            params += list(net.heads.parameters())
        self.optimizer = optimizer_factory(params)
        # the modules the optimizer was made for: a grown or cut net would train silently
        # wrong (a new last head outside the optimizer stays zero), so step refuses it
        self._modules = (list(net.blocks), list(net.heads))
        if not isinstance(self.optimizer, torch.optim.Optimizer):
            raise TypeError(
                "optimizer_factory: must return a torch.optim.Optimizer, got "
                f"{type(self.optimizer).__name__}"
            )

    def _check_net(self) -> None:
        blocks, heads = self._modules
        if list(self.net.blocks) != blocks or list(self.net.heads) != heads:
            raise ValueError(
                f"net: changed since this BPTrainer was made (depth {len(blocks)} -> "
                f"{self.net.depth}, grown, cut or replaced blocks); its optimizer holds the "
                "old parameters only: make a new BPTrainer after grow or truncate"
            )

    def _forward(self, x: torch.Tensor, *context: Any) -> list[torch.Tensor]:
        h, outs = x, []
        last = self.net.depth - 1
        for index, (block, head) in enumerate(zip(self.net.blocks, self.net.heads, strict=True)):
            try:
                h = block(h, *context)
            except Exception as exc:
                what = describe("x" if index == 0 else f"h_{index}", h, block)
                exc.add_note(f"dmol: raised by blocks[{index}] on {what}")
                raise
            if self.mode == "deep_supervision" or index == last:
                outs.append(head(h))
        return outs

    def step(self, x: torch.Tensor, y: torch.Tensor, *context: Any) -> torch.Tensor:
        """One end-to-end update; returns the loss of each supervised head, detached.

        Returns:
            Shape ``(1,)`` for ``mode="final"``, ``(depth,)`` for deep supervision.

        Raises:
            ValueError: If the net was grown or truncated after construction, or
                ``loss_fn`` returns a non-scalar or non-finite loss.
        """
        self.net.train()
        self._check_net()
        losses = [_scalar(_loss(self.loss_fn, out, y)) for out in self._forward(x, *context)]
        self.optimizer.zero_grad(set_to_none=True)
        torch.stack(losses).sum().backward()
        self.optimizer.step()
        return torch.stack([loss.detach() for loss in losses])

    @torch.no_grad()
    def predict(self, x: torch.Tensor, *context: Any) -> torch.Tensor:
        """The last head's output in eval mode.

        Raises:
            ValueError: If the net was grown or truncated after construction.
        """
        self._check_net()
        was = self.net.training
        self.net.eval()
        try:
            return self._forward(x, *context)[-1]
        finally:
            self.net.train(was)
