"""Per-layer losses, the descent check, and the primal-dual trainer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from icml26_core.validation import check_float
from torch import nn

from descent_transformers.constraints import DescentConstraints

__all__ = ["PrimalDualTrainer", "descent_share", "is_monotone", "layer_losses", "layer_predictions"]

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

_NO_LAYERS = (
    "the model must expose per-layer states: define layer_outputs(inputs) returning "
    "L + 1 predictions, or pass readout= and make the model return hidden states "
    "(a transformers model called with output_hidden_states=True, or a list/tuple of "
    "tensors); got {what}"
)


def _default_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if target.dtype in (torch.int64, torch.int32, torch.int16, torch.uint8):
        return F.cross_entropy(pred, target.long())
    return F.mse_loss(pred, target)


def layer_predictions(
    model: nn.Module, inputs: Any, readout: Callable[[torch.Tensor], torch.Tensor] | None = None
) -> list[torch.Tensor]:
    """The ``L + 1`` per-layer predictions of ``model`` on ``inputs`` (index 0 the base).

    Without ``readout`` the model must define ``layer_outputs(inputs)``. With it,
    the model is called with ``output_hidden_states=True`` (keyword arguments when
    ``inputs`` is a mapping) and ``readout`` is applied to each hidden state; a model
    that does not take that argument may instead return a list/tuple of states.

    Args:
        model: A model with ``layer_outputs`` (or hidden states, with ``readout``).
        inputs: Its input (a tensor, or a mapping of keyword arguments).
        readout: Map from a hidden state to a prediction, or None.

    Returns:
        A list of ``L + 1`` predictions (``L >= 1``), as the model or ``readout`` shapes
        them.

    Raises:
        TypeError: If the model exposes no per-layer states (the message names
            ``output_hidden_states``).
    """
    if readout is None:
        fn = getattr(model, "layer_outputs", None)
        if fn is None:
            raise TypeError(_NO_LAYERS.format(what=f"{type(model).__name__} without readout"))
        preds = list(fn(inputs))
    else:
        try:
            out = (
                model(**inputs, output_hidden_states=True)
                if isinstance(inputs, Mapping)
                else model(inputs, output_hidden_states=True)
            )
        except TypeError:
            out = model(**inputs) if isinstance(inputs, Mapping) else model(inputs)
        hidden = getattr(out, "hidden_states", None)
        if hidden is None and isinstance(out, (list, tuple)):
            hidden = out
        if hidden is None or len(hidden) < 2:
            raise TypeError(_NO_LAYERS.format(what=f"output of type {type(out).__name__}"))
        preds = [readout(h) for h in hidden]
    if len(preds) < 2:
        raise TypeError(_NO_LAYERS.format(what=f"{len(preds)} layer output(s)"))
    return preds


def layer_losses(
    model: nn.Module,
    inputs: Any,
    target: torch.Tensor,
    *,
    loss_fn: LossFn | None = None,
    readout: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Minibatch loss of every layer's prediction, ``l_0 .. l_L``.

    Args:
        model: A model with ``layer_outputs`` (or hidden states, with ``readout``).
        inputs: Its input (a tensor, or a mapping of keyword arguments).
        target: Regression target (same shape as a prediction) or class indices.
        loss_fn: ``loss_fn(pred, target) -> scalar``; default MSE for float targets,
            cross-entropy for integer ones.
        readout: Map from a hidden state to a prediction (see :func:`layer_predictions`).

    Returns:
        ``(L + 1,)`` tensor, differentiable.

    Raises:
        TypeError: If ``target`` is not a tensor, or as :func:`layer_predictions`.
        ValueError: With the default loss and a float ``target``, if ``target``'s shape
            differs from a layer's prediction (MSE would silently broadcast).

    Example:
        >>> import torch
        >>> from descent_transformers import UnrolledTransformer
        >>> net = UnrolledTransformer(dim=16, depth=2, heads=2, patch=8, frames=1, size=8)
        >>> x = torch.zeros(3, 1, 8, 8)
        >>> layer_losses(net, x + 0.1, x).tolist()  # zero-initialised readout: all = l_0
        [0.01..., 0.01..., 0.01...]
    """
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"target must be a torch.Tensor, got {type(target).__name__}")
    preds = layer_predictions(model, inputs, readout)
    if loss_fn is None and target.is_floating_point():
        for i, p in enumerate(preds):
            if isinstance(p, torch.Tensor) and p.shape != target.shape:
                raise ValueError(
                    f"target must have the shape of the predictions, "
                    f"{tuple(p.shape)} (layer {i}), got {tuple(target.shape)}"
                )
    fn = loss_fn or _default_loss
    return torch.stack([fn(p, target) for p in preds])


