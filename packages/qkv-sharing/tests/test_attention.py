import math

import pytest
import torch
from qkv_sharing import (
    SHARING_VARIANTS,
    SharedProjectionAttention,
    cache_nbytes,
    cache_tensors_per_layer,
)
from transformers import DynamicCache, LlamaConfig
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding

LAYOUTS = [4, 2, 1]  # MHA, GQA (2 groups of 2), MQA for 4 query heads


def _x(b=2, t=7, d=32, seed=0):
    return torch.randn(b, t, d, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("sharing", SHARING_VARIANTS)
@pytest.mark.parametrize("n_kv", LAYOUTS)
def test_shapes_and_parameter_counts(sharing, n_kv):
    attn = SharedProjectionAttention(32, 4, n_kv, sharing=sharing)
    assert attn(_x()).shape == (2, 7, 32)
    q, k, v = attn.project(_x())
    assert q.shape == (2, 4, 7, 8) and k.shape == v.shape == (2, n_kv, 7, 8)
    kv_width = n_kv * 8
    n_proj = {
        "qkv": 32 + 2 * kv_width,
        "q-k=v": 32 + kv_width,
        "q=k-v": 2 * kv_width,
        "q=k=v": kv_width,
    }[sharing]
    assert sum(p.numel() for p in attn.parameters()) == 32 * n_proj + 32 * 32


def _manual_attention(q, k, v, causal):
    """softmax(q k^T / sqrt(d) + mask) v, written out; q (b,h,t,d), k/v (b,h,t,d)."""
    logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        t = q.shape[-2]
        logits = logits.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), -math.inf)
    return torch.softmax(logits, dim=-1) @ v


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("n_kv", LAYOUTS)
def test_qkv_equals_hand_computed_attention(causal, n_kv):
    attn = SharedProjectionAttention(32, 4, n_kv, sharing="qkv", causal=causal, rope=False)
    x = _x()
    heads = lambda t, n: t.view(2, 7, n, 8).transpose(1, 2)  # noqa: E731
    q = heads(x @ attn.q_proj.weight.T, 4)
    k = heads(x @ attn.k_proj.weight.T, n_kv).repeat_interleave(4 // n_kv, dim=1)
    v = heads(x @ attn.v_proj.weight.T, n_kv).repeat_interleave(4 // n_kv, dim=1)
    out = _manual_attention(q, k, v, causal).transpose(1, 2).reshape(2, 7, 32)
    torch.testing.assert_close(attn(x), out @ attn.o_proj.weight.T, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("n_kv", LAYOUTS)
def test_qkv_equals_transformers_llama_attention(n_kv):
    config = LlamaConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=n_kv,
        num_hidden_layers=1,
        intermediate_size=64,
        vocab_size=10,
    )
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    ref = LlamaAttention(config, 0).eval()
    ours = SharedProjectionAttention(32, 4, n_kv).eval()
    ours.load_state_dict(ref.state_dict())
    x = _x()
    cos_sin = LlamaRotaryEmbedding(config)(x, torch.arange(7)[None])
    mask = torch.full((7, 7), -math.inf).triu(1)[None, None]
    expected, _ = ref(x, cos_sin, mask)
    torch.testing.assert_close(ours(x), expected, atol=1e-5, rtol=1e-5)


def _tied_reference(attn):
    """A "qkv" attention whose separate weights are copies of ``attn``'s shared ones."""
    ref = SharedProjectionAttention(32, 4, attn.n_kv_heads, sharing="qkv", causal=attn.causal)
    g = attn.group_size
    shared = {"q-k=v": "kv_proj", "q=k-v": "qk_proj", "q=k=v": "qkv_proj"}[attn.sharing]
    w = getattr(attn, shared).weight
    # query head h is key head h // g: repeat each key head's rows g times
    as_query = w.view(attn.n_kv_heads, 8, 32).repeat_interleave(g, dim=0).reshape(32, 32)
    with torch.no_grad():
        ref.o_proj.weight.copy_(attn.o_proj.weight)
        ref.k_proj.weight.copy_(w)
        if attn.sharing == "q-k=v":
            ref.q_proj.weight.copy_(attn.q_proj.weight)
            ref.v_proj.weight.copy_(w)
        elif attn.sharing == "q=k-v":
            ref.q_proj.weight.copy_(as_query)
            ref.v_proj.weight.copy_(attn.v_proj.weight)
        else:
            ref.q_proj.weight.copy_(as_query)
            ref.v_proj.weight.copy_(w)
    return ref


@pytest.mark.parametrize("sharing", ["q-k=v", "q=k-v", "q=k=v"])
@pytest.mark.parametrize("n_kv", LAYOUTS)
@pytest.mark.parametrize("causal", [True, False])
def test_shared_variant_equals_qkv_with_identical_weights(sharing, n_kv, causal):
    attn = SharedProjectionAttention(32, 4, n_kv, sharing=sharing, causal=causal)
    torch.testing.assert_close(attn(_x()), _tied_reference(attn)(_x()), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("sharing", SHARING_VARIANTS)
@pytest.mark.parametrize("asymmetric", [False, True])
def test_causal_mask_future_tokens_do_not_change_the_past(sharing, asymmetric):
    attn = SharedProjectionAttention(32, 4, 2, sharing=sharing, asymmetric=asymmetric)
    x = _x()
    y = x.clone()
    y[:, 4:] = torch.randn(2, 3, 32)
    out_x, out_y = attn(x), attn(y)
    torch.testing.assert_close(out_x[:, :4], out_y[:, :4])
    assert not torch.allclose(out_x[:, 4:], out_y[:, 4:])


@pytest.mark.parametrize("sharing", SHARING_VARIANTS)
def test_bidirectional_mask_sees_the_future(sharing):
    attn = SharedProjectionAttention(32, 4, sharing=sharing, causal=False)
    x = _x()
    y = x.clone()
    y[:, -1] += 1.0
    assert not torch.allclose(attn(x)[:, 0], attn(y)[:, 0])


def test_padding_mask_and_fully_masked_rows_stay_finite():
    attn = SharedProjectionAttention(32, 4, 2, sharing="q-k=v")
    keep = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    keep[0, ..., :3] = False  # left padding of the first row
    out = attn(_x(), attn_mask=keep)
    assert torch.isfinite(out).all()
    # the real tokens of the padded row do not see the pads
    x2 = _x()
    x2[0, :3] = 5.0
    torch.testing.assert_close(attn(x2, attn_mask=keep)[0, 3:], out[0, 3:])


@pytest.mark.parametrize("sharing", ["q=k-v", "q=k=v"])
def test_tied_queries_give_symmetric_scores_and_the_2d_encoding_breaks_them(sharing):
    sym = SharedProjectionAttention(32, 4, sharing=sharing)  # RoPE keeps the symmetry
    s = sym.scores(_x())
    torch.testing.assert_close(s, s.transpose(-1, -2), atol=1e-5, rtol=1e-5)
    asym = SharedProjectionAttention(32, 4, sharing=sharing, asymmetric=True)
    s = asym.scores(_x())
    assert (s - s.transpose(-1, -2)).abs().max() > 1e-2
    qkv = SharedProjectionAttention(32, 4, sharing="qkv").scores(_x())
    assert (qkv - qkv.transpose(-1, -2)).abs().max() > 1e-2


def test_scores_match_the_forward_pass():
    attn = SharedProjectionAttention(32, 4, 2, sharing="q-k=v", asymmetric=True, causal=False)
    x = _x()
    _, _, v = attn.project(x)
    weights = torch.softmax(attn.scores(x), dim=-1)
    out = (weights @ v.repeat_interleave(2, dim=1)).transpose(1, 2).reshape(2, 7, 32)
    torch.testing.assert_close(attn(x), attn.o_proj(out), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("sharing", SHARING_VARIANTS)
@pytest.mark.parametrize("asymmetric", [False, True])
def test_incremental_decoding_with_a_cache_equals_the_full_pass(sharing, asymmetric):
    attn = SharedProjectionAttention(32, 4, 2, sharing=sharing, asymmetric=asymmetric).eval()
    x = _x(t=9)
    cache = DynamicCache()
    steps = [attn(x[:, :5], cache=cache)] + [
        attn(x[:, t : t + 1], cache=cache) for t in range(5, 9)
    ]
    torch.testing.assert_close(torch.cat(steps, 1), attn(x), atol=1e-5, rtol=1e-5)
    layer = cache.layers[0]
    assert layer.keys.shape == (2, 2, 9, 8)
    stored = 1 if layer.values is layer.keys else 2
    assert stored == cache_tensors_per_layer(sharing)
    assert cache_nbytes(cache) == stored * 2 * 2 * 9 * 8 * 4


def test_2d_rope_needs_grid_positions_and_is_translation_invariant():
    attn = SharedProjectionAttention(32, 4, causal=False, rope_dims=2, asymmetric=True)
    with pytest.raises(ValueError, match="positions is required"):
        attn(_x(t=4))
    grid = torch.tensor([[0, 0], [0, 1], [1, 0], [1, 1]])
    out = attn(_x(t=4), grid)
    torch.testing.assert_close(
        attn(_x(t=4), grid + torch.tensor([3, 5])), out, atol=1e-5, rtol=1e-5
    )
    assert not torch.allclose(attn(_x(t=4), grid.flip(-1)), out)


def test_bad_configuration_raises_with_a_clear_message():
    with pytest.raises(ValueError, match="sharing must be one of"):
        SharedProjectionAttention(32, 4, sharing="kv")
    with pytest.raises(ValueError, match=r"n_heads \(5\) must divide hidden_size \(32\)"):
        SharedProjectionAttention(32, 5)
    with pytest.raises(ValueError, match=r"multiple of n_kv_heads \(3\)"):
        SharedProjectionAttention(32, 4, 3)
    with pytest.raises(ValueError, match="n_kv_heads must be a positive int"):
        SharedProjectionAttention(32, 4, 0)
    with pytest.raises(ValueError, match="rope_dims"):
        SharedProjectionAttention(32, 4, rope_dims=3)


def test_bad_input_raises():
    attn = SharedProjectionAttention(32, 4)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, seq, 32\)"):
        attn(torch.randn(2, 7, 16))
    with pytest.raises(TypeError, match="x must be a floating-point"):
        attn(torch.ones(2, 7, 32, dtype=torch.long))
    with pytest.raises(ValueError, match="positions must end in shape"):
        attn(_x(), torch.arange(3))
    with pytest.raises(ValueError, match="positions must be None when a cache"):
        attn(_x(), torch.arange(7), cache=DynamicCache())
    with pytest.raises(ValueError, match="attn_mask"):
        attn(_x(), attn_mask=torch.ones(7, 3, dtype=torch.bool))


def test_input_is_not_modified():
    attn = SharedProjectionAttention(32, 4, sharing="q=k=v", asymmetric=True)
    x = _x()
    before = x.clone()
    attn(x).sum().backward()
    assert torch.equal(x, before)
