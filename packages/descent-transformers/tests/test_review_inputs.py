"""Bad inputs found in review: each gives a clear error naming the argument."""

import numpy as np
import pytest
import torch
from descent_transformers import (
    DescentConstraints,
    PrimalDualTrainer,
    UnrolledTransformer,
    descent_share,
    is_monotone,
    layer_losses,
)


def _net():
    torch.manual_seed(0)
    return UnrolledTransformer(dim=16, depth=2, heads=2, patch=4, frames=2, size=8)


@pytest.mark.parametrize("dtype", [torch.float64, torch.uint8, torch.int64])
def test_input_of_another_dtype_names_x(dtype):
    x = (torch.rand(3, 2, 8, 8) * 255).to(dtype)
    with pytest.raises(TypeError, match="x must have the model's dtype"):
        _net()(x)


def test_float64_model_takes_float64_input():
    assert _net().double()(torch.rand(3, 2, 8, 8, dtype=torch.float64)).dtype == torch.float64


@pytest.mark.parametrize("shape", [(2, 8, 8), (3, 2, 8, 4)])
def test_target_of_another_shape_is_not_broadcast(shape):
    x = torch.rand(3, 2, 8, 8)
    with pytest.raises(ValueError, match="target must have the shape"):
        layer_losses(_net(), x, torch.rand(*shape))


def test_target_must_be_a_tensor():
    x = torch.rand(3, 2, 8, 8)
    with pytest.raises(TypeError, match="target must be a torch"):
        layer_losses(_net(), x, x.numpy())


def test_dual_step_rejects_a_list_and_bad_base():
    c = DescentConstraints(2)
    with pytest.raises(TypeError, match="layer_losses must be a torch"):
        c.dual_step([0.9, 0.5], 1.0)
    for bad in ("1", None):
        with pytest.raises(TypeError, match="base_loss"):
            c.dual_step(torch.tensor([0.9, 0.5]), bad)
    assert c.dual_step(torch.tensor([0.9, 0.5]), np.float32(1.0)).shape == (2,)


def test_dual_step_rejects_nan_and_negative_base_without_updating():
    c = DescentConstraints(2, dual_lr=1.0)
    c.dual_step(torch.tensor([1.0, 1.0]), 1.0)
    before = c.multipliers.clone()
    with pytest.raises(ValueError, match="must be finite"):
        c.dual_step(torch.tensor([float("nan"), 0.5]), 1.0)
    with pytest.raises(ValueError, match="base_loss must be >= 0"):
        c.dual_step(torch.tensor([0.9, 0.5]), -1.0)
    assert torch.equal(c.multipliers, before)
    # Without normalisation a negative base loss is fine (e.g. a log-likelihood).
    DescentConstraints(2, normalize=False).dual_step(torch.tensor([-1.2, -1.5]), -1.0)


def test_trainer_takes_no_step_on_a_nan_loss():
    net = _net()
    cons = DescentConstraints(2)
    trainer = PrimalDualTrainer(net, None, torch.optim.SGD(net.parameters(), lr=0.1), cons)
    x = torch.rand(3, 2, 8, 8)
    params = [p.detach().clone() for p in net.parameters()]
    with pytest.raises(ValueError, match="not finite"):
        trainer.step(x, x * float("nan"))
    assert all(torch.equal(p, q) for p, q in zip(net.parameters(), params, strict=True))
    assert torch.equal(cons.multipliers, torch.zeros(2))


def test_descent_share_checks_its_arguments():
    with pytest.raises(ValueError, match="tol must be >= 0"):
        descent_share([1.0, 0.9], tol=-1.0)
    with pytest.raises(ValueError, match="losses must be 1-D"):
        descent_share([[1.0, 0.9], [0.8, 0.7]])
    with pytest.raises(TypeError, match="losses must be"):
        descent_share("abc")
    assert not is_monotone([1.0, float("nan"), 0.5])
