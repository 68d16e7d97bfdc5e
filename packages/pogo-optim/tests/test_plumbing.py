"""torch.optim plumbing: foreach, tensor step and lr, capturable, differentiable, compile,
non-finite gradients, half precision, old checkpoints."""

from __future__ import annotations

import copy
import io

import pytest
import torch
from pogo_optim import POGO, Landing, orthogonality_error, random_stiefel
from torch.utils._python_dispatch import TorchDispatchMode

CONFIGS = [
    (POGO, dict(lr=0.05)),
    (POGO, dict(lr=0.05, base="sgd", momentum=0.9, dampening=0.1)),
    (POGO, dict(lr=0.05, base="adam", weight_decay=0.01)),
    (Landing, dict(lr=0.05, momentum=0.9)),
]
IDS = ["pogo-vadam", "pogo-sgd-dampening", "pogo-adam", "landing-sgd"]


def _model(dtype=torch.float64):
    """Same-shape batches (stacked by foreach), a columns-layout group and free vectors."""
    gen = torch.Generator().manual_seed(0)
    rows = [random_stiefel(3, 4, 9, generator=gen, dtype=dtype) for _ in range(4)]
    rows.append(random_stiefel(5, 7, generator=gen, dtype=dtype))
    cols = [random_stiefel(8, 3, layout="columns", generator=gen, dtype=dtype) for _ in range(2)]
    free = [torch.randn(7, generator=gen, dtype=dtype) for _ in range(3)]
    return [[torch.nn.Parameter(t) for t in ts] for ts in (rows, cols, free)]


def _groups(model):
    rows, cols, free = model
    return [
        {"params": rows},
        {"params": cols, "layout": "columns"},
        {"params": free, "orthogonal": False, "base": "adam", "lr": 0.01},
    ]


def _loss(params):
    return sum(((p - 0.3) ** 2).sum() + torch.sin(3 * p).sum() for p in params)


def _run(cls, kwargs, steps=6, poison=None):
    """Train; ``poison(t, params)`` may edit the gradients before step ``t``."""
    model = _model()
    params = [p for ps in model for p in ps]
    opt = cls(_groups(model), **kwargs)
    for t in range(steps):
        opt.zero_grad()
        _loss(params).backward()
        if poison is not None:
            poison(t, params)
        opt.step()
    return params, opt


def _assert_same(a, b, atol=1e-12):
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x.detach(), y.detach(), atol=atol, rtol=0)


@pytest.mark.parametrize(("cls", "kwargs"), CONFIGS, ids=IDS)
def test_foreach_capturable_and_tensor_lr_match_the_loop(cls, kwargs):
    ref, _ = _run(cls, {**kwargs, "foreach": False})
    for variant in (
        {"foreach": True},
        {"capturable": True, "foreach": False},
        {"capturable": True, "foreach": True},
        {"lr": torch.tensor(kwargs["lr"], dtype=torch.float64)},
    ):
        out, _ = _run(cls, {**kwargs, **variant})
        _assert_same(ref, out)


def test_foreach_stacks_same_shape_parameters_into_one_call():
    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.bmm = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func.overloadpacket) in ("aten.bmm", "aten.mm"):
                self.bmm += 1
            return func(*args, **(kwargs or {}))

    ps = [torch.nn.Parameter(random_stiefel(4, 9, generator=torch.Generator())) for _ in range(10)]
    counts = {}
    for foreach in (False, True):
        opt = POGO(ps, lr=0.05, foreach=foreach)
        for p in ps:
            p.grad = torch.randn_like(p)
        opt.step()
        with Count() as c:
            opt.step()
        counts[foreach] = c.bmm
    assert counts == {False: 50, True: 5}  # 5 products per matrix, or 5 for the stack


def test_step_is_a_float32_tensor_and_round_trips():
    params, opt = _run(POGO, dict(lr=0.05), steps=3)
    step = opt.state[params[0]]["step"]
    assert isinstance(step, torch.Tensor) and step.dtype == torch.float32
    assert step.device.type == "cpu"
    assert float(step) == 3.0  # exact: integer counts
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    buf.seek(0)
    model = _model()
    again = POGO(_groups(model), lr=0.05)
    again.load_state_dict(torch.load(buf, weights_only=True))
    assert float(again.state[model[0][0]]["step"]) == 3.0  # exact: integer counts


