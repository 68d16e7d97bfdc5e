r"""Layer-wise descent constraints and their multipliers (the dual side of the method).

Our reading of the paper (its abstract is all we have; the details are ours): with
``l_l`` the task loss of layer ``l``'s prediction (``l_0`` the base: the input itself
for denoising, the embedding layer for text), training solves

.. math::

    \min_\theta \max_{\lambda \ge 0}\; E[l_L] + \sum_{l=0}^{L-1}
        \lambda_l \, g_l, \qquad
    g_l = E[l_{l+1}] - (1 - \epsilon) E[l_l] \quad \text{(relative form)}

or ``g_l = E[l_{l+1}] - E[l_l] + eps`` (additive form), by stochastic primal descent
and projected dual ascent on minibatch estimates,
``lambda <- [lambda + eta_d * (g - u) / l_0]_+``. The resilient form (Hounie et al.,
resilient constrained learning) relaxes each constraint by a slack ``u_l >= 0`` with
cost ``alpha / 2 * u_l^2``; its minimiser for given multipliers is
``u = lambda / alpha``, so the multipliers stay bounded (``lambda <= alpha * g``) when a
margin is infeasible.
"""

from __future__ import annotations

import numbers
from typing import Any

import torch
from icml26_core.validation import check_choice, check_float, check_int
from torch import nn

__all__ = ["DescentConstraints"]

FORMS = ("relative", "additive")


