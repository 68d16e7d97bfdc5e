import itertools

import numpy as np
import pytest
from hj_prox import HJProx, Schedule, hj_prox, moreau_envelope, prox_l1


def quad(y):
    return 0.5 * (y**2).sum(-1)


def l1(y):
    return np.abs(y).sum(-1)


@pytest.mark.parametrize("n", [1000, 16000])
def test_quadratic_prox_error_scales_like_one_over_sqrt_n(n):
    # Gibbs measure of 1/2||y||^2 is N(x/(1+t), delta t/(1+t) I): unbiased for every delta,
    # self-normalized IS error ~ 1/sqrt(N)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 3))
    t, delta = 0.5, 0.5
    p = hj_prox(quad, x, t, delta=delta, n_samples=n, rng=1)
    err = np.sqrt(np.mean((p - x / (1 + t)) ** 2))
    sd = np.sqrt(delta * t / (1 + t))
    assert err < 3.0 * sd / np.sqrt(n) * 2.0  # IS inflation <= 2 at this t
    assert err > 0.1 * sd / np.sqrt(n)  # it is Monte Carlo, not exact


def test_l1_prox_approaches_soft_threshold_as_delta_shrinks_and_n_grows():
    # error = smoothing bias ~ sqrt(delta t) (large delta) + importance-sampling error that
    # grows with sqrt(t / delta) and shrinks with N (small delta)
    x = np.linspace(-2, 2, 41)[:, None]
    t = 0.2
    exact = prox_l1(x, t)

    def err(dl, n):
        return np.abs(hj_prox(l1, x, t, delta=dl, n_samples=n, rng=0) - exact).max()

    e = [err(dl, 20000) for dl in (1.0, 0.3, 0.1, 0.03)]
    assert all(a > b for a, b in itertools.pairwise(e))
    assert e[-1] < 0.07
    assert err(0.01, 20000) < 0.8 * err(0.01, 1000)


def test_envelope_closed_form_for_quadratic():
    x = np.array([[2.0, -1.0], [0.0, 0.5]])
    t, delta = 1.0, 1.0
    u, g = moreau_envelope(quad, x, t, delta=delta, n_samples=200000, rng=0, return_grad=True)
    d = x.shape[-1]
    exact = (x**2).sum(-1) / (2 * (1 + t)) + 0.5 * delta * d * np.log(1 + t)
    np.testing.assert_allclose(u, exact, atol=0.02)
    np.testing.assert_allclose(g, x / (1 + t), atol=0.02)  # grad of the envelope


def test_envelope_tends_to_moreau_envelope_of_l1():
    # Moreau envelope of |x| is the Huber function; the viscous one is above it by O(delta)
    x, t = np.array([[1.5], [0.1]]), 0.5
    huber = np.where(np.abs(x[:, 0]) > t, np.abs(x[:, 0]) - t / 2, x[:, 0] ** 2 / (2 * t))
    errs = [
        np.abs(moreau_envelope(l1, x, t, delta=dl, n_samples=50000, rng=0) - huber)
        for dl in (0.3, 0.1, 0.03)
    ]
    assert errs[0][1] > errs[1][1] > errs[2][1]
    assert errs[2].max() < 0.06


def test_huge_values_do_not_underflow():
    x = np.ones((4, 2))
    p = hj_prox(lambda y: 1e8 + 1e6 * (y**2).sum(-1), x, 1e-6, delta=1e-3, n_samples=500, rng=0)
    u = moreau_envelope(lambda y: 1e8 + (y**2).sum(-1), x, 1.0, delta=1e-3, n_samples=500, rng=0)
    assert np.all(np.isfinite(p)) and np.all(np.isfinite(u))
    np.testing.assert_allclose(u, 1e8 + 1.0, rtol=1e-6)


def test_infinite_values_get_zero_weight():
    box = lambda y: np.where(np.all(y >= 0, axis=-1), 0.0, np.inf)  # noqa: E731
    p = hj_prox(box, np.full((50, 2), 0.05), 1.0, delta=0.1, n_samples=500, rng=0)
    assert np.all(p >= 0)


def test_batched_equals_looped():
    x = np.random.default_rng(3).standard_normal((4, 5, 3))
    out = hj_prox(l1, x, 0.3, delta=0.1, n_samples=64, rng=np.random.default_rng(9), chunk_size=1)
    g = np.random.default_rng(9)
    loop = np.stack([hj_prox(l1, x.reshape(-1, 3)[i], 0.3, 0.1, 64, rng=g) for i in range(20)])
    np.testing.assert_allclose(out.reshape(-1, 3), loop, rtol=1e-12, atol=1e-12)
    assert out.shape == x.shape


def test_chunking_gives_the_same_stream():
    x = np.random.default_rng(0).standard_normal((30, 4))
    a = hj_prox(quad, x, 0.5, 0.5, 200, rng=0, chunk_size=10**9)
    b = hj_prox(quad, x, 0.5, 0.5, 200, rng=0, chunk_size=1000)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_fixed_seed_reproducible_and_antithetic_lowers_variance():
    x = np.ones((400, 1))
    a = hj_prox(quad, x, 0.5, 0.5, 50, rng=5)
    np.testing.assert_allclose(a, hj_prox(quad, x, 0.5, 0.5, 50, rng=5))
    anti = hj_prox(lambda y: y.sum(-1), x, 0.5, 0.5, 50, rng=5, antithetic=True)
    plain = hj_prox(lambda y: y.sum(-1), x, 0.5, 0.5, 50, rng=5)
    assert anti.std() < plain.std()


