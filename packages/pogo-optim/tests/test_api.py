"""torch.optim conventions (the core's conformance suite), mixed groups and bad input."""

from __future__ import annotations

import pytest
import torch
from icml26_core.testing import check_optimizer
from pogo_optim import POGO, Landing, project, random_stiefel
from pogo_optim.functional import BaseRule, pogo_update, register_base_rule


def _mixed_params(generator):
    """Orthogonal matrices in both layouts and a batch, plus a free bias, as two groups."""
    return [
        {
            "params": [
                random_stiefel(3, 7, generator=generator, dtype=torch.float64),
                random_stiefel(4, 2, 5, generator=generator, dtype=torch.float64),
            ]
        },
        {
            "params": [
                random_stiefel(6, 2, layout="columns", generator=generator, dtype=torch.float64)
            ],
            "layout": "columns",
        },
        {"params": [torch.randn(5, generator=generator, dtype=torch.float64)], "orthogonal": False},
    ]


@pytest.mark.parametrize(
    "make",
    [
        lambda groups: POGO(groups, lr=0.05),
        lambda groups: POGO(groups, lr=0.05, base="sgd", momentum=0.9, nesterov=True),
        lambda groups: POGO(groups, lr=0.05, base="adam"),
        lambda groups: Landing(groups, lr=0.05, momentum=0.9),
        lambda groups: Landing(groups, lr=0.05, base="vadam", safe_step=None),
    ],
    ids=["pogo-vadam", "pogo-sgd-nesterov", "pogo-adam", "landing-sgd", "landing-vadam"],
)
def test_conformance_suite(make, device):
    check_optimizer(
        make,
        _mixed_params,
        device=device,
        atol=1e-12,
        zero_grad_atol=1e-12,
        group_overrides={"lr": 0.02, "base": "sgd", "momentum": 0.5},
        backfilled_keys=["layout", "orthogonal", "betas", "maximize"],
    )


def test_mixed_groups_keep_orthogonal_params_and_move_the_rest():
    g = torch.Generator().manual_seed(0)
    w = torch.nn.Parameter(random_stiefel(16, 4, 10, generator=g))
    b = torch.nn.Parameter(torch.zeros(10))
    opt = POGO([{"params": [w]}, {"params": [b], "orthogonal": False, "base": "adam", "lr": 0.1}])
    for _ in range(10):
        opt.zero_grad()
        ((w.sum((0, 1)) + b - 1.0).square().sum()).backward()
        opt.step()
    assert (w @ w.mT - torch.eye(4)).norm(dim=(-2, -1)).max() < 1e-5
    assert b.abs().min() > 0.1
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[0]["lr"] == 1e-2  # exact: stored


def _sign_rule(g, s, grp, t):
    s["calls"] = s.get("calls", 0) + 1  # a non-tensor state entry, as user rules may keep
    return g.sign()


@pytest.mark.parametrize("foreach", [False, True])
def test_registered_base_rule_is_used_and_survives_state_dict(foreach):
    register_base_rule(BaseRule("sign-sgd", _sign_rule), overwrite=True)
    g = torch.Generator().manual_seed(4)
    x0 = random_stiefel(2, 3, 6, generator=g, dtype=torch.float64)
    xs = [torch.nn.Parameter(x0[i].clone()) for i in range(2)]  # two same-shape parameters
    grads = [torch.randn(3, 6, generator=g, dtype=torch.float64) for _ in range(2)]
    opt = POGO(xs, lr=0.01, base="sign-sgd", foreach=foreach)
    for x, gr in zip(xs, grads, strict=True):
        x.grad = gr.clone()
    opt.step()
    for i, x in enumerate(xs):
        # the rule was used: the step is POGO's along sign(g), not along g
        expected = pogo_update(x0[i], grads[i].sign(), 0.01)
        torch.testing.assert_close(x.detach(), expected, atol=1e-12, rtol=0)
        assert opt.state[x]["calls"] == 1
    sd = opt.state_dict()
    assert sd["param_groups"][0]["base"] == "sign-sgd"
    with pytest.raises(ValueError, match="already registered"):
        register_base_rule(BaseRule("sign-sgd", lambda g, s, grp, t: g))