def test_an_lr_scheduler_updates_a_tensor_lr_in_place():
    x = torch.nn.Parameter(random_stiefel(3, 8, generator=torch.Generator(), dtype=torch.float64))
    lr = torch.tensor(0.1, dtype=torch.float64)
    opt = POGO([x], lr=lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    x.grad = torch.ones_like(x)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and float(lr) == pytest.approx(0.05)


class _HostReads(TorchDispatchMode):
    """Records reads of tensor values on the host (``.item()``, ``bool()``, ``.tolist()``)."""

    def __init__(self):
        super().__init__()
        self.reads = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func.overloadpacket) in ("aten._local_scalar_dense", "aten.item"):
            self.reads += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize(("cls", "kwargs"), CONFIGS[:1] + CONFIGS[3:], ids=["pogo", "landing"])
def test_capturable_steps_read_nothing_back_to_the_host(cls, kwargs, foreach):
    model = _model()
    params = [p for ps in model for p in ps]
    reads = {}
    for capturable in (False, True):
        opt = cls(_groups(model), **kwargs, capturable=capturable, foreach=foreach)
        for _ in range(2):  # the first step creates the state
            opt.zero_grad()
            _loss(params).backward()
            with _HostReads() as mode:
                opt.step()
        reads[capturable] = mode.reads
    assert reads[True] == 0
    assert reads[False] > 0  # the detector sees the finiteness check of the host path


@pytest.mark.parametrize("cls", [POGO, Landing])
def test_differentiable_step_passes_gradcheck(cls):
    gen = torch.Generator().manual_seed(3)
    x0 = random_stiefel(2, 5, generator=gen, dtype=torch.float64).requires_grad_(True)
    g0 = torch.randn(2, 5, generator=gen, dtype=torch.float64).requires_grad_(True)

    def one_step(x, g):
        p = x.clone()  # a non-leaf parameter, updated in place by the step
        p.grad = g
        opt = cls([p], lr=0.02, differentiable=True, base="sgd", momentum=0.5)
        opt.step()
        return p

    assert torch.autograd.gradcheck(one_step, (x0, g0))
    # without differentiable the update is not recorded
    p = torch.nn.Parameter(x0.detach().clone())
    p.grad = g0.detach()
    cls([p], lr=0.02).step()
    assert p.grad_fn is None


@pytest.mark.slow  # ~7 s: dynamo traces the step twice
def test_torch_compile_compiles_the_step_once_not_per_step_count():
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    gen = torch.Generator()
    ps = [torch.nn.Parameter(random_stiefel(3, 4, 9, generator=gen)) for _ in range(3)]
    opt = POGO(ps, lr=0.05)
    eager = [p.detach().clone().requires_grad_(True) for p in ps]
    eager_opt = POGO(eager, lr=0.05)
    counter = CompileCounter()
    step = torch.compile(opt.step, backend=counter)
    frames = []
    for _ in range(6):
        for p, q in zip(ps, eager, strict=True):
            p.grad = torch.randn_like(p)
            q.grad = p.grad.clone()
        step()
        eager_opt.step()
        frames.append(counter.frame_count)
    assert frames[-1] == frames[2] <= 2  # one graph before the state exists, one after
    _assert_same(ps, eager, atol=1e-6)


# ---------------------------------------------------------------- non-finite gradients
@pytest.mark.parametrize(
    "variant",
    [
        {"foreach": False},
        {"foreach": True},
        {"capturable": True},
        {"capturable": True, "foreach": False},
    ],
    ids=["loop", "foreach", "capturable-foreach", "capturable-loop"],
)
@pytest.mark.parametrize(("cls", "kwargs"), CONFIGS, ids=IDS)
def test_a_nonfinite_gradient_skips_that_parameter_and_keeps_its_state_clean(cls, kwargs, variant):
    hit = (1, 5, 8)  # a stacked batch, a columns matrix, a free vector get a NaN, an inf

    def poison(t, params):
        if t in (2, 4):
            for i in hit:
                grad = params[i].grad
                grad[(-1,) * grad.dim()] = float("nan") if t == 2 else float("inf")

    def drop(t, params):
        if t in (2, 4):
            for i in hit:
                params[i].grad = None  # as if the step did not happen for them

    out, opt = _run(cls, {**kwargs, **variant}, steps=7, poison=poison)
    ref, ref_opt = _run(cls, {**kwargs, "foreach": False}, steps=7, poison=drop)
    _assert_same(ref, out)
    for p, q in zip(out, ref, strict=True):
        for key, value in ref_opt.state[q].items():
            torch.testing.assert_close(opt.state[p][key], value, atol=1e-12, rtol=0)
    assert all(torch.isfinite(p).all() for p in out)
    assert float(opt.state[out[1]]["step"]) == 5.0  # exact: integer counts
    assert float(opt.state[out[0]]["step"]) == 7.0  # exact: integer counts


