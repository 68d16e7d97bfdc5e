import inspect

import pytest
import torch
from qkv_sharing import (
    SHARING_VARIANTS,
    SharedQKVLlamaConfig,
    SharedQKVLlamaForCausalLM,
    cache_nbytes,
    kv_cache_bytes,
    kv_cache_reduction,
    shared_cache,
    shared_llama,
)
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, LlamaModel

ROPE_TYPES = [
    {"rope_type": "default", "rope_theta": 10000.0},
    {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0},
    {
        "rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 16,
    },
    {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2.0,
     "original_max_position_embeddings": 32},
    {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0},
]  # fmt: skip


def _fields(n_kv=4, **kw):
    fields = dict(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=n_kv,
        max_position_embeddings=64,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    return fields | kw


def _config(sharing="qkv", n_kv=4, **kw):
    return SharedQKVLlamaConfig(sharing=sharing, **_fields(n_kv, **kw))


def _model(sharing="qkv", n_kv=4, **kw):
    torch.manual_seed(0)
    return SharedQKVLlamaForCausalLM(_config(sharing, n_kv, **kw)).eval()


def _stock(ours, **kw):
    """A stock LlamaForCausalLM with the weights of a "qkv" model."""
    fields = {
        k: v for k, v in ours.config.to_dict().items() if k in LlamaConfig.__dataclass_fields__
    }
    fields = {k: v for k, v in fields.items() if k not in ("model_type", "architectures")} | kw
    ref = LlamaForCausalLM(LlamaConfig(**fields)).eval()
    ref.load_state_dict(ours.state_dict())
    return ref


def _tied_qkv(model):
    """A "qkv" model whose separate projections are copies of ``model``'s shared ones."""
    cfg = model.config.to_dict() | {"sharing": "qkv", "asymmetric": False}
    cfg = {k: v for k, v in cfg.items() if k in SharedQKVLlamaConfig.__dataclass_fields__}
    ref = SharedQKVLlamaForCausalLM(SharedQKVLlamaConfig(**cfg)).eval()
    state = model.state_dict()
    g = model.config.num_attention_heads // model.config.num_key_value_heads
    for name in list(state):
        for src, dst in (("kv_proj", ("k_proj", "v_proj")), ("qkv_proj", ("k_proj", "v_proj")),
                         ("qk_proj", ("k_proj",))):  # fmt: skip
            if f".{src}." in name:
                w = state.pop(name)
                for d in dst:
                    state[name.replace(src, d)] = w
                if src in ("qkv_proj", "qk_proj"):  # query head h is key head h // g
                    n_kv, hd = (
                        model.config.num_key_value_heads,
                        w.shape[0] // model.config.num_key_value_heads,
                    )
                    q = w.view(n_kv, hd, -1).repeat_interleave(g, dim=0).reshape(-1, w.shape[1])
                    state[name.replace(src, "q_proj")] = q
    ref.load_state_dict(state)
    return ref


def _ids(b=2, t=6):
    return torch.randint(0, 64, (b, t), generator=torch.Generator().manual_seed(1))


def _cache(out):
    return out.cache if hasattr(out, "cache") else out.past_key_values


GREEDY = dict(max_new_tokens=5, do_sample=False)


@pytest.mark.parametrize("rope", ROPE_TYPES, ids=lambda r: r["rope_type"])
def test_qkv_model_equals_transformers_llama_for_every_rope_type(rope):
    ours = _model("qkv", 2, rope_parameters=rope)
    ref = _stock(ours)
    ids = _ids()
    pos = torch.tensor([[3, 4, 5, 0, 1, 2]]).expand(2, -1)  # e.g. two packed documents
    torch.testing.assert_close(ours(ids).logits, ref(ids).logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        ours(ids, position_ids=pos).logits, ref(ids, position_ids=pos).logits, atol=1e-5, rtol=1e-5
    )
    for impl in ("dynamic", "static"):
        a = ours.generate(ids, cache_implementation=impl, **GREEDY)
        assert torch.equal(a, ref.generate(ids, cache_implementation=impl, **GREEDY))


@pytest.mark.parametrize("sharing", ["q-k=v", "q=k-v", "q=k=v"])
@pytest.mark.parametrize("n_kv", [4, 1])
def test_shared_model_equals_qkv_with_tied_weights(sharing, n_kv):
    # the definition of the variants, through every rotary path: without a cache with
    # any positions, and with a cache (one-tensor layers re-rotate the cached keys)
    model = _model(sharing, n_kv)
    ref = _tied_qkv(model)
    ids = _ids()
    pos = torch.tensor([[0, 1, 2, 7, 8, 9]]).expand(2, -1)
    torch.testing.assert_close(model(ids).logits, ref(ids).logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        model(ids, position_ids=pos).logits, ref(ids, position_ids=pos).logits, atol=1e-5, rtol=1e-5
    )
    assert not torch.allclose(model(ids, position_ids=pos).logits, model(ids).logits, atol=1e-5)
    for impl in ("dynamic", "static"):
        a = model.generate(ids, cache_implementation=impl, **GREEDY)
        assert torch.equal(a, ref.generate(ids, cache_implementation=impl, **GREEDY))


@pytest.mark.parametrize("sharing", SHARING_VARIANTS)
@pytest.mark.parametrize("impl", ["dynamic", "static"])
def test_generate_with_cache_equals_generate_without(sharing, impl):
    model = _model(sharing, 2, asymmetric=sharing.startswith("q=k"))
    with_cache = model.generate(_ids(), use_cache=True, cache_implementation=impl, **GREEDY)
    without = model.generate(_ids(), use_cache=False, **GREEDY)
    assert with_cache.shape == (2, 11)
    assert torch.equal(with_cache, without)


@pytest.mark.parametrize("rope", ROPE_TYPES[1:], ids=lambda r: r["rope_type"])
def test_one_tensor_cache_with_other_rope_types(rope):
    model = _model("q-k=v", 1, rope_parameters=rope)
    for impl in ("dynamic", "static"):
        with_cache = model.generate(_ids(), cache_implementation=impl, **GREEDY)
        assert torch.equal(with_cache, model.generate(_ids(), use_cache=False, **GREEDY))


def test_beam_search_with_a_one_tensor_cache():
    model = _model("q-k=v", 2)
    beam = dict(max_new_tokens=4, do_sample=False, num_beams=3)
    out = model.generate(_ids(), return_dict_in_generate=True, **beam)
    assert torch.equal(out.sequences, model.generate(_ids(), use_cache=False, **beam))
    cache = _cache(out)
    assert all(layer.values is layer.keys for layer in cache.layers)


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
    static = model.generate(
        _ids(3, 5), max_new_tokens=4, do_sample=False, return_dict_in_generate=True,
        cache_implementation="static",
    )  # fmt: skip
    length = _cache(static).layers[0].max_cache_len
    assert cache_nbytes(_cache(static)) == kv_cache_bytes(model.config, length, batch=3)


def test_cache_reductions_of_the_paper():
    # 16 query heads as in the paper's ratios: GQA-4 keeps 4 key/value heads, MQA one
    base = _config("qkv", 16, num_attention_heads=16, hidden_size=64)
    for sharing, n_kv, expected in [
        ("q-k=v", 16, 0.5),
        ("q-k=v", 4, 0.875),
        ("q-k=v", 1, 0.96875),
        ("q=k-v", 16, 0.0),
        ("qkv", 4, 0.75),
        ("q=k=v", 1, 0.96875),
    ]:
        config = _config(sharing, n_kv, num_attention_heads=16, hidden_size=64)
        assert kv_cache_reduction(config, base) == pytest.approx(expected)


@pytest.mark.parametrize("sharing", ["qkv", "q-k=v"])
@pytest.mark.parametrize("impl", ["dynamic", "static"])
def test_left_padded_batch_generation_matches_unpadded(sharing, impl):
    model = _model(sharing, 2)
    prompt = _ids(1, 5)
    greedy = dict(max_new_tokens=4, do_sample=False, cache_implementation=impl)
    alone = model.generate(prompt, **greedy)
    padded = torch.cat([torch.zeros(1, 2, dtype=torch.long), prompt], 1)
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1]])
    out = model.generate(padded, attention_mask=mask, **greedy)
    assert torch.equal(out[:, 2:], alone)


