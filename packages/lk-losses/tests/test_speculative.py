import itertools

import numpy as np
import pytest
import torch
from lk_losses import expected_acceptance_length, speculative_generate
from scipy import stats


def _markov(table):
    """A 'language model' whose next-token logits depend on the last token only."""

    def model(ids):
        return table[ids]

    return model


def _chi2_pvalue(observed, expected):
    """Pearson chi-square p-value, bins with expected count < 5 pooled into one."""
    small = expected < 5
    obs, exp = observed[~small], expected[~small]
    if small.any():
        obs = np.append(obs, observed[small].sum())
        exp = np.append(exp, expected[small].sum())
    return stats.chisquare(obs, exp).pvalue


def test_expected_length_formula_and_limits():
    for a in (0.0, 0.3, 0.9):
        for g in (1, 3, 5):
            closed = (1 - a ** (g + 1)) / (1 - a)
            assert expected_acceptance_length(a, g) == pytest.approx(closed)
    assert expected_acceptance_length(1.0, 5) == 6.0
    assert expected_acceptance_length(0.0, 3) == 1.0
    arr = expected_acceptance_length(np.array([0.2, 0.5]), 3)
    assert arr.shape == (2,)
    ten = expected_acceptance_length(torch.tensor([0.2, 1.0]), 3)
    torch.testing.assert_close(ten, torch.tensor([1.248, 4.0]))


def test_expected_length_against_simulation():
    rng = np.random.default_rng(0)
    for alpha, gamma in ((0.6, 3), (0.8, 5), (0.3, 5)):
        accepts = rng.random((200_000, gamma)) < alpha
        # tokens per cycle: accepted prefix + 1 (correction or bonus token)
        first_reject = np.where(accepts.all(1), gamma, np.argmin(accepts, axis=1))
        simulated = (first_reject + 1).mean()
        assert simulated == pytest.approx(expected_acceptance_length(alpha, gamma), rel=0.01)


def test_expected_length_bad_input():
    with pytest.raises(ValueError, match="gamma"):
        expected_acceptance_length(0.5, 0)
    with pytest.raises(TypeError, match="gamma"):
        expected_acceptance_length(0.5, 2.0)
    with pytest.raises(ValueError, match="alphas"):
        expected_acceptance_length(1.2, 3)
    with pytest.raises(ValueError, match="alphas"):
        expected_acceptance_length(np.array([0.1, np.nan]), 3)


@pytest.mark.parametrize(("temperature", "gamma"), [(1.0, 2), (0.7, 3)])
def test_decoder_output_follows_target_distribution(temperature, gamma):
    g = torch.Generator().manual_seed(0)
    vocab, n_new, n_samples = 3, 3, 2500
    target = torch.randn(vocab, vocab, generator=g)
    draft = torch.randn(vocab, vocab, generator=g)
    p = torch.softmax(target / temperature, -1).double()
    exact = {}
    for seq in itertools.product(range(vocab), repeat=n_new):
        prob, last = 1.0, 0
        for x in seq:
            prob *= float(p[last, x])
            last = x
        exact[seq] = prob
    counts = dict.fromkeys(exact, 0)
    gen = torch.Generator().manual_seed(1)
    for _ in range(n_samples):
        out = speculative_generate(
            _markov(target),
            _markov(draft),
            [0],
            gamma=gamma,
            max_new_tokens=n_new,
            temperature=temperature,
            generator=gen,
        )
        counts[tuple(out.tokens[1:].tolist())] += 1
    observed = np.array([counts[s] for s in exact])
    expected = np.array([exact[s] for s in exact])
    expected = expected / expected.sum() * n_samples
    assert _chi2_pvalue(observed, expected) > 1e-3
    # the draft alone would be rejected by the same test (the test has power)
    q = torch.softmax(draft / temperature, -1).double()
    draft_probs = []
    for seq in exact:
        prob, last = 1.0, 0
        for x in seq:
            prob *= float(q[last, x])
            last = x
        draft_probs.append(prob)
    draft_expected = np.array(draft_probs) / sum(draft_probs) * n_samples
    assert _chi2_pvalue(observed, draft_expected) < 1e-3


def test_measured_acceptance_length_matches_formula():
    # context-free models: every position has the same alpha
    g = torch.Generator().manual_seed(3)
    p_row, q_row = torch.randn(6, generator=g), torch.randn(6, generator=g)
    alpha = float(torch.minimum(p_row.softmax(-1), q_row.softmax(-1)).sum())
    target, draft = p_row.expand(6, 6), q_row.expand(6, 6)
    gen = torch.Generator().manual_seed(4)
    gamma = 3
    out = speculative_generate(
        _markov(target), _markov(draft), [0], gamma=gamma, max_new_tokens=4000, generator=gen
    )
    lengths = np.array(out.acceptance_lengths[:-1])
    assert lengths.min() >= 1 and lengths.max() <= gamma + 1
    assert lengths.mean() == pytest.approx(expected_acceptance_length(alpha, gamma), rel=0.05)
    assert out.target_calls == len(out.acceptance_lengths)
    assert out.tokens.numel() == 4001


def test_greedy_equals_target_greedy_decoding():
    g = torch.Generator().manual_seed(5)
    target, draft = torch.randn(8, 8, generator=g), torch.randn(8, 8, generator=g)
    out = speculative_generate(
        _markov(target), _markov(draft), [2], gamma=4, max_new_tokens=30, temperature=0
    )
    seq = [2]
    for _ in range(30):
        seq.append(int(target[seq[-1]].argmax()))
    assert out.tokens.tolist() == seq
    same = speculative_generate(
        _markov(target), _markov(target), [2], gamma=4, max_new_tokens=30, temperature=0
    )
    assert same.accepted[:-1] == [4] * (len(same.accepted) - 1)


def test_greedy_with_a_real_transformer_model():
    from icml26_core.lm import tiny_llama

    target = tiny_llama("1M", 32, seed=0, num_hidden_layers=1).eval()
    draft = tiny_llama("1M", 32, seed=1, num_hidden_layers=1).eval()

    def call(m):
        return lambda ids: m(ids, use_cache=False).logits

    prompt = torch.tensor([1, 5, 7, 3])
    out = speculative_generate(
        call(target), call(draft), prompt, gamma=3, max_new_tokens=12, temperature=0
    )
    seq = prompt.clone()
    with torch.no_grad():
        for _ in range(12):
            nxt = target(seq[None], use_cache=False).logits[0, -1].argmax()
            seq = torch.cat([seq, nxt[None]])
    assert torch.equal(out.tokens, seq)


def test_decoder_bad_input():
    table = torch.randn(4, 4)
    lm = _markov(table)
    with pytest.raises(ValueError, match="gamma"):
        speculative_generate(lm, lm, [0], gamma=0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        speculative_generate(lm, lm, [0], max_new_tokens=0)
    with pytest.raises(ValueError, match="prompt"):
        speculative_generate(lm, lm, [])
    with pytest.raises(ValueError, match="temperature"):
        speculative_generate(lm, lm, [0], temperature=-1.0)
    with pytest.raises(ValueError, match="vocabulary"):
        speculative_generate(lm, _markov(torch.randn(4, 3)), [0])
