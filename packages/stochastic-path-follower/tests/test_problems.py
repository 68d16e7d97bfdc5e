import numpy as np
import pytest
import torch
from stochastic_path_follower import (
    DriftingLeastSquares,
    DriftingLogistic,
    dynamic_regret,
    relative_errors,
    stream,
    tracking_error,
)
from stochastic_path_follower.experiment import angle_walk
from stochastic_path_follower.problems import _logistic_fit


def _ls(K=6, d=12, m=3, noise=0.1, dtype=torch.float64):
    rng = np.random.default_rng(0)
    return DriftingLeastSquares(rng.normal(size=(K, d)), m=m, noise=noise, dtype=dtype)


def test_least_squares_reference_solves_the_normal_equations():
    prob = _ls()
    xs = prob.reference_path()
    for k in range(len(prob)):
        # population normal equations E[A^T A] x = E[A^T y], with E[A^T A] = I
        assert float(prob.population_grad(k, xs[k : k + 1]).norm()) < 1e-10
    # E[A^T A] = I and E[A^T y] = x*: Monte Carlo over many batches
    g = torch.Generator().manual_seed(0)
    b = prob.sample(2, 20000, g)
    AtA = torch.einsum("bmd,bme->de", b.A, b.A) / 20000
    Aty = torch.einsum("bmd,bm->d", b.A, b.y) / 20000
    assert torch.allclose(AtA, torch.eye(prob.dim, dtype=AtA.dtype), atol=0.05)
    assert torch.allclose(Aty, xs[2], atol=0.06)


def test_least_squares_gradient_matches_autograd_and_population_loss():
    prob = _ls()
    b = prob.sample(0, 3, torch.Generator().manual_seed(1))
    x = torch.randn(3, prob.dim, dtype=torch.float64, requires_grad=True)
    b.loss(x).sum().backward()
    assert torch.allclose(b.grad(x.detach()), x.grad, atol=1e-12)
    # the minibatch loss is unbiased for f_k: mean over many batches
    big = prob.sample(1, 20000, torch.Generator().manual_seed(2))
    x0 = torch.zeros(1, prob.dim, dtype=torch.float64)
    emp = big.loss(x0.expand(20000, -1)).mean()
    assert float(emp) == pytest.approx(float(prob.population_loss(1, x0)[0]), rel=0.03)


def test_residual_estimate_is_unbiased():
    """E <g1, g2> = ||grad f(x)||^2 for two independent minibatches."""
    prob = _ls(noise=0.3)
    x = torch.randn(1, prob.dim, dtype=torch.float64)
    g = torch.Generator().manual_seed(3)
    n = 40000
    b1, b2 = prob.sample(4, n, g), prob.sample(4, n, g)
    xs = x.expand(n, -1)
    est = (b1.grad(xs) * b2.grad(xs)).sum(-1)
    exact = float((prob.population_grad(4, x) ** 2).sum())
    se = float(est.std()) / n**0.5
    assert abs(float(est.mean()) - exact) < 4 * se
    # while one batch's ||g||^2 is biased upward by its variance
    biased = (b1.grad(xs) ** 2).sum(-1).mean()
    assert float(biased) > exact + 10 * se


def test_logistic_reference_satisfies_kkt():
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(3, 60, 5))
    labels = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    prob = DriftingLogistic(feats, labels, [0, 1, 2, 1], batch=8, reg=0.05, dtype=torch.float64)
    xs = prob.reference_path()
    for k in range(len(prob)):
        assert float(prob.population_grad(k, xs[k : k + 1]).norm()) < 1e-8
    b = prob.sample(0, 2, torch.Generator().manual_seed(0))
    x = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)
    b.loss(x).sum().backward()
    assert torch.allclose(b.grad(x.detach()), x.grad, atol=1e-12)


@pytest.mark.slow
def test_logistic_fit_matches_scikit_learn():
    sk = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(1)
    a = rng.normal(size=(80, 4))
    s = np.where(a[:, 0] + 0.5 * rng.normal(size=80) > 0, 1.0, -1.0)
    reg = 0.1
    ours = _logistic_fit(a, s, reg)
    ref = sk.LogisticRegression(
        C=1.0 / (reg * len(s)), fit_intercept=False, tol=1e-12, max_iter=10000
    )
    ref.fit(a, s)
    np.testing.assert_allclose(ours, ref.coef_[0], atol=1e-5)


def test_metrics():
    xs = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    X = torch.tensor([[0.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(relative_errors(X, xs)[:, 0].numpy(), [1.0, 0.25])
    assert float(tracking_error(X, xs)[0]) == pytest.approx(0.625)
    prob = DriftingLeastSquares(xs.numpy(), m=1, noise=0.0)
    assert float(dynamic_regret(X, prob)[0]) == pytest.approx(0.5 * (1.0 + 1.0))
    with pytest.raises(ValueError, match="same K"):
        tracking_error(X[:1], xs)


def test_angle_walk_is_reflected_on_the_grid():
    w = angle_walk(500, 0, sigma=10.0)
    assert w.min() >= 0 and w.max() <= 90 and w.dtype.kind == "i"
    assert np.abs(np.diff(w)).max() < 60


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"signal": np.ones((3, 4)), "m": 0}, "m must be"),
        ({"signal": np.ones(4), "m": 1}, "signal must be a non-empty 2-D"),
        ({"signal": np.array([[1.0, np.nan]]), "m": 1}, "NaN"),
        ({"signal": np.ones((3, 4)), "m": 1, "noise": -1.0}, "noise"),
        ({"signal": np.ones((3, 4)), "m": 1, "times": [0.0, 2.0, 1.0]}, "increasing"),
        ({"signal": np.ones((3, 4)), "m": 1, "times": [0.0, 1.0]}, "times must have shape"),
    ],
)
def test_least_squares_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DriftingLeastSquares(**kwargs)