def test_project_init_projects_once_and_keeps_shape():
    g = torch.Generator().manual_seed(1)
    raw = torch.randn(2, 3, 8, generator=g)
    x = torch.nn.Parameter(raw.clone())
    POGO([x], project_init=True)
    assert (x @ x.mT - torch.eye(3)).norm(dim=(-2, -1)).max() < 1e-5
    torch.testing.assert_close(x.detach(), project(raw), atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(lr=-1.0), ValueError, "lr must be >= 0.0, got -1.0"),
        (dict(lr=float("nan")), ValueError, "lr must be a finite number"),
        (dict(lr="0.1"), TypeError, "lr must be a real number"),
        (dict(lr=torch.tensor([0.1, 0.2])), ValueError, "lr: a tensor learning rate"),
        (dict(lr=torch.tensor(-0.1)), ValueError, "lr must be >= 0.0"),
        (dict(momentum=-0.1), ValueError, "momentum must be >= 0.0"),
        (dict(dampening=1.5), ValueError, "dampening must be >= 0.0 and <= 1.0"),
        (dict(base="sgd", nesterov=True), ValueError, "nesterov=True requires momentum"),
        (dict(betas=(0.9, 1.0)), ValueError, r"betas\[1\] must be >= 0.0 and < 1.0"),
        (dict(betas=(0.9,)), ValueError, "betas must be a pair"),
        (dict(eps=-1e-8), ValueError, "eps must be >= 0.0"),
        (dict(weight_decay=-1.0), ValueError, "weight_decay must be >= 0.0"),
        (dict(base="lion"), ValueError, "Invalid base: 'lion'"),
        (dict(layout="diag"), ValueError, "layout must be one of 'rows', 'columns'"),
        (dict(normalization_order=0), ValueError, "normalization_order must be an integer"),
        (dict(normalization_order=2.0), TypeError, "normalization_order must be an integer"),
        (dict(max_step=0.0), ValueError, "max_step must be > 0.0 and <= 1.0"),
        (dict(nonfinite_grad="zero"), ValueError, "nonfinite_grad must be one of 'skip'"),
        (dict(foreach=1), TypeError, "foreach must be a bool or None"),
        (dict(capturable=None), TypeError, "capturable must be a bool"),
        (dict(differentiable=1), TypeError, "differentiable must be a bool"),
        (dict(fused=True), ValueError, "fused=True is not available"),
        (dict(foreach=True, differentiable=True), ValueError, "foreach=True does not support"),
        (dict(capturable=True, nonfinite_grad="raise"), ValueError, "capturable=True forbids"),
    ],
)
def test_invalid_hyperparameters_raise_naming_the_argument(kwargs, error, match):
    x = torch.nn.Parameter(random_stiefel(3, 5, generator=torch.Generator()))
    with pytest.raises(error, match=match):
        POGO([x], **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lambda_regul=0.0), "lambda_regul must be > 0.0"),
        (dict(safe_step=1.5), "safe_step must be > 0.0 and < 1.0"),
        (dict(safe_step=0.0), "safe_step must be > 0.0 and < 1.0"),
    ],
)
def test_invalid_landing_hyperparameters(kwargs, match):
    x = torch.nn.Parameter(random_stiefel(3, 5, generator=torch.Generator()))
    with pytest.raises(ValueError, match=match):
        Landing([x], **kwargs)


def test_bad_parameters_raise_clearly():
    g = torch.Generator().manual_seed(2)
    tall = torch.nn.Parameter(random_stiefel(7, 3, layout="columns", generator=g))
    with pytest.raises(ValueError, match=r"p=7 > n=3; use layout='columns'"):
        POGO([tall])
    POGO([tall], layout="columns")  # the right layout is accepted
    with pytest.raises(ValueError, match="put 1-D parameters in a group with orthogonal=False"):
        POGO([torch.nn.Parameter(torch.ones(4))])
    with pytest.raises(ValueError, match=r"not on the Stiefel manifold.*project_init=True"):
        POGO([torch.nn.Parameter(torch.randn(3, 6, generator=g))])
    with pytest.raises(TypeError, match="real floating point or complex"):
        POGO([torch.zeros(2, 3, dtype=torch.int64)])
    with pytest.raises(ValueError, match="NaN or inf"):
        POGO([torch.nn.Parameter(torch.full((2, 3), float("nan")))])
    with pytest.raises(TypeError, match="orthogonal must be a bool"):
        POGO([torch.nn.Parameter(torch.eye(3))], orthogonal="yes")
    # a failed add_param_group leaves the optimizer as it was
    opt = POGO([torch.nn.Parameter(torch.eye(3))])
    with pytest.raises(ValueError):
        opt.add_param_group({"params": [torch.nn.Parameter(torch.ones(3))]})
    assert len(opt.param_groups) == 1


def test_sparse_gradients_are_rejected():
    x = torch.nn.Parameter(torch.eye(3))
    opt = POGO([x])
    x.grad = torch.eye(3).to_sparse()
    with pytest.raises(RuntimeError, match="sparse"):
        opt.step()


def test_caller_tensor_not_mutated_on_validation_failure():
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(3))
    before = x.clone()
    with pytest.raises(ValueError):
        POGO([torch.nn.Parameter(x)])
    assert torch.equal(x, before)


def test_empty_batch_is_accepted_and_steps_are_no_ops():
    x = torch.nn.Parameter(torch.empty(0, 4, 8))
    y = torch.nn.Parameter(random_stiefel(2, 4, 8, generator=torch.Generator()))
    for opt in (POGO([x, y], lr=0.05), Landing([x, y], lr=0.05)):
        x.grad = torch.empty(0, 4, 8)
        y.grad = torch.randn(2, 4, 8)
        before = y.detach().clone()
        opt.step()
        assert x.shape == (0, 4, 8)
        assert (y.detach() - before).abs().max() > 0  # the other parameter still moves


def test_complex_parameters_need_complex_or_real_floats():
    with pytest.raises(TypeError, match="real floating point or complex"):
        POGO([torch.zeros(2, 3, dtype=torch.int32)])
    u = torch.nn.Parameter(random_stiefel(4, 4, dtype=torch.complex128))
    POGO([u])  # a unitary matrix is accepted
    with pytest.raises(ValueError, match="not on the Stiefel manifold"):
        POGO([torch.nn.Parameter(2 * u.detach())])
