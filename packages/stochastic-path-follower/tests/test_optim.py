"""SPFOptimizer against the core's optimizer conformance suite, all of it."""

import pytest
import torch
from icml26_core.testing import check_optimizer
from stochastic_path_follower import SPFOptimizer, StochasticPathFollower

FOLLOWER = StochasticPathFollower(width=8, seed=3)


@pytest.mark.parametrize("features", [("grad", "prev_grad", "hvp", "time"), ("grad", "step")])
def test_spf_optimizer_passes_the_whole_conformance_suite(features):
    follower = StochasticPathFollower(width=8, features=features, seed=3)
    ran = check_optimizer(lambda groups: SPFOptimizer(groups, follower))
    assert ran == [
        "construction",
        "param groups",
        "closure",
        "state_dict round trip",
        "None gradients",
        "zero gradients",
        "device and dtype",
    ]


def _quadratic(params, targets):
    return sum(0.5 * ((p - q) ** 2).sum() for p, q in zip(params, targets, strict=True))


def test_param_groups_are_separate_decision_vectors_with_the_closure():
    """With the closure (the hvp secant on the current batch), group a's path does not
    depend on group b, whose gradients are 1000x larger."""
    gen = torch.Generator().manual_seed(0)
    ta, tb = torch.randn(4, generator=gen), 1000 * torch.randn(3, generator=gen)

    def run(groups_of):
        a = torch.zeros(4, requires_grad=True)
        b = torch.zeros(3, requires_grad=True)
        opt = SPFOptimizer(groups_of(a, b), FOLLOWER)

        def closure():
            opt.zero_grad()
            loss = _quadratic([a, b], [ta, tb])
            loss.backward()
            return loss

        for _ in range(6):
            opt.step(closure)
        return a.detach().clone(), opt

    a_two, opt = run(lambda a, b: [{"params": [a]}, {"params": [b]}])
    a_alone, _ = run(lambda a, b: [{"params": [a]}])  # b never updated, its grad unused
    torch.testing.assert_close(a_two, a_alone, atol=1e-12, rtol=0.0)
    a_one, _ = run(lambda a, b: [{"params": [a, b]}])  # one vector: b's scale enters a's
    assert (a_one - a_alone).abs().max() > 1e-3
    # the gradients of the first closure call are put back after the secant's call
    p = opt.param_groups[0]["params"][0]
    assert p.grad is not None and torch.isfinite(p.grad).all()


def _run_quadratic(targets, with_closure):
    """SPFOptimizer on 0.5 ||w - target_k||^2, with step(closure) or backward + step()."""
    w = torch.zeros(targets.shape[1], requires_grad=True)
    opt = SPFOptimizer([w], FOLLOWER)
    path = []
    for target in targets:

        def closure(target=target):
            opt.zero_grad()
            loss = 0.5 * ((w - target) ** 2).sum()
            loss.backward()
            return loss

        if with_closure:
            opt.step(closure)
        else:
            with torch.enable_grad():
                closure()
            opt.step()
        path.append(w.detach().clone())
    return torch.stack(path)


def test_step_without_closure_is_the_closure_step_when_the_loss_is_static():
    """The closure-free step's secant across steps, g_k(X_{k-1}) - g_{k-1}(X_{k-2}), is the
    closure's on-batch secant g_k(X_{k-1}) - g_k(X_{k-2}) when the loss does not change;
    when it drifts, the two differ (the class docstring's claim, both ways)."""
    gen = torch.Generator().manual_seed(1)
    static = torch.randn(1, 5, generator=gen).expand(8, 5)
    torch.testing.assert_close(
        _run_quadratic(static, False), _run_quadratic(static, True), atol=1e-6, rtol=1e-6
    )
    drifting = static + torch.cumsum(0.5 * torch.randn(8, 5, generator=gen), 0)
    gap = (_run_quadratic(drifting, False) - _run_quadratic(drifting, True)).abs().max()
    assert float(gap) > 1e-3