@pytest.mark.parametrize("sharing", ["qkv", "q-k=v", "q=k=v"])
def test_output_attentions_are_the_softmax_weights(sharing):
    model = _model(sharing, 2)
    out = model(_ids(), output_attentions=True)
    assert len(out.attentions) == 2
    weights = out.attentions[0]
    assert weights.shape == (2, 4, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 6))
    assert torch.all(weights.triu(1) == 0)  # causal
    if sharing == "qkv":
        ref = _stock(model, attn_implementation="eager")
        for ours, theirs in zip(
            out.attentions, ref(_ids(), output_attentions=True).attentions, strict=True
        ):
            torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-5)
    hidden = model(_ids(), output_hidden_states=True).hidden_states
    assert len(hidden) == 3


def test_save_and_load_through_auto_classes(tmp_path):
    model = _model("q=k=v", 1, asymmetric=True)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, SharedQKVLlamaForCausalLM)
    assert loaded.config.sharing == "q=k=v" and loaded.config.asymmetric
    torch.testing.assert_close(loaded(_ids()).logits, model(_ids()).logits)


def test_asymmetric_encoding_changes_the_tied_model():
    plain, asym = _model("q=k-v", 2), _model("q=k-v", 2, asymmetric=True)
    asym.load_state_dict(plain.state_dict(), strict=False)
    assert not torch.allclose(plain(_ids()).logits, asym(_ids()).logits, atol=1e-4)
    with torch.no_grad():
        for layer in asym.model.layers:
            layer.self_attn.key_phase.zero_()  # phase 0: the plain model
    torch.testing.assert_close(plain(_ids()).logits, asym(_ids()).logits, atol=1e-5, rtol=1e-5)


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
    with pytest.raises(ValueError, match="seq_len must be an integer >= 0"):
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


