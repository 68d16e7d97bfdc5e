import itertools

import numpy as np
import pytest
import torch
from lk_losses import (
    expected_acceptance_length,
    sequence_acceptance_length,
    speculative_generate,
)
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


def _sequence_probs(logits, temperature, n_new, start=0):
    p = torch.softmax(logits / temperature, -1).double()
    out = {}
    for seq in itertools.product(range(logits.shape[-1]), repeat=n_new):
        prob, last = 1.0, start
        for x in seq:
            prob *= float(p[last, x])
            last = x
        out[seq] = prob
    return out


def test_expected_length_formula_and_limits():
    for a in (0.0, 0.3, 0.9):
        for g in (1, 3, 5):
            closed = (1 - a ** (g + 1)) / (1 - a)
            assert expected_acceptance_length(a, g) == pytest.approx(closed)
    assert expected_acceptance_length(1.0, 5) == pytest.approx(6.0, abs=1e-12)
    assert expected_acceptance_length(0.0, 3) == pytest.approx(1.0, abs=1e-12)
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


def test_sequence_length_of_constant_alpha_is_the_formula():
    # renewal-reward: tokens per cycle along a long sequence of i.i.d. acceptances
    for alpha, gamma in ((0.3, 2), (0.7, 4)):
        tau = sequence_acceptance_length(np.full(4000, alpha), gamma)
        assert float(tau) == pytest.approx(expected_acceptance_length(alpha, gamma), rel=2e-3)
    assert float(sequence_acceptance_length(np.ones(9), 2)) == pytest.approx(3.0)
    assert float(sequence_acceptance_length(np.zeros(9), 2)) == pytest.approx(1.0)


def test_sequence_length_against_simulated_decoding():
    rng = np.random.default_rng(1)
    alphas = rng.random(30) ** 0.5
    gamma, runs = 3, 40_000
    cycles = np.zeros(runs)
    for r in range(runs):
        i = 0
        while i < alphas.size:
            k = min(gamma, alphas.size - i - 1)
            j = 0
            while j < k and rng.random() < alphas[i + j]:
                j += 1
            i += j + 1
            cycles[r] += 1
    simulated = alphas.size / cycles.mean()
    assert float(sequence_acceptance_length(alphas, gamma)) == pytest.approx(simulated, rel=5e-3)


def test_sequence_length_can_disagree_with_the_mean_alpha():
    # same mean alpha (0.5), different lengths: alternation gives 2 tokens per cycle
    # (accept, reject, and the next cycle starts on an easy position again); runs of 4
    # easy then 4 hard positions give 8 tokens in 5 cycles; the formula of the mean
    # alpha gives neither
    streaky = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0] * 8)
    alternating = np.array([1.0, 0.0] * 32)
    both = sequence_acceptance_length(np.stack([streaky, alternating]), 3)
    assert both.shape == (2,)
    assert both[0] == pytest.approx(1.6, abs=0.02)
    assert both[1] == pytest.approx(2.0, abs=0.02)
    assert expected_acceptance_length(0.5, 3) == pytest.approx(1.875)
    tensor = sequence_acceptance_length(torch.tensor(alternating), 3)
    assert isinstance(tensor, torch.Tensor)
    assert float(tensor) == pytest.approx(float(both[1]))


def test_length_functions_bad_input():
    with pytest.raises(ValueError, match="gamma"):
        expected_acceptance_length(0.5, 0)
    with pytest.raises(TypeError, match="gamma"):
        expected_acceptance_length(0.5, 2.0)
    with pytest.raises(ValueError, match="alphas"):
        expected_acceptance_length(1.2, 3)
    with pytest.raises(ValueError, match="alphas"):
        expected_acceptance_length(np.array([0.1, np.nan]), 3)
    with pytest.raises(ValueError, match="alphas"):
        sequence_acceptance_length(np.array([0.1, -0.1]), 3)
    with pytest.raises(ValueError, match="S >= 1"):
        sequence_acceptance_length(np.zeros(0), 3)


