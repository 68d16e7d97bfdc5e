"""`L0L1Warmup`: the learning rate that an (L0, L1)-type curvature bound allows.

Our reading of the abstract (the paper's text is not available to us): if the local
curvature obeys ``||Hess f(x)|| <= K0 + K1 (f(x) - f*)``, the step that the bound allows
is ``1 / (K0 + K1 (f - f*))``. With the peak rate ``eta_peak = 1 / K0`` this is

    eta_t = eta_peak * base(t) / (1 + alpha * (fbar_t - f*)),   alpha = K1 / K0,

with ``fbar_t`` an exponential moving average of the training loss and ``base(t)`` an
optional decay schedule. High loss gives a small step; as the loss falls the rate rises
by itself: a warm-up whose length is set by the loss, not by a step count.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
from icml26_core.validation import check_float

__all__ = ["L0L1Warmup"]


class L0L1Warmup(torch.optim.lr_scheduler.LRScheduler):
    r"""Loss-driven warm-up :math:`\eta_t = \eta_{base}(t) / (1 + \alpha (\bar f_t - f^*)_+)`.

    Each parameter group keeps its own rate: the group's undamped rate (its initial
    ``lr``, or what ``base_scheduler`` sets) divided by the same damping factor
    ``1 + alpha * max(fbar - f_star, 0)``. Call :meth:`step` with the step's training
    loss after ``optimizer.step()``, like ``ReduceLROnPlateau.step(metrics)``;
    ``needs_loss = True`` tells loops that know the convention (``icml26_core.lm.train_lm``)
    to do so.

    The damping is applied on top of ``base_scheduler``: before the base scheduler steps,
    the groups get their undamped rates back, so a chainable base schedule (one that
    reads ``group["lr"]``, e.g. ``ExponentialLR``) never sees a damped rate. The rate never
    exceeds ``base(t)`` and reaches it only when ``fbar <= f_star`` (or ``alpha = 0``).

    Before any loss is seen the gap is unknown: with ``initial_loss=None`` the first step
    runs at rate 0 (the limit of an infinite gap); pass ``initial_loss`` (e.g.
    ``log(n_classes)`` for cross-entropy at initialisation) to start at the damped rate
    ``base(0) / (1 + alpha * (initial_loss - f_star))`` instead. The EMA then starts from
    ``initial_loss``; without it, from the first loss.

    Args:
        optimizer: Any ``torch.optim.Optimizer``; its groups' current ``lr`` are the peak
            rates ``eta_peak`` (after ``base_scheduler``'s first value, if given).
        alpha: ``K1 / K0`` >= 0, per nat of loss gap; 0 gives the base schedule exactly.
            ``estimate_constants`` suggests one.
        f_star: The loss floor ``f*`` (same unit as the loss; 0 for cross-entropy).
        ema: EMA coefficient of the loss in [0, 1): ``fbar <- ema * fbar + (1 - ema) * loss``
            (0: the raw minibatch loss).
        base_scheduler: Optional ``LRScheduler`` on the same ``optimizer`` (e.g. a cosine
            decay); stepped by this scheduler, never by the caller.
        initial_loss: Loss assumed before the first step, or None (see above).

    Attributes:
        loss_ema: The current ``fbar`` (None before any loss when ``initial_loss`` is None).
        damping: The current factor ``1 / (1 + alpha * gap)`` in (0, 1] (0 before any loss).
        undamped_lrs: Each group's rate before damping (``base(t)``).

    Raises:
        ValueError: If ``alpha < 0``, ``ema`` is outside [0, 1), a number is not finite, or
            ``base_scheduler`` drives another optimizer.
        TypeError: If ``base_scheduler`` is not an ``LRScheduler``.

    Example:
        >>> import torch
        >>> p = torch.nn.Parameter(torch.zeros(2))
        >>> opt = torch.optim.SGD([p], lr=0.1)
        >>> sched = L0L1Warmup(opt, alpha=1.0, ema=0.0, initial_loss=3.0)
        >>> round(sched.get_last_lr()[0], 6)  # 0.1 / (1 + 3)
        0.025
        >>> opt.step()
        >>> sched.step(1.0)
        >>> round(sched.get_last_lr()[0], 6)  # 0.1 / (1 + 1)
        0.05
    """

    needs_loss = True

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        alpha: float,
        f_star: float = 0.0,
        ema: float = 0.9,
        base_scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
        *,
        initial_loss: float | None = None,
    ) -> None:
        self.alpha = check_float("alpha", alpha, low=0.0)
        self.f_star = check_float("f_star", f_star)
        self.ema = check_float("ema", ema, low=0.0, high=1.0, high_inclusive=False)
        if base_scheduler is not None:
            if not isinstance(base_scheduler, torch.optim.lr_scheduler.LRScheduler):
                raise TypeError(
                    "base_scheduler must be a torch.optim.lr_scheduler.LRScheduler, got "
                    f"{type(base_scheduler).__name__}"
                )
            if base_scheduler.optimizer is not optimizer:
                raise ValueError("base_scheduler must be built on the same optimizer")
        self.base_scheduler = base_scheduler
        self.loss_ema: float | None = (
            None if initial_loss is None else check_float("initial_loss", initial_loss)
        )
        self.n_losses = 0
        self._warned_below = False
        self.undamped_lrs: list[float] = [float(g["lr"]) for g in optimizer.param_groups]
        self._initializing = True
        super().__init__(optimizer)
        self._initializing = False

    # -- the rate --------------------------------------------------------------------
    @property
    def gap(self) -> float:
        """``max(fbar - f_star, 0)``; ``inf`` before any loss without ``initial_loss``."""
        if self.loss_ema is None:
            return math.inf
        return max(self.loss_ema - self.f_star, 0.0)

    @property
    def damping(self) -> float:
        """The factor ``1 / (1 + alpha * gap)`` applied to every group's undamped rate."""
        gap = self.gap
        if math.isinf(gap):
            return 1.0 if self.alpha == 0.0 else 0.0
        return 1.0 / (1.0 + self.alpha * gap)

    def get_lr(self) -> list[float]:  # type: ignore[override]
        """The damped rates ``undamped_lrs[g] * damping`` (called by ``step``)."""
        d = self.damping
        return [u * d for u in self.undamped_lrs]

    # -- stepping --------------------------------------------------------------------
    def step(self, loss: Any = None) -> None:  # type: ignore[override]
        """Take the step's training loss, update the EMA and the base schedule, set the rates.

        Args:
            loss: The training loss of the optimizer step just taken: a float, a 0-d
                tensor (detached here) or numpy scalar, finite.

        Raises:
            TypeError: If ``loss`` is missing or not a real scalar.
            ValueError: If ``loss`` is NaN or infinite.
        """
        if self._initializing:  # LRScheduler.__init__ sets the first (damped) rate
            super().step()
            return
        if loss is None:
            raise TypeError(
                "L0L1Warmup.step needs the training loss: call scheduler.step(loss) after "
                "optimizer.step() (like ReduceLROnPlateau.step(metrics))"
            )
        if isinstance(loss, torch.Tensor):
            if loss.numel() != 1:
                raise TypeError(f"loss must be a scalar, got a tensor of shape {tuple(loss.shape)}")
            loss = float(loss.detach())
        value = check_float("loss", loss)
        if value < self.f_star and not self._warned_below:
            warnings.warn(
                f"loss {value:.6g} is below f_star = {self.f_star:.6g}; the gap is clipped at "
                "0 (full rate). Lower f_star if this is not expected.",
                UserWarning,
                stacklevel=2,
            )
            self._warned_below = True
        if self.loss_ema is None:
            self.loss_ema = value
        else:
            self.loss_ema = self.ema * self.loss_ema + (1.0 - self.ema) * value
        self.n_losses += 1
        if self.base_scheduler is not None:
            for group, u in zip(self.optimizer.param_groups, self.undamped_lrs, strict=True):
                group["lr"] = u  # the base schedule sees the undamped rate (pytorch_warmup#26)
            self.base_scheduler.step()
            self.undamped_lrs = [float(g["lr"]) for g in self.optimizer.param_groups]
        super().step()

    # -- state -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything :meth:`load_state_dict` needs, the EMA and the base schedule included."""
        state = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("optimizer", "base_scheduler", "_initializing")
        }
        base = self.base_scheduler
        state["base_scheduler"] = None if base is None else base.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`; the base scheduler's state goes to ``base_scheduler``.

        Raises:
            ValueError: If the state has a base schedule and this scheduler has none,
                or the other way round.
        """
        state = dict(state_dict)
        base = state.pop("base_scheduler", None)
        if (base is None) != (self.base_scheduler is None):
            raise ValueError(
                "state_dict and this scheduler disagree on base_scheduler: "
                f"saved {'none' if base is None else 'one'}, here "
                f"{'none' if self.base_scheduler is None else 'one'}"
            )
        if base is not None and self.base_scheduler is not None:
            self.base_scheduler.load_state_dict(base)
        self.__dict__.update(state)