def test_float32_kept():
    x = np.ones((3, 2), dtype=np.float32)
    assert hj_prox(quad, x, 0.5, 0.5, 10, rng=0).dtype == np.float32


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"t": 0.0}, "t must be"),
        ({"t": -1.0}, "t must be"),
        ({"delta": 0.0}, "delta must be"),
        ({"n_samples": 0}, "n_samples must be"),
    ],
)
def test_bad_scalars_raise(kw, match):
    args = {"t": 1.0, "delta": 0.1, "n_samples": 10} | kw
    with pytest.raises(ValueError, match=match):
        hj_prox(quad, np.ones(2), **args)


def test_bad_f_raises():
    with pytest.raises(ValueError, match="shape"):
        hj_prox(lambda y: y.sum(), np.ones(2), 1.0, 0.1, 10, rng=0)
    with pytest.raises(ValueError, match="NaN"):
        hj_prox(lambda y: np.full(y.shape[:-1], np.nan), np.ones(2), 1.0, 0.1, 10, rng=0)
    with pytest.raises(ValueError, match="every sample"):
        hj_prox(lambda y: np.full(y.shape[:-1], np.inf), np.ones(2), 1.0, 0.1, 10, rng=0)
    with pytest.raises(ValueError, match="-inf"):
        hj_prox(lambda y: np.full(y.shape[:-1], -np.inf), np.ones(2), 1.0, 0.1, 10, rng=0)
    with pytest.raises(TypeError, match="callable"):
        hj_prox(3.0, np.ones(2), 1.0)
    with pytest.raises(ValueError, match="finite"):
        hj_prox(quad, np.array([np.nan, 1.0]), 1.0)
    with pytest.raises(ValueError, match="shape"):
        hj_prox(quad, np.ones((3, 0)), 1.0)
    with pytest.raises(TypeError, match="rng"):
        hj_prox(quad, np.ones(2), 1.0, rng="seed")


def test_hjprox_counts_and_separable():
    pr = HJProx(lambda y: np.abs(y[..., 0]), delta=0.01, n_samples=2000, rng=0, separable=True)
    x = np.array([2.0, -0.1, 0.7])
    np.testing.assert_allclose(pr(x, 0.1), prox_l1(x, 0.1), atol=0.04)
    assert pr.n_fevals == 3 * 2000 and pr.n_calls == 1
    with pytest.raises(ValueError, match="delta"):
        HJProx(l1, delta=-1.0)
    with pytest.raises(TypeError, match="schedule"):
        HJProx(l1, schedule=3)


def test_schedule():
    s = Schedule(n0=10, growth=2.0, n_max=50, delta0=0.1, decay=0.5, delta_min=0.01)
    assert s(0) == (10, pytest.approx(0.1))
    assert s(1) == (20, pytest.approx(0.05))
    assert s(10) == (50, pytest.approx(0.01))
    pr = HJProx(l1, schedule=s, rng=0)
    pr(np.ones(2), 0.1)
    pr(np.ones(2), 0.1)
    assert pr.n_fevals == 30 and pr.current() == (40, pytest.approx(0.025))
    with pytest.raises(ValueError, match="decay"):
        Schedule(decay=1.5)
    with pytest.raises(ValueError, match="n_max"):
        Schedule(n0=10, n_max=5)


def test_torch_backend_matches_numpy_statistically():
    torch = pytest.importorskip("torch")
    x = torch.linspace(-2, 2, 9, dtype=torch.float64)[:, None]
    p = hj_prox(lambda y: y.abs().sum(-1), x, 0.2, delta=0.05, n_samples=20000, rng=0)
    assert isinstance(p, torch.Tensor) and p.dtype == torch.float64
    q = hj_prox(l1, x.numpy(), 0.2, delta=0.05, n_samples=20000, rng=0)
    exact = prox_l1(x.numpy(), 0.2)
    np.testing.assert_allclose(p.numpy(), exact, atol=0.05)
    np.testing.assert_allclose(q, exact, atol=0.05)
    g = torch.Generator().manual_seed(1)
    a = hj_prox(quad, x, 0.5, 0.5, 100, rng=g)
    b = hj_prox(quad, x, 0.5, 0.5, 100, rng=torch.Generator().manual_seed(1))
    torch.testing.assert_close(a, b)
    _, grad = moreau_envelope(quad, x, 1.0, 1.0, 50000, rng=0, return_grad=True)
    torch.testing.assert_close(grad, x / 2, atol=0.03, rtol=0)
    pr = HJProx(quad, delta=0.5, n_samples=100, rng=0)
    assert pr(x, 0.5).shape == x.shape


@pytest.mark.gpu
def test_torch_cuda_device_kept():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA")
    x = torch.ones(8, 3, device="cuda")
    assert hj_prox(quad, x, 0.5, 0.5, 100, rng=0).device.type == "cuda"
