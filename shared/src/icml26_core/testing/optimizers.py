"""Conformance suite for ``torch.optim.Optimizer`` subclasses.

:func:`check_optimizer` checks what every optimizer of the project promises (see
DESIGN.md, "API shapes"): param groups that behave like separate optimizers,
``step(closure)`` returning the closure's loss with gradients enabled, a
``state_dict`` that survives ``torch.save``/``torch.load(weights_only=True)`` and
continues the run identically, skipped ``None`` gradients, a no-op first step on
zero gradients, and tensors kept on their device and dtype.

torch is imported inside the functions, so that importing :mod:`icml26_core.testing`
does not need it.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["check_optimizer", "default_loss", "default_params"]

GroupSpec = dict[str, Any]


def default_params(generator: Any, *, device: str = "cpu", dtype: Any = None) -> list[GroupSpec]:
    """Two param groups of small random tensors (a matrix, a vector, a batch of matrices).

    Args:
        generator: A ``torch.Generator`` on the CPU.
        device: Device of the tensors.
        dtype: Floating dtype (default float64).

    Returns:
        A list of param-group dicts, each with a ``"params"`` list of leaf tensors.
    """
    import torch

    dtype = dtype or torch.float64

    def leaf(*shape: int) -> torch.Tensor:
        x = torch.randn(*shape, generator=generator, dtype=torch.float64)
        return x.to(device=device, dtype=dtype).requires_grad_(True)

    return [{"params": [leaf(3, 4), leaf(5)]}, {"params": [leaf(2, 3, 3)]}]


def default_loss(params: Sequence[Any]) -> Any:
    """A smooth nonconvex loss of every parameter: sum of ``(x - 0.3)^2 / 2 + sin(x) / 10``.

    Its gradient is nonzero almost everywhere and differs across entries, so every
    tensor moves under any first-order optimizer.
    """
    import torch

    total = torch.zeros((), dtype=params[0].dtype, device=params[0].device)
    for i, x in enumerate(params):
        shift = 0.3 + 0.1 * i
        total = total + 0.5 * (x - shift).square().sum() + 0.1 * torch.sin(3 * x).sum()
    return total


def _clone_groups(groups: Sequence[GroupSpec]) -> list[GroupSpec]:
    """Deep copies of the groups with fresh leaf tensors (same values)."""
    out = []
    for g in groups:
        new = {k: v for k, v in g.items() if k != "params"}
        new["params"] = [p.detach().clone().requires_grad_(True) for p in g["params"]]
        out.append(new)
    return out


def _flat(groups: Sequence[GroupSpec]) -> list[Any]:
    return [p for g in groups for p in g["params"]]


def _run(
    opt: Any,
    params: Sequence[Any],
    loss_fn: Callable[[Sequence[Any]], Any],
    steps: int,
) -> None:
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss_fn(params).backward()
        opt.step()


def _assert_close(a: Sequence[Any], b: Sequence[Any], atol: float, what: str) -> None:
    import torch

    assert len(a) == len(b), f"{what}: {len(a)} vs {len(b)} tensors"
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not torch.allclose(x, y, atol=atol, rtol=0.0):
            diff = (x - y).abs().max().item()
            raise AssertionError(f"{what}: tensor {i} differs by {diff:.3g} (atol {atol:g})")


def check_optimizer(
    make_optimizer: Callable[[list[GroupSpec]], Any],
    make_params: Callable[[Any], Sequence[GroupSpec] | Sequence[Any]] | None = None,
    *,
    loss_fn: Callable[[Sequence[Any]], Any] | None = None,
    group_overrides: Mapping[str, Any] | None = None,
    steps: int = 5,
    device: str = "cpu",
    seed: int = 0,
    atol: float = 1e-10,
    zero_grad_atol: float | None = 0.0,
    backfilled_keys: Sequence[str] = (),
) -> list[str]:
    """Check that an optimizer follows torch.optim's conventions.

    Checks, in order:

    1. ``make_optimizer`` returns a ``torch.optim.Optimizer`` with ``defaults`` and one
       ``param_groups`` entry per group given, and steps change every parameter.
    2. **Param groups**: one optimizer over all groups (the last one updated with
       ``group_overrides``) moves every parameter exactly as separate optimizers, one
       per group, would (a single group is split in two first). This needs a loss
       that is a sum of per-parameter terms, as :func:`default_loss` is.
    3. **Closure**: ``step(closure)`` returns the closure's loss, and the closure
       runs with gradients enabled even inside ``torch.no_grad()``.
    4. **state_dict round trip**: after ``steps`` steps, the state dict survives
       ``torch.save``/``torch.load(weights_only=True)``; a fresh optimizer on copies of
       the parameters that loads it continues identically for ``steps`` more steps.
    5. **Old checkpoints**: for each key in ``backfilled_keys``, a state dict with the
       key removed from every group still loads, and the key comes back (from
       ``__setstate__``) with its default value.
    6. **None gradients** are skipped: such a parameter is left bitwise unchanged.
    7. **Zero gradients** on a fresh optimizer leave the parameters unchanged within
       ``zero_grad_atol`` (skipped when None, e.g. for weight decay).
    8. **Device and dtype**: parameters and floating state tensors (except the
       ``"step"`` counter, a CPU tensor in torch's optimizers) stay on ``device`` with
       the parameters' dtype.

    Args:
        make_optimizer: ``make_optimizer(groups) -> Optimizer``, where ``groups`` is a
            list of param-group dicts as torch accepts; it may add group settings.
        make_params: ``make_params(generator) -> groups`` (list of param-group dicts, or a
            list of tensors for one group) building leaf tensors on the CPU; the suite
            moves them to ``device``. Defaults to :func:`default_params`.
        loss_fn: ``loss_fn(params) -> scalar tensor`` of the flat list of parameters.
            Defaults to :func:`default_loss`.
        group_overrides: Settings given to the last group in check 2 (default
            ``{"lr": defaults["lr"] / 2}`` when the optimizer has an ``lr``).
        steps: Steps before and after the state-dict round trip.
        device: Device to run on (``"cpu"``, ``"cuda"``, ...).
        seed: Seed of the parameter generator.
        atol: Tolerance of the "identical continuation" and "same as separate
            optimizers" comparisons (0 for bitwise).
        zero_grad_atol: Tolerance of check 7, or None to skip it.
        backfilled_keys: Group keys that ``__setstate__`` must fill into old checkpoints.

    Returns:
        The names of the checks that ran, in order: check 5 runs only with
        ``backfilled_keys`` and check 7 only when ``zero_grad_atol`` is not None.

    Raises:
        AssertionError: Naming the first check that fails.

    Example:
        >>> import torch
        >>> ran = check_optimizer(lambda groups: torch.optim.SGD(groups, lr=0.1, momentum=0.9))
        >>> "state_dict round trip" in ran, "old checkpoints" in ran
        (True, False)
    """
    import torch

    loss_fn = loss_fn or default_loss

    def fresh_groups() -> list[GroupSpec]:
        gen = torch.Generator().manual_seed(seed)
        groups = make_params(gen) if make_params is not None else default_params(gen)
        groups = list(groups)
        if groups and isinstance(groups[0], torch.Tensor):
            groups = [{"params": list(groups)}]
        out = []
        for g in groups:
            new = {k: v for k, v in g.items() if k != "params"}
            new["params"] = [
                p.detach().to(device).clone().requires_grad_(True) for p in g["params"]
            ]
            out.append(new)
        return out

    # 1. construction and movement
    groups = fresh_groups()
    opt = make_optimizer(groups)
    assert isinstance(opt, torch.optim.Optimizer), (
        f"make_optimizer returned {type(opt).__name__}, not a torch.optim.Optimizer"
    )
    assert isinstance(opt.defaults, dict), "optimizer.defaults must be a dict"
    assert len(opt.param_groups) == len(groups), (
        f"{len(groups)} groups given, optimizer has {len(opt.param_groups)}"
    )
    params = _flat(groups)
    before = [p.detach().clone() for p in params]
    _run(opt, params, loss_fn, steps)
    for i, (p, b) in enumerate(zip(params, before, strict=True)):
        assert torch.isfinite(p).all(), f"parameter {i} is not finite after {steps} steps"
        assert not torch.equal(p.detach(), b), f"parameter {i} did not move in {steps} steps"

    # 2. param groups behave like separate optimizers
    base = fresh_groups()
    if len(base) == 1:
        ps = base[0]["params"]
        assert len(ps) >= 2, "check 2 needs two parameters to split into two groups"
        rest = {k: v for k, v in base[0].items() if k != "params"}
        base = [{**rest, "params": ps[: len(ps) // 2]}, {**rest, "params": ps[len(ps) // 2 :]}]
    overrides = dict(group_overrides or {})
    if not overrides and "lr" in opt.defaults and isinstance(opt.defaults["lr"], float):
        overrides = {"lr": opt.defaults["lr"] / 2}
    base[-1] = {**base[-1], **overrides}
    joint = _clone_groups(base)
    joint_opt = make_optimizer(joint)
    assert len(joint_opt.param_groups) == len(joint)
    if overrides:
        for key, value in overrides.items():
            assert joint_opt.param_groups[-1][key] == value, (
                f"group setting {key}={value!r} not kept by the optimizer"
            )
    _run(joint_opt, _flat(joint), loss_fn, steps)
    if overrides:
        # the override must matter, and only for its own group
        plain = _clone_groups(base)
        for key in overrides:
            plain[-1].pop(key, None)
        plain_opt = make_optimizer(plain)
        _run(plain_opt, _flat(plain), loss_fn, steps)
        n_last = len(base[-1]["params"])
        others_joint, last_joint = _flat(joint)[:-n_last], _flat(joint)[-n_last:]
        others_plain, last_plain = _flat(plain)[:-n_last], _flat(plain)[-n_last:]
        _assert_close(
            [p.detach() for p in others_joint],
            [p.detach() for p in others_plain],
            atol,
            "param groups: a setting of one group changed the parameters of another",
        )
        assert any(
            not torch.allclose(a.detach(), b.detach(), atol=atol, rtol=0.0)
            for a, b in zip(last_joint, last_plain, strict=True)
        ), f"param groups: the group setting {overrides} had no effect on its group"
    # Each group alone, with the other groups' tensors held at their initial values;
    # loss_fn must be a sum of per-parameter terms for this comparison (default_loss is).
    initial = [p.detach() for p in _flat(base)]
    separate: list[Any] = []
    start = 0
    for g in base:
        (single,) = _clone_groups([g])
        sep_opt = make_optimizer([single])
        lo, hi = start, start + len(g["params"])

        def group_loss(ps: Sequence[Any], lo: int = lo, hi: int = hi) -> Any:
            return loss_fn([*initial[:lo], *ps, *initial[hi:]])

        _run(sep_opt, single["params"], group_loss, steps)
        separate.extend(single["params"])
        start = hi
    _assert_close(
        [p.detach() for p in _flat(joint)],
        [p.detach() for p in separate],
        atol,
        "param groups: one optimizer over all groups differs from one optimizer per group",
    )

    # 3. closure
    groups = fresh_groups()
    params = _flat(groups)
    opt = make_optimizer(groups)
    seen: dict[str, Any] = {}

    def closure() -> Any:
        seen["grad_enabled"] = torch.is_grad_enabled()
        opt.zero_grad()
        loss = loss_fn(params)
        loss.backward()
        seen["loss"] = loss.detach().clone()
        return loss

    with torch.no_grad():
        returned = opt.step(closure)
    assert seen.get("grad_enabled"), "step(closure) must run the closure with grad enabled"
    assert returned is not None, "step(closure) must return the closure's loss"
    assert torch.equal(torch.as_tensor(returned).detach(), seen["loss"]), (
        "step(closure) returned a different value than the closure's loss"
    )
    opt.step()  # a step without closure must work too

    # 4. state_dict round trip: save, reload into a fresh optimizer, continue identically
    groups = fresh_groups()
    params = _flat(groups)
    opt = make_optimizer(groups)
    _run(opt, params, loss_fn, steps)
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    buf.seek(0)
    saved = torch.load(buf, weights_only=True)
    twin_groups = _clone_groups(groups)
    twin_params = _flat(twin_groups)
    twin = make_optimizer(twin_groups)
    twin.load_state_dict(saved)
    _run(opt, params, loss_fn, steps)
    _run(twin, twin_params, loss_fn, steps)
    _assert_close(
        [p.detach() for p in params],
        [p.detach() for p in twin_params],
        atol,
        "state_dict round trip: the reloaded optimizer does not continue identically",
    )

    # 5. old checkpoints without some keys
    for key in backfilled_keys:
        old = copy.deepcopy(opt.state_dict())
        for g in old["param_groups"]:
            assert key in g, f"backfilled key {key!r} is not a param-group setting"
            g.pop(key)
        fresh = make_optimizer(_clone_groups(groups))
        fresh.load_state_dict(old)
        for g in fresh.param_groups:
            assert key in g, f"__setstate__ did not fill {key!r} into an old checkpoint"
            assert g[key] == fresh.defaults[key], (
                f"__setstate__ filled {key}={g[key]!r}, default is {fresh.defaults[key]!r}"
            )

    # 6. None gradients are skipped
    groups = fresh_groups()
    params = _flat(groups)
    opt = make_optimizer(groups)
    frozen = params[0]
    snapshot = frozen.detach().clone()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss_fn(params).backward()
        frozen.grad = None
        opt.step()
    assert torch.equal(frozen.detach(), snapshot), "a parameter with grad None was modified"

    # 7. zero gradients on a fresh optimizer
    if zero_grad_atol is not None:
        groups = fresh_groups()
        params = _flat(groups)
        opt = make_optimizer(groups)
        snapshot = [p.detach().clone() for p in params]
        for p in params:
            p.grad = torch.zeros_like(p)
        opt.step()
        _assert_close(
            [p.detach() for p in params], snapshot, zero_grad_atol, "zero gradients moved a param"
        )

    # 8. device and dtype of parameters and state
    want = torch.device(device)
    for p in params:
        st = opt.state.get(p, {})
        assert p.device.type == want.type, f"parameter moved to {p.device}"
        for name, value in st.items():
            if name == "step":  # torch keeps step counters as CPU float32 tensors
                continue
            if isinstance(value, torch.Tensor) and torch.is_floating_point(value):
                assert value.device.type == want.type, f"state {name!r} is on {value.device}"
                assert value.dtype == p.dtype, f"state {name!r} is {value.dtype}, param {p.dtype}"
    ran = ["construction", "param groups", "closure", "state_dict round trip"]
    ran += ["old checkpoints"] if backfilled_keys else []
    ran.append("None gradients")
    ran += ["zero gradients"] if zero_grad_atol is not None else []
    ran.append("device and dtype")
    return ran
