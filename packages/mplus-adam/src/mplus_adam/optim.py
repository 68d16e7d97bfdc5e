"""M+Adam and its baselines: Adam whose parameters are low-precision master weights.

All three optimizers share one step. With the Adam direction
``u = m_hat / (sqrt(v_hat) + eps)`` (bias-corrected moments), per coordinate:

- additive part ``-lr * u`` (Adam; crosses zero, but is rounded away at large ``|w|``);
- multiplicative part ``w * exp(-lr_mult * sign(w) * u)`` (Madam / LNS-Madam style: a
  relative step that survives rounding at any ``|w|`` once ``lr_mult |u|`` exceeds half a
  relative ulp, but cannot cross zero);
- decoupled weight decay ``-eta * weight_decay * w`` (``eta = lr``; ``lr_mult`` for the
  multiplicative-only mode).

``mode`` chooses how they combine, and the result is rounded onto the master format's
grid ``Q`` (:mod:`mplus_adam.formats`) and written into the parameter; there is no
higher-precision copy of the weights:

- ``"combined"`` (M+Adam): ``Q(w exp(-lr_mult sign(w) u) - lr u)``;
- ``"fallback"`` (M+Adam): ``Q(w - lr u)``, and where that equals ``w`` (the additive step
  was rounded away) ``Q(w exp(-lr_mult sign(w) u))`` instead;
- ``"additive"``: ``Q(w - lr u)``, the low-precision Adam of :class:`LowPrecisionAdam`;
- ``"multiplicative"``: ``Q(w exp(-lr_mult sign(w) u))``, the Madam-style baseline of
  :class:`Madam`.

The abstract does not say which combination M+Adam uses; both "combined" and
"fallback" are ours, documented and compared in the experiment.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_choice, check_float, check_int

from mplus_adam import formats as _fm

__all__ = [
    "MODES",
    "LowPrecisionAdam",
    "MPlusAdam",
    "Madam",
    "binned_stuck",
    "state_bytes",
    "stuck_fraction",
]

MODES = ("combined", "fallback", "additive", "multiplicative")
_SEED_MOD = 2**62


def _check_betas(betas: Any) -> tuple[float, float]:
    if not isinstance(betas, tuple | list) or len(betas) != 2:
        raise TypeError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    b1 = check_float("betas[0]", betas[0], low=0.0, high=1.0, high_inclusive=False)
    b2 = check_float("betas[1]", betas[1], low=0.0, high=1.0, high_inclusive=False)
    return b1, b2


def _check_group(group: dict[str, Any]) -> None:
    """Validate one param group's settings in place (names in messages as in __init__)."""
    group["lr"] = check_float("lr", group["lr"], low=0.0)
    group["lr_mult"] = check_float("lr_mult", group["lr_mult"], low=0.0)
    group["betas"] = _check_betas(group["betas"])
    group["eps"] = check_float("eps", group["eps"], low=0.0)
    group["weight_decay"] = check_float("weight_decay", group["weight_decay"], low=0.0)
    check_choice("mode", group["mode"], MODES)
    check_choice("master_format", group["master_format"], _fm.FORMATS)
    check_choice("rounding", group["rounding"], _fm.ROUNDINGS)
    if group["block_size"] is not None:
        group["block_size"] = check_int("block_size", group["block_size"], low=1)
    md = group["moment_dtype"]
    if md is not None and (not isinstance(md, torch.dtype) or not md.is_floating_point):
        raise TypeError(f"moment_dtype must be a floating torch.dtype or None, got {md!r}")


