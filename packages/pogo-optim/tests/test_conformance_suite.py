"""The core's optimizer conformance suite accepts torch's optimizers and catches broken ones."""

from __future__ import annotations

import pytest
import torch
from icml26_core.testing import check_optimizer


@pytest.mark.parametrize(
    ("make", "kwargs"),
    [
        (lambda g: torch.optim.SGD(g, lr=0.1, momentum=0.9), {"backfilled_keys": ["nesterov"]}),
        (lambda g: torch.optim.Adam(g, lr=0.01), {}),
        (lambda g: torch.optim.AdamW(g, lr=0.01), {"zero_grad_atol": None}),
    ],
)
def test_torch_optimizers_pass(make, kwargs, device):
    # check_optimizer raises AssertionError on the first failing check; what it returns
    # says which checks ran, so a check skipped by mistake shows here
    ran = check_optimizer(make, device=device, **kwargs)
    assert {"param groups", "closure", "state_dict round trip", "None gradients"} <= set(ran)
    assert ("old checkpoints" in ran) == bool(kwargs.get("backfilled_keys"))
    assert ("zero gradients" in ran) == ("zero_grad_atol" not in kwargs)


class _ForgetfulSGD(torch.optim.SGD):
    """Loses its momentum buffers on load_state_dict."""

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.state.clear()


class _GlobalLrSGD(torch.optim.Optimizer):
    """Ignores per-group learning rates."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-self.defaults["lr"])


class _NoLossSGD(torch.optim.SGD):
    """Runs the closure but does not return its loss."""

    def step(self, closure=None):
        super().step(closure)


class _TouchesNoneGrads(torch.optim.Optimizer):
    """Shrinks every parameter, even those without a gradient."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                p.mul_(0.99)
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])
        return loss


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda g: _ForgetfulSGD(g, lr=0.1, momentum=0.9), "state_dict round trip"),
        (lambda g: _GlobalLrSGD(g), "param groups"),
        (lambda g: _NoLossSGD(g, lr=0.1), "return the closure's loss"),
        (lambda g: _TouchesNoneGrads(g), "grad None was modified"),
    ],
)
def test_broken_optimizers_fail_with_the_check_named(make, match):
    with pytest.raises(AssertionError, match=match):
        check_optimizer(make)


def test_backfill_check_fails_when_setstate_does_not_fill():
    with pytest.raises(AssertionError, match="did not fill 'momentum'"):
        check_optimizer(lambda g: torch.optim.SGD(g, lr=0.1), backfilled_keys=["momentum"])
