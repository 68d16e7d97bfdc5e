import inspect

import pytest
import torch
from qkv_sharing import (
    SharedDynamicLayer,
    SharedQKVExportableDecoder,
    SharedQKVLlamaConfig,
    SharedQKVLlamaForCausalLM,
    SharedStaticLayer,
    cache_nbytes,
    kv_cache_bytes,
    shared_cache,
)
from qkv_sharing.cache import adopt_one_tensor_layer
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, LlamaModel, StaticCache

CACHE_KW = (
    "cache" if "cache" in inspect.signature(LlamaModel.forward).parameters else "past_key_values"
)


def _model(sharing="q-k=v", n_kv=2):
    config = SharedQKVLlamaConfig(
        sharing=sharing, vocab_size=64, hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=n_kv,
        max_position_embeddings=64, bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )  # fmt: skip
    torch.manual_seed(0)
    return SharedQKVLlamaForCausalLM(config).eval()


def _ids(b=2, t=6):
    return torch.randint(0, 64, (b, t), generator=torch.Generator().manual_seed(1))


def _states(t=3, seed=0):
    return torch.randn(2, 2, t, 8, generator=torch.Generator().manual_seed(seed))


def _greedy_steps(model, cache, ids, steps, forward=None):
    """Prefill eagerly, then ``steps`` greedy decode steps through ``forward``."""
    forward = model if forward is None else forward
    with torch.no_grad():
        logits = model(ids, use_cache=True, **{CACHE_KW: cache}).logits
        out = [logits[:, -1:].argmax(-1)]
        for _ in range(steps - 1):
            logits = forward(out[-1], use_cache=True, **{CACHE_KW: cache}).logits
            out.append(logits[:, -1:].argmax(-1))
    return torch.cat([ids, *out], 1)


def test_dynamic_layer_holds_one_tensor_through_every_operation():
    layer = SharedDynamicLayer()
    a, b = _states(3, 0), _states(2, 1)
    keys, values = layer.update(a, a)
    assert keys is values and keys.shape == (2, 2, 3, 8)
    keys, values = layer.update(b, b)
    torch.testing.assert_close(keys, torch.cat([a, b], 2))
    assert layer.values is layer.keys and layer.get_seq_length() == 5
    layer.crop(-2)
    assert layer.get_seq_length() == 3 and layer.values is layer.keys
    layer.reorder_cache(torch.tensor([1, 0]))
    torch.testing.assert_close(layer.keys, a.flip(0))
    layer.batch_repeat_interleave(2)
    assert layer.keys.shape[0] == 4 and layer.values is layer.keys
    layer.batch_select_indices(torch.tensor([0, 3]))
    assert layer.keys.shape[0] == 2 and layer.values is layer.keys
    with pytest.raises(ValueError, match="same tensor as key_states and value_states"):
        layer.update(b, b.clone())


def test_static_layer_writes_in_place_into_one_buffer():
    layer = SharedStaticLayer(max_cache_len=6)
    a, b = _states(3, 0), _states(2, 1)
    keys, values = layer.update(a, a)
    buffer = keys.data_ptr()
    assert keys is values and keys.shape == (2, 2, 6, 8)
    keys, _ = layer.update(b, b)
    assert keys.data_ptr() == buffer and int(layer.get_seq_length()) == 5
    torch.testing.assert_close(keys[:, :, :5], torch.cat([a, b], 2))
    assert torch.all(keys[:, :, 5:] == 0)
    layer.reorder_cache(torch.tensor([1, 0]))
    assert layer.keys.data_ptr() == buffer
    torch.testing.assert_close(layer.keys[:, :, :3], a.flip(0))


