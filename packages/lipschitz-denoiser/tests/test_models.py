import pytest
import torch
from lipschitz_denoiser import (
    Blur,
    PermutationDenoiser,
    as_deepinv_denoiser,
    deepinv_dncnn,
    gaussian_kernel,
    jacobian_penalty,
)


def _model(**kw):
    torch.manual_seed(0)
    return PermutationDenoiser(features=8, depth=3, grid=32, **kw).eval()


def test_empty_batch_gives_empty_output():
    out = _model()(torch.rand(0, 1, 16, 16), 0.1)
    assert out.shape == (0, 1, 16, 16)


def test_noise_maps_match_scalars_and_vary_per_pixel():
    model = _model()
    x = torch.rand(2, 1, 12, 12)
    ref = model(x, 0.1)
    assert torch.allclose(model(x, torch.full((2, 1, 12, 12), 0.1)), ref, atol=1e-6)
    assert torch.allclose(model(x, torch.tensor([0.1, 0.1])), ref, atol=1e-6)
    ramp = torch.linspace(0, 0.2, 12).expand(2, 1, 12, 12)
    assert not torch.allclose(model(x, ramp), ref, atol=1e-4)
    with pytest.raises(ValueError, match="noise map"):
        model(x, torch.rand(2, 1, 5, 5))


def test_lipschitz_in_x_holds_under_a_noise_map():
    model = _model().double()
    gen = torch.Generator().manual_seed(1)
    x, y = (torch.rand(4, 1, 12, 12, generator=gen, dtype=torch.float64) for _ in range(2))
    sig = torch.rand(4, 1, 12, 12, generator=gen, dtype=torch.float64) * 0.2
    num = (model(x, sig) - model(y, sig)).flatten(1).norm(dim=1)
    assert bool((num <= (x - y).flatten(1).norm(dim=1) * float(model.lipschitz_bound())).all())


def test_values_are_checked_only_in_debug_mode():
    nan = torch.full((1, 1, 8, 8), float("nan"))
    assert torch.isnan(_model()(nan, 0.1)).all()  # no data-dependent check, no sync
    with pytest.raises(ValueError, match="NaN"):
        _model(validate=True)(nan, 0.1)
    with pytest.raises(ValueError, match="sigma"):
        _model()(torch.rand(1, 1, 8, 8), -0.1)  # a Python number is checked on the host
    with pytest.raises(ValueError, match=">= 0"):
        _model(validate=True)(torch.rand(1, 1, 8, 8), torch.tensor([-0.1]))


def test_compiles_with_fullgraph():
    model = _model()
    x = torch.rand(2, 1, 16, 16)
    expected = model(x, 0.1)  # eager call fills the cache of maximising frequencies
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    assert torch.allclose(compiled(x, 0.1), expected, atol=1e-6)


def test_autocast_rounds_the_weight_within_the_bound():
    model = _model()
    x = torch.rand(1, 1, 16, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x, 0.1)
        hidden = model.convs[0](torch.rand(1, 2, 16, 16))
    assert hidden.dtype == torch.bfloat16  # the convolutions ran in bf16
    assert torch.allclose(out.float(), model(x, 0.1), atol=0.05)
    for conv in model.convs:
        assert float(conv.lipschitz_bound(torch.bfloat16)) <= 1.0


def test_deepinv_wrapper_in_deepinv_pnp():
    dinv = pytest.importorskip("deepinv")
    model = _model()
    den = as_deepinv_denoiser(model)
    assert isinstance(den, dinv.models.Denoiser)
    x = torch.rand(1, 1, 16, 16)
    prior = dinv.optim.PnP(denoiser=den)
    assert torch.allclose(prior.prox(x, sigma_denoiser=0.05), model(x, 0.05))
    physics = dinv.physics.BlurFFT(img_size=(1, 16, 16), filter=gaussian_kernel(5, 1.0)
                                   .float()[None, None])  # fmt: skip
    y = physics(x)
    ours = Blur(gaussian_kernel(5, 1.0))
    assert torch.allclose(y, ours(x).float(), atol=1e-5)  # the same circular blur
    solver = dinv.optim.optim_builder(
        iteration="PGD", prior=prior, data_fidelity=dinv.optim.L2(), max_iter=30,
        params_algo={"stepsize": 1.0, "g_param": 0.05, "lambda": 1.0}, early_stop=False,
    )  # fmt: skip
    with torch.no_grad():
        xhat = solver(y, physics)
    assert xhat.shape == x.shape and torch.isfinite(xhat).all()


def test_deepinv_dncnn_is_residual_and_noise_conditional():
    pytest.importorskip("deepinv")
    net = deepinv_dncnn(1, 8, 3)
    with torch.no_grad():
        net.net.out_conv.weight.zero_()
        net.net.out_conv.bias.zero_()
    x = torch.rand(2, 1, 8, 8)
    assert torch.allclose(net(x, 0.1), x)  # D(x) = x + R(x) with R = 0


def test_jacobian_penalty_of_a_linear_map():
    pytest.importorskip("deepinv")
    pen = jacobian_penalty(max_iter=20, eps=0.05, points=2)

    def scaled(a):
        return lambda x, sigma: a * x

    clean = torch.rand(4, 1, 6, 6)
    noisy = clean + 0.1
    sig = torch.full((4,), 0.1)
    assert float(pen(scaled(1.5), clean, noisy, sig)) == pytest.approx(2.25, rel=1e-4)
    assert float(pen(scaled(0.5), clean, noisy, sig)) == pytest.approx(0.95, rel=1e-6)
