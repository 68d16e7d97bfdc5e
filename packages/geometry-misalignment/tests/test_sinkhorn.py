import math

import numpy as np
import pytest
import torch
from geometry_misalignment import SinkhornLoss, sinkhorn_divergence, wasserstein2


def _pot_sinkhorn_divergence(x, y, blur):
    """Debiased entropic OT with POT's log-domain solver, geomloss's convention."""
    ot = pytest.importorskip("ot")
    eps = blur**2

    def ot_eps(a_pts, b_pts):
        a = np.full(len(a_pts), 1 / len(a_pts))
        b = np.full(len(b_pts), 1 / len(b_pts))
        M = ot.dist(a_pts, b_pts, metric="sqeuclidean") / 2
        P = ot.sinkhorn(a, b, M, eps, method="sinkhorn_log", numItermax=3000, stopThr=1e-9)
        mask = P > 0
        kl = np.sum(P[mask] * np.log(P[mask] / np.outer(a, b)[mask]))
        return float(np.sum(P * M) + eps * kl)

    return ot_eps(x, y) - 0.5 * ot_eps(x, x) - 0.5 * ot_eps(y, y)


def _lse(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def _numpy_sinkhorn_divergence(x, y, blur, iters=500):
    """The same divergence from a plain converged log-domain Sinkhorn in numpy."""
    eps = blur**2

    def ot_eps(a_pts, b_pts):
        C = ((a_pts[:, None, :] - b_pts[None, :, :]) ** 2).sum(-1) / 2
        la, lb = -np.log(len(a_pts)), -np.log(len(b_pts))
        f, g = np.zeros(len(a_pts)), np.zeros(len(b_pts))
        for _ in range(iters):
            f = -eps * _lse((g[None, :] - C) / eps + lb, axis=1)
            g = -eps * _lse((f[:, None] - C) / eps + la, axis=0)
        return float(f.mean() + g.mean())  # the dual value = the primal at convergence

    return ot_eps(x, y) - 0.5 * ot_eps(x, x) - 0.5 * ot_eps(y, y)


def _clouds():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 3))
    y = rng.standard_normal((18, 3)) * 0.7 + 0.5
    return x, y


@pytest.mark.parametrize("blur", [0.5, 1.0])
def test_matches_converged_log_domain_sinkhorn(blur):
    x, y = _clouds()
    ours = float(sinkhorn_divergence(torch.tensor(x), torch.tensor(y), blur, scaling=0.99))
    assert ours == pytest.approx(_numpy_sinkhorn_divergence(x, y, blur), abs=1e-4)


@pytest.mark.slow  # importing POT (it pulls in scikit-learn, pandas, networkx) is ~11 s CPU
@pytest.mark.parametrize("blur", [0.5, 1.0])
def test_matches_pot_log_domain_sinkhorn(blur):
    x, y = _clouds()
    ours = float(sinkhorn_divergence(torch.tensor(x), torch.tensor(y), blur, scaling=0.99))
    ref = _pot_sinkhorn_divergence(x, y, blur)
    assert ours == pytest.approx(ref, abs=1e-4)
    assert ref == pytest.approx(_numpy_sinkhorn_divergence(x, y, blur), abs=1e-6)


def test_zero_on_equal_clouds_positive_otherwise_and_gradient_flows():
    x = torch.randn(25, 2, dtype=torch.float64, requires_grad=True)
    assert float(sinkhorn_divergence(x, x.detach()).detach()) == pytest.approx(0.0, abs=1e-8)
    y = x.detach() + 1.0
    s = sinkhorn_divergence(x, y)
    assert float(s.detach()) > 0.5
    s.backward()
    # a pure shift: the gradient moves every point towards y, ~ -(1/n) (y - x)
    torch.testing.assert_close(x.grad, torch.full_like(x, -1.0 / 25), rtol=0.05, atol=1e-3)


def test_small_blur_stays_finite_in_float32():
    x = torch.randn(50, 4) * 10
    y = torch.randn(60, 4) * 10
    s = sinkhorn_divergence(x, y, blur=1e-3)
    assert math.isfinite(float(s)) and float(s) > 0