class DescentConstraints(nn.Module):
    """The ``L`` descent constraints of an ``L``-layer model and their multipliers.

    Constraint ``l`` (``l = 0 .. L-1``) asks layer ``l + 1`` to improve on layer ``l``:
    ``l_{l+1} <= (1 - eps) l_l`` (``form="relative"``) or ``l_{l+1} <= l_l - eps``
    (``form="additive"``). The multipliers are a buffer, so ``state_dict`` /
    ``load_state_dict`` and ``.to(device)`` carry them.

    Args:
        n_layers: ``L``, the number of layers after the base (one constraint each).
        eps: Required decrease per layer: a fraction in ``[0, 1)`` for the relative
            form, a loss amount ``>= 0`` for the additive one.
        dual_lr: Dual step size ``eta_d > 0``.
        form: ``"relative"`` or ``"additive"``.
        resilience: ``alpha > 0`` for the resilient relaxation (slack cost
            ``alpha / 2 * u^2``), or None for hard constraints.
        normalize: Divide the dual step by the base loss ``l_0`` (makes ``dual_lr``
            unit-free); the fixed point is unchanged.
        detach_previous: In the primal objective, treat ``l_l`` inside constraint ``l``
            as a constant (stop-gradient), so that a constraint only pushes the later
            layer down and never pulls the earlier one up (our option, not the paper's;
            with it the primal gradient is that of ``l_L + sum_l lambda_l l_{l+1}``).

    Attributes:
        multipliers: ``(L,)`` float tensor, ``lambda >= 0``.
        slacks: ``(L,)`` constraint values ``g`` of the last :meth:`dual_step`
            (positive = violated), zeros before the first.

    Raises:
        ValueError: On an argument outside its range (the message names it).

    Example:
        >>> import torch
        >>> c = DescentConstraints(2, eps=0.1, dual_lr=1.0)
        >>> losses = torch.tensor([0.95, 0.5])   # layers 1 and 2; base loss 1.0
        >>> c.dual_step(losses, torch.tensor(1.0)).tolist()  # only layer 1 is violated
        [0.05..., 0.0]
        >>> round(float(c.lagrangian(losses, torch.tensor(1.0))), 6)  # 0.5 + 0.05 * 0.05
        0.5025
    """

    multipliers: torch.Tensor
    slacks: torch.Tensor

    def __init__(
        self,
        n_layers: int,
        eps: float = 0.01,
        dual_lr: float = 0.1,
        form: str = "relative",
        resilience: float | None = None,
        normalize: bool = True,
        detach_previous: bool = False,
    ) -> None:
        super().__init__()
        self.n_layers = check_int("n_layers", n_layers, low=1)
        self.form = check_choice("form", form, FORMS)
        if self.form == "relative":
            self.eps = check_float("eps", eps, low=0.0, high=1.0, high_inclusive=False)
        else:
            self.eps = check_float("eps", eps, low=0.0)
        self.dual_lr = check_float("dual_lr", dual_lr, low=0.0, low_inclusive=False)
        self.resilience = (
            None
            if resilience is None
            else check_float("resilience", resilience, low=0.0, low_inclusive=False)
        )
        self.normalize = bool(normalize)
        self.detach_previous = bool(detach_previous)
        self.register_buffer("multipliers", torch.zeros(self.n_layers))
        self.register_buffer("slacks", torch.zeros(self.n_layers))

    def extra_repr(self) -> str:
        """The hyperparameters, for ``repr``."""
        return (
            f"n_layers={self.n_layers}, eps={self.eps}, dual_lr={self.dual_lr}, "
            f"form={self.form!r}, resilience={self.resilience}, "
            f"detach_previous={self.detach_previous}"
        )

    def _check(self, layer_losses: torch.Tensor, base_loss: Any) -> tuple[torch.Tensor, Any]:
        if not isinstance(layer_losses, torch.Tensor):
            raise TypeError(
                f"layer_losses must be a torch.Tensor of shape ({self.n_layers},), "
                f"got {type(layer_losses).__name__}"
            )
        if layer_losses.shape != (self.n_layers,):
            raise ValueError(
                f"layer_losses must have shape ({self.n_layers},) (one loss per layer after "
                f"the base, n_layers={self.n_layers}), got {tuple(layer_losses.shape)}"
            )
        if not isinstance(base_loss, (torch.Tensor, numbers.Real)) or isinstance(base_loss, bool):
            raise TypeError(
                f"base_loss must be a scalar tensor or a real number, got "
                f"{type(base_loss).__name__}"
            )
        base = torch.as_tensor(base_loss, dtype=layer_losses.dtype, device=layer_losses.device)
        if base.numel() != 1:
            raise ValueError(f"base_loss must be a scalar, got shape {tuple(base.shape)}")
        return layer_losses, base.reshape(())

    def constraint_values(
        self, layer_losses: torch.Tensor, base_loss: Any, *, detach_previous: bool = False
    ) -> torch.Tensor:
        """``g``: the ``L`` constraint values (``<= 0`` when satisfied), differentiable.

        Args:
            layer_losses: ``(L,)`` losses of layers ``1 .. L`` (minibatch means).
            base_loss: Scalar loss ``l_0`` of the base (a tensor or float).
            detach_previous: Stop the gradient through the earlier layer's loss.

        Returns:
            ``(L,)`` tensor ``g_l = l_{l+1} - (1 - eps) l_l`` (or ``- l_l + eps``).

        Raises:
            TypeError: If ``layer_losses`` is not a tensor or ``base_loss`` not a scalar.
            ValueError: If ``layer_losses`` does not have shape ``(L,)``.
        """
        losses, base = self._check(layer_losses, base_loss)
        prev = torch.cat([base.reshape(1), losses[:-1]])
        if detach_previous:
            prev = prev.detach()
        if self.form == "relative":
            return losses - (1.0 - self.eps) * prev
        return losses - prev + self.eps

    @property
    def relaxations(self) -> torch.Tensor:
        """``(L,)`` slack relaxations ``u = lambda / alpha`` (zeros without resilience)."""
        if self.resilience is None:
            return torch.zeros_like(self.multipliers)
        return self.multipliers / self.resilience

    def lagrangian(self, layer_losses: torch.Tensor, base_loss: Any) -> torch.Tensor:
        """The primal objective ``l_L + sum_l lambda_l g_l``.

        With the resilient form the relaxation ``u = lambda / alpha`` does not depend on
        the parameters, so it does not change the primal gradient and is left out.

        Args:
            layer_losses: ``(L,)`` differentiable losses of layers ``1 .. L``.
            base_loss: Scalar ``l_0`` (differentiable when the base has parameters).

        Returns:
            A scalar tensor to call ``backward`` on.

        Raises:
            TypeError, ValueError: As :meth:`constraint_values`.
        """
        g = self.constraint_values(layer_losses, base_loss, detach_previous=self.detach_previous)
        return layer_losses[-1] + (self.multipliers.to(g.dtype) * g).sum()

    @torch.no_grad()
    def dual_step(self, layer_losses: torch.Tensor, base_loss: Any) -> torch.Tensor:
        """Projected dual ascent: ``lambda <- [lambda + eta_d (g - u) / l_0]_+``.

        Args:
            layer_losses: ``(L,)`` losses of layers ``1 .. L`` (detached or not).
            base_loss: Scalar ``l_0``.

        Returns:
            The updated multipliers, ``(L,)``.

        Raises:
            TypeError: If ``layer_losses`` is not a tensor or ``base_loss`` not a scalar.
            ValueError: If ``layer_losses`` does not have shape ``(L,)``, if a loss is
                NaN or infinite (the multipliers would never recover), or if
                ``base_loss < 0`` with ``normalize=True`` (the step is divided by it).
                Nothing is updated when it raises.
        """
        losses, base = self._check(layer_losses, base_loss)
        losses, base = losses.detach(), base.detach()
        if not (bool(torch.isfinite(losses).all()) and bool(torch.isfinite(base))):
            raise ValueError(
                f"layer_losses and base_loss must be finite, got layer_losses="
                f"{losses.tolist()}, base_loss={float(base)}"
            )
        if self.normalize and float(base) < 0:
            raise ValueError(
                f"base_loss must be >= 0 with normalize=True (the dual step is divided by "
                f"it), got {float(base)}; pass normalize=False for losses that can be negative"
            )
        g = self.constraint_values(losses, base).to(self.multipliers.dtype)
        self.slacks.copy_(g)
        scale = self.dual_lr
        if self.normalize:
            scale = scale / max(float(base), 1e-12)
        step = g - self.relaxations
        self.multipliers.add_(scale * step).clamp_(min=0.0)
        return self.multipliers.clone()