@pytest.mark.parametrize(("temperature", "gamma", "batch"), [(1.0, 2, 1), (0.7, 3, 4)])
def test_decoder_output_follows_target_distribution(temperature, gamma, batch):
    g = torch.Generator().manual_seed(0)
    vocab, n_new, n_samples = 3, 3, 2400
    target = torch.randn(vocab, vocab, generator=g)
    draft = torch.randn(vocab, vocab, generator=g)
    exact = _sequence_probs(target, temperature, n_new)
    counts = dict.fromkeys(exact, 0)
    gen = torch.Generator().manual_seed(1)
    prompt = torch.zeros(batch, 1, dtype=torch.long)
    for _ in range(n_samples // batch):
        out = speculative_generate(
            _markov(target),
            _markov(draft),
            prompt,
            gamma=gamma,
            max_new_tokens=n_new,
            temperature=temperature,
            generator=gen,
        )
        # rows of a batch advance together (shortest accepted prefix): each row is
        # still an exact sample of the target
        for row in out.tokens[:, 1:].tolist():
            counts[tuple(row)] += 1
    observed = np.array([counts[s] for s in exact])
    expected = np.array([exact[s] for s in exact])
    expected = expected / expected.sum() * observed.sum()
    assert _chi2_pvalue(observed, expected) > 1e-3
    # the draft alone would be rejected by the same test (the test has power)
    draft_exact = _sequence_probs(draft, temperature, n_new)
    draft_expected = np.array([draft_exact[s] for s in exact])
    draft_expected = draft_expected / draft_expected.sum() * observed.sum()
    assert _chi2_pvalue(observed, draft_expected) < 1e-3


def test_reduced_draft_vocabulary_keeps_the_target_distribution():
    # the draft proposes only tokens {0, 2, 3} of the target's 4
    g = torch.Generator().manual_seed(2)
    target = torch.randn(4, 4, generator=g)
    draft_sub = torch.randn(4, 3, generator=g)
    vocab = torch.tensor([0, 2, 3])
    exact = _sequence_probs(target, 1.0, 3)
    counts = dict.fromkeys(exact, 0)
    gen = torch.Generator().manual_seed(3)
    for _ in range(600):
        out = speculative_generate(
            _markov(target),
            _markov(draft_sub),
            torch.zeros(4, 1, dtype=torch.long),
            gamma=2,
            max_new_tokens=3,
            generator=gen,
            draft_vocab=vocab,
        )
        for row in out.tokens[:, 1:].tolist():
            counts[tuple(row)] += 1
    observed = np.array([counts[s] for s in exact])
    expected = np.array([exact[s] for s in exact])
    expected = expected / expected.sum() * observed.sum()
    assert _chi2_pvalue(observed, expected) > 1e-3
    greedy = speculative_generate(
        _markov(target),
        _markov(draft_sub),
        [1],
        gamma=3,
        max_new_tokens=12,
        temperature=0,
        draft_vocab=vocab,
    )
    seq = [1]
    for _ in range(12):
        seq.append(int(target[seq[-1]].argmax()))
    assert greedy.tokens.tolist() == seq


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
    lengths = np.array(out.acceptance_lengths)
    assert lengths.min() >= 1 and lengths.max() <= gamma + 1
    expected = expected_acceptance_length(alpha, gamma)
    assert out.mean_acceptance_length == pytest.approx(expected, rel=0.05)
    assert out.target_calls == len(out.acceptance_lengths)
    assert out.draft_calls == sum(out.draft_tokens)
    assert out.tokens.shape == (4001,)
    assert sum(out.acceptance_lengths) == 4000


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
    assert [a[0] for a in same.accepted[:-1]] == [4] * (len(same.accepted) - 1)


def _llamas():
    from icml26_core.lm import tiny_llama

    kw = {
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "initializer_range": 0.2,
    }
    target = tiny_llama("1M", 48, seed=0, **kw).eval()
    draft = tiny_llama("1M", 48, seed=0, **kw).eval()
    with torch.no_grad():  # a draft close to the target, so that drafts get accepted
        for p in draft.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(9)))
    return target, draft


def test_greedy_agrees_with_transformers_assisted_generation():
    target, draft = _llamas()
    ids = torch.randint(1, 48, (3, 6), generator=torch.Generator().manual_seed(0))
    ours = speculative_generate(target, draft, ids, gamma=3, max_new_tokens=16, temperature=0)
    assert max(max(a) for a in ours.accepted) > 0  # drafts do get accepted
    plain = target.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=16,
        do_sample=False,
        pad_token_id=0,
    )
    assert torch.equal(ours.tokens, plain)
    for b in range(3):  # transformers' assisted generation runs batch 1
        assisted = target.generate(
            ids[b : b + 1],
            attention_mask=torch.ones_like(ids[b : b + 1]),
            assistant_model=draft,
            max_new_tokens=16,
            do_sample=False,
            pad_token_id=0,
            use_cache=True,
        )
        assert torch.equal(assisted[0], ours.tokens[b])


