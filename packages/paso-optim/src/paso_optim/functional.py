"""Pure optimizer updates on flat parameter vectors: ``(x, state, g, t) -> (x', state')``.

PASO needs the update of step ``t`` as a pure function of the iterate ``x_t``, the
optimizer state ``s_t``, the gradient ``g_t`` and the step index ``t`` (0-based), so it
can roll a window of steps forward from any committed point. These four match
``torch.optim.SGD`` (with momentum, dampening, Nesterov and L2 decay), ``torch.optim.Adam``
(L2 decay) and ``torch.optim.AdamW`` (decoupled decay) step for step, to float rounding
(the tests check 50 steps to 1e-7 in float32 and 1e-12 in float64, with and without a
schedule). The learning rate of step ``t`` is ``lr * schedule(t)`` where ``schedule`` is
a ``LambdaLR``-style function of the 0-based step index (None: constant).

The state is a dict of tensors shaped like ``x`` (``{}`` for plain SGD); the functions
never modify their inputs.

References:
    torch.optim.SGD / Adam / AdamW documentation (the update rules implemented here).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from icml26_core.validation import check_choice, check_float

Schedule = Callable[[int], float]
State = dict[str, torch.Tensor]

OPTIMIZERS = ("sgd", "adam", "adamw")


@dataclass(frozen=True)
class FunctionalOptimizer:
    """A pure optimizer update on a flat parameter vector.

    Attributes:
        name: ``"sgd"``, ``"adam"`` or ``"adamw"``.
        lr: Base learning rate (> 0).
        hyper: The other hyperparameters (momentum, betas, eps, weight_decay, ...).
        schedule: ``t -> factor`` (0-based step index) multiplying ``lr``, or None.
    """

    name: str
    lr: float
    hyper: dict[str, Any] = field(default_factory=dict)
    schedule: Schedule | None = None

    def lr_at(self, t: int) -> float:
        """The learning rate of step ``t`` (0-based)."""
        return self.lr if self.schedule is None else self.lr * float(self.schedule(t))

    def init(self, x: torch.Tensor) -> State:
        """The state before step 0 for parameters ``x`` (shape ``(n,)``)."""
        if self.name == "sgd":
            return {"buf": torch.zeros_like(x)} if self.hyper["momentum"] != 0 else {}
        return {"m": torch.zeros_like(x), "v": torch.zeros_like(x)}

    def step(
        self, x: torch.Tensor, state: State, g: torch.Tensor, t: int
    ) -> tuple[torch.Tensor, State]:
        """One update: ``x_{t+1}, s_{t+1} = Phi_t(x_t, s_t, g_t)``.

        Args:
            x: Parameters ``x_t``, shape ``(n,)``.
            state: Optimizer state ``s_t`` from :meth:`init` or a previous step.
            g: Gradient of the step-``t`` loss at ``x_t``, shape ``(n,)``.
            t: 0-based step index (selects the learning rate and Adam's bias correction).

        Returns:
            ``(x_{t+1}, s_{t+1})``; the inputs are not modified.
        """
        lr = self.lr_at(t)
        h = self.hyper
        if self.name == "sgd":
            wd, mom = h["weight_decay"], h["momentum"]
            d = g + wd * x if wd != 0 else g
            if mom == 0:
                return x - lr * d, {}
            buf = d.clone() if t == 0 else mom * state["buf"] + (1 - h["dampening"]) * d
            d = d + mom * buf if h["nesterov"] else buf
            return x - lr * d, {"buf": buf}
        b1, b2 = h["betas"]
        wd = h["weight_decay"]
        if self.name == "adamw":
            x = x * (1 - lr * wd)
        elif wd != 0:
            g = g + wd * x
        m = torch.lerp(state["m"], g, 1 - b1)
        v = state["v"] * b2 + (1 - b2) * g * g
        k = t + 1
        bc1 = 1 - b1**k
        bc2_sqrt = math.sqrt(1 - b2**k)
        denom = v.sqrt() / bc2_sqrt + h["eps"]
        return x - (lr / bc1) * (m / denom), {"m": m, "v": v}


def _check_common(lr: float, weight_decay: float) -> tuple[float, float]:
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    weight_decay = check_float("weight_decay", weight_decay, low=0.0)
    return lr, weight_decay


def sgd(
    lr: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    nesterov: bool = False,
    weight_decay: float = 0.0,
    schedule: Schedule | None = None,
) -> FunctionalOptimizer:
    """``torch.optim.SGD`` as a pure update (same arguments and defaults).

    Raises:
        ValueError: On ``lr <= 0``, negative ``momentum``/``weight_decay``, or Nesterov
            without momentum or with dampening (as torch).
    """
    lr, weight_decay = _check_common(lr, weight_decay)
    momentum = check_float("momentum", momentum, low=0.0)
    dampening = check_float("dampening", dampening)
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError("nesterov needs momentum > 0 and dampening = 0")
    hyper = {
        "momentum": momentum,
        "dampening": dampening,
        "nesterov": bool(nesterov),
        "weight_decay": weight_decay,
    }
    return FunctionalOptimizer("sgd", lr, hyper, schedule)


def _adam_like(
    name: str,
    lr: float,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
    schedule: Schedule | None,
) -> FunctionalOptimizer:
    lr, weight_decay = _check_common(lr, weight_decay)
    if not isinstance(betas, tuple | list) or len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    b1 = check_float("betas[0]", betas[0], low=0.0, high=1.0, high_inclusive=False)
    b2 = check_float("betas[1]", betas[1], low=0.0, high=1.0, high_inclusive=False)
    eps = check_float("eps", eps, low=0.0)
    hyper = {"betas": (b1, b2), "eps": eps, "weight_decay": weight_decay}
    return FunctionalOptimizer(name, lr, hyper, schedule)


def adam(
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    schedule: Schedule | None = None,
) -> FunctionalOptimizer:
    """``torch.optim.Adam`` (L2 weight decay added to the gradient) as a pure update.

    Raises:
        ValueError: On ``lr <= 0``, betas outside ``[0, 1)``, negative ``eps`` or decay.
    """
    return _adam_like("adam", lr, betas, eps, weight_decay, schedule)


def adamw(
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    weight_decay: float = 1e-2,
    schedule: Schedule | None = None,
) -> FunctionalOptimizer:
    """``torch.optim.AdamW`` (decoupled weight decay) as a pure update.

    Raises:
        ValueError: On ``lr <= 0``, betas outside ``[0, 1)``, negative ``eps`` or decay.
    """
    return _adam_like("adamw", lr, betas, eps, weight_decay, schedule)


def make_optimizer(
    name: str, lr: float, schedule: Schedule | None = None, **hyper: Any
) -> FunctionalOptimizer:
    """Build a functional optimizer by name, with torch's keyword arguments.

    ``"sgd"`` (``momentum=`` for heavy ball), ``"adam"`` or ``"adamw"``.

    Raises:
        ValueError: If ``name`` is not one of :data:`OPTIMIZERS`, or on a bad value.
        TypeError: On a keyword argument that optimizer does not take (e.g. ``momentum``
            for Adam).
    """
    check_choice("optimizer", name, OPTIMIZERS)
    factory = {"sgd": sgd, "adam": adam, "adamw": adamw}[name]
    allowed = set(inspect.signature(factory).parameters) - {"lr", "schedule"}
    unknown = sorted(set(hyper) - allowed)
    if unknown:
        raise TypeError(
            f"optimizer {name!r} does not take {', '.join(unknown)}; "
            f"its arguments are {', '.join(sorted(allowed))}"
        )
    return factory(lr=lr, schedule=schedule, **hyper)
