import pytest
import torch
from qkv_sharing import (
    SHARING_VARIANTS,
    SharedQKVLlamaConfig,
    SharedQKVLlamaForCausalLM,
    cache_nbytes,
    kv_cache_bytes,
    kv_cache_reduction,
    shared_llama,
)
from transformers import AutoModelForCausalLM, LlamaForCausalLM


def _config(sharing="qkv", n_kv=4, **kw):
    fields = dict(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=n_kv,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    return SharedQKVLlamaConfig(sharing=sharing, **(fields | kw))


def _model(sharing="qkv", n_kv=4, **kw):
    torch.manual_seed(0)
    return SharedQKVLlamaForCausalLM(_config(sharing, n_kv, **kw)).eval()


def _ids(b=2, t=6):
    return torch.randint(0, 64, (b, t), generator=torch.Generator().manual_seed(1))


def _cache(out):
    return out.cache if hasattr(out, "cache") else out.past_key_values


def test_qkv_model_equals_transformers_llama_with_the_same_weights():
    ours = _model("qkv", 2)
    config = _config("qkv", 2).to_dict()
    ref = LlamaForCausalLM(LlamaForCausalLM.config_class(**{
        k: v for k, v in config.items() if k not in ("sharing", "asymmetric", "model_type")
    })).eval()  # fmt: skip
    ref.load_state_dict(ours.state_dict())
    torch.testing.assert_close(ours(_ids()).logits, ref(_ids()).logits, atol=1e-5, rtol=1e-5)
    greedy = dict(max_new_tokens=5, do_sample=False)
    assert torch.equal(ours.generate(_ids(), **greedy), ref.generate(_ids(), **greedy))


@pytest.mark.parametrize("sharing", SHARING_VARIANTS)
@pytest.mark.parametrize("n_kv", [4, 1])
def test_generate_with_cache_equals_generate_without(sharing, n_kv):
    model = _model(sharing, n_kv, asymmetric=sharing.startswith("q=k"))
    greedy = dict(max_new_tokens=6, do_sample=False)
    with_cache = model.generate(_ids(), use_cache=True, **greedy)
    without = model.generate(_ids(), use_cache=False, **greedy)
    assert with_cache.shape == (2, 12)
    assert torch.equal(with_cache, without)


@pytest.mark.parametrize("sharing", SHARING_VARIANTS)
@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_live_cache_bytes_equal_the_formula(sharing, n_kv):
    model = _model(sharing, n_kv)
    out = model.generate(
        _ids(3, 5), max_new_tokens=4, do_sample=False, return_dict_in_generate=True
    )
    cache = _cache(out)
    assert cache.get_seq_length() == 5 + 4 - 1
    assert cache_nbytes(cache) == kv_cache_bytes(model.config, 8, batch=3)
    # 2 layers x (2 or 1 tensors) x 3 x n_kv x 8 tokens x 8 channels x 4 bytes
    tensors = 1 if sharing in ("q-k=v", "q=k=v") else 2
    assert cache_nbytes(cache) == 2 * tensors * 3 * n_kv * 8 * 8 * 4


def test_cache_reductions_of_the_paper():
    # 16 query heads as in the paper's ratios: GQA-4 keeps 4 key/value heads, MQA one
    base = _config("qkv", 16, num_attention_heads=16)
    for sharing, n_kv, expected in [
        ("q-k=v", 16, 0.5),
        ("q-k=v", 4, 0.875),
        ("q-k=v", 1, 0.96875),
        ("q=k-v", 16, 0.0),
        ("qkv", 4, 0.75),
        ("q=k=v", 1, 0.96875),
    ]:
        config = _config(sharing, n_kv, num_attention_heads=16)
        assert kv_cache_reduction(config, base) == pytest.approx(expected)


def test_left_padded_batch_generation_matches_unpadded():
    model = _model("q-k=v", 2)
    prompt = _ids(1, 5)
    alone = model.generate(prompt, max_new_tokens=4, do_sample=False)
    padded = torch.cat([torch.zeros(1, 2, dtype=torch.long), prompt], 1)
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1]])
    out = model.generate(padded, attention_mask=mask, max_new_tokens=4, do_sample=False)
    assert torch.equal(out[:, 2:], alone)


def test_save_and_load_through_auto_classes(tmp_path):
    model = _model("q=k=v", 1, asymmetric=True)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, SharedQKVLlamaForCausalLM)
    assert loaded.config.sharing == "q=k=v" and loaded.config.asymmetric
    torch.testing.assert_close(loaded(_ids()).logits, model(_ids()).logits)


def test_shared_llama_sizes_and_seed():
    a = shared_llama("1M", "q-k=v", n_kv_heads=1, n_heads=16, seed=3)
    b = shared_llama("1M", "q-k=v", n_kv_heads=1, n_heads=16, seed=3)
    assert a.config.num_attention_heads == 16 and a.config.num_key_value_heads == 1
    assert a.model.layers[0].self_attn.sharing == "q-k=v"
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_bad_configuration_raises():
    with pytest.raises(ValueError, match="sharing must be one of"):
        _config("k=v")
    with pytest.raises(ValueError, match="multiple of num_key_value_heads"):
        _config("qkv", 3)
    with pytest.raises(ValueError, match="size must be one of"):
        shared_llama("2M")
    with pytest.raises(ValueError, match="must divide hidden_size"):
        shared_llama("1M", n_heads=5)
    with pytest.raises(ValueError, match="seq_len must be a nonnegative int"):
        kv_cache_bytes(_config(), -1)
    with pytest.raises(TypeError, match="transformers Cache"):
        cache_nbytes([torch.ones(3)])


def test_readme_usage_keeps_a_cache_by_default():
    model = shared_llama("1M", "q-k=v", n_kv_heads=1, n_heads=16).eval()
    out = model.generate(
        torch.tensor([[72, 105]]), max_new_tokens=3, do_sample=False, return_dict_in_generate=True
    )
    cache = _cache(out)
    assert cache_nbytes(cache) == kv_cache_bytes(model.config, cache.get_seq_length())
    assert (
        cache_nbytes(cache) == 4 * 1 * 1 * 4 * 8 * 4
    )  # layers x 1 tensor x kv heads x len x hd x B
