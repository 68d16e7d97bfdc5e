import pytest
import torch
from mplus_adam import formats as fm
from mplus_adam.formats import FORMATS, format_bits, quantize, round_to_grid


def _wide(n=20000, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g) * torch.exp(3 * torch.randn(n, generator=g))


@pytest.mark.parametrize(
    ("fmt", "dtype", "limit"),
    [
        ("bf16", torch.bfloat16, 1e30),
        ("fp8_e4m3", torch.float8_e4m3fn, 448.0),
        ("fp8_e5m2", torch.float8_e5m2, 57344.0),
    ],
)
def test_nearest_matches_torch_casts(fmt, dtype, limit):
    x = _wide().clamp(-limit, limit)
    x = torch.cat([x, torch.tensor([0.0, -0.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8])])  # ties
    assert torch.equal(round_to_grid(x, fmt), x.to(dtype).float())  # the fast path
    generic = fm._round_generic(x, fm.get_format(fmt), "nearest", None)  # the grid rule
    assert torch.equal(generic, x.to(dtype).float())


def test_nearest_saturates_beyond_fmax():
    x = torch.tensor([500.0, -1e6, 448.0])
    assert round_to_grid(x, "fp8_e4m3").tolist() == [448.0, -448.0, 448.0]
    assert round_to_grid(torch.tensor([9.0]), "fp4_e2m1").tolist() == [6.0]


def test_bf16_quantize_is_the_cast():
    x = _wide()
    assert torch.equal(quantize(x, "bf16"), x.to(torch.bfloat16).float())


def test_fp4_grid_values_round_to_themselves_and_neighbours():
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    assert torch.equal(round_to_grid(grid, "fp4_e2m1"), grid)
    assert torch.equal(round_to_grid(-grid, "fp4_e2m1"), -grid)
    x = torch.tensor([0.2, 0.3, 1.2, 2.4, 2.6, 5.1, 9.0])
    want = torch.tensor([0.0, 0.5, 1.0, 2.0, 3.0, 6.0, 6.0])  # saturates at 6
    assert torch.equal(round_to_grid(x, "fp4_e2m1"), want)
    # a block whose max is 6 keeps scale 1: the grid itself
    assert torch.equal(quantize(grid, "fp4_e2m1", block_size=8), grid)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("block_size", [None, 32, 7])
def test_quantize_is_idempotent(fmt, block_size):
    x = _wide(3 * 40).reshape(3, 40)
    q = quantize(x, fmt, block_size=block_size)
    assert q.shape == x.shape and q.dtype == x.dtype
    assert torch.equal(quantize(q, fmt, block_size=block_size), q)


def test_blocks_are_independent_and_ragged_last_block_is_padded():
    x = _wide(33).reshape(1, 33)
    x[0, 32] = 1e-3  # alone in its block: fine scale
    q = quantize(x, "fp4_e2m1", block_size=32)
    assert torch.equal(q[:, :32], quantize(x[:, :32], "fp4_e2m1", block_size=32))
    assert torch.allclose(q[0, 32], torch.tensor(1e-3), rtol=0.25)


def test_scaled_formats_use_power_of_two_scales():
    x = torch.tensor([[0.01, 0.02, -0.03, 0.005]])
    q = quantize(x, "fp8_e4m3", block_size=None)
    k = fm.scale_exponent_for(x.abs().amax().reshape(1), fm.get_format("fp8_e4m3"))
    grid = q / torch.ldexp(torch.ones(()), k.float())
    assert torch.equal(round_to_grid(grid, "fp8_e4m3"), grid)
    assert torch.allclose(q, x, rtol=2**-4)  # half a relative ulp of e4m3


@pytest.mark.parametrize(("fmt", "x"), [("bf16", 1.0 + 0.3 * 2**-7), ("fp4_e2m1", 2.3)])
def test_stochastic_rounding_is_unbiased(fmt, x):
    n = 100_000
    g = torch.Generator().manual_seed(1)
    q = round_to_grid(torch.full((n,), x), fmt, "stochastic", g).double()
    lo, hi = q.min().item(), q.max().item()
    assert lo < x < hi  # only the two neighbours
    p = (x - lo) / (hi - lo)
    sigma = (hi - lo) * (p * (1 - p) / n) ** 0.5
    assert abs(q.mean().item() - x) < 3 * sigma


def test_update_scale_exponent_changes_only_on_overflow_or_underflow():
    f = fm.get_format("fp8_e4m3")
    k = torch.tensor([0, 0, 0, 0], dtype=torch.int32)
    amax = torch.tensor([448.0, 449.0, 448.0 / 15, 448.0 / 17])
    new = fm.update_scale_exponent(amax, k, f)
    assert new.tolist() == [0, 1, 0, -4]


def test_format_bits():
    assert format_bits("bf16", 64) == 16 * 64
    assert format_bits("fp8_e4m3", 64, 32) == 8 * 64 + 2 * 8
    assert format_bits("fp4_e2m1", 33, 32) == 4 * 33 + 2 * 8
    assert format_bits("fp4_e2m1", 33, None) == 4 * 33 + 8


def test_bad_input():
    x = torch.ones(4)
    with pytest.raises(ValueError, match="fmt"):
        quantize(x, "fp6")
    with pytest.raises(ValueError, match="rounding"):
        quantize(x, "bf16", rounding="up")
    with pytest.raises(ValueError, match="block_size"):
        quantize(x, "fp4_e2m1", block_size=0)
    with pytest.raises(TypeError, match="floating"):
        quantize(torch.ones(4, dtype=torch.int64), "bf16")
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        quantize([1.0, 2.0], "bf16")


def test_docstring_examples():
    import doctest

    from mplus_adam import optim

    for module in (fm, optim):
        assert doctest.testmod(module).failed == 0, module.__name__


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2", "fp4_e2m1"])
def test_quantize_zero_dim_scaled(fmt):
    # a 0-d tensor is one padded block; it used to fail reshaping the block back to ()
    x = torch.tensor(3.3)
    q = quantize(x, fmt)
    assert q.shape == () and q.item() == quantize(x.reshape(1), fmt).item()


def test_quantize_inf_saturates_without_zeroing_its_block():
    # an inf used to make the block's scale infinite, rounding the finite entries to 0
    q = quantize(torch.tensor([float("inf"), 1.0, -float("inf")]), "fp8_e4m3")
    assert q[1].item() == 1.0  # exact: 1.0 is on the fp8 grid
    assert q[0].item() == -q[2].item() > 1.0 and torch.isfinite(q).all()


def test_bad_arguments_name_themselves():
    with pytest.raises(TypeError, match="generator"):
        quantize(torch.ones(3), "fp4_e2m1", rounding="stochastic", generator=3)
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor"):
        round_to_grid([1.0], "bf16")
    with pytest.raises(TypeError, match="floating-point"):
        round_to_grid(torch.arange(3), "fp4_e2m1")
    with pytest.raises(ValueError, match="numel"):
        format_bits("fp8_e4m3", -5)
    with pytest.raises(TypeError, match="numel"):
        format_bits("fp8_e4m3", 5.5)
    with pytest.raises(ValueError, match="block_size"):
        format_bits("fp8_e4m3", 5, 0)