def test_kv_cache_is_used_and_left_padding_works():
    target, draft = _llamas()
    fed = []
    hook = target.register_forward_pre_hook(
        lambda module, args, kwargs: fed.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    ids = torch.randint(1, 48, (2, 7), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # row 1 is a 4-token prompt, left-padded
    ids[1, :3] = 0
    out = speculative_generate(
        target, draft, ids, attention_mask=mask, gamma=3, max_new_tokens=10, temperature=0
    )
    # the prompt once, then each cycle only its drafted tokens + 1
    assert fed[0] == 6 and fed[1:] == [k + 1 for k in out.draft_tokens]
    hook.remove()
    ref = target.generate(
        ids, attention_mask=mask, max_new_tokens=10, do_sample=False, pad_token_id=0
    )
    assert torch.equal(out.tokens, ref)


def test_sampling_with_transformers_models_is_reproducible():
    target, draft = _llamas()
    ids = torch.randint(1, 48, (2, 5), generator=torch.Generator().manual_seed(2))
    runs = [
        speculative_generate(
            target,
            draft,
            ids,
            gamma=2,
            max_new_tokens=12,
            generator=torch.Generator().manual_seed(7),
        ).tokens
        for _ in range(2)
    ]
    assert torch.equal(runs[0], runs[1])
    assert runs[0].shape == (2, 17)


def test_stops_at_eos_and_pads():
    # greedy path 0 -> 1 -> 2 -> 3 -> 5 (EOS) -> 0 -> ...; a second row starts at 2
    table = torch.full((6, 6), -5.0)
    for a, b in ((0, 1), (1, 2), (2, 3), (3, 5), (5, 0), (4, 0)):
        table[a, b] = 5.0
    draft = table.clone()
    draft[1] = torch.tensor([0.0, 0.0, 0.0, 0.0, 5.0, 0.0])  # the draft errs after 1
    out = speculative_generate(
        _markov(table),
        _markov(draft),
        [[0], [2]],
        gamma=3,
        max_new_tokens=8,
        temperature=0,
        eos_token_id=5,
        pad_token_id=4,
    )
    rows = out.tokens.tolist()
    assert len(rows[0]) < 9  # stopped early: every row reached EOS
    assert rows[0] == [0, 1, 2, 3, 5] + [4] * (len(rows[0]) - 5)
    assert rows[1] == [2, 3, 5] + [4] * (len(rows[1]) - 3)


def test_devices_and_vocabularies_are_checked_up_front():
    calls = []

    def counting(table):
        def model(ids):
            calls.append(1)
            return table[ids]

        return model

    with pytest.raises(ValueError, match="vocabulary"):
        speculative_generate(counting(torch.randn(4, 4)), counting(torch.randn(4, 3)), [0])
    on_meta = torch.nn.Linear(2, 2, device="meta")
    on_cpu = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="meta"):
        speculative_generate(on_meta, on_cpu, [0])
    target, _ = _llamas()
    from icml26_core.lm import tiny_llama

    other = tiny_llama("1M", 40, num_hidden_layers=1).eval()
    calls.clear()
    with pytest.raises(ValueError, match=r"draft vocabulary \(40\) differs"):
        speculative_generate(target, other, [1, 2])  # before any forward pass
    with pytest.raises(ValueError, match="draft_vocab"):
        speculative_generate(target, target, [1], draft_vocab=torch.tensor([1, 1]))


@pytest.mark.gpu
def test_cuda_models_with_cpu_prompt():
    target, draft = _llamas()
    target, draft = target.cuda(), draft.cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    out = speculative_generate(target, draft, [1, 2, 3], max_new_tokens=8, generator=gen)
    assert out.tokens.device.type == "cuda"
    with pytest.raises(ValueError, match="generator"):
        speculative_generate(target, draft, [1], generator=torch.Generator())


def test_decoder_bad_input():
    table = torch.randn(4, 4)
    lm = _markov(table)
    with pytest.raises(ValueError, match="gamma"):
        speculative_generate(lm, lm, [0], gamma=0)
    with pytest.raises(TypeError, match="gamma"):
        speculative_generate(lm, lm, [0], gamma=2.5)
    with pytest.raises(ValueError, match="max_new_tokens"):
        speculative_generate(lm, lm, [0], max_new_tokens=0)
    with pytest.raises(ValueError, match="input_ids"):
        speculative_generate(lm, lm, [])
    with pytest.raises(ValueError, match="input_ids"):
        speculative_generate(lm, lm, [0.5])
    with pytest.raises(ValueError, match="temperature"):
        speculative_generate(lm, lm, [0], temperature=-1.0)
    with pytest.raises(ValueError, match="attention_mask"):
        speculative_generate(lm, lm, [[0, 1]], attention_mask=torch.tensor([[0, 1]]))
