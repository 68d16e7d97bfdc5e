"""The DMoL network: a stack of blocks, each with a head that refines a belief.

Our reading of Depth-progressive Monotonic Learning (the paper's abstract is all we
have; the authors' code could not be read here): block ``l`` maps ``h_{l-1}`` to
``h_l = B_l(h_{l-1})`` and its head adds a refinement to the belief below,

    z_l = z_{l-1}.detach() + H_l(h_l),      z_0 = 0,

where the belief is the model's output (class logits, a regression target, a noise
prediction). Block ``l`` and head ``l`` are trained on the local objective
``loss(z_l, y)`` only, with the block's input detached, so no gradient crosses blocks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from icml26_core.validation import check_choice, check_int
from torch import nn

__all__ = ["BELIEFS", "DMoLNet", "zero_head_"]

BELIEFS = ("additive", "independent")


def zero_head_(head: nn.Module) -> nn.Module:
    """Zero the last layer of ``head`` in place, so that ``head(h) == 0`` for every ``h``.

    The last submodule (in registration order) that owns a ``weight`` parameter has its
    ``weight`` and ``bias`` set to zero. For a head ending in ``nn.Linear`` or a
    convolution this makes the output exactly zero while the weight still gets a
    gradient (``dL/dW = g h^T``), so the head can learn from there.

    Args:
        head: The head module.

    Returns:
        ``head`` itself.

    Raises:
        TypeError: If ``head`` is not an ``nn.Module``.
        ValueError: If ``head`` has no submodule with a ``weight`` parameter.
    """
    if not isinstance(head, nn.Module):
        raise TypeError(f"head: expected an nn.Module, got {type(head).__name__}")
    last = None
    for module in head.modules():
        if isinstance(getattr(module, "weight", None), nn.Parameter):
            last = module
    if last is None:
        raise ValueError(
            f"head: cannot zero-initialise {type(head).__name__}: it has no submodule with a "
            "weight parameter; pass zero_init=False and make sure it outputs zero"
        )
    with torch.no_grad():
        last.weight.zero_()
        bias = getattr(last, "bias", None)
        if isinstance(bias, torch.Tensor):
            bias.zero_()
    return head


def describe(name: str, value: Any, module: nn.Module | None = None) -> str:
    """``name``'s type, shape and dtype in words, for error notes (internal).

    With ``module``, also a hint when a floating tensor's dtype differs from the
    module's parameters' (the usual cause of torch's "must have the same dtype").
    """
    if not isinstance(value, torch.Tensor):
        return f"{name} of type {type(value).__name__} (blocks and losses expect torch tensors)"
    text = f"{name} of shape {tuple(value.shape)}, dtype {value.dtype}, device {value.device}"
    params = [] if module is None else [p for p in module.parameters() if p.is_floating_point()]
    if params and value.is_floating_point() and params[0].dtype != value.dtype:
        text += (
            f"; its parameters are {params[0].dtype}: convert {name} (e.g. "
            f"{name}.to({params[0].dtype})) or the net (net.to({value.dtype}))"
        )
    return text


class DMoLNet(nn.Module):
    """A stack of blocks with one head per block, whose heads refine a belief.

    ``forward(x, *context)`` computes ``h_l = B_l(h_{l-1}, *context)`` (``h_0 = x``) and
    the beliefs ``z_l``: with ``belief="additive"`` (DMoL) ``z_l = z_{l-1}.detach() +
    H_l(h_l)``; with ``belief="independent"`` (greedy local learning, DGL) ``z_l =
    H_l(h_l)``. Inputs of blocks past the first are detached, so ``backward`` on
    ``loss(z_l, y)`` reaches block ``l`` and head ``l`` only. The prediction at depth
    ``l`` is ``z_l`` (early exit).

    Args:
        blocks: The blocks ``B_1..B_L``; ``B_l(h, *context)`` returns a tensor.
        heads: The heads ``H_1..H_L`` (same count); ``H_l(h_l)`` has the belief's shape
            (e.g. ``(batch, classes)``), the same at every depth.
        belief: ``"additive"`` (DMoL) or ``"independent"`` (the ablation without
            refinement: DGL-style greedy layer-wise learning).

    Raises:
        ValueError: If ``blocks`` is empty, the counts differ, or ``belief`` is unknown.
        TypeError: If ``blocks`` or ``heads`` is not an iterable, or a block or head is
            not an ``nn.Module``.

    Example:
        >>> import torch
        >>> from torch import nn
        >>> net = DMoLNet([nn.Linear(4, 8), nn.Linear(8, 8)], [nn.Linear(8, 3), nn.Linear(8, 3)])
        >>> net(torch.zeros(5, 4)).shape
        torch.Size([5, 3])
    """

    def __init__(
        self,
        blocks: Iterable[nn.Module],
        heads: Iterable[nn.Module],
        *,
        belief: str = "additive",
    ) -> None:
        super().__init__()
        for name, arg in (("blocks", blocks), ("heads", heads)):
            if not isinstance(arg, Iterable):
                raise TypeError(f"{name}: expected a list of nn.Modules, got {type(arg).__name__}")
        blocks, heads = list(blocks), list(heads)
        if not blocks:
            raise ValueError("blocks: expected at least one block, got an empty list")
        if len(heads) != len(blocks):
            raise ValueError(
                f"heads: expected one head per block ({len(blocks)}), got {len(heads)}"
            )
        for name, modules in (("blocks", blocks), ("heads", heads)):
            for i, m in enumerate(modules):
                if not isinstance(m, nn.Module):
                    raise TypeError(f"{name}[{i}]: expected an nn.Module, got {type(m).__name__}")
        self.belief = check_choice("belief", belief, BELIEFS)
        self.blocks = nn.ModuleList(blocks)
        self.heads = nn.ModuleList(heads)

    @property
    def depth(self) -> int:
        """The number of blocks ``L``."""
        return len(self.blocks)

    def block_forward(
        self, index: int, h: torch.Tensor, z: torch.Tensor | None, *context: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One depth step: ``(h_l, z_l)`` from ``(h_{l-1}, z_{l-1})``, ``index = l - 1``.

        The input ``h`` is detached for every block but the first, and ``z`` is
        detached, so gradients of ``z_l`` reach block ``l`` and head ``l`` only.

        Raises:
            ValueError: If the head's output shape differs from the belief's.
            Exception: Whatever the block or head raises (e.g. torch's shape or dtype
                error on a wrong input), with a note naming the block and the input's
                shape and dtype.
        """
        block, head = self.blocks[index], self.heads[index]
        try:
            h = block(h if index == 0 else h.detach(), *context)
        except Exception as exc:
            what = describe("x" if index == 0 else f"h_{index}", h, block)
            ctx = "".join(f", {describe(f'context[{i}]', c)}" for i, c in enumerate(context))
            exc.add_note(f"dmol: raised by blocks[{index}] on {what}{ctx}")
            raise
        try:
            r = head(h)
        except Exception as exc:
            exc.add_note(f"dmol: raised by heads[{index}] on {describe(f'h_{index + 1}', h, head)}")
            raise
        if z is None or self.belief == "independent":
            return h, r
        if r.shape != z.shape:
            raise ValueError(
                f"heads[{index}]: output shape {tuple(r.shape)} differs from the belief's "
                f"shape {tuple(z.shape)} (every head must output the same shape)"
            )
        return h, z.detach() + r

    def forward(
        self,
        x: torch.Tensor,
        *context: Any,
        all_depths: bool = False,
        depth: int | None = None,
    ) -> torch.Tensor | list[torch.Tensor]:
        """The belief at the final depth (or at ``depth``), or every ``z_l``.

        Args:
            x: Input of the first block.
            *context: Extra arguments passed to every block (e.g. a graph's adjacency).
            all_depths: Return the list ``[z_1, ..., z_L]``.
            depth: Stop at this depth (``1 <= depth <= self.depth``): early exit.

        Returns:
            ``z_L`` (or ``z_depth``), or the list of beliefs with ``all_depths``.
        """
        stop = self.depth if depth is None else check_int("depth", depth, low=1, high=self.depth)
        h, z = x, None
        beliefs = []
        for index in range(stop):
            h, z = self.block_forward(index, h, z, *context)
            beliefs.append(z)
        return beliefs if all_depths else beliefs[-1]

    def grow(self, block: nn.Module, head: nn.Module, *, zero_init: bool = True) -> DMoLNet:
        """Append a block and its head (depth ``L -> L + 1``).

        With ``zero_init`` (default) the head's last layer is zeroed
        (:func:`zero_head_`), so the new final belief equals the old one exactly and
        the objective does not change at the moment of growth. ``head`` is modified in
        place. A :class:`~dmol.DMoLTrainer` makes the new block's optimizer on its next
        step; a :class:`~dmol.BPTrainer` must be made anew.

        Args:
            block: The new block ``B_{L+1}``, called as ``block(h_L, *context)``.
            head: Its head; its output must have the belief's shape.
            zero_init: Zero the head's last layer first.

        Returns:
            ``self``.

        Raises:
            TypeError: If ``block`` or ``head`` is not an ``nn.Module``.
            ValueError: With ``zero_init``, if ``head`` has no layer with a weight.
        """
        for name, m in (("block", block), ("head", head)):
            if not isinstance(m, nn.Module):
                raise TypeError(f"{name}: expected an nn.Module, got {type(m).__name__}")
        if zero_init:
            zero_head_(head)
        self.blocks.append(block)
        self.heads.append(head)
        return self

    def truncate(self, depth: int) -> DMoLNet:
        """Keep the first ``depth`` blocks and heads; the output becomes ``z_depth``.

        Raises:
            ValueError: If ``depth`` is not in ``1..self.depth``.

        Returns:
            ``self``.
        """
        depth = check_int("depth", depth, low=1, high=self.depth)
        self.blocks = nn.ModuleList(list(self.blocks)[:depth])
        self.heads = nn.ModuleList(list(self.heads)[:depth])
        return self

    def block_parameters(self, index: int) -> list[nn.Parameter]:
        """Parameters of block ``index`` and its head (what its local objective trains).

        Raises:
            TypeError, ValueError: If ``index`` is not an integer in ``0..depth-1``.
        """
        index = check_int("index", index, low=0, high=self.depth - 1)
        return [*self.blocks[index].parameters(), *self.heads[index].parameters()]

    def extra_repr(self) -> str:
        """Depth and belief, for ``repr``."""
        return f"depth={self.depth}, belief={self.belief!r}"
