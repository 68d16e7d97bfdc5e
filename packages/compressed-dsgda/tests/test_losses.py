import numpy as np
import pytest
import torch
from compressed_dsgda import AUCMarginMinMax, DRORegression, roc_auc


@pytest.fixture(autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def test_auc_saddle_has_the_closed_form_stationary_point():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(200, generator=g, dtype=torch.float64)
    y = (torch.rand(200, generator=g) < 0.3).long()
    p = float(y.double().mean())
    loss = AUCMarginMinMax(p, margin=1.0).double()
    mp, mn = h[y == 1].mean(), h[y == 0].mean()
    with torch.no_grad():
        loss.a.fill_(mp)
        loss.b.fill_(mn)
        loss.alpha.fill_(1.0 + mn - mp)  # argmax over alpha: m + E[h|-] - E[h|+]
    grads = torch.autograd.grad(loss(h, y), [loss.a, loss.b, loss.alpha])
    for gr in grads:
        assert abs(float(gr)) < 1e-10


def test_auc_loss_stacked_gives_each_node_its_own_gradient():
    g = torch.Generator().manual_seed(1)
    h = torch.randn(3, 16, generator=g, dtype=torch.float64, requires_grad=True)
    y = (torch.rand(3, 16, generator=g) < 0.5).long()
    y[:, 0], y[:, 1] = 1, 0
    stacked = AUCMarginMinMax(0.4, n_nodes=3).double()
    stacked(h, y).backward()
    for i in range(3):
        single = AUCMarginMinMax(0.4).double()
        hi = h[i].detach().clone().requires_grad_()
        single(hi, y[i]).backward()
        torch.testing.assert_close(hi.grad, h.grad[i])
        torch.testing.assert_close(single.alpha.grad, stacked.alpha.grad[i])


def test_dro_regression_dual_optimum_and_shapes():
    g = torch.Generator().manual_seed(2)
    X = torch.randn(30, 4, generator=g, dtype=torch.float64)
    t = torch.randn(30, generator=g, dtype=torch.float64)
    groups = torch.arange(30) % 3
    loss = DRORegression(4, 3, lam=2.0, mu=0.1).double()
    with torch.no_grad():
        loss.theta.copy_(torch.randn(4, generator=g, dtype=torch.float64))
        pred = X @ loss.theta
        L = torch.stack([((pred - t)[groups == k] ** 2).mean() for k in range(3)])
        loss.q.copy_(1.0 / 3 + L / 2.0)  # q* = 1/G + L / lam
    (gq,) = torch.autograd.grad(loss(X, t, groups), [loss.q])
    assert float(gq.abs().max()) < 1e-10
    stacked = DRORegression(4, 3, n_nodes=2).requires_grad_(False)
    assert float(
        stacked(X.float().expand(2, -1, -1), t.float().expand(2, -1), groups.expand(2, -1))
    ) == pytest.approx(
        2 * float(DRORegression(4, 3).requires_grad_(False)(X.float(), t.float(), groups))
    )


def test_roc_auc_matches_the_pairwise_definition():
    g = torch.Generator().manual_seed(3)
    s = torch.round(torch.randn(60, generator=g) * 2) / 2  # with ties
    y = (torch.rand(60, generator=g) < 0.4).long()
    pos, neg = s[y == 1], s[y == 0]
    pairwise = (
        (pos[:, None] > neg[None, :]).double() + 0.5 * (pos[:, None] == neg[None, :]).double()
    ).mean()
    assert roc_auc(s, y) == pytest.approx(float(pairwise), abs=1e-12)


def test_loss_bad_input_raises():
    with pytest.raises(ValueError, match="p must be"):
        AUCMarginMinMax(1.0)
    loss = AUCMarginMinMax(0.5)
    with pytest.raises(ValueError, match="same shape"):
        loss(torch.zeros(3), torch.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        loss(torch.tensor([float("nan"), 0.0]), torch.tensor([1, 0]))
    with pytest.raises(ValueError, match="both classes"):
        roc_auc([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="NaN or inf"):  # it returned 0.0
        roc_auc([float("nan"), 0.9], [0, 1])
    with pytest.raises(ValueError, match="groups"):
        DRORegression(2, 2)(torch.zeros(2, 2), torch.zeros(2), torch.tensor([0, 5]))
    # these failed inside numpy/torch (AttributeError, RuntimeError from min())
    with pytest.raises(TypeError, match=r"scores must be a torch\.Tensor"):
        loss(np.zeros(2), np.zeros(2))
    dro = DRORegression(2, 2)
    with pytest.raises(TypeError, match=r"X must be a torch\.Tensor"):
        dro(np.zeros((2, 2)), torch.zeros(2), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="no rows"):
        dro(torch.zeros(0, 2), torch.zeros(0), torch.zeros(0, dtype=torch.long))