def test_logistic_bad_input():
    f = np.zeros((2, 5, 3))
    lab = np.ones(5)
    with pytest.raises(ValueError, match="labels must have shape"):
        DriftingLogistic(f, np.ones(4), [0])
    with pytest.raises(ValueError, match="labels must be -1 or"):
        DriftingLogistic(f, np.zeros(5), [0])
    with pytest.raises(ValueError, match="state values"):
        DriftingLogistic(f, lab, [0, 2])
    with pytest.raises(ValueError, match="batch"):
        DriftingLogistic(f, lab, [0], batch=0)
    with pytest.raises(ValueError, match="reg"):
        DriftingLogistic(f, lab, [0], reg=0.0)
    with pytest.raises(ValueError, match="NaN"):
        DriftingLogistic(np.full((2, 5, 3), np.nan), lab, [0])


def test_scenarios_copy_the_callers_arrays():
    sig = np.ones((3, 4))
    prob = DriftingLeastSquares(sig, m=2, dtype=torch.float64)
    sig[:] = 5.0  # a later change of the caller's array must not reach the scenario
    assert torch.equal(prob.reference_path(), torch.ones(3, 4, dtype=torch.float64))
    t = torch.ones(3, 4)
    DriftingLeastSquares(t, m=2).signal.add_(1.0)
    assert torch.equal(t, torch.ones(3, 4))
    f = np.random.default_rng(0).normal(size=(2, 6, 3))
    lg = DriftingLogistic(f, np.array([1.0, -1, 1, -1, 1, -1]), [0, 1])
    f[:] = 0.0
    assert float(lg.features.abs().sum()) > 0


def test_bad_dtype_samples_and_streams():
    with pytest.raises(TypeError, match="dtype must be a floating"):
        DriftingLeastSquares(np.ones((3, 4)), m=1, dtype=torch.int64)
    with pytest.raises(TypeError, match="dtype must be a floating"):
        DriftingLogistic(np.zeros((1, 2, 3)), np.ones(2), [0], dtype="float32")
    with pytest.raises(TypeError, match="signal must be a numeric"):
        DriftingLeastSquares("abc", m=1)
    prob = DriftingLeastSquares(np.ones((3, 4)), m=1)
    g = torch.Generator()
    with pytest.raises(ValueError, match="k must be"):
        prob.sample(3, 1, g)
    with pytest.raises(ValueError, match="episodes must be"):
        prob.sample(0, -1, g)
    with pytest.raises(ValueError, match="episodes must be"):
        next(stream(prob, episodes=-1))
    with pytest.raises(TypeError, match="scenario must follow"):
        next(stream([1, 2, 3]))


def test_metrics_bad_input():
    xs = torch.ones(3, 4)
    with pytest.raises(TypeError, match="X must be a torch"):
        tracking_error(np.ones((3, 4)), xs)
    with pytest.raises(TypeError, match="xstar must be a torch"):
        relative_errors(xs, [[1.0] * 4] * 3)
    with pytest.raises(ValueError, match="zero row"):
        tracking_error(xs, torch.zeros(3, 4))
    with pytest.raises(TypeError, match="scenario must follow"):
        dynamic_regret(xs, 5)


def test_bad_decisions_name_x_not_a_torch_internal():
    prob = _ls(dtype=torch.float32)
    b = prob.sample(0, 2, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match=r"x must have shape \(2, 12\), got \(2, 5\)"):
        b.grad(torch.zeros(2, 5))
    with pytest.raises(ValueError, match=r"x must have shape \(2, 12\), got \(12,\)"):
        b.grad(torch.zeros(12))
    with pytest.raises(TypeError, match=r"x has dtype torch\.float64"):
        b.grad(torch.zeros(2, 12, dtype=torch.float64))
    assert b.grad(torch.zeros(1, 12)).shape == (2, 12)  # one decision broadcast over B
    with pytest.raises(ValueError, match=r"x must have shape \(B, 12\)"):
        prob.population_loss(0, torch.zeros(5))
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor"):
        prob.population_loss(0, np.zeros((1, 12)))
    with pytest.raises(ValueError, match="k must be"):
        prob.population_loss(6, torch.zeros(1, 12))
    with pytest.raises(TypeError, match=r"generator must be a torch\.Generator"):
        prob.sample(0, 1, 3)
    with pytest.raises(TypeError, match="seed must be an integer"):
        next(stream(prob, seed="a"))