class MPlusAdam(torch.optim.Optimizer):
    """M+Adam: Adam with additive and multiplicative steps on low-precision master weights.

    The parameters are the master weights: after each step they hold values on the
    grid of ``master_format`` (real ``torch.bfloat16`` storage when the parameters are
    bf16 tensors; FP8/FP4 are emulated: the values lie on the format's grid inside a
    float32 or bfloat16 tensor, and :func:`state_bytes` counts them at the format's width).
    The constructor rounds the parameters onto the grid in place.

    Args:
        params: Iterable of tensors or param-group dicts (every setting below may be
            given per group).
        lr: Additive step size ``lr`` (>= 0).
        lr_mult: Multiplicative step size (>= 0): ``w <- w exp(-lr_mult sign(w) u)``.
            At ``lr_mult=0`` M+Adam is Adam on the rounded weights.
        betas: Adam's ``(beta1, beta2)``, each in [0, 1).
        eps: Added to ``sqrt(v_hat)`` (>= 0).
        weight_decay: Decoupled (AdamW) decay coefficient (>= 0).
        mode: ``"combined"``, ``"fallback"``, ``"additive"`` or ``"multiplicative"``
            (see the module docstring).
        master_format: One of :data:`mplus_adam.formats.FORMATS`.
        rounding: ``"nearest"`` (ties to even) or ``"stochastic"`` (unbiased).
        block_size: Entries of the last dimension per power-of-two scale for FP8/FP4
            (the last block of a row may be shorter), or None for one scale per tensor.
            A scale changes only when its block overflows or falls 16-fold below it.
        moment_dtype: dtype of the moments ``m`` and ``v``; None keeps the parameter's
            dtype (torch.optim's convention). ``torch.float32`` keeps fp32 moments for
            bf16 parameters.
        track_stuck: Keep a boolean mask ``state["stuck"]`` of the coordinates whose last
            update was rounded away (the weight did not change although ``u != 0``);
            read it with :func:`stuck_fraction`.
        seed: Seed of the stochastic rounding (a stream per step and parameter, so a
            reloaded state dict continues identically); None draws one from torch's
            global generator.

    Raises:
        TypeError: A setting of the wrong type, or a non-floating parameter.
        ValueError: A setting out of range (``lr_mult < 0``, an unknown format, ...).

    Example:
        >>> w = torch.full((4,), 2.0, dtype=torch.bfloat16, requires_grad=True)
        >>> opt = MPlusAdam([w], lr=1e-4, lr_mult=1e-2, master_format="bf16")
        >>> w.sum().backward(); opt.step()
        >>> w.tolist()  # Adam alone would leave 2.0: 2 - 1e-4 rounds back to 2 in bf16
        [1.9765625, 1.9765625, 1.9765625, 1.9765625]
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        lr_mult: float = 1e-2,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        *,
        mode: str = "combined",
        master_format: str = "bf16",
        rounding: str = "nearest",
        block_size: int | None = 32,
        moment_dtype: torch.dtype | None = None,
        track_stuck: bool = False,
        seed: int | None = None,
    ) -> None:
        if seed is None:
            seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
        seed = check_int("seed", seed, low=0)
        defaults = dict(
            lr=lr,
            lr_mult=lr_mult,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            mode=mode,
            master_format=master_format,
            rounding=rounding,
            block_size=block_size,
            moment_dtype=moment_dtype,
            track_stuck=bool(track_stuck),
            seed=seed,
        )
        if not isinstance(track_stuck, bool | np.bool_):
            raise TypeError(f"track_stuck must be a bool, got {type(track_stuck).__name__}")
        _check_group(dict(defaults))
        super().__init__(params, defaults)  # validates and rounds each group (add_param_group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a param group, validate its settings and round its parameters onto the grid.

        Called by the constructor for every group, and usable later as
        ``torch.optim.Optimizer.add_param_group``.

        Raises:
            TypeError: A setting of the wrong type, or a non-floating parameter.
            ValueError: A setting out of range.
        """
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        try:
            _check_group(group)
            for p in group["params"]:
                if not torch.is_floating_point(p):
                    raise TypeError(f"params must be floating-point tensors, got dtype {p.dtype}")
        except (TypeError, ValueError):
            self.param_groups.pop()
            raise
        with torch.no_grad():
            for p in group["params"]:
                q = _fm.quantize(p.detach(), group["master_format"], "nearest", group["block_size"])
                p.copy_(q)

    def _init_state(self, p: torch.Tensor, group: dict[str, Any], work: torch.Tensor) -> dict:
        state = self.state[p]
        mdt = group["moment_dtype"] or p.dtype
        state["step"] = torch.tensor(0.0)
        state["exp_avg"] = torch.zeros_like(p, dtype=mdt, memory_format=torch.preserve_format)
        state["exp_avg_sq"] = torch.zeros_like(p, dtype=mdt, memory_format=torch.preserve_format)
        fmt = _fm.get_format(group["master_format"])
        if fmt.scaled:
            amax = _fm.block_amax(work, group["block_size"])
            state["scale_exp"] = _fm.scale_exponent_for(amax, fmt)
        if group["track_stuck"]:
            state["stuck"] = torch.zeros_like(p, dtype=torch.bool)
        return state

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        """Perform one step; ``closure`` re-evaluates the loss (run with grad enabled).

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        index = 0
        for group in self.param_groups:
            b1, b2 = group["betas"]
            lr, lr_mult, eps, wd = (
                group["lr"],
                group["lr_mult"],
                group["eps"],
                group["weight_decay"],
            )
            mode, rounding, block = group["mode"], group["rounding"], group["block_size"]
            fmt = _fm.get_format(group["master_format"])
            for p in group["params"]:
                index += 1
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("MPlusAdam does not support sparse gradients")
                wdt = torch.float64 if p.dtype == torch.float64 else torch.float32
                w = p.detach().to(wdt)
                g = p.grad.detach().to(wdt)
                state = self.state[p]
                if not state:
                    state = self._init_state(p, group, w)
                state["step"] += 1
                t = float(state["step"].item())
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.lerp_(g.to(m.dtype), 1.0 - b1)
                v.mul_(b2).addcmul_(g.to(v.dtype), g.to(v.dtype), value=1.0 - b2)
                m_hat = m.to(wdt) / (1.0 - b1**t)
                v_hat = v.to(wdt) / (1.0 - b2**t)
                u = m_hat / (v_hat.sqrt() + eps)
                gen = None
                if rounding == "stochastic":
                    gen = torch.Generator(device=p.device)
                    gen.manual_seed((group["seed"] * 1_000_003 + int(t) * 7919 + index) % _SEED_MOD)

                def target_mult(
                    w: torch.Tensor = w, u: torch.Tensor = u, c: float = lr_mult
                ) -> torch.Tensor:
                    return w * torch.exp(-c * torch.sign(w) * u)

                decay = (lr_mult if mode == "multiplicative" else lr) * wd
                if mode == "additive":
                    targets = [w - lr * u - decay * w]
                elif mode == "multiplicative":
                    targets = [target_mult() - decay * w]
                elif mode == "combined":
                    targets = [target_mult() - lr * u - decay * w]
                else:  # fallback
                    targets = [w - lr * u - decay * w, target_mult() - decay * w]
                if fmt.scaled:
                    amax = _fm.block_amax(targets[0], block)
                    k = _fm.update_scale_exponent(amax, state["scale_exp"], fmt)
                    state["scale_exp"].copy_(k)
                    qs = [
                        _fm.quantize_with_exponents(x, fmt, k, block, rounding, gen)
                        for x in targets
                    ]
                else:
                    qs = [_fm.round_to_grid(x, fmt, rounding, gen) for x in targets]
                new = qs[0] if mode != "fallback" else torch.where(qs[0] != w, qs[0], qs[1])
                if group["track_stuck"]:
                    state["stuck"].copy_((new == w) & (u != 0))
                p.copy_(new.to(p.dtype))
        return loss


class LowPrecisionAdam(MPlusAdam):
    """Adam (AdamW decay) on low-precision master weights: the additive step only.

    The baseline of the failure mode: with ``rounding="nearest"`` an update smaller
    than half an ulp of ``w`` is rounded away, so weights of large magnitude stall;
    ``rounding="stochastic"`` keeps it in expectation. Same arguments as
    :class:`MPlusAdam` without ``lr_mult`` and ``mode``.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        **kwargs: Any,
    ) -> None:
        for bad in ("lr_mult", "mode"):
            if bad in kwargs:
                raise TypeError(f"LowPrecisionAdam takes no {bad!r} (it is the additive step)")
        super().__init__(params, lr, 0.0, betas, eps, weight_decay, mode="additive", **kwargs)


