import pytest
import torch
from lipschitz_denoiser import (
    DnCNN,
    MaxMin,
    PermutationConv2d,
    PermutationDenoiser,
    adversarial_lipschitz,
    certify_lipschitz,
    conv_operator_norm,
    schur_bound,
    torus_norm_bound,
    train_denoiser,
)


def _power_iteration_norm(layer, shape, iters=300):
    """Operator norm of the linear part of a layer by power iteration with autograd."""
    layer = layer.double()
    gen = torch.Generator().manual_seed(1)
    v = torch.randn(*shape, generator=gen, dtype=torch.float64)
    bias = layer(torch.zeros_like(v)).detach()
    sigma = 0.0
    for _ in range(iters):
        v = (v / v.norm()).requires_grad_(True)
        out = layer(v) - bias
        (g,) = torch.autograd.grad(out, v, out.detach())  # A^T A v
        sigma = float(out.detach().norm())
        v = g.detach()
    return sigma


@pytest.mark.parametrize("normalization", ["spectral", "schur"])
def test_fft_norm_matches_power_iteration(normalization):
    torch.manual_seed(0)
    layer = PermutationConv2d(3, 4, 3, normalization=normalization, grid=32)
    with torch.no_grad():
        layer.weight.normal_()  # random weights: a clear spectral gap for power iteration
    layer = layer.double().eval()
    w = layer.normalized_weight().detach()
    exact = conv_operator_norm(w, (12, 12))
    assert abs(exact - _power_iteration_norm(layer, (1, 3, 12, 12))) < 1e-6
    assert exact <= float(schur_bound(w.double())) + 1e-12


def test_known_operator_norms():
    avg = torch.ones(1, 1, 3, 3) / 9
    assert conv_operator_norm(avg, (8, 8)) == pytest.approx(1.0)
    ident = torch.zeros(2, 2, 3, 3)
    ident[0, 0, 1, 1] = ident[1, 1, 1, 1] = 1.0
    assert conv_operator_norm(ident, (8, 8)) == pytest.approx(1.0)
    assert float(schur_bound(ident)) == pytest.approx(1.0)


@pytest.mark.parametrize("normalization", ["spectral", "schur"])
@pytest.mark.parametrize("scale", [0.01, 1.0, 100.0])
def test_layer_norm_at_most_one_for_any_weights(scale, normalization):
    torch.manual_seed(1)
    layer = PermutationConv2d(4, 6, 3, normalization=normalization, grid=32).eval()
    with torch.no_grad():
        layer.weight.normal_().mul_(scale)
    w = layer.normalized_weight().detach()
    assert float(layer.lipschitz_bound()) <= 1.0
    for size in [(3, 3), (7, 5), (10, 10), (31, 64)]:  # odd, rectangular, large lattices
        assert conv_operator_norm(w, size) <= 1.0


def test_torus_bound_is_a_tight_upper_bound_on_every_lattice():
    torch.manual_seed(5)
    w = torch.randn(3, 5, 3, 3, dtype=torch.float64)
    bound = torus_norm_bound(w, grid=64)
    norms = [conv_operator_norm(w, (h, v)) for h, v in [(3, 3), (8, 8), (17, 23), (97, 89)]]
    assert max(norms) <= bound
    fine = conv_operator_norm(w, (256, 256))  # nearly the sup over the torus
    assert bound <= fine * 1.0098 * (1 + 1e-9)  # Bernstein's factor for 3x3 kernels, grid 64


def test_spectral_layers_are_tight_schur_layers_are_not():
    # a dense mixed-sign kernel: Schur's bound is loose, the spectral one is not
    torch.manual_seed(6)
    spec = PermutationConv2d(8, 8, 3, grid=64).eval()
    schur = PermutationConv2d(8, 8, 3, normalization="schur").eval()
    with torch.no_grad():
        spec.weight.normal_()
        schur.weight.copy_(spec.weight)
    n_spec = conv_operator_norm(spec.normalized_weight().detach(), (64, 64))
    n_schur = conv_operator_norm(schur.normalized_weight().detach(), (64, 64))
    assert 0.99 <= n_spec <= 1.0
    assert n_schur < 0.5


@pytest.mark.parametrize(("dtype", "features", "floor"), [
    (torch.float16, 16, 0.995), (torch.bfloat16, 16, 0.99), (torch.float32, 128, 0.9999),
])  # fmt: skip
def test_rounding_margin_keeps_the_gain(dtype, features, floor):
    # An exact identity kernel has norm 1 and Schur's bound 1, so what the normalisation
    # removes is the rounding margin alone: it must cost at ulp level, not n * eps (the
    # earlier margin left 0.31 in fp16, 0.05 in bf16, 0.983 in fp32 at 128 features).
    layer = PermutationConv2d(features, features, 3, normalization="schur").eval()
    with torch.no_grad():
        layer.weight.zero_()
        layer.weight[range(features), range(features), 1, 1] = 1.0
    w = layer.normalized_weight(dtype).detach()
    assert w.dtype == dtype
    norm = conv_operator_norm(w.double(), (8, 8))  # the stored low-precision values, exactly
    assert floor <= norm <= 1.0
    assert float(layer.lipschitz_bound(dtype)) <= 1.0


