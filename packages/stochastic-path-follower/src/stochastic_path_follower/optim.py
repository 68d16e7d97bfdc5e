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

    Each param group is one decision vector, followed as by a separate optimizer: its
    own running gradient scale ``r``, previous iterate, previous gradient, step count
    and times. Parameters whose ``grad`` is None take no part in a step and are left
    unchanged.

    Each ``step(closure)`` reads the gradient of the current minibatch loss (the
    closure zeroes the gradients, computes the loss on the newest minibatch and calls
    ``backward``), and, when the follower uses the ``hvp`` feature, calls the closure
    a second time at the previous iterates for the secant ``g_k(X_{k-1}) - g_k(X_{k-2})``
    (so a step costs two gradients of the same minibatch: the closure must compute the
    loss on the same minibatch each time it is called, so draw the batch before
    ``step``, not inside the closure); the gradients of the first call are put back
    afterwards. ``step()`` without a closure uses the gradients
    already in ``.grad`` and the secant across steps, ``g_k(X_{k-1}) - g_{k-1}(X_{k-2})``
    (the same when the loss does not change between steps; one gradient a step). The
    follower's weights are copied and never trained here; the update is computed in
    the follower's dtype and added to the parameters in theirs.

    Args:
        params: Parameters or parameter groups (group options are unused).
        follower: A trained :class:`~stochastic_path_follower.StochasticPathFollower`.

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

    def _group_clock(self, ps: list[torch.Tensor]) -> dict[str, Any]:
        """The group's step count, running scale and times (from a member's state)."""
        for p in ps:
            st = self.state[p]
            if "k" in st:
                return {"k": int(st["k"]), "s": st["s"], "t": st["t"], "t0": st["t0"]}
        return {"k": 0, "s": None, "t": None, "t0": None}

    @torch.no_grad()
    def step(  # type: ignore[override]
        self, closure: Callable[[], Any] | None = None, t: float | None = None
    ) -> Any:
        """One update of every param group from the newest minibatch.

        Args:
            closure: Zeroes the gradients, computes the loss on the newest minibatch,
                calls ``backward`` and returns the loss. Called twice when the
                follower uses ``hvp`` (from a group's second step on). Without it, the
                gradients already computed are used (see the class docstring).
            t: The batch's time, strictly increasing across calls; default each
                group's step count ``0, 1, 2, ...``.

        Returns:
            The closure's loss (at the parameters before the update), or None.

        Raises:
            TypeError: If ``t`` is not a number.
            ValueError: If ``t`` is not finite or does not increase, or if a gradient
                contains NaN or inf.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        t_in = None if t is None else check_float("t", t)
        fpar = next(self.follower.parameters())
        work = []  # (params, x, g, clock, t) per group that takes part
        for gi, group in enumerate(self.param_groups):
            ps = [p for p in group["params"] if p.grad is not None]
            if not ps:
                continue
            clock = self._group_clock(ps)
            tk = float(clock["k"]) if t_in is None else t_in
            if clock["k"] > 0 and not tk > clock["t"]:
                raise ValueError(f"t must increase strictly, got {tk} after {clock['t']}")
            x = torch.cat([p.detach().reshape(-1) for p in ps])
            g = torch.cat([p.grad.reshape(-1) for p in ps])
            if not torch.isfinite(g).all():
                raise ValueError(
                    f"the .grad of a parameter in param group {gi} contains NaN or inf"
                )
            work.append((ps, x, g, clock, tk))
        if not work:
            return loss
        if fpar.device != work[0][1].device:
            self.follower.to(work[0][1].device)
        hvs: list[torch.Tensor | None] = [None] * len(work)
        if self.follower.uses_hvp:
            again = [i for i, w in enumerate(work) if w[3]["k"] > 0]
            if again and closure is not None:
                # the secant on the current minibatch: gradients at the previous iterates
                everyone = [p for group in self.param_groups for p in group["params"]]
                grads = {p: p.grad for p in everyone}
                for i in again:
                    for p in work[i][0]:
                        p.copy_(self.state[p]["x_prev"])
                with torch.enable_grad():
                    closure()
                for i in again:
                    ps = work[i][0]
                    g_old = torch.cat(
                        [
                            (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                            for p in ps
                        ]
                    )
                    hvs[i] = work[i][2] - g_old
                    start = 0
                    for p in ps:
                        n = p.numel()
                        p.copy_(work[i][1][start : start + n].view_as(p))
                        start += n
                for p in everyone:
                    p.grad = grads[p]
            else:  # the secant across steps
                for i in again:
                    ps, _, g, _, _ = work[i]
                    hvs[i] = g - torch.cat([self.state[p]["g_prev"].reshape(-1) for p in ps])
        fdtype = fpar.dtype
        for (ps, x, g, clock, tk), hv in zip(work, hvs, strict=True):
            k = clock["k"]
            prev = [self.state[p] for p in ps]
            x_prev = torch.cat(
                [
                    (st["x_prev"] if "x_prev" in st else p.detach()).reshape(-1)
                    for p, st in zip(ps, prev, strict=True)
                ]
            )
            g_prev = torch.cat(
                [
                    (st["g_prev"] if "g_prev" in st else torch.zeros_like(p)).reshape(-1)
                    for p, st in zip(ps, prev, strict=True)
                ]
            )
            s = clock["s"]
            state = {
                "x": x.to(fdtype)[None],
                "x_prev": x_prev.to(fdtype)[None],
                "g_prev": g_prev.to(fdtype)[None],
                "s": None if s is None else torch.full((1, 1), s, dtype=fdtype, device=x.device),
                "t0": tk if clock["t0"] is None else clock["t0"],
                "k": k,
            }
            new = self.follower.step_from_grads(
                state, g.to(fdtype)[None], None if hv is None else hv.to(fdtype)[None], tk
            )
            delta = new["delta"][0]
            s_new = float(new["s"][0, 0])
            start = 0
            for p in ps:
                n = p.numel()
                st = self.state[p]
                st["x_prev"] = p.detach().clone()
                st["g_prev"] = p.grad.detach().clone()
                p.add_(delta[start : start + n].view_as(p).to(p.dtype))
                st.update(s=s_new, t0=float(state["t0"]), t=tk, k=k + 1)
                start += n
        return loss
