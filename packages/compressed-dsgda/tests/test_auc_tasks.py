import importlib.util

import pytest
import torch
from compressed_dsgda._auc import AUCData, primal_stationarity, run_pesg, run_pooled
from compressed_dsgda.losses import auc_margin_objective


@pytest.fixture(autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _data(n=240, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    y = (X[:, 0] + 0.5 * torch.randn(n, generator=g) > 0.8).float()
    return AUCData("toy", X[:160], y[:160], X[160:], y[160:])


def test_primal_stationarity_is_the_gradient_of_the_max_over_alpha():
    data = _data()
    g = torch.Generator().manual_seed(1)
    w = torch.randn(6, generator=g, requires_grad=True)
    a = torch.tensor(0.3, requires_grad=True)
    b = torch.tensor(-0.2, requires_grad=True)
    p, X, y = data.p, data.X_train, data.y_train
    h = X @ w
    pos = (y > 0.5).float()
    # Phi(x) = max_alpha f(x, alpha) with alpha*(x) kept differentiable: Danskin says the
    # gradient is the same as with alpha* held fixed
    alpha = 1.0 + torch.mean(p * h * (1 - pos) - (1 - p) * h * pos) / (p * (1 - p))
    phi = auc_margin_objective(h, y, a, b, alpha, p).mean()
    gw, ga, gb = torch.autograd.grad(phi, (w, a, b))
    want = float(torch.sqrt((gw**2).sum() + ga**2 + gb**2))
    assert primal_stationarity(data, w, a, b) == pytest.approx(want, rel=1e-4)
    # alpha* maximizes f: its alpha-gradient vanishes
    al = alpha.detach().requires_grad_(True)
    (g_al,) = torch.autograd.grad(auc_margin_objective(h.detach(), y, a, b, al, p).mean(), al)
    assert abs(float(g_al)) < 1e-5


def test_pooled_sgda_reports_auc_and_a_small_stationarity():
    data = _data()
    auc, stat = run_pooled(data, steps=300, seed=0, lr_primal=0.1, lr_dual=0.1, batch=8)
    assert auc > 0.8
    w0 = torch.zeros(6)
    assert stat < primal_stationarity(data, w0, torch.tensor(0.0), torch.tensor(0.0))


@pytest.mark.skipif(importlib.util.find_spec("libauc") is None, reason="needs the extra peers")
def test_libauc_pesg_reference_learns_and_is_seeded():
    data = _data()
    a1 = run_pesg(data, steps=60, seed=0, lr=0.1, batch=8)
    a2 = run_pesg(data, steps=60, seed=0, lr=0.1, batch=8)
    assert a1 > 0.8
    assert a1 == pytest.approx(a2, abs=1e-12)