def test_adopting_stock_layers_and_shared_cache():
    cache = DynamicCache()
    assert adopt_one_tensor_layer(cache, 1)  # lazily created layers are created first
    assert [type(layer).__name__ for layer in cache.layers] == [
        "DynamicLayer",
        "SharedDynamicLayer",
    ]
    full = StaticCache(config=_model().config, max_cache_len=4)
    full.layers[0].update(_states(2), _states(2, 1))
    with pytest.raises(ValueError, match="already holds 2 tokens"):
        adopt_one_tensor_layer(full, 0)
    model = _model("q-k=v", 2)
    static = shared_cache(model, "static", max_cache_len=10, batch_size=3)
    assert all(isinstance(layer, SharedStaticLayer) for layer in static.layers)
    assert cache_nbytes(static) == kv_cache_bytes(model.config, 10, batch=3)
    two = shared_cache(_model("qkv", 2), "static", max_cache_len=10, batch_size=3)
    assert cache_nbytes(two) == 2 * cache_nbytes(static)  # exact: byte counts (ints)
    with pytest.raises(ValueError, match="max_cache_len is required"):
        shared_cache(model, "static")
    with pytest.raises(ValueError, match="kind must be one of"):
        shared_cache(model, "paged")


@pytest.mark.parametrize("sharing", ["q-k=v", "qkv"])
def test_user_built_caches_give_the_same_tokens(sharing):
    model = _model(sharing)
    ref = model.generate(_ids(), max_new_tokens=4, do_sample=False, use_cache=False)
    for cache in (DynamicCache(), DynamicCache(config=model.config),
                  StaticCache(config=model.config, max_cache_len=12),
                  shared_cache(model, "static", max_cache_len=12, batch_size=2)):  # fmt: skip
        assert torch.equal(_greedy_steps(model, cache, _ids(), 4), ref)


def _stock_compile_mode():
    """``fullgraph`` with which this torch/transformers pair compiles a stock Llama decode step.

    None when it cannot compile one at all (e.g. torch 2.6 with transformers 5.4 fails
    inside transformers' own output-capturing wrapper).
    """
    config = _model("qkv").config.to_dict()
    fields = {k: v for k, v in config.items() if k in LlamaConfig.__dataclass_fields__}
    stock = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in fields.items() if k != "model_type"}))
    stock.eval()
    for fullgraph in (True, False):
        torch._dynamo.reset()
        step = torch.compile(stock, backend="aot_eager", fullgraph=fullgraph)
        try:
            _greedy_steps(
                stock, StaticCache(config=stock.config, max_cache_len=8), _ids(2, 3), 2, step
            )
        except Exception:
            continue
        return fullgraph
    return None


@pytest.mark.slow  # compiling takes 10-30 s on 2 busy cores
def test_torch_compile_of_the_decode_step_with_a_static_cache():
    # in one graph (no graph break of our own) wherever a stock Llama compiles in one
    fullgraph = _stock_compile_mode()
    if fullgraph is None:
        pytest.skip("this torch/transformers pair cannot compile a stock Llama decode step")
    torch._dynamo.reset()
    model = _model("q-k=v", 2)
    ref = model.generate(_ids(), max_new_tokens=5, do_sample=False, use_cache=False)
    cache = shared_cache(model, "static", max_cache_len=12, batch_size=2)
    step = torch.compile(model, backend="aot_eager", fullgraph=fullgraph)
    assert torch.equal(_greedy_steps(model, cache, _ids(), 5, forward=step), ref)


@pytest.mark.skipif(
    tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 6),
    reason="exporting a transformers decoder with a mutated cache needs torch >= 2.6",
)
@pytest.mark.parametrize("sharing", ["q-k=v", "qkv"])
def test_torch_export_of_the_decoder_with_its_static_cache(sharing):
    model = _model(sharing, 1)
    ids = _ids(1, 5)
    ref = model.generate(ids, max_new_tokens=4, do_sample=False, use_cache=False)
    decoder = SharedQKVExportableDecoder(model, max_cache_len=12)
    tensors = [
        n for n, _ in decoder.named_buffers() if n.startswith("cache_") and "length" not in n
    ]
    assert len(tensors) == (2 if sharing == "q-k=v" else 4)  # 2 layers x 1 or 2 tensors
    program = torch.export.export(decoder, (ids[:, :1], torch.tensor([0])), strict=False)
    run = program.module()
    tokens = ids[0].tolist()
    logits = None
    for pos, tok in enumerate(tokens):  # prefill token by token through the exported graph
        logits = run(torch.tensor([[tok]]), torch.tensor([pos]))
    for _ in range(4):
        tokens.append(int(logits[0, -1].argmax()))
        logits = run(torch.tensor([[tokens[-1]]]), torch.tensor([len(tokens) - 1]))
    assert tokens == ref[0].tolist()
