"""Zeroth-order optimizers as ``torch.optim.Optimizer`` subclasses: CoCD and its baselines.

All of them share one contract: ``step(closure)`` takes a closure that returns the
loss (a scalar) on a batch that it keeps fixed during the step. The optimizer
perturbs the parameters in place, calls the closure once per query, restores the
parameters bitwise, and then updates them. No ``backward`` is ever called and
``.grad`` is never read. The closure runs under ``torch.no_grad()``.

``step(closure, batched_closure=f)`` may add a function that evaluates a stack of
flat parameter vectors at once: ``f(X)`` with ``X`` of shape ``(m, d)`` (the
parameters of every group, in order, each flattened row-major and concatenated)
returns the ``m`` losses, shape ``(m,)``. :func:`cocd.batched_loss` builds one for an
``nn.Module`` with ``torch.func.vmap`` over ``functional_call``. If ``f`` also has an
attribute ``f.probe_coordinates(x, idx, h)``, the coordinate methods (CoCD, BCCD,
RandomCoordinate) call it for forward differences instead of forming the ``k + 1``
rows: it returns the losses at ``x`` and at ``x + h e_i`` for each ``i`` in ``idx``
(shape ``(k + 1,)``), so that a model-aware closure can reuse the activations that a
single coordinate does not change (counted as ``k + 1`` queries, as always).

The parameters of all groups form one flat vector ``x`` of length ``d``; the
coordinate blocks run over it in order. Each group's ``lr`` scales the update of its
own coordinates.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
from icml26_core.validation import check_choice, check_float, check_int

__all__ = ["BCCD", "SPSA", "CoCD", "RandomCoordinate", "RandomSubspace", "block_size_for_budget"]

Closure = Callable[[], Any]
BatchedClosure = Callable[[torch.Tensor], torch.Tensor]

SWEEPS_PER_BUDGET = 10
"""With ``budget`` given, CoCD picks the smallest block that still affords this many sweeps."""


def block_size_for_budget(dim: int, budget: int, *, central: bool = False) -> int:
    """The block size that ``CoCD(budget=...)`` picks: our rule, not the paper's.

    The smallest ``k`` in ``[1, dim]`` whose ``budget`` queries pay for at least
    :data:`SWEEPS_PER_BUDGET` full sweeps over the ``dim`` coordinates (a sweep costs
    ``dim + ceil(dim / k)`` queries with forward differences, ``2 * dim`` central): small
    blocks mean many cheap steps, each moving all coordinates. When even ``k = dim``
    affords fewer sweeps, ``k = dim``.

    Args:
        dim: Number of coordinates ``d`` (>= 1).
        budget: Total number of loss queries of the run (>= 1).
        central: Central differences (the sweep cost does not depend on ``k``).

    Returns:
        The block size ``k``.

    Raises:
        ValueError: If ``dim`` or ``budget`` is below 1.
    """
    dim = check_int("dim", dim, low=1)
    budget = check_int("budget", budget, low=1)
    per_sweep = budget / SWEEPS_PER_BUDGET
    if central:
        return 1 if 2 * dim <= per_sweep else dim
    if per_sweep <= dim:
        return dim
    # dim + ceil(dim / k) <= per_sweep  <=>  ceil(dim / k) <= per_sweep - dim
    room = math.floor(per_sweep - dim)
    return max(1, min(dim, math.ceil(dim / room)))


def _as_loss(value: Any, what: str) -> float:
    """The closure's return value as a finite Python float, or a clear error."""
    if value is None:
        raise ValueError(f"{what} returned None; it must return the loss (a scalar)")
    try:
        t = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(
            f"{what} must return the loss as a number or tensor, got {type(value).__name__}"
        ) from e
    if t.numel() != 1:
        raise ValueError(f"{what} must return a scalar loss, got shape {tuple(t.shape)}")
    v = float(t.detach().reshape(()).item())
    if not math.isfinite(v):
        raise ValueError(f"{what} returned a non-finite loss ({v}); lower lr or fd_step")
    return v


