import pytest
import torch
from lipschitz_denoiser import (
    Blur,
    DnCNN,
    Downsample,
    Mask,
    PermutationDenoiser,
    gaussian_kernel,
    motion_kernel,
    pnp_douglas_rachford,
    pnp_forward_backward,
    train_denoiser,
)


def _operators():
    gen = torch.Generator().manual_seed(0)
    return {
        "gaussian": Blur(gaussian_kernel(7, 1.3)),
        "motion": Blur(motion_kernel(7, 30.0)),
        "asymmetric": Blur(torch.rand(3, 5, generator=gen, dtype=torch.float64)),
        "downsample": Downsample(2),
        "mask": Mask((torch.rand(16, 16, generator=gen) > 0.4).double()),
    }


@pytest.mark.parametrize("name", list(_operators()))
def test_adjoint(name):
    op = _operators()[name]
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 16, 16, generator=gen, dtype=torch.float64)
    y = torch.randn(op(x).shape, generator=gen, dtype=torch.float64)
    assert torch.allclose((op(x) * y).sum(), (x * op.adjoint(y)).sum(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", list(_operators()))
def test_norm_squared_and_prox(name):
    op = _operators()[name]
    shape = (1, 1, 16, 16)
    exact = op.norm_squared(shape)
    estimate = super(type(op), op).norm_squared(shape, iters=300) / 1.01  # power iteration
    assert estimate == pytest.approx(exact, rel=1e-4)
    gen = torch.Generator().manual_seed(2)
    v = torch.randn(*shape, generator=gen, dtype=torch.float64)
    y = op(torch.randn(*shape, generator=gen, dtype=torch.float64))
    x = op.prox_data(v, y, 0.7)
    # optimality: x - v + gamma A^T (A x - y) = 0
    assert torch.allclose(x - v + 0.7 * op.adjoint(op(x) - y), torch.zeros_like(x), atol=1e-9)
    cg = super(type(op), op).prox_data(v, y, 0.7, tol=1e-12)
    assert torch.allclose(x, cg, atol=1e-8)


def test_kernels_are_normalised():
    for k in (gaussian_kernel(9, 1.6), motion_kernel(9, 45.0), motion_kernel(4, 0.0)):
        assert k.sum().item() == pytest.approx(1.0)
        assert (k >= 0).all()
        assert k.shape[0] % 2 == 1


def _contractive_denoiser():
    torch.manual_seed(0)
    model = PermutationDenoiser(features=8, depth=3, lipschitz=0.9, grid=32).double()
    train_denoiser(model, torch.rand(32, 16, 16), steps=3, batch_size=8)
    return model.double().eval()


@pytest.mark.parametrize("op_name", ["gaussian", "downsample", "mask"])
def test_pnp_fb_converges_to_one_point_from_any_start(op_name):
    op = _operators()[op_name]
    model = _contractive_denoiser()
    gen = torch.Generator().manual_seed(3)
    x_true = torch.rand(1, 1, 16, 16, generator=gen, dtype=torch.float64)
    y = op(x_true)
    starts = [None, torch.rand(1, 1, 16, 16, generator=gen, dtype=torch.float64), -x_true]
    results = [
        pnp_forward_backward(y, op, lambda x: model(x, 0.02), iters=300, x0=x0, tol=1e-12)
        for x0 in starts
    ]
    for r in results:
        assert r.converged
        # Banach: residuals decay at least geometrically with the certified factor
        bound = float(model.lipschitz_bound())
        assert r.residuals[10] <= r.residuals[0] * bound**10 * (1 + 1e-6)
    for r in results[1:]:
        assert torch.allclose(r.x, results[0].x, atol=1e-9)


def test_pnp_dr_converges_with_firmly_nonexpansive_denoiser():
    torch.manual_seed(0)
    model = (
        PermutationDenoiser(features=8, depth=3, lipschitz=0.6, max_skip=0.5, grid=32)
        .double()
        .eval()
    )
    assert float(model.reflection_bound()) < 1.0
    op = _operators()["gaussian"]
    gen = torch.Generator().manual_seed(4)
    y = op(torch.rand(1, 1, 16, 16, generator=gen, dtype=torch.float64))
    a = pnp_douglas_rachford(y, op, lambda x: model(x, 0.02), iters=600, tol=1e-11)
    b = pnp_douglas_rachford(
        y, op, lambda x: model(x, 0.02), iters=600, tol=1e-11,
        x0=torch.rand(1, 1, 16, 16, generator=gen, dtype=torch.float64),
    )  # fmt: skip
    assert a.converged and b.converged
    assert torch.allclose(a.x, b.x, atol=1e-8)


def test_bad_input_errors():
    model = PermutationDenoiser(features=8, depth=3, grid=32, validate=True).eval()
    with pytest.raises(ValueError, match="channel"):
        model(torch.rand(1, 3, 16, 16), 0.1)
    with pytest.raises(ValueError, match="sigma"):
        model(torch.rand(1, 1, 16, 16), -0.1)
    with pytest.raises(ValueError, match="sigma is required"):
        model(torch.rand(1, 1, 16, 16))
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor"):
        model([[0.0]], 0.1)
    with pytest.raises(ValueError, match="NaN"):
        model(torch.full((1, 1, 8, 8), float("nan")), 0.1)
    with pytest.raises(ValueError, match="divisible by factor=2"):
        Downsample(2)(torch.rand(1, 1, 15, 16))
    with pytest.raises(ValueError, match="features must be even"):
        PermutationDenoiser(features=7)
    with pytest.raises(ValueError, match="lipschitz"):
        PermutationDenoiser(lipschitz=1.5)
    with pytest.raises(ValueError, match="kernel must be 2-D with odd sides"):
        Blur(torch.ones(4, 4))
    with pytest.raises(ValueError, match="only 0 and 1"):
        Mask(torch.full((4, 4), 0.5))
    with pytest.raises(ValueError, match="step must lie"):
        pnp_forward_backward(torch.rand(1, 1, 8, 8), Mask(torch.ones(8, 8)), lambda x: x, step=3.0)
    with pytest.raises(TypeError, match="operator"):
        pnp_forward_backward(torch.rand(1, 1, 8, 8), "blur", lambda x: x)
    with pytest.raises(ValueError, match="sigma"):
        DnCNN(features=8, depth=3)(torch.rand(1, 1, 8, 8), torch.tensor([0.1, -1.0]))
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        train_denoiser(model, torch.rand(8, 8, 8), sigma=-0.1, steps=1)
    with pytest.raises(ValueError, match="nonzero entry"):
        Blur(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="operator must be nonzero"):
        pnp_forward_backward(torch.rand(1, 1, 8, 8), Mask(torch.zeros(8, 8)), lambda x: x)
    with pytest.raises(ValueError, match="operator must be nonzero"):
        pnp_douglas_rachford(torch.rand(1, 1, 8, 8), Mask(torch.zeros(8, 8)), lambda x: x)
    with pytest.raises(TypeError, match="depth"):
        PermutationDenoiser(depth=2.5)
    with pytest.raises(ValueError, match="normalization"):
        PermutationDenoiser(normalization="frobenius")


def test_inputs_not_mutated():
    model = PermutationDenoiser(features=8, depth=3, grid=32).eval()
    x = torch.rand(1, 1, 16, 16)
    x0 = x.clone()
    op = Blur(gaussian_kernel(5, 1.0))
    y = op(x)
    y0 = y.clone()
    start = torch.rand(1, 1, 16, 16)
    start0 = start.clone()
    pnp_forward_backward(y, op, lambda z: model(z, 0.02), iters=3, x0=start)
    model(x, 0.1)
    assert torch.equal(x, x0) and torch.equal(y, y0) and torch.equal(start, start0)
