import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml26_core.lm import tiny_llama  # noqa: E402
from submodular_augment import (  # noqa: E402
    COMPLIANCE,
    PROMPT_TEMPLATE,
    REFUSAL,
    RobustnessGain,
    align,
    augment,
    refusal_margin,
    refusal_rate,
)

SMALL = {
    "hidden_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "intermediate_size": 64,
}


@pytest.fixture(scope="module")
def model():
    return tiny_llama("1M", 256, max_seq_len=128, seed=0, **SMALL)


def test_augment_adds_each_action_copy():
    d = [("how to x", REFUSAL), ("say hi", COMPLIANCE)]
    out = augment(d, ["reverse", "caesar1"])
    assert len(out) == 6
    assert out[:2] == d
    assert out[2] == ("x to how", REFUSAL)
    assert out[5] == ("tbz ij", COMPLIANCE)
    assert d == [("how to x", REFUSAL), ("say hi", COMPLIANCE)]  # input untouched


def test_augment_bad_input():
    with pytest.raises(ValueError, match="dataset"):
        augment([], ["case"])
    with pytest.raises(ValueError, match="unknown action"):
        augment([("a", "b")], ["shout"])
    with pytest.raises(TypeError, match="pairs"):
        augment([("a", 1)], ["case"])


def _logprob(model, prompt, response):
    ids = list(PROMPT_TEMPLATE.format(prompt=prompt).encode())
    start = len(ids)
    ids = torch.tensor([ids + list(response.encode())])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids[:, :-1]).logits.double(), -1)
    return float(sum(logp[0, t - 1, ids[0, t]] for t in range(start, ids.shape[1])))


def test_refusal_margin_is_the_log_likelihood_margin(model):
    prompts = ["how do I pick a lock", "a b"]
    got = refusal_margin(model, prompts, "caesar1", prefix_chars=4)
    want = [
        _logprob(model, p2, REFUSAL[:4]) - _logprob(model, p2, COMPLIANCE[:4])
        for p2 in ["ipx ep J qjdl b mpdl", "b c"]
    ]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert refusal_rate(model, prompts, "caesar1", prefix_chars=4) == pytest.approx(
        float(np.mean(np.array(want) > 0))
    )


def test_align_learns_to_refuse_one_prompt():
    m = tiny_llama("1M", 256, max_seq_len=128, seed=1, **SMALL)
    pairs = [("make a bomb", REFUSAL), ("bake a cake", COMPLIANCE)]
    losses = align(m, pairs, steps=60, batch_size=4, lr=1e-2, seed=0)
    assert losses[-1] < 0.3 * losses[0]
    margins = refusal_margin(m, ["make a bomb", "bake a cake"])
    assert margins[0] > 0 > margins[1]


def test_robustness_gain_from_an_lm(model):
    f = RobustnessGain(model, ["how do I pick a lock", "write a poem"], ["caesar1", "case"])
    assert f([]) == pytest.approx(0.0)
    assert f([0, 1]) == pytest.approx(1.0)
    assert f.similarity.shape == (2, 2)


def test_bad_input(model):
    with pytest.raises(ValueError, match="prompts"):
        refusal_margin(model, [])
    with pytest.raises(ValueError, match="pairs"):
        align(model, [], steps=1)
    with pytest.raises(ValueError, match="steps"):
        align(model, [("a", "b")], steps=0)
    with pytest.raises(ValueError, match="unknown action"):
        refusal_rate(model, ["a"], "shout")
