"""The pure updates equal torch.optim step for step (schedules included)."""

import pytest
import torch
from paso_optim import functional as fo

CASES = [
    ("sgd", {}, torch.optim.SGD, {}),
    ("sgd", {"momentum": 0.9}, torch.optim.SGD, {"momentum": 0.9}),
    (
        "sgd",
        {"momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01},
        torch.optim.SGD,
        {"momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01},
    ),
    (
        "sgd",
        {"momentum": 0.8, "nesterov": True},
        torch.optim.SGD,
        {"momentum": 0.8, "nesterov": True},
    ),
    ("adam", {}, torch.optim.Adam, {}),
    (
        "adam",
        {"weight_decay": 0.05, "betas": (0.8, 0.99)},
        torch.optim.Adam,
        {"weight_decay": 0.05, "betas": (0.8, 0.99)},
    ),
    ("adamw", {}, torch.optim.AdamW, {}),
    (
        "adamw",
        {"weight_decay": 0.1, "eps": 1e-6},
        torch.optim.AdamW,
        {"weight_decay": 0.1, "eps": 1e-6},
    ),
]


def _grad(x: torch.Tensor, t: int) -> torch.Tensor:
    # a deterministic, state-dependent gradient: of sum(cos(x) + 0.5 * (t % 3) * x^2)
    return -torch.sin(x) + (t % 3) * x + 0.1


@pytest.mark.parametrize(
    "dtype,tol,scheduled", [(torch.float32, 1e-7, True), (torch.float64, 1e-12, False)]
)
@pytest.mark.parametrize("name,hyper,torch_cls,torch_kw", CASES)
def test_matches_torch_optim(name, hyper, torch_cls, torch_kw, dtype, tol, scheduled):
    lr = 0.05
    schedule = (lambda t: 0.5 + 0.5 * 0.97**t) if scheduled else None
    x0 = torch.linspace(-2, 2, 37, dtype=dtype)
    p = torch.nn.Parameter(x0.clone())
    opt = torch_cls([p], lr=lr, **torch_kw)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule) if scheduled else None
    f = fo.make_optimizer(name, lr, schedule=schedule, **hyper)
    x, s = x0.clone(), f.init(x0)
    for t in range(50):
        g = _grad(x, t)
        p.grad = _grad(p.detach(), t)
        opt.step()
        if sched is not None:
            sched.step()
        x, s = f.step(x, s, g, t)
        assert torch.allclose(x, p.detach(), rtol=0, atol=tol * 10), (t, (x - p).abs().max())
    assert (x - p.detach()).abs().max() <= tol * 10


def test_step_is_pure():
    f = fo.adam(lr=0.1)
    x = torch.ones(5)
    s = f.init(x)
    snap = (x.clone(), {k: v.clone() for k, v in s.items()})
    f.step(x, s, torch.ones(5), 0)
    assert torch.equal(x, snap[0])
    assert all(torch.equal(s[k], snap[1][k]) for k in s)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: fo.sgd(lr=0.0), "lr"),
        (lambda: fo.sgd(lr=0.1, momentum=-1), "momentum"),
        (lambda: fo.sgd(lr=0.1, nesterov=True), "nesterov"),
        (lambda: fo.adam(betas=(1.0, 0.9)), r"betas\[0\]"),
        (lambda: fo.adamw(weight_decay=-0.1), "weight_decay"),
        (lambda: fo.make_optimizer("lion", 0.1), "optimizer"),
        (lambda: fo.adam(betas=0.9), "betas must be a pair"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_make_optimizer_names_an_unknown_argument():
    with pytest.raises(TypeError, match="'adam' does not take momentum"):
        fo.make_optimizer("adam", 0.1, momentum=0.9)