class Madam(MPlusAdam):
    """Madam-style multiplicative Adam on low-precision master weights.

    ``w <- Q(w exp(-lr_mult sign(w) u))`` with the Adam direction ``u``: relative steps,
    so weights never cross zero and a zero weight stays zero. Our baseline of the
    multiplicative family (Bernstein et al. 2020; LNS-Madam, Zhao et al. 2022 use the
    normalised gradient and a log-number system; we keep the Adam direction so the
    comparison isolates the update type). Same arguments as :class:`MPlusAdam`
    without ``lr`` and ``mode``; weight decay shrinks by ``lr_mult * weight_decay``.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr_mult: float = 1e-2,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        **kwargs: Any,
    ) -> None:
        for bad in ("lr", "mode"):
            if bad in kwargs:
                raise TypeError(f"Madam takes no {bad!r} (its step size is lr_mult)")
        super().__init__(
            params, 0.0, lr_mult, betas, eps, weight_decay, mode="multiplicative", **kwargs
        )


def binned_stuck(weights: Any, stuck: Any, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Share of stuck coordinates in equal-count bins of ``|w|`` (deciles by default).

    Args:
        weights: Tensor or array of weights, any shape.
        stuck: Boolean tensor or array of the same size (the update was rounded away),
            or per-coordinate shares in [0, 1] (e.g. over many steps).
        bins: Number of bins (>= 1), by rank of ``|w|`` so ties split evenly.

    Returns:
        ``(edges, fraction)``: float64 ``(bins + 1,)`` the smallest ``|w|`` of each bin
        and the largest overall, and float64 ``(bins,)`` the stuck share per bin, from
        the smallest ``|w|`` to the largest.

    Raises:
        ValueError: If the sizes differ or there are fewer weights than bins.
    """
    bins = check_int("bins", bins, low=1)
    a = np.abs(np.asarray(torch.as_tensor(weights).detach().float().cpu()).ravel())
    s = np.asarray(torch.as_tensor(stuck).detach().cpu()).ravel().astype(np.float64)
    if a.size != s.size:
        raise ValueError(f"weights and stuck differ in size: {a.size} vs {s.size}")
    if a.size < bins:
        raise ValueError(f"need at least bins={bins} weights, got {a.size}")
    order = np.argsort(a, kind="stable")
    chunks = np.array_split(order, bins)
    frac = np.array([s[c].mean() for c in chunks], dtype=np.float64)
    edges = np.array([a[c[0]] for c in chunks] + [a[order[-1]]], dtype=np.float64)
    return edges, frac