def test_module_reductions_on_batches():
    x = torch.randn(3, 20, 2, dtype=torch.float64)
    y = torch.randn(3, 15, 2, dtype=torch.float64) + 0.5
    # geomloss anneals a batch with one schedule (from the largest diameter), so batch and
    # one-by-one values agree to the annealing error, small at scaling 0.99
    none = SinkhornLoss(0.5, scaling=0.99, reduction="none")(x, y)
    assert none.shape == (3,)
    each = torch.stack([sinkhorn_divergence(x[i], y[i], 0.5, scaling=0.99) for i in range(3)])
    torch.testing.assert_close(none, each, rtol=0, atol=2e-4)
    mean = SinkhornLoss(0.5, scaling=0.99)(x, y)
    total = SinkhornLoss(0.5, scaling=0.99, reduction="sum")(x, y)
    torch.testing.assert_close(mean, none.mean(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(total, none.sum(), rtol=1e-12, atol=1e-12)
    assert "blur=0.1" in repr(SinkhornLoss(0.1))


def test_bad_input_names_the_argument():
    x = torch.randn(5, 2)
    with pytest.raises(ValueError, match="blur"):
        sinkhorn_divergence(x, x, blur=0.0)
    with pytest.raises(ValueError, match="blur"):
        SinkhornLoss(blur=-1.0)
    with pytest.raises(ValueError, match="dimension"):
        sinkhorn_divergence(x, torch.randn(5, 3))
    with pytest.raises(ValueError, match="empty"):
        sinkhorn_divergence(torch.empty(0, 2), x)
    with pytest.raises(ValueError, match="x is empty"):  # an empty batch, not only empty clouds
        SinkhornLoss()(torch.randn(0, 20, 3), torch.randn(0, 25, 3))
    with pytest.raises(ValueError, match="NaN"):
        sinkhorn_divergence(torch.full((3, 2), math.nan), x)
    with pytest.raises(ValueError, match="p"):
        sinkhorn_divergence(x, x, p=3)
    with pytest.raises(TypeError, match="x"):
        sinkhorn_divergence(np.ones((3, 2)), x)
    with pytest.raises(ValueError, match="reduction"):
        SinkhornLoss(reduction="avg")
    with pytest.raises(TypeError, match="x must be float32"):
        sinkhorn_divergence(x.half(), x.half())  # was an overflow error deep in geomloss


@pytest.mark.slow  # imports POT
def test_wasserstein2_is_exact_on_a_translation_and_the_small_blur_limit():
    pytest.importorskip("ot")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, 3, generator=g, dtype=torch.float64, requires_grad=True)
    shift = torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64)
    value = wasserstein2(x, x.detach() + shift)
    # a translation is transported by itself: W2^2 / 2 = |shift|^2 / 2, gradient -shift / n
    assert float(value.detach()) == pytest.approx(float(shift @ shift) / 2, abs=1e-10)
    value.backward()
    torch.testing.assert_close(x.grad, (-shift / 30).expand(30, 3), rtol=1e-8, atol=1e-10)
    y = torch.randn(25, 3, generator=g, dtype=torch.float64)
    w2 = float(wasserstein2(x.detach(), y))
    assert float(wasserstein2(y, y)) == pytest.approx(0.0, abs=1e-12)
    # the Sinkhorn divergence tends to it as blur -> 0 (0.5% at blur 0.01 here)
    s = float(sinkhorn_divergence(x.detach(), y, blur=0.01, scaling=0.99))
    assert s == pytest.approx(w2, rel=0.02)
    assert abs(s - w2) < abs(float(sinkhorn_divergence(x.detach(), y, blur=0.5)) - w2)


def test_wasserstein2_bad_input_names_the_argument():
    x = torch.randn(5, 2)
    with pytest.raises(ValueError, match="dimension"):
        wasserstein2(x, torch.randn(5, 3))
    with pytest.raises(ValueError, match="empty"):
        wasserstein2(torch.empty(0, 2), x)
    with pytest.raises(ValueError, match="NaN"):
        wasserstein2(torch.full((3, 2), math.nan), x)
    with pytest.raises(TypeError, match="bfloat16"):
        wasserstein2(x.bfloat16(), x.bfloat16())
    with pytest.raises(TypeError, match="y"):
        wasserstein2(x, np.ones((5, 2)))
