import pytest
import torch
from qkv_sharing import SharedQKVLlamaForCausalLM, from_llama, shared_llama
from transformers import LlamaConfig, LlamaForCausalLM


def _stock(n_kv=2, bias=False, seed=0):
    config = LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=n_kv, attention_bias=bias,
        max_position_embeddings=64, bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # larger weights than the 0.02 init, so that errors show
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(0, 0.2)
    return model


def _values_linear_in_keys(model):
    """Make every head's value projection a linear map of its key projection (v = M k + c)."""
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for layer in model.model.layers:
            att = layer.self_attn
            hd = att.head_dim
            for h in range(att.k_proj.weight.shape[0] // hd):
                rows = slice(h * hd, (h + 1) * hd)
                m = torch.randn(hd, hd, generator=g) / hd**0.5
                att.v_proj.weight[rows] = m @ att.k_proj.weight[rows]
                if att.v_proj.bias is not None:
                    c = torch.randn(hd, generator=g)
                    att.v_proj.bias[rows] = m @ att.k_proj.bias[rows] + c
    return model


def _ids(b=2, t=8):
    return torch.randint(0, 64, (b, t), generator=torch.Generator().manual_seed(1))


def test_a_qkv_conversion_is_an_exact_copy():
    stock = _stock()
    copy = from_llama(stock, "qkv")
    assert isinstance(copy, SharedQKVLlamaForCausalLM)
    torch.testing.assert_close(copy(_ids()).logits, stock(_ids()).logits)


@pytest.mark.parametrize("n_kv", [4, 2])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("calibrate", [False, True])
def test_svd_merge_is_exact_when_values_are_linear_in_keys(n_kv, bias, calibrate):
    stock = _values_linear_in_keys(_stock(n_kv, bias))
    calibration = _ids(4, 16) if calibrate else None
    shared = from_llama(stock, merge="svd", calibration=calibration)
    assert shared.config.sharing == "q-k=v"
    torch.testing.assert_close(shared(_ids()).logits, stock(_ids()).logits, atol=1e-4, rtol=1e-4)
    # the cache holds one tensor: half of the stock model's
    out = shared.generate(_ids(), max_new_tokens=3, do_sample=False, return_dict_in_generate=True)
    cache = out.cache if hasattr(out, "cache") else out.past_key_values
    assert all(layer.values is layer.keys for layer in cache.layers)


def test_svd_merge_keeps_the_attention_weights_and_mean_does_not():
    stock = _stock()
    stock.config._attn_implementation = "eager"
    ref = stock(_ids(), output_attentions=True).attentions
    svd = from_llama(stock, merge="svd")(_ids(), output_attentions=True).attentions
    mean = from_llama(stock, merge="mean")(_ids(), output_attentions=True).attentions
    # the first layer sees the same inputs in all three models (later ones see the
    # approximated values of the layers before)
    torch.testing.assert_close(svd[0], ref[0], atol=1e-5, rtol=1e-5)
    assert (mean[0] - ref[0]).abs().max() > 1e-3


def test_mean_merge_averages_the_projections_and_leaves_the_input_alone():
    stock = _stock()
    before = {k: v.clone() for k, v in stock.state_dict().items()}
    shared = from_llama(stock, merge="mean")
    att, old = shared.model.layers[1].self_attn, stock.model.layers[1].self_attn
    torch.testing.assert_close(att.kv_proj.weight, (old.k_proj.weight + old.v_proj.weight) / 2)
    torch.testing.assert_close(att.q_proj.weight, old.q_proj.weight)
    torch.testing.assert_close(att.o_proj.weight, old.o_proj.weight)
    for k, v in stock.state_dict().items():
        assert torch.equal(v, before[k])


def test_calibrated_fit_reconstructs_values_better_on_its_data():
    # the calibrated map is the least-squares optimum on the calibration inputs, so its
    # value error there is at most that of the weight-space map
    stock = _stock()
    calibration = _ids(8, 16)
    errors = {}
    for name, cal in (("weights", None), ("data", calibration)):
        shared = from_llama(stock, merge="svd", calibration=cal)
        errors[name] = (shared(calibration).logits - stock(calibration).logits).pow(2).mean().item()
    assert errors["data"] < errors["weights"]


def test_bad_conversions_raise():
    stock = _stock()
    with pytest.raises(ValueError, match="sharing must be one of"):
        from_llama(stock, "q=k-v")
    with pytest.raises(ValueError, match="merge must be one of"):
        from_llama(stock, merge="max")
    with pytest.raises(ValueError, match="already shares projections"):
        from_llama(shared_llama("1M", "q-k=v"))
    with pytest.raises(TypeError, match="LlamaForCausalLM"):
        from_llama(torch.nn.Linear(2, 2))
    with pytest.raises(
        ValueError, match=r"calibration must be token ids of shape \(n_seq, seq_len\)"
    ):
        from_llama(stock, calibration=torch.arange(5))