def stuck_fraction(optimizer: MPlusAdam, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Share of coordinates whose last update was rounded away, binned by ``|w|``.

    Args:
        optimizer: An :class:`MPlusAdam` (or subclass) built with ``track_stuck=True``
            that has taken at least one step.
        bins: Equal-count bins of ``|w|`` over all its parameters.

    Returns:
        ``(edges, fraction)`` as :func:`binned_stuck`.

    Raises:
        TypeError: If ``optimizer`` is not a ``torch.optim.Optimizer``.
        ValueError: If no parameter has a ``"stuck"`` mask yet.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    ws, ss = [], []
    for group in optimizer.param_groups:
        for p in group["params"]:
            st = optimizer.state.get(p, {})
            if "stuck" in st:
                ws.append(p.detach().float().ravel())
                ss.append(st["stuck"].ravel())
    if not ws:
        raise ValueError("optimizer has no stuck masks: build it with track_stuck=True and step")
    return binned_stuck(torch.cat(ws), torch.cat(ss), bins)


def state_bytes(optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes of the master weights and of the optimizer state.

    For :class:`MPlusAdam` the master weights count at their format's width (scales
    included, 1 byte each); for any other optimizer at their storage dtype. State counts
    every tensor in ``optimizer.state`` except the ``"step"`` counter and the diagnostic
    ``"stuck"`` mask (Kahan buffers, moments, scale exponents at 1 byte each).

    Returns:
        ``{"master": ..., "state": ..., "total": ...}`` in bytes.

    Raises:
        TypeError: If ``optimizer`` is not a ``torch.optim.Optimizer``.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    master = state = 0
    ours = isinstance(optimizer, MPlusAdam)
    for group in optimizer.param_groups:
        for p in group["params"]:
            if ours and group["block_size"] is None:
                master += _fm.format_bits(group["master_format"], p.numel(), None) // 8
            elif ours:
                last = p.shape[-1] if p.ndim else 1
                rows = p.numel() // max(last, 1)
                bits = _fm.format_bits(group["master_format"], last, group["block_size"])
                master += rows * bits // 8
            else:
                master += p.numel() * p.element_size()
            for name, value in optimizer.state.get(p, {}).items():
                if name in ("step", "stuck") or not isinstance(value, torch.Tensor):
                    continue
                state += value.numel() * (1 if name == "scale_exp" else value.element_size())
    return {"master": int(master), "state": int(state), "total": int(master + state)}