@pytest.mark.parametrize("foreach", [False, True])
def test_nonfinite_grad_raise_names_the_parameter_and_updates_nothing(foreach):
    ps = [torch.nn.Parameter(random_stiefel(4, 9, generator=torch.Generator())) for _ in range(3)]
    opt = POGO(ps, lr=0.05, nonfinite_grad="raise", foreach=foreach)
    for p in ps:
        p.grad = torch.randn_like(p)
    opt.step()
    before = [p.detach().clone() for p in ps]
    ps[2].grad[0, 0] = float("inf")
    with pytest.raises(ValueError, match=r"param group 0, parameter.*2.*NaN or inf"):
        opt.step()
    assert torch.equal(ps[2].detach(), before[2])
    assert float(opt.state[ps[2]]["step"]) == 1.0  # exact: integer counts


def test_nonfinite_grad_ignore_lets_the_nan_through_like_torch_optim():
    x = torch.nn.Parameter(random_stiefel(4, 9, generator=torch.Generator()))
    opt = POGO([x], lr=0.05, nonfinite_grad="ignore")
    x.grad = torch.full_like(x, float("nan"))
    opt.step()
    assert torch.isnan(x).all()


# ---------------------------------------------------------------------- half precision
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_updated_in_float32_and_its_error_does_not_grow(dtype):
    gen = torch.Generator().manual_seed(5)
    x32 = random_stiefel(8, 16, 32, generator=gen)
    target = torch.randn(8, 16, 32, generator=gen)
    xh = torch.nn.Parameter(x32.to(dtype))
    xf = torch.nn.Parameter(x32.clone())
    opts = [POGO([xh], lr=0.02), POGO([xf], lr=0.02)]
    errs = []
    for _ in range(150):
        for x, opt in zip((xh, xf), opts, strict=True):
            opt.zero_grad()
            (x.float() * target).sum().backward()
            opt.step()
        errs.append(float(orthogonality_error(xh.detach().double()).max()))
    assert xh.dtype == dtype
    state = opts[0].state[xh]
    assert state["exp_avg"].dtype == torch.float32 and state["exp_avg_sq"].dtype == torch.float32
    # the error is the rounding of the stored matrix, about eps sqrt(p) / 3, at every step
    floor = torch.finfo(dtype).eps * 16**0.5
    assert max(errs) < floor
    assert max(errs[-20:]) < 1.5 * max(errs[:20])
    # and it follows the float32 run to within the rounding
    assert (xh.detach().float() - xf.detach()).abs().max() < 20 * torch.finfo(dtype).eps
    # a checkpoint keeps the float32 state (torch would round it to the parameter's dtype)
    again = POGO([torch.nn.Parameter(xh.detach().clone())], lr=0.02)
    again.load_state_dict(opts[0].state_dict())
    loaded = next(iter(again.state.values()))
    assert loaded["exp_avg"].dtype == torch.float32
    torch.testing.assert_close(loaded["exp_avg"], state["exp_avg"], atol=0, rtol=0)


# --------------------------------------------------------------------- old checkpoints
def test_an_old_checkpoint_with_integer_steps_loads_and_continues():
    params, opt = _run(POGO, dict(lr=0.05), steps=3)
    sd = opt.state_dict()
    for st in sd["state"].values():
        st["step"] = int(st["step"])  # what pogo-optim 0.1 wrote
    model = _model()
    again = POGO(_groups(model), lr=0.05)
    again.load_state_dict(copy.deepcopy(sd))
    fresh = [p for ps in model for p in ps]
    with torch.no_grad():
        for p, q in zip(fresh, params, strict=True):
            p.copy_(q)
    for opt_, ps in ((opt, params), (again, fresh)):
        opt_.zero_grad()
        _loss(ps).backward()
        opt_.step()
    _assert_same(params, fresh)
    assert isinstance(again.state[fresh[0]]["step"], torch.Tensor)
    # and __setstate__ (unpickling, deepcopy) converts them too
    for st in opt.state.values():
        st["step"] = int(st["step"])
    clone = copy.deepcopy(opt)
    assert all(isinstance(st["step"], torch.Tensor) for st in clone.state.values())
