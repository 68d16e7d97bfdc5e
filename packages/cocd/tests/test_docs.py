import doctest

import cocd
import cocd.functional
import cocd.optim
import pytest
import torch


@pytest.mark.parametrize("module", [cocd.optim, cocd.functional])
def test_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module)
    assert attempted > 0 and failed == 0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("make", [cocd.CoCD, cocd.BCCD, cocd.SPSA, cocd.RandomSubspace])
def test_cuda_state_stays_on_device(make):
    x = torch.randn(40, device="cuda")
    opt = make([x], lr=1e-3)
    for _ in range(3):
        opt.step(lambda: (x**2).sum())
        opt.step(batched_closure=lambda X: (X**2).sum(dim=1))
    assert x.is_cuda
    for v in opt.state[x].values():
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            assert v.is_cuda and v.dtype == x.dtype