def test_half_precision_weights_stay_nonexpansive():
    torch.manual_seed(7)
    layer = PermutationConv2d(6, 6, 3, grid=32).eval()
    with torch.no_grad():
        layer.weight.normal_()
    for dtype in (torch.float16, torch.bfloat16):
        w = layer.normalized_weight(dtype).detach().double()
        assert conv_operator_norm(w, (16, 16)) <= 1.0


def test_training_estimate_converges_to_the_exact_bound():
    torch.manual_seed(8)
    layer = PermutationConv2d(6, 6, 3, grid=32)
    with torch.no_grad():
        layer.weight.normal_()
    layer.train()
    for _ in range(40):  # power steps on a fixed weight, refreshed every 8 forwards
        est = float(layer.norm_bound().detach())
    exact = float(layer.norm_bound(exact=True).detach())
    assert est <= exact * (1 + 1e-9)
    assert est >= exact * (1 - 1e-3)


def test_every_layer_nonexpansive_after_training_steps():
    torch.manual_seed(2)
    model = PermutationDenoiser(features=8, depth=4, grid=32)
    patches = torch.rand(64, 16, 16)
    for _ in range(3):
        # a large learning rate pushes raw weights far; the bound must still hold
        train_denoiser(model, patches, sigma=(0.0, 0.2), steps=5, batch_size=8, lr=0.5)
        for conv in model.convs:
            w = conv.normalized_weight().detach()
            assert conv_operator_norm(w, (16, 16)) <= 1.0
            assert float(conv.lipschitz_bound()) <= 1.0
        assert float(model.lipschitz_bound()) <= 1.0


def test_maxmin_is_a_permutation():
    x = torch.randn(3, 6, 5, 5)
    y = MaxMin()(x)
    assert torch.allclose(y.sort(dim=1).values, x.sort(dim=1).values)
    assert torch.allclose(y.norm(), x.norm())
    with pytest.raises(ValueError, match="even"):
        MaxMin()(torch.randn(1, 3, 4, 4))


def test_adversarial_search_never_beats_one():
    torch.manual_seed(3)
    model = PermutationDenoiser(features=8, depth=4, grid=32).eval()
    with torch.no_grad():
        for conv in model.convs:
            conv.weight.mul_(5.0)  # saturate every layer's normalisation
        model.skip_logit.fill_(5.0)
    cert = certify_lipschitz(model, (12, 12), sigma=0.1, n_starts=6, steps=60, lr=0.05)
    assert cert.certified_bound <= 1.0
    # saturated layers are tight up to Bernstein's factor (1.041 at grid 32; Schur gave ~0.3)
    assert max(cert.layer_norms) > 0.999 / model.convs[0].grid_factor
    assert cert.empirical_lower_bound <= 1.0 + 1e-5
    assert cert.empirical_lower_bound > 0.1  # the search did find large ratios
    assert cert.consistent


def test_adversarial_search_finds_the_norm_of_a_linear_map():
    w = torch.zeros(1, 1, 3, 3, dtype=torch.float64)
    w[0, 0, 1, 1], w[0, 0, 1, 2] = 1.0, -1.0  # finite difference: norm 2 on an even torus
    fn = lambda z: torch.nn.functional.conv2d(  # noqa: E731
        torch.nn.functional.pad(z, (1, 1, 1, 1), mode="circular"), w
    )
    lower = adversarial_lipschitz(fn, torch.rand(4, 1, 8, 8, dtype=torch.float64), steps=200)
    assert lower <= conv_operator_norm(w, (8, 8)) + 1e-9
    assert lower > 1.9


def test_dncnn_certificate_is_an_upper_bound():
    torch.manual_seed(4)
    model = DnCNN(features=8, depth=3)
    cert = certify_lipschitz(model, (12, 12), sigma=0.1, n_starts=4, steps=40)
    assert cert.reflection_bound is None
    assert cert.empirical_lower_bound <= cert.certified_bound
    sn = DnCNN(features=8, depth=3, spectral_norm=True)
    sn.eval()
    assert len(certify_lipschitz(sn, (12, 12), sigma=0.1, steps=0).layer_norms) == 3


def test_reflection_bound_below_one_with_half_skip():
    model = PermutationDenoiser(features=8, depth=3, lipschitz=0.9, max_skip=0.5, grid=32)
    assert float(model.reflection_bound()) < 1.0
    assert float(model.lipschitz_bound()) < 1.0


def test_certificate_for_any_module_is_infinite():
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 1, 3, padding=1))
    cert = certify_lipschitz(
        _Ignore(net), (8, 8), inputs=torch.rand(2, 1, 8, 8, dtype=torch.float64), steps=5
    )
    assert cert.certified_bound == float("inf") and cert.consistent
    assert cert.empirical_lower_bound > 0


class _Ignore(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, sigma=None):
        return self.net(x)
