"""CUDA-only checks (marked ``gpu``; skipped without a CUDA device).

Not run on the machines this package was developed on (no GPU): see the README and
``benchmarks/gpu_check.py``, which runs these and the GPU timings in one go.
"""

from __future__ import annotations

import pytest
import torch
from pogo_optim import POGO, Landing, orthogonality_error, random_stiefel

pytestmark = pytest.mark.gpu


def _params(n=6, shape=(8, 16, 32), dtype=torch.float32, device="cuda"):
    gen = torch.Generator().manual_seed(0)
    return [
        torch.nn.Parameter(random_stiefel(*shape, generator=gen, dtype=dtype, device=device))
        for _ in range(n)
    ]


@pytest.mark.parametrize("cls", [POGO, Landing])
def test_a_capturable_step_replays_in_a_cuda_graph(cls):
    params = _params()
    eager = [torch.nn.Parameter(p.detach().clone()) for p in params]
    lr = torch.tensor(0.05, device="cuda")
    opt = cls(params, lr=lr, capturable=True, base="vadam")
    ref = cls(eager, lr=0.05, base="vadam")
    gen = torch.Generator(device="cuda").manual_seed(1)
    grads = [[torch.randn(p.shape, device="cuda", generator=gen) for p in params] for _ in range(8)]
    for p, g in zip(params, grads[0], strict=True):
        p.grad = g.clone()  # static gradient buffers, refilled before each replay
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # warm-up: creates the state outside the graph
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    for p, q in zip(params, eager, strict=True):  # restart both from the same point
        with torch.no_grad():
            p.copy_(q)
    for st in opt.state.values():
        for v in st.values():
            v.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        opt.step()
    for gs in grads:
        for p, q, g in zip(params, eager, gs, strict=True):
            p.grad.copy_(g)
            q.grad = g.clone()
        graph.replay()
        ref.step()
    torch.cuda.synchronize()
    for p, q in zip(params, eager, strict=True):
        torch.testing.assert_close(p.detach(), q.detach(), atol=1e-5, rtol=0)
    lr.fill_(0.0)  # a tensor lr changes a captured step: lr 0 leaves the point
    before = [p.detach().clone() for p in params]
    graph.replay()
    for p, b in zip(params, before, strict=True):
        torch.testing.assert_close(p.detach(), b, atol=1e-6, rtol=0)


def test_capturable_steps_do_not_synchronize():
    params = _params()
    opt = POGO(params, lr=torch.tensor(0.05, device="cuda"), capturable=True)
    for p in params:
        p.grad = torch.randn_like(p)
    opt.step()  # state creation may copy from the host
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        opt.step()
    finally:
        torch.cuda.set_sync_debug_mode("default")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.complex64])
def test_foreach_matches_the_loop_on_cuda(dtype):
    if dtype == torch.complex64:
        shape = (8, 16, 16)
    else:
        shape = (8, 16, 32)
    runs = []
    for foreach in (False, True):
        params = _params(shape=shape, dtype=dtype)
        opt = POGO(params, lr=0.02, foreach=foreach)
        gen = torch.Generator(device="cuda").manual_seed(2)
        for _ in range(20):
            for p in params:
                p.grad = torch.randn(p.shape, device="cuda", dtype=dtype, generator=gen)
            opt.step()
        runs.append(params)
        errs = [
            float(
                orthogonality_error(
                    p.detach().to(torch.complex128 if dtype.is_complex else torch.float64)
                ).max()
            )
            for p in params
        ]
        limit = 1e-5 if dtype != torch.bfloat16 else 0.05
        assert max(errs) < limit
    tol = 1e-5 if dtype != torch.bfloat16 else 2e-2
    for p, q in zip(*runs, strict=True):
        torch.testing.assert_close(p.detach(), q.detach(), atol=tol, rtol=0)


def test_matches_pogo_torch_on_cuda():
    pogo = pytest.importorskip("pogo")
    base = pytest.importorskip("pogo.base")
    gen = torch.Generator().manual_seed(3)
    x0 = random_stiefel(100, 32, 64, generator=gen, dtype=torch.float64, device="cuda")
    a = torch.randn(100, 64, 80, dtype=torch.float64, device="cuda")
    b = torch.randn(100, 32, 80, dtype=torch.float64, device="cuda")
    theirs, ours = torch.nn.Parameter(x0.clone()), torch.nn.Parameter(x0.clone())
    opts = [
        pogo.POGO([theirs], base.VectorAdam(), 0.05),
        POGO([ours], lr=0.05, normalization_order=1, max_step=1.0),
    ]
    for _ in range(30):
        for x, opt in zip((theirs, ours), opts, strict=True):
            opt.zero_grad()
            (x @ a - b).square().sum().backward()
            opt.step()
    torch.testing.assert_close(ours.detach(), theirs.detach(), atol=1e-6, rtol=0)
