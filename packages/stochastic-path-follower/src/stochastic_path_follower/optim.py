"""``SPFOptimizer``: a trained path follower as a ``torch.optim.Optimizer``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import torch
from icml26_core.validation import check_float

from stochastic_path_follower.follower import StochasticPathFollower

__all__ = ["SPFOptimizer"]


class SPFOptimizer(torch.optim.Optimizer):
    """Drive parameters whose loss drifts over time with a trained follower.

    Each ``step(closure)`` reads the gradient of the current minibatch loss (the
    closure zeroes the gradients, computes the loss on the newest minibatch and calls
    ``backward``), and, when the follower uses the ``hvp`` feature, calls the closure
    a second time at the previous iterate for the secant ``g_k(X_{k-1}) - g_k(X_{k-2})``
    (so a step costs two gradients of the same minibatch). All parameters are treated
    as one decision vector; the follower's weights are copied and never trained here.

    Args:
        params: Parameters or parameter groups (one group's options are unused).
        follower: A trained :class:`~stochastic_path_follower.StochasticPathFollower`

    Raises:
        TypeError: If ``follower`` is not a follower.

    Example:
        >>> import torch
        >>> from stochastic_path_follower import SPFOptimizer, StochasticPathFollower
        >>> w = torch.zeros(3, requires_grad=True)
        >>> opt = SPFOptimizer([w], StochasticPathFollower(width=4))
        >>> target = torch.tensor([1.0, -2.0, 0.5])
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = 0.5 * ((w - target) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> for _ in range(60):
        ...     _ = opt.step(closure)
        >>> bool((w - target).norm() < 1e-2)
        True
    """

    def __init__(self, params: Iterable[Any], follower: StochasticPathFollower) -> None:
        if not isinstance(follower, StochasticPathFollower):
            raise TypeError(
                f"follower must be a StochasticPathFollower, got {type(follower).__name__}"
            )
        super().__init__(params, {})
        self.follower = copy.deepcopy(follower).eval()
        for p in self.follower.parameters():
            p.requires_grad_(False)

    def _params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _flat_grad(self) -> torch.Tensor:
        return torch.cat(
            [
                (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                for p in self._params()
            ]
        )

    def _set(self, flat: torch.Tensor) -> None:
        i = 0
        for p in self._params():
            n = p.numel()
            p.copy_(flat[i : i + n].view_as(p))
            i += n

    @torch.no_grad()
    def step(  # type: ignore[override]
        self, closure: Callable[[], Any] | None = None, t: float | None = None
    ) -> Any:
        """One update from the newest minibatch.

        Args:
            closure: Required: zeroes the gradients, computes the loss on the newest
                minibatch, calls ``backward`` and returns the loss. Called twice when
                the follower uses ``hvp`` (after the first step).
            t: The batch's time, strictly increasing across calls; default the step
                count ``0, 1, 2, ...``.

        Returns:
            The closure's loss (at the parameters before the update).

        Raises:
            TypeError: If ``t`` is not a number.
            ValueError: Without a closure, if ``t`` is not finite or does not increase,
                or if the gradient contains NaN or inf.
        """
        if closure is None:
            raise ValueError("SPFOptimizer.step needs a closure that recomputes the loss")
        params = self._params()
        with torch.enable_grad():
            loss = closure()
        g = self._flat_grad()
        x = torch.cat([p.detach().reshape(-1) for p in params])
        st = self.state[params[0]]
        k = int(st.get("k", 0))
        t = float(k) if t is None else check_float("t", t)
        if k > 0 and not t > float(st["t"]):
            raise ValueError(f"t must increase strictly, got {t} after {float(st['t'])}")
        fdtype = next(self.follower.parameters()).dtype
        if next(self.follower.parameters()).device != x.device:
            self.follower.to(x.device)
        hv = None
        if self.follower.uses_hvp and k > 0:
            self._set(st["x_prev"].to(x.dtype))
            with torch.enable_grad():
                closure()
            hv = (g - self._flat_grad()).to(fdtype)[None]
            self._set(x)
        state = {
            "x": x.to(fdtype)[None],
            "x_prev": (st["x_prev"] if k > 0 else x).to(fdtype)[None],
            "g_prev": (st["g_prev"] if k > 0 else torch.zeros_like(g)).to(fdtype)[None],
            "s": st["s"].to(fdtype)[None] if k > 0 else None,
            "t0": float(st["t0"]) if k > 0 else t,
            "k": k,
        }
        new = self.follower.step_from_grads(state, g.to(fdtype)[None], hv, t)
        self._set(new["x"][0].to(x.dtype))
        st.update(
            x_prev=x.clone(),
            g_prev=g.clone(),
            s=new["s"][0].detach().clone(),
            t0=torch.tensor(state["t0"], dtype=torch.float64),
            t=torch.tensor(t, dtype=torch.float64),
            k=k + 1,
        )
        return loss
