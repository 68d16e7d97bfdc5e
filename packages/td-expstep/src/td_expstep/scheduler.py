"""``ExponentialStepSize``: the exponential schedule as a torch LR scheduler."""

from __future__ import annotations

from typing import Any

import torch
from icml26_core.validation import check_float, check_int


class ExponentialStepSize(torch.optim.lr_scheduler.LRScheduler):
    r"""Exponential step size :math:`\eta_t = \eta_0 (\beta/T)^{t/T}` for any optimizer.

    ``eta_0`` is each parameter group's initial ``lr``; after ``T = total_steps`` calls
    of :meth:`step` the rate is ``eta_0 * beta / T`` and stays there. No problem
    constant (smallest eigenvalue, mixing time) is needed, only the horizon.

    Args:
        optimizer: Any ``torch.optim.Optimizer``.
        total_steps: The horizon ``T`` >= 1 (number of ``step()`` calls planned).
        beta: Final rate ``eta_0 * beta / T``, > 0.
        last_epoch: As in torch's schedulers (-1 starts afresh).

    Raises:
        ValueError: If ``total_steps < 1`` or ``beta <= 0``.

    Example:
        >>> import torch
        >>> p = torch.nn.Parameter(torch.zeros(2))
        >>> opt = torch.optim.SGD([p], lr=0.5)
        >>> sched = ExponentialStepSize(opt, total_steps=100)
        >>> for _ in range(100):
        ...     opt.step()
        ...     sched.step()
        >>> round(sched.get_last_lr()[0], 6)
        0.005
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        total_steps: int,
        beta: float = 1.0,
        last_epoch: int = -1,
    ) -> None:
        self.total_steps = check_int("total_steps", total_steps, low=1)
        self.beta = check_float("beta", beta, low=0.0, low_inclusive=False)
        super().__init__(optimizer, last_epoch)

    def _factor(self, t: int) -> float:
        t = min(max(t, 0), self.total_steps)
        return (self.beta / self.total_steps) ** (t / self.total_steps)

    def get_lr(self) -> list[Any]:
        """The rates at ``last_epoch``, in closed form (no drift from repeated products)."""
        return [base * self._factor(self.last_epoch) for base in self.base_lrs]

    def _get_closed_form_lr(self) -> list[Any]:
        return self.get_lr()