def test_value_rope_keeps_the_layer_relative_and_honours_positions_with_a_cache():
    model = _model("q-k=v", 2, value_rope=True)
    ids = _ids()
    torch.testing.assert_close(
        model(ids, position_ids=torch.arange(6)[None] + 7).logits, model(ids).logits,
        atol=1e-5, rtol=1e-5,
    )  # fmt: skip
    for impl in ("dynamic", "static"):
        a = model.generate(ids, cache_implementation=impl, **GREEDY)
        assert torch.equal(a, model.generate(ids, use_cache=False, **GREEDY))
    # positions that jump inside a cached row: the cache holds rotated keys, so the
    # cached forward equals the full one
    pos = torch.tensor([[0, 1, 2, 9, 10, 11]]).expand(2, -1)
    full = model(ids, position_ids=pos).logits
    cache = shared_cache(model, "dynamic")
    kw = {
        "cache"
        if "cache" in inspect.signature(LlamaModel.forward).parameters
        else "past_key_values": cache
    }
    first = model(ids[:, :3], position_ids=pos[:, :3], use_cache=True, **kw).logits
    rest = model(ids[:, 3:], position_ids=pos[:, 3:], use_cache=True, **kw).logits
    torch.testing.assert_close(torch.cat([first, rest], 1), full, atol=1e-5, rtol=1e-5)
    assert cache.layers[0].values is cache.layers[0].keys


def test_value_rope_is_the_identity_on_a_token_attending_to_itself():
    # one token: o = R(p - p) s = s, whatever its position, so both value modes agree
    plain, turned = _model("q-k=v", 2), _model("q-k=v", 2, value_rope=True)
    turned.load_state_dict(plain.state_dict())
    one = _ids(2, 1)
    for p in (0, 5):
        pos = torch.tensor([[p]])
        torch.testing.assert_close(
            turned(one, position_ids=pos).logits, plain(one, position_ids=pos).logits,
            atol=1e-5, rtol=1e-5,
        )  # fmt: skip
    assert not torch.allclose(turned(_ids()).logits, plain(_ids()).logits, atol=1e-5)
    with pytest.raises(ValueError, match="value_rope applies to the one-tensor variants"):
        _config("qkv", value_rope=True)