class _ZerothOrder(torch.optim.Optimizer):
    """Shared machinery: the flat view of the parameters, probes, query counting."""

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        super().__init__(params, defaults)
        self._params = [p for g in self.param_groups for p in g["params"]]
        for i, p in enumerate(self._params):
            if not p.is_floating_point():
                raise TypeError(f"params: parameter {i} is {p.dtype}, expected a floating dtype")
            if not p.is_contiguous():
                raise ValueError(f"params: parameter {i} is not contiguous; call .contiguous()")
        self._numels = [p.numel() for p in self._params]
        self.dim = sum(self._numels)
        if self.dim == 0:
            raise ValueError("params: the parameters have no entries")
        offsets = [0]
        for n in self._numels:
            offsets.append(offsets[-1] + n)
        self._offsets = torch.tensor(offsets, dtype=torch.long)
        # lr of each flat coordinate's group (as an index into param_groups)
        self._group_of = [gi for gi, g in enumerate(self.param_groups) for _ in g["params"]]

    # -- global state (LBFGS keeps it in the first parameter's state too) --
    @property
    def _gstate(self) -> dict[str, Any]:
        st = self.state[self._params[0]]
        st.setdefault("step", 0)
        st.setdefault("queries", 0)
        return st

    @property
    def queries(self) -> int:
        """Loss queries made so far (closure calls plus rows given to ``batched_closure``)."""
        return int(self._gstate["queries"])

    def _flat(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1) for p in self._params])

    def _locate(self, idx: torch.Tensor) -> list[tuple[int, int]]:
        pos, local = self._locate_t(idx)
        return list(zip(pos.tolist(), local.tolist(), strict=True))

    def _locate_t(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(parameter index, flat index inside it) of each flat coordinate, as tensors."""
        idx = idx.to(device="cpu", dtype=torch.long)
        pos = torch.searchsorted(self._offsets, idx, right=True) - 1
        return pos, idx - self._offsets[pos]

    def _by_param(self, idx: torch.Tensor, values: torch.Tensor) -> list[Any]:
        """The coordinates ``idx`` and their ``values`` grouped per parameter (vectorized).

        Returns ``(a, local indices, values)`` for each parameter ``a`` that has any.
        """
        pos, local = self._locate_t(idx)
        out = []
        for a in torch.unique(pos).tolist():
            sel = pos == a
            out.append((a, local[sel], values[sel]))
        return out

    def _evaluate(self, closure: Closure | None) -> float:
        if closure is None:
            raise ValueError(
                f"{type(self).__name__}.step needs a closure that returns the loss on a fixed batch"
            )
        if not callable(closure):
            raise TypeError(f"closure must be callable, got {type(closure).__name__}")
        self._gstate["queries"] += 1
        return _as_loss(closure(), "closure")

    def _batched(self, batched_closure: BatchedClosure, X: torch.Tensor) -> torch.Tensor:
        if not callable(batched_closure):
            raise TypeError(
                f"batched_closure must be callable, got {type(batched_closure).__name__}"
            )
        return self._check_batched(batched_closure(X), X.shape[0])

    def _check_batched(self, out: Any, m: int) -> torch.Tensor:
        """The ``m`` losses a batched closure returned, checked, counted, float64 on CPU."""
        try:
            out = torch.as_tensor(out)
        except (TypeError, ValueError, RuntimeError) as e:
            raise TypeError(
                f"batched_closure must return a tensor of losses, got {type(out).__name__}"
            ) from e
        if out.shape != (m,):
            raise ValueError(
                f"batched_closure must return shape ({m},) for {m} parameter "
                f"vectors, got {tuple(out.shape)}"
            )
        if not torch.isfinite(out).all():
            raise ValueError("batched_closure returned a non-finite loss; lower lr or fd_step")
        self._gstate["queries"] += m
        return out.detach().to(dtype=torch.float64, device="cpu")

    def _probe_coords(
        self,
        closure: Closure | None,
        batched_closure: BatchedClosure | None,
        idx: torch.Tensor,
        h: float,
        central: bool,
    ) -> tuple[float, torch.Tensor]:
        """Finite differences along the coordinates ``idx``: (loss at x, estimates)."""
        k = len(idx)
        if batched_closure is not None:
            x = self._flat()
            fast = getattr(batched_closure, "probe_coordinates", None)
            if fast is not None and not central:  # the closure forms the k + 1 points itself
                f = self._check_batched(fast(x, idx.to(x.device), h), k + 1)
                return float(f[0]), (f[1:] - f[0]) / h
            rows = torch.arange(k)
            if central:
                X = x.repeat(2 * k, 1)
                X[rows, idx] += h
                X[rows + k, idx] -= h
                f = self._batched(batched_closure, X)
                est = (f[:k] - f[k:]) / (2 * h)
                return float(f.mean()), est
            X = x.repeat(k + 1, 1)
            X[rows + 1, idx] += h
            f = self._batched(batched_closure, X)
            return float(f[0]), (f[1:] - f[0]) / h
        f0 = None if central else self._evaluate(closure)
        est = torch.empty(k, dtype=torch.float64)
        mean = 0.0
        for r, (a, j) in enumerate(self._locate(idx)):
            flat = self._params[a].data.view(-1)
            saved = flat[j].clone()
            try:  # the saved value goes back even when the closure raises
                flat[j] = saved + h
                fp = self._evaluate(closure)
                if central:
                    flat[j] = saved - h
                    fm = self._evaluate(closure)
            finally:
                flat[j] = saved
            if central:
                est[r] = (fp - fm) / (2 * h)
                mean += (fp + fm) / (2 * k)
            else:
                est[r] = (fp - f0) / h
        return (mean if central else f0), est

    def _probe_dirs(
        self,
        closure: Closure | None,
        batched_closure: BatchedClosure | None,
        U: torch.Tensor,
        h: float,
    ) -> tuple[float, torch.Tensor]:
        """Forward differences along the rows of ``U`` (shape (k, d)): (loss, estimates)."""
        k = U.shape[0]
        if batched_closure is not None:
            x = self._flat()
            X = torch.cat([x[None], x[None] + h * U], dim=0)
            f = self._batched(batched_closure, X)
            return float(f[0]), (f[1:] - f[0]) / h
        f0 = self._evaluate(closure)
        est = torch.empty(k, dtype=torch.float64)
        saved = [p.detach().clone() for p in self._params]
        for r in range(k):
            try:  # the saved values go back even when the closure raises
                for a, p in enumerate(self._params):
                    lo, hi = int(self._offsets[a]), int(self._offsets[a + 1])
                    p.data.add_(U[r, lo:hi].view_as(p), alpha=h)
                est[r] = (self._evaluate(closure) - f0) / h
            finally:
                for p, s in zip(self._params, saved, strict=True):
                    p.data.copy_(s)
        return f0, est

    def _setup_order(self, order: str, seed: int) -> None:
        order = check_choice("order", order, ("cyclic", "permuted"))
        seed = check_int("seed", seed)
        self.order = order
        self._perm = (
            torch.randperm(self.dim, generator=torch.Generator().manual_seed(seed))
            if order == "permuted"
            else None
        )

    def _cyclic_block(self, k: int) -> torch.Tensor:
        """The next ``k`` coordinates of the sweep order; advances the cursor."""
        st = self._gstate
        pos = (int(st.get("cursor", 0)) + torch.arange(k)) % self.dim
        st["cursor"] = int((int(pos[-1]) + 1) % self.dim)
        return pos if self._perm is None else self._perm[pos]

    def _lr_of(self, a: int) -> float:
        return float(self.param_groups[self._group_of[a]]["lr"])

    def _first(self, key: str) -> Any:
        return self.param_groups[0][key]


def _check_common(lr: float, block_size: int, fd_step: float) -> tuple[float, int, float]:
    lr = check_float("lr", lr, low=0.0, low_inclusive=False)
    block_size = check_int("block_size", block_size, low=1)
    fd_step = check_float("fd_step", fd_step, low=0.0, low_inclusive=False)
    return lr, block_size, fd_step


class CoCD(_ZerothOrder):
    r"""Coherent coordinate descent: block-cyclic finite differences, full stale update.

    Our reading of the abstract (the paper's details are not public). The optimizer
    keeps a gradient estimate :math:`g \in \mathbb{R}^d` of all ``d`` coordinates. At
    step ``t`` it refreshes only the next block :math:`b_t` of ``k = block_size``
    coordinates (cyclic over ``0..d-1``) with finite differences on the closure's
    fixed batch,

    .. math::
        g_i \leftarrow \frac{f(x + h e_i) - f(x)}{h}, \quad i \in b_t

    (``k + 1`` queries; ``central=True``: :math:`(f(x+he_i) - f(x-he_i)) / 2h`, ``2k``
    queries), and moves **all** coordinates along the partly stale ``g``:

    .. math::
        m \leftarrow \mu m + g, \qquad x \leftarrow x - \eta\, m

    with :math:`\mu` = ``momentum`` (``m = g`` when 0) and
    :math:`\eta = lr` or, with ``normalize=True``, :math:`lr / n_{blocks}`,
    :math:`n_{blocks} = \lceil d / k \rceil` (a sweep then moves ``x`` about as far as
    one BCCD sweep at the same ``lr``). Each block's estimate is re-used ("warm
    start") until its next refresh; blocks not yet refreshed have ``g = 0``, so the
    first sweep is BCCD with a growing memory. Queries per step do not depend on ``d``.

    Args:
        params: Iterable of tensors or param-group dicts (contiguous floating tensors).
        lr: Step size :math:`\eta` (> 0); per group.
        block_size: Coordinates refreshed per step, ``1 <= k <= d``.
        fd_step: Finite-difference step ``h`` (> 0), in parameter units. Larger ``h``
            smooths: the forward difference is the mean slope over ``[x, x + h e_i]``.
        central: Central differences (``2k`` queries, error O(h^2) instead of O(h)).
        momentum: Heavy-ball coefficient :math:`\mu \in [0, 1)` on ``g``; per group.
        normalize: Scale the step by ``1 / n_blocks``.
        budget: Total number of queries the run will spend. When given, ``block_size``
            is replaced by :func:`block_size_for_budget` (our rule: the smallest block
            that affords 10 sweeps); a budget below one sweep warns.
        order: ``"cyclic"`` (blocks of consecutive flat coordinates, the paper's
            BCCD order) or ``"permuted"`` (cyclic over one fixed random permutation of
            the coordinates drawn from ``seed``; deterministic after construction).
        seed: Seed of the permutation (``order="permuted"`` only).

    Raises:
        ValueError: If ``lr <= 0``, ``fd_step <= 0``, ``block_size`` is not in
            ``[1, d]``, ``momentum`` is not in ``[0, 1)``, or a parameter is not
            contiguous.
        TypeError: If an integer argument is not an integer, or a parameter is not
            floating point.

    State:
        ``opt.state[p]["g"]`` (the estimate, shape of ``p``), ``"momentum_buffer"``;
        ``opt.state[first param]`` also holds ``"step"``, ``"queries"`` (loss calls so
        far) and ``"cursor"`` (first coordinate of the next block). All survive
        ``state_dict``.

    Example:
        >>> import torch
        >>> x = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64)
        >>> opt = CoCD([x], lr=0.1, block_size=1, fd_step=1e-6)
        >>> for _ in range(300):
        ...     _ = opt.step(lambda: float((x**2).sum()))
        >>> bool(x.abs().max() < 1e-3), opt.queries
        (True, 600)
    """

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        block_size: int = 32,
        fd_step: float = 1e-2,
        central: bool = False,
        momentum: float = 0.0,
        normalize: bool = False,
        budget: int | None = None,
        order: str = "cyclic",
        seed: int = 0,
    ) -> None:
        lr, block_size, fd_step = _check_common(lr, block_size, fd_step)
        momentum = check_float("momentum", momentum, low=0.0, high=1.0, high_inclusive=False)
        defaults = dict(
            lr=lr,
            block_size=block_size,
            fd_step=fd_step,
            central=bool(central),
            momentum=momentum,
            normalize=bool(normalize),
        )
        super().__init__(params, defaults)
        if budget is not None:
            budget = check_int("budget", budget, low=1)
            block_size = block_size_for_budget(self.dim, budget, central=bool(central))
            sweep = 2 * self.dim if central else self.dim + math.ceil(self.dim / block_size)
            if budget < sweep:
                warnings.warn(
                    f"budget={budget} queries is below one sweep ({sweep} queries at "
                    f"block_size={block_size}); some coordinates are never estimated",
                    stacklevel=2,
                )
            for g in self.param_groups:
                g["block_size"] = block_size
        if self._first("block_size") > self.dim:
            raise ValueError(
                f"block_size must be <= the number of parameters {self.dim}, "
                f"got {self._first('block_size')} (the default is 32: pass a smaller "
                "block_size for a small model)"
            )
        self.budget = budget
        self._setup_order(order, seed)

    @property
    def block_size(self) -> int:
        """The block size ``k`` in use."""
        return int(self._first("block_size"))

    @property
    def n_blocks(self) -> int:
        """Blocks per sweep, ``ceil(d / k)``."""
        return math.ceil(self.dim / self.block_size)

    def next_block(self) -> torch.Tensor:
        """Flat indices of the block the next step refreshes (wraps around ``d``)."""
        pos = (int(self._gstate.get("cursor", 0)) + torch.arange(self.block_size)) % self.dim
        return pos if self._perm is None else self._perm[pos]

    @torch.no_grad()
    def step(  # type: ignore[override]
        self, closure: Closure | None = None, batched_closure: BatchedClosure | None = None
    ) -> float:
        """Refresh one block of ``g`` and move every coordinate along ``g``.

        Args:
            closure: Returns the loss (scalar) on a batch it keeps fixed; called
                ``k + 1`` times (``2k`` central) unless ``batched_closure`` is given.
            batched_closure: Optional ``f(X) -> losses``, ``X`` of shape ``(m, d)``.

        Returns:
            The loss at the current point before the update (central: the mean of the
            probes, an O(h^2) estimate of it).

        Raises:
            ValueError: If neither closure is given, or one returns a non-scalar or a
                non-finite loss.
        """
        if closure is None and batched_closure is None:
            raise ValueError("CoCD.step needs a closure that returns the loss on a fixed batch")
        st = self._gstate
        idx = self._cyclic_block(self.block_size)
        h, central = float(self._first("fd_step")), bool(self._first("central"))
        loss, est = self._probe_coords(closure, batched_closure, idx, h, central)
        for p in self._params:
            if "g" not in self.state[p]:
                self.state[p]["g"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
        for a, j, e in self._by_param(idx, est):
            g = self.state[self._params[a]]["g"]
            g.view(-1)[j.to(g.device)] = e.to(dtype=g.dtype, device=g.device)
        scale = 1.0 / self.n_blocks if self._first("normalize") else 1.0
        for a, p in enumerate(self._params):
            group = self.param_groups[self._group_of[a]]
            ps = self.state[p]
            d = ps["g"]
            mu = group["momentum"]
            if mu > 0:
                buf = ps.get("momentum_buffer")
                if buf is None:
                    buf = ps["momentum_buffer"] = d.clone()
                else:
                    buf.mul_(mu).add_(d)
                d = buf
            p.add_(d, alpha=-group["lr"] * scale)
        st["step"] += 1
        return loss


class BCCD(_ZerothOrder):
    r"""Block cyclic coordinate descent with finite differences (the paper's baseline).

    Step ``t`` estimates the block :math:`b_t` (cyclic, ``k = block_size``) by forward
    differences (``k + 1`` queries; ``central``: ``2k``) and updates **only** that block:
    :math:`x_{b} \leftarrow x_{b} - \eta\, \hat g_{b}`. CoCD without the memory.

    Args:
        params: Tensors or param groups.
        lr: Step size (> 0); per group.
        block_size: Coordinates per step, ``1 <= k <= d``.
        fd_step: Finite-difference step ``h`` (> 0).
        central: Central differences.
        order: ``"cyclic"`` or ``"permuted"`` (a fixed random permutation), as in CoCD.
        seed: Seed of the permutation.

    Raises:
        ValueError: On ``lr <= 0``, ``fd_step <= 0`` or ``block_size`` outside ``[1, d]``.
    """

    def __init__(
        self,
        params: Any,
        lr: float = 1e-1,
        block_size: int = 32,
        fd_step: float = 1e-2,
        central: bool = False,
        order: str = "cyclic",
        seed: int = 0,
    ) -> None:
        lr, block_size, fd_step = _check_common(lr, block_size, fd_step)
        super().__init__(
            params, dict(lr=lr, block_size=block_size, fd_step=fd_step, central=central)
        )
        if block_size > self.dim:
            raise ValueError(
                f"block_size must be <= the number of parameters {self.dim}, got {block_size} "
                "(the default is 32: pass a smaller block_size for a small model)"
            )
        self._setup_order(order, seed)

    def _indices(self) -> torch.Tensor:
        return self._cyclic_block(int(self._first("block_size")))

    @torch.no_grad()
    def step(  # type: ignore[override]
        self, closure: Closure | None = None, batched_closure: BatchedClosure | None = None
    ) -> float:
        """Estimate one block and update it; returns the loss before the update.

        Raises:
            ValueError: If no closure is given or it returns a non-scalar/non-finite loss.
        """
        if closure is None and batched_closure is None:
            raise ValueError(f"{type(self).__name__}.step needs a closure that returns the loss")
        idx = self._indices()
        h, central = float(self._first("fd_step")), bool(self._first("central"))
        loss, est = self._probe_coords(closure, batched_closure, idx, h, central)
        for a, j, e in self._by_param(idx, est):
            p = self._params[a]
            jj = j.to(p.device)
            flat = p.view(-1)
            flat[jj] = flat[jj] - (self._lr_of(a) * e).to(dtype=p.dtype, device=p.device)
        self._gstate["step"] += 1
        return loss


class RandomCoordinate(BCCD):
    r"""Random block coordinate descent: ``k`` coordinates drawn without replacement per step.

    Like :class:`BCCD` but the block is a fresh uniform random subset each step
    (``k + 1`` queries). Randomness from a ``torch.Generator`` seeded by ``seed``,
    whose state is kept in the state dict.

    Args:
        params: Tensors or param groups.
        lr: Step size (> 0).
        block_size: Coordinates per step.
        fd_step: Finite-difference step ``h`` (> 0).
        central: Central differences.
        seed: Seed of the coordinate draws.
    """

    def __init__(
        self,
        params: Any,
        lr: float = 1e-1,
        block_size: int = 32,
        fd_step: float = 1e-2,
        central: bool = False,
        seed: int = 0,
    ) -> None:
        super().__init__(
            params, lr=lr, block_size=block_size, fd_step=fd_step, central=central, seed=seed
        )
        self._gen = torch.Generator().manual_seed(check_int("seed", seed))

    def _generator(self) -> torch.Generator:
        st = self._gstate
        if "rng_state" in st:
            self._gen.set_state(st["rng_state"].to(device="cpu", dtype=torch.uint8))
        return self._gen

    def _indices(self) -> torch.Tensor:
        gen = self._generator()
        idx = torch.randperm(self.dim, generator=gen)[: int(self._first("block_size"))]
        self._gstate["rng_state"] = gen.get_state()
        return idx


class SPSA(_ZerothOrder):
    r"""Multi-direction SPSA (MeZO-style) with forward differences.

    Draw ``k = n_directions`` random directions :math:`z_j` (standard Gaussian or
    Rademacher entries, over all ``d`` coordinates) and estimate

    .. math::
        \hat g = \frac1k \sum_{j} \frac{f(x + h z_j) - f(x)}{h} z_j,
        \qquad x \leftarrow x - \eta \hat g

    (``k + 1`` queries, as CoCD at ``block_size = k``; :math:`E[\hat g] \approx \nabla f`).

    Args:
        params: Tensors or param groups.
        lr: Step size (> 0); per group.
        n_directions: Number of directions ``k`` (>= 1).
        fd_step: Finite-difference step ``h`` (> 0).
        distribution: ``"gaussian"`` or ``"rademacher"``.
        seed: Seed of the directions (the generator's state is in the state dict).

    References:
        Spall (1992), Multivariate stochastic approximation using a simultaneous
        perturbation gradient approximation; Malladi et al. (2023), Fine-tuning
        language models with just forward passes (MeZO).
    """

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        n_directions: int = 32,
        fd_step: float = 1e-2,
        distribution: str = "gaussian",
        seed: int = 0,
    ) -> None:
        lr = check_float("lr", lr, low=0.0, low_inclusive=False)
        n_directions = check_int("n_directions", n_directions, low=1)
        fd_step = check_float("fd_step", fd_step, low=0.0, low_inclusive=False)
        distribution = check_choice("distribution", distribution, ("gaussian", "rademacher"))
        super().__init__(
            params,
            dict(lr=lr, n_directions=n_directions, fd_step=fd_step, distribution=distribution),
        )
        self._gen = torch.Generator().manual_seed(check_int("seed", seed))

    def _directions(self, k: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        st = self._gstate
        if "rng_state" in st:
            self._gen.set_state(st["rng_state"].to(device="cpu", dtype=torch.uint8))
        # drawn in float32 unless the parameters are float64 (6x faster than float64 draws)
        draw = torch.float64 if dtype == torch.float64 else torch.float32
        Z = torch.randn(k, self.dim, generator=self._gen, dtype=draw)
        if self._first("distribution") == "rademacher":
            Z = torch.sign(Z)
        st["rng_state"] = self._gen.get_state()
        return Z.to(dtype=dtype, device=device)

    def _estimate(self, Z: torch.Tensor, est: torch.Tensor) -> torch.Tensor:
        return (est.to(Z) @ Z) / Z.shape[0]

    @torch.no_grad()
    def step(  # type: ignore[override]
        self, closure: Closure | None = None, batched_closure: BatchedClosure | None = None
    ) -> float:
        """One estimate along ``k`` random directions and a full update.

        Returns:
            The loss before the update.

        Raises:
            ValueError: If no closure is given or it returns a non-scalar/non-finite loss.
        """
        if closure is None and batched_closure is None:
            raise ValueError(f"{type(self).__name__}.step needs a closure that returns the loss")
        p0 = self._params[0]
        k = int(self._first("n_directions"))
        Z = self._directions(k, p0.dtype, p0.device)
        loss, est = self._probe_dirs(closure, batched_closure, Z, float(self._first("fd_step")))
        g = self._estimate(Z, est)
        for a, p in enumerate(self._params):
            lo, hi = int(self._offsets[a]), int(self._offsets[a + 1])
            p.add_(g[lo:hi].view_as(p), alpha=-self._lr_of(a))
        self._gstate["step"] += 1
        return loss


class RandomSubspace(SPSA):
    r"""Random subspace descent: ``k`` random orthonormal directions per step.

    :math:`U \in \mathbb{R}^{d \times k}` from the QR factorization of a Gaussian
    matrix; :math:`\hat g = \sum_j \frac{f(x + h u_j) - f(x)}{h} u_j \approx U U^\top
    \nabla f` (the gradient projected on the subspace, no ``d/k`` rescaling: ``lr``
    absorbs it); ``k + 1`` queries.

    Args:
        params: Tensors or param groups.
        lr: Step size (> 0).
        n_directions: Subspace dimension ``k``, ``1 <= k <= d``.
        fd_step: Finite-difference step ``h`` (> 0).
        seed: Seed of the subspaces.

    References:
        Kozak, Becker, Doostan, Tenorio (2021), A stochastic subspace approach to
        gradient-free optimization in high dimensions.
    """

    def __init__(
        self,
        params: Any,
        lr: float = 1e-1,
        n_directions: int = 32,
        fd_step: float = 1e-2,
        seed: int = 0,
    ) -> None:
        super().__init__(params, lr=lr, n_directions=n_directions, fd_step=fd_step, seed=seed)
        if self._first("n_directions") > self.dim:
            raise ValueError(
                f"n_directions must be <= the number of parameters {self.dim}, "
                f"got {self._first('n_directions')}"
            )

    def _directions(self, k: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        G = super()._directions(k, dtype, torch.device("cpu"))
        if G.dtype not in (torch.float32, torch.float64):
            G = G.float()
        if self.dim >= 8 * k:
            # CholeskyQR2 (two passes of Q <- L^-1 Q, L L^T = Q Q^T, L^-1 as a small k x k
            # inverse): a tall Gaussian matrix is well conditioned, and this is about 3x
            # faster than Householder QR on the CPU
            Q = G
            for _ in range(2):
                L = torch.linalg.cholesky(Q @ Q.T)
                Q = torch.linalg.inv(L) @ Q
        else:
            Q = torch.linalg.qr(G.T)[0].T
        return Q.contiguous().to(dtype=dtype, device=device)

    def _estimate(self, Z: torch.Tensor, est: torch.Tensor) -> torch.Tensor:
        return est.to(Z) @ Z
