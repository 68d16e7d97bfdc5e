import numpy as np
import pytest
import score_anisotropy as sa
import torch
from torch import nn


class Linear(nn.Module):
    """f(x, t) = W x + b: J J^T = (|x|^2 + 1) I per input."""

    def __init__(self, d):
        super().__init__()
        self.dim = d
        self.lin = nn.Linear(d, d)

    def forward(self, x, t):
        return self.lin(x)


class Tiny(nn.Module):
    def __init__(self, d=4, h=3):
        super().__init__()
        self.dim = d
        self.a = nn.Linear(d + 1, h)
        self.b = nn.Linear(h, d)

    def forward(self, x, t):
        return self.b(torch.tanh(self.a(torch.cat([x, t[:, None]], 1))))


def _fd_jacobian(model, x, t, h=1e-6):
    params = [p for p in model.parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    cols = []
    for j in range(flat.numel()):
        out = []
        for sgn in (1, -1):
            v = flat.clone()
            v[j] += sgn * h
            torch.nn.utils.vector_to_parameters(v, params)
            with torch.no_grad():
                out.append(model(x, t)[0])
        cols.append((out[0] - out[1]) / (2 * h))
    torch.nn.utils.vector_to_parameters(flat, params)
    return torch.stack(cols, 1)  # (D, P)


def test_jacrev_ntk_equals_finite_differences_and_is_symmetric_psd():
    torch.manual_seed(0)
    m = Tiny().double()
    x = torch.randn(3, 4, dtype=torch.float64)
    t = torch.rand(3, dtype=torch.float64)
    K = sa.empirical_ntk(m, x, t, chunk=2)
    Js = [_fd_jacobian(m, x[i : i + 1], t[i : i + 1]) for i in range(3)]
    K_fd = sum(J @ J.T for J in Js).numpy() / 3
    np.testing.assert_allclose(K, K_fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(K, K.T, atol=1e-14)
    assert np.linalg.eigvalsh(K).min() > -1e-12


def test_linear_model_has_its_closed_form_kernel():
    m = Linear(5).double()
    x = torch.randn(7, 5, dtype=torch.float64)
    K = sa.empirical_ntk(m, x, torch.zeros(7, dtype=torch.float64))
    expected = (float((x**2).sum(1).mean()) + 1.0) * np.eye(5)
    np.testing.assert_allclose(K, expected, rtol=1e-12, atol=1e-12)


def test_circular_cnn_kernel_is_diagonalized_by_the_dft():
    torch.manual_seed(0)
    side = 6
    m = sa.ScoreCNN(side * side, channels=4, kernel=3, padding_mode="circular").double()
    img = torch.randn(side, side, dtype=torch.float64)
    shifts = [torch.roll(img, (a, b), (0, 1)).reshape(-1) for a in range(side) for b in range(side)]
    x = torch.stack(shifts)  # every cyclic shift: the average kernel is shift-invariant
    K = sa.empirical_ntk(m, x, torch.full((len(x),), 0.3, dtype=torch.float64), chunk=12)
    F1 = np.fft.fft(np.eye(side)) / np.sqrt(side)
    F = np.kron(F1, F1)
    M = F.conj().T @ K @ F
    off = M - np.diag(np.diag(M))
    assert np.linalg.norm(off) / np.linalg.norm(M) < 1e-6
    # and K is block circulant: K[i + s, j + s] = K[i, j] on the torus
    idx = np.arange(side * side).reshape(side, side)
    sh = np.roll(idx, (1, 2), (0, 1)).reshape(-1)
    np.testing.assert_allclose(K[np.ix_(sh, sh)], K, atol=1e-10 * np.abs(K).max())


def test_mlp_at_init_is_nearly_isotropic_and_cnn_is_not():
    X = np.random.default_rng(0).standard_normal((64, 16))
    mlp, cnn = [], []
    for seed in range(3):
        torch.manual_seed(seed)
        mlp.append(sa.sad(sa.ScoreMLP(16, width=64), X, n_inputs=4, seed=seed).anisotropy)
        torch.manual_seed(seed)
        cnn.append(sa.sad(sa.ScoreCNN(16, channels=8), X, n_inputs=4, seed=seed).anisotropy)
    assert np.mean(mlp) < 2.0
    assert np.mean(cnn) > 3 * np.mean(mlp)


def test_lanczos_matches_exact_on_top_eigenvalues():
    torch.manual_seed(0)
    m = sa.ScoreCNN(64, channels=8).double()
    X = np.random.default_rng(1).standard_normal((32, 64))
    ex = sa.sad(m, X, n_inputs=6, seed=3)
    lz = sa.sad(m, X, n_inputs=6, seed=3, k=16, method="lanczos", trace_probes=64)
    np.testing.assert_allclose(lz.eigenvalues, ex.eigenvalues[:16], rtol=1e-2)
    overlap = np.abs(np.sum(lz.directions[:, :3] * ex.directions[:, :3], axis=0))
    assert overlap.min() > 0.99
    assert lz.trace == pytest.approx(ex.trace, rel=0.3)  # Hutchinson estimate


def test_block_lanczos_matches_exact_on_top_eigenvalues_and_directions():
    torch.manual_seed(0)
    m = sa.ScoreCNN(64, channels=8).double()
    X = np.random.default_rng(1).standard_normal((32, 64))
    ex = sa.sad(m, X, n_inputs=6, seed=3)
    bk = sa.sad(m, X, n_inputs=6, seed=3, k=16, method="block", trace_probes=8)
    assert bk.method == "block" and bk.directions.shape == (64, 16)
    np.testing.assert_allclose(bk.eigenvalues, ex.eigenvalues[:16], rtol=1e-3)
    overlap = np.abs(np.sum(bk.directions[:, :3] * ex.directions[:, :3], axis=0))
    assert overlap.min() > 0.999
    np.testing.assert_allclose(bk.directions.T @ bk.directions, np.eye(16), atol=1e-8)


@pytest.mark.parametrize(
    "make",
    [
        lambda: sa.ScoreCNN(16, channels=4),
        # the other two trace their own linearization: slow, for the 30 s budget
        pytest.param(lambda: sa.ScoreMLP(16, width=8), marks=pytest.mark.slow),
        pytest.param(
            lambda: sa.ScoreViT(16, patch=2, width=8, depth=1, heads=2), marks=pytest.mark.slow
        ),
    ],
)
def test_matvec_single_vectors_and_blocks_equal_the_exact_kernel(make):
    # one vector goes through the kept linearization, a block through vmapped vjp/jvp
    torch.manual_seed(0)
    m = make().double()
    rng = np.random.default_rng(0)
    x = torch.as_tensor(rng.standard_normal((5, 16)))
    t = torch.as_tensor(rng.uniform(0.1, 1.0, 5))
    K = sa.empirical_ntk(m, x, t)
    mv = sa.ntk_matvec(m, x, t, chunk=2, col_chunk=3)  # chunks of inputs and columns
    V = rng.standard_normal((16, 4))
    for _ in range(2):  # the second call reuses the linearization
        np.testing.assert_allclose(mv(V[:, 0]), K @ V[:, 0], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(mv(V), K @ V, rtol=1e-9, atol=1e-10)


def test_block_krylov_started_from_known_products_spends_none_on_them():
    from score_anisotropy.sad import _block_krylov

    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.standard_normal((60, 60)))
    lam = 0.6 ** np.arange(60)
    A = (Q * lam) @ Q.T
    Z = rng.choice([-1.0, 1.0], size=(60, 12))
    calls = []

    def mv(V):
        calls.append(V.shape[1])
        return A @ V

    top, U = _block_krylov(mv, 60, 4, rng, start=(Z, A @ Z))
    np.testing.assert_allclose(top, lam[:4], rtol=1e-6)
    np.testing.assert_allclose(np.abs(np.sum(U * Q[:, :4], axis=0)), 1.0, atol=1e-5)
    assert calls and calls[0] == 12 and sum(calls) < 60  # no product of the start block
    calls.clear()
    _block_krylov(mv, 60, 4, rng, start=(Z[:, :5], A @ Z[:, :5]))  # fewer than b = 12
    assert calls[0] == 7  # only the Gaussian top-up is multiplied first


def test_block_krylov_on_a_known_spectrum_stops_early():
    from score_anisotropy.sad import _block_krylov

    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((100, 100)))
    lam = 0.7 ** np.arange(100)
    A = (Q * lam) @ Q.T
    calls = []

    def mv(V):
        calls.append(V.shape[1])
        return A @ V

    top, U = _block_krylov(mv, 100, 4, rng)
    np.testing.assert_allclose(top, lam[:4], rtol=1e-6)
    np.testing.assert_allclose(np.abs(np.sum(U * Q[:, :4], axis=0)), 1.0, atol=1e-5)
    assert sum(calls) < 100  # fewer products than D


def test_alignment_is_one_for_isotropic_data_and_large_for_aligned_data():
    rng = np.random.default_rng(0)
    lam = np.linspace(2, 1, 8)
    U = np.linalg.qr(rng.standard_normal((8, 8)))[0]
    r = sa.SADResult(lam, U, 2.0, 7.0, lam.sum(), "jacrev")
    iso = sa.alignment(r, rng.standard_normal((20000, 8)), k=2)
    assert iso["top_k"] == pytest.approx(1.0, abs=0.05)
    assert iso["weighted"] == pytest.approx(1.0, abs=0.05)
    on_top = rng.standard_normal((500, 2)) @ U[:, :2].T
    assert sa.alignment(r, on_top, k=2)["top_k"] == pytest.approx(4.0, rel=1e-6)  # D / k


def test_dct_basis_is_orthonormal_and_frequencies_are_right():
    B = sa.dct_basis(8)
    np.testing.assert_allclose(B.T @ B, np.eye(64), atol=1e-12)
    f = sa.dct_frequency(B)
    a, b = np.divmod(np.arange(64), 8)
    np.testing.assert_allclose(f, a + b, atol=1e-10)
    assert f.mean() == pytest.approx(7.0)


@pytest.mark.parametrize(
    "make", [lambda: sa.ScoreMLP(16), lambda: sa.ScoreCNN(16), lambda: sa.ScoreViT(16)]
)
def test_models_map_b_by_d_to_b_by_d(make):
    m = make()
    out = m(torch.randn(3, 16), torch.rand(3))
    assert out.shape == (3, 16)


def test_bad_input_raises_naming_the_argument():
    m = sa.ScoreMLP(16, width=8)
    X = np.zeros((10, 16))
    with pytest.raises(ValueError, match="X has D = 9"):
        sa.sad(m, np.zeros((10, 9)))
    with pytest.raises(ValueError, match="k must be"):
        sa.sad(m, X, k=17)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        sa.sad(m, bad)
    frozen = sa.ScoreMLP(16, width=8).requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        sa.sad(frozen, X)
    with pytest.raises(ValueError, match="method must be one of"):
        sa.sad(m, X, method="svd")
    with pytest.raises(TypeError, match=r"model must be a torch\.nn\.Module"):
        sa.sad("mlp", X)
    with pytest.raises(ValueError, match="dim must be a square"):
        sa.ScoreCNN(15)
    with pytest.raises(ValueError, match="B has D = 3"):
        sa.w2_exact(np.zeros((4, 2)), np.zeros((4, 3)))


def test_bad_kernel_inputs_and_seeds_raise_naming_the_argument():
    m = sa.ScoreMLP(16, width=8)
    x, t = torch.zeros(2, 16), torch.zeros(2)
    with pytest.raises(ValueError, match="x has D = 9 columns"):
        sa.empirical_ntk(m, torch.zeros(2, 9), t)
    with pytest.raises(ValueError, match="x must have the model's dtype"):
        sa.empirical_ntk(m, x.double(), t.double())
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor"):
        sa.empirical_ntk(m, np.zeros((2, 16)), t)
    with pytest.raises(TypeError, match=r"t must be a torch\.Tensor"):
        sa.ntk_matvec(m, x, np.zeros(2))
    with pytest.raises(ValueError, match=r"v must have shape \(16,\)"):
        sa.ntk_matvec(m, x, t)(np.ones(5))
    X = np.zeros((10, 16))
    with pytest.raises(TypeError, match="seed must be an integer"):
        sa.sad(m, X, seed="a")
    with pytest.raises(ValueError, match="trace_probes must be"):
        sa.sad(m, X, method="lanczos", trace_probes=0)
    with pytest.raises(TypeError, match="seed must be an integer"):
        sa.train_ddpm(m, X, 1, seed=1.5)
    with pytest.raises(TypeError, match="directions must be numeric"):
        sa.dct_frequency([["a"]])
    with pytest.raises(ValueError, match="directions has a zero"):
        sa.per_direction_wasserstein(np.ones((3, 4)), np.ones((3, 4)), np.zeros((4, 1)))


def test_spectral_stats_chunk_and_foreign_d_errors_name_the_argument():
    # review: an empty spectrum gave numpy's "zero-size array" error, chunk=0 was taken as
    # None, and w2_exact's D mismatch spoke of "the model's D" (it has no model)
    with pytest.raises(ValueError, match=r"eigenvalues must have shape"):
        sa.spectral_stats(np.array([]))
    with pytest.raises(ValueError, match="eigenvalues contains NaN"):
        sa.spectral_stats(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="no positive entry"):
        sa.spectral_stats(np.zeros(3))
    assert sa.spectral_stats(np.array([2.0, 0.0])) == pytest.approx((2.0, 1.0), rel=1e-12)
    m = sa.ScoreMLP(16, width=8)
    with pytest.raises(ValueError, match="chunk must be an integer >= 1"):
        sa.sad(m, np.zeros((10, 16)), n_inputs=2, chunk=0)
    with pytest.raises(ValueError, match=r"B has D = 3 columns, expected 2 \(the D of A\)"):
        sa.w2_exact(np.zeros((4, 2)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"expected 2 \(the D of gen\)"):
        sa.sliced_w2(np.zeros((4, 2)), np.zeros((4, 3)), np.eye(2))


class _Out(nn.Module):
    """A linear model with a declared D of 6 whose output has ``out`` columns, times ``scale``."""

    dim = 6

    def __init__(self, out=6, scale=1.0):
        super().__init__()
        self.lin, self.scale = nn.Linear(6, out), scale

    def forward(self, x, t):
        return self.lin(x) * self.scale


@pytest.mark.parametrize("method", ["jacrev", "lanczos", "block"])
def test_a_model_with_a_wrong_or_non_finite_output_raises_naming_the_model(method):
    # review: a model with the wrong output size raised torch's reshape/vjp error, one
    # with NaN outputs numpy's LinAlgError or ARPACK's error -9999
    X = np.random.default_rng(0).standard_normal((10, 6))
    k = None if method == "jacrev" else 2
    with pytest.raises(ValueError, match=r"model must map x of shape \(B, D\) to \(B, D\)"):
        sa.sad(_Out(out=4), X, n_inputs=2, k=k, method=method, trace_probes=2)
    with pytest.raises(ValueError, match="model gives a non-finite tangent kernel"):
        sa.sad(_Out(scale=float("nan")), X, n_inputs=2, k=k, method=method, trace_probes=2)