def descent_share(losses: Sequence[float] | torch.Tensor, tol: float = 0.0) -> float:
    """Share of consecutive layer pairs whose loss does not increase (ties count).

    Args:
        losses: ``(L + 1,)`` losses ``l_0 .. l_L`` (at least two), a 1-D sequence or
            tensor. A NaN entry counts as an increase on both of its pairs.
        tol: Increase that still counts as non-increasing (absolute, >= 0).

    Returns:
        A float in ``[0, 1]``: ``#{l : l_{l+1} <= l_l + tol} / L``.

    Raises:
        TypeError: If ``losses`` is not numeric or ``tol`` not a real number.
        ValueError: If ``losses`` is not 1-D or has fewer than 2 entries, or
            ``tol < 0``.
    """
    tol = check_float("tol", tol, low=0.0)
    try:
        v = torch.as_tensor(losses, dtype=torch.float64).detach()
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(
            f"losses must be a 1-D sequence or tensor of numbers, got {type(losses).__name__}"
        ) from err
    if v.dim() != 1:
        raise ValueError(f"losses must be 1-D (l_0 .. l_L), got shape {tuple(v.shape)}")
    if v.numel() < 2:
        raise ValueError(f"losses must have at least 2 entries, got {v.numel()}")
    return float((v[1:] <= v[:-1] + tol).double().mean())


def is_monotone(losses: Sequence[float] | torch.Tensor, tol: float = 0.0) -> bool:
    """Whether the losses never increase from one layer to the next (ties allowed).

    Args:
        losses: ``(L + 1,)`` losses ``l_0 .. l_L``, as :func:`descent_share`.
        tol: Increase that still counts as non-increasing (absolute, >= 0).

    Returns:
        ``descent_share(losses, tol) == 1``.

    Raises:
        TypeError, ValueError: As :func:`descent_share`.

    Example:
        >>> is_monotone([1.0, 0.5, 0.5, 0.2]), is_monotone([1.0, 0.5, 0.6])
        (True, False)
    """
    return descent_share(losses, tol) == 1.0


class PrimalDualTrainer:
    """Stochastic primal descent on the Lagrangian, projected dual ascent on ``lambda``.

    One :meth:`step` on a minibatch: compute ``l_0 .. l_L``, take one step of
    ``optimizer`` on ``constraints.lagrangian(l_1..l_L, l_0)``, then one dual step
    on the same (detached) losses: the simultaneous gradient descent-ascent that
    cooper's ``SimultaneousOptimizer`` also performs.

    Args:
        model: Exposes per-layer predictions (``layer_outputs``) or states (with ``readout``).
        readout: Hidden state -> prediction, or None when the model has ``layer_outputs``.
        optimizer: Any ``torch.optim.Optimizer`` over the primal parameters.
        constraints: A :class:`DescentConstraints` with ``n_layers = L``.
        loss_fn: Per-layer loss (default MSE / cross-entropy by target dtype).

    Raises:
        TypeError: If ``constraints`` is not a :class:`DescentConstraints`.
        ValueError: At the first step, if the model's layer count differs from
            ``constraints.n_layers``.
    """

    def __init__(
        self,
        model: nn.Module,
        readout: Callable[[torch.Tensor], torch.Tensor] | None,
        optimizer: torch.optim.Optimizer,
        constraints: DescentConstraints,
        loss_fn: LossFn | None = None,
    ) -> None:
        if not isinstance(constraints, DescentConstraints):
            raise TypeError(
                f"constraints must be a DescentConstraints, got {type(constraints).__name__}"
            )
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
            )
        self.model = model
        self.readout = readout
        self.optimizer = optimizer
        self.constraints = constraints
        self.loss_fn = loss_fn

    def step(self, inputs: Any, target: torch.Tensor) -> dict[str, Any]:
        """One primal and one dual step on a minibatch.

        Args:
            inputs: The model's input (a tensor, or a mapping of keyword arguments).
            target: The target, as :func:`layer_losses`.

        Returns:
            ``{"loss": l_L, "lagrangian": ..., "layer_losses": [l_0..l_L],
            "multipliers": [...], "slacks": [...]}`` as Python floats.

        Raises:
            ValueError: If the model's layer count differs from
                ``constraints.n_layers``, or if a layer loss is NaN or infinite
                (checked before any step: the model, optimizer and multipliers are
                left unchanged).
            TypeError: As :func:`layer_losses`.
        """
        losses = layer_losses(
            self.model, inputs, target, loss_fn=self.loss_fn, readout=self.readout
        )
        if losses.numel() - 1 != self.constraints.n_layers:
            raise ValueError(
                f"the model has {losses.numel() - 1} layers after the base but constraints "
                f"has n_layers={self.constraints.n_layers}"
            )
        if not bool(torch.isfinite(losses.detach()).all()):
            raise ValueError(
                f"a layer loss is not finite, layer_losses={losses.detach().tolist()}; "
                "no step was taken"
            )
        lag = self.constraints.lagrangian(losses[1:], losses[0])
        self.optimizer.zero_grad()
        lag.backward()
        self.optimizer.step()
        detached = losses.detach()
        self.constraints.dual_step(detached[1:], detached[0])
        return {
            "loss": float(detached[-1]),
            "lagrangian": float(lag.detach()),
            "layer_losses": detached.tolist(),
            "multipliers": self.constraints.multipliers.tolist(),
            "slacks": self.constraints.slacks.tolist(),
        }

    def state_dict(self) -> dict[str, Any]:
        """Model, optimizer and multipliers, for checkpoints."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "constraints": self.constraints.state_dict(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.constraints.load_state_dict(state["constraints"])
