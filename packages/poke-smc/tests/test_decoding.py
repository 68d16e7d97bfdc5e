import math

import pytest
import torch
from poke_smc import (
    BestOfN,
    MajorityVote,
    MaskedDiffusionTransformer,
    NFECounter,
    PokeSMC,
    ScoreRemasking,
    decode,
    infill,
    path_log_likelihood,
    reveal_schedule,
)
from poke_smc.decoding import position_scores

log = math.log


def _random_model(vocab=5, length=12, seed=0):
    torch.manual_seed(seed)
    m = MaskedDiffusionTransformer(vocab, length, d_model=16, n_layers=1, n_heads=2)
    with torch.no_grad():  # larger logits than the 0.02 init, so orders and tokens differ
        m.head.weight.mul_(200.0)
    return m.eval()


def test_path_ll_of_greedy_confidence_by_hand(table_model):
    # step 0 (nothing revealed): confidences 0.9, 0.6, 0.7 -> position 0, token 0
    # step 1 (one revealed): p0 = 0.8 at position 1, 0.45 at 2 -> position 1, token 0
    # step 2 (two revealed): p0 = 0.3 at position 2 -> token 1, probability 0.7
    res = decode(table_model, [], gen_length=3, steps=3, strategy="confidence")
    assert res.tokens.tolist() == [[0, 0, 1]]
    assert res.reveal_step.tolist() == [[0, 1, 2]]
    expected = log(0.9) + log(0.8) + log(0.7)
    assert res.path_ll.item() == pytest.approx(expected, rel=1e-6)
    assert res.token_logprob.tolist()[0] == pytest.approx([log(0.9), log(0.8), log(0.7)])
    assert res.nfe == 3 and table_model.calls == 3


def test_path_log_likelihood_of_any_order_by_hand(table_model):
    # order: position 2 (token 1) at step 0, position 0 (token 1) at step 1, position 1
    # (token 0) at step 2: p = 1 - 0.7, then 1 - 0.5, then 0.25
    tokens = torch.tensor([[1, 0, 1]])
    steps = torch.tensor([[1, 2, 0]])
    pll = path_log_likelihood(table_model, tokens, steps)
    assert pll.item() == pytest.approx(log(0.3) + log(0.5) + log(0.25), rel=1e-6)


def test_two_tokens_per_step_share_the_state(table_model):
    # steps=2 over 3 tokens: 2 then 1 revealed; both first tokens scored at c=0
    res = decode(table_model, [], gen_length=3, steps=2)
    assert res.reveal_step.tolist() == [[0, 1, 0]]
    assert res.path_ll.item() == pytest.approx(log(0.9) + log(0.7) + log(0.75), rel=1e-6)


def test_recomputed_path_ll_matches_decoding():
    model = _random_model()
    prompt = torch.randint(0, 5, (4, 3), generator=torch.Generator().manual_seed(1))
    gen = torch.Generator().manual_seed(2)
    for strategy in ("random", "confidence", "margin", "entropy", ScoreRemasking(temperature=1.0)):
        with torch.no_grad():
            res = decode(model, prompt, 9, 5, strategy, generator=gen)
            again = path_log_likelihood(model, res.tokens, res.reveal_step)
        torch.testing.assert_close(res.path_ll, again, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(res.path_ll, res.token_logprob.sum(-1))
        assert (res.tokens[:, :3] == prompt).all() and (res.reveal_step[:, :3] == -1).all()
        per_step = torch.bincount(res.reveal_step[0, 3:], minlength=5)
        assert per_step.tolist() == reveal_schedule(torch.tensor([9]), 5)[0].tolist()


def test_reveal_schedule_is_even_and_complete():
    s = reveal_schedule(torch.tensor([9, 5, 12]), 5)
    assert s.tolist() == [[2, 2, 2, 2, 1], [1, 1, 1, 1, 1], [3, 3, 2, 2, 2]]


def test_scores_rank_positions_as_defined():
    logp = (
        torch.tensor([[[0.6, 0.4, 0.0], [0.5, 0.25, 0.25], [0.7, 0.3, 0.0]]]).clamp_min(1e-9).log()
    )
    tok = logp.argmax(-1)
    tlp = logp.gather(-1, tok[..., None]).squeeze(-1)
    conf = position_scores(logp, tlp, "confidence")
    margin = position_scores(logp, tlp, "margin")
    ent = position_scores(logp, tlp, "entropy")
    assert conf.argmax().item() == 2 and conf.argmin().item() == 1
    torch.testing.assert_close(margin, torch.tensor([[0.2, 0.25, 0.4]]), atol=1e-6, rtol=0)
    h = lambda ps: -sum(p * math.log(p) for p in ps if p > 0)  # noqa: E731
    torch.testing.assert_close(
        ent,
        -torch.tensor([[h([0.6, 0.4]), h([0.5, 0.25, 0.25]), h([0.7, 0.3])]]),
        atol=1e-5,
        rtol=0,
    )


@pytest.mark.parametrize(
    "strategy, per_seq",
    [
        ("confidence", 6),
        ("random", 6),
        (BestOfN(3, temperature=1.0), 18),
        (PokeSMC(4, value=None, temperature=1.0), 24),
        (PokeSMC(4, value="greedy", temperature=1.0, ess_threshold=1.0), 24),
    ],
)
def test_nfe_counts_are_exact(strategy, per_seq):
    model = NFECounter(_random_model())
    with torch.no_grad():
        res = infill(
            model,
            torch.tensor([[5, 1, 5, 5, 2, 5, 5, 5, 3, 5, 0, 5]] * 2),
            6,
            strategy,
            generator=torch.Generator().manual_seed(0),
        )
    assert res.nfe == per_seq
    assert model.nfe == 2 * per_seq
    assert model.calls == 6


def test_best_of_n_keeps_the_highest_path_ll():
    model = _random_model()
    with torch.no_grad():
        res = decode(model, [[1, 2], [3, 4]], 8, 8, BestOfN(6, temperature=1.0),
                     generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert res.candidates.shape == (2, 6, 10)
    torch.testing.assert_close(res.path_ll, res.candidate_path_ll.max(1).values)
    assert len({tuple(c) for c in res.candidates[0].tolist()}) > 1  # sampling differs


def test_best_of_one_at_temperature_zero_is_greedy():
    model = _random_model()
    with torch.no_grad():
        a = decode(model, [1, 2], 8, 4, "margin")
        b = decode(model, [1, 2], 8, 4, BestOfN(1, score="margin", temperature=0.0))
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.path_ll, b.path_ll)


def test_seeded_decoding_is_reproducible_and_inputs_untouched():
    model = _random_model()
    x = torch.tensor([[5, 1, 5, 5, 2, 5, 5, 5, 3, 5, 0, 5]])
    before = x.clone()
    runs = []
    for _ in range(2):  # no torch.no_grad() here: decoding must not build a graph itself
        runs.append(infill(model, x, 4, ScoreRemasking("random", temperature=1.0),
                           generator=torch.Generator().manual_seed(3)))  # fmt: skip
    assert torch.equal(runs[0].tokens, runs[1].tokens)
    assert torch.equal(x, before)
    assert (runs[0].tokens != 5).all()
    assert not runs[0].path_ll.requires_grad  # decoding runs without autograd


def test_bad_input_raises_clearly(table_model):
    with pytest.raises(ValueError, match="gen_length"):
        decode(table_model, [0], 0, 1)
    with pytest.raises(ValueError, match=r"steps .* <= gen_length"):
        decode(table_model, [0], 2, 3)
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        decode(table_model, [0], 2, 0)
    with pytest.raises(TypeError, match="steps must be an integer"):
        decode(table_model, [0], 2, 1.5)
    with pytest.raises(ValueError, match=r"mask token .* infill"):
        decode(table_model, [0, 2], 2, 2)
    with pytest.raises(ValueError, match="outside"):
        decode(table_model, [0, 7], 2, 2)
    with pytest.raises(TypeError, match="integer"):
        decode(table_model, [0.5], 2, 2)
    with pytest.raises(ValueError, match="shape"):
        decode(table_model, [[[0]]], 2, 2)
    with pytest.raises(ValueError, match="strategy must be one of"):
        decode(table_model, [0], 2, 2, "lowest-entropy")
    with pytest.raises(ValueError, match=r"multiple of block_length"):
        decode(table_model, [0], 2, 2, block_length=3)
    with pytest.raises(ValueError, match="no mask"):
        infill(table_model, [[0, 1, 2], [0, 1, 1]], 1)
    with pytest.raises(ValueError, match="fewest masked"):
        infill(table_model, [[2, 2, 2], [0, 2, 1]], 2)
    with pytest.raises(TypeError, match="mask_token_id"):
        decode(lambda t: t, [0], 1, 1)
    with pytest.raises(ValueError, match="score"):
        ScoreRemasking("loudest")
    with pytest.raises(ValueError, match="temperature"):
        BestOfN(2, temperature=-1.0)
    with pytest.raises(ValueError, match="n must be"):
        BestOfN(0)
    with pytest.raises(TypeError, match="temperature must be a real number"):
        MajorityVote(2, temperature="hot")
    with pytest.raises(ValueError, match="identical trajectories"):
        BestOfN(4, temperature=0.0)
    with pytest.raises(ValueError, match="identical trajectories"):
        PokeSMC(4, temperature=0.0, position_temperature=0.0)
    with pytest.raises(ValueError, match=r"prompt length \(3\) \+ gen_length \(10\)"):
        decode(_random_model(), [1, 2, 3], 10, 10)


def test_nan_logits_raise():
    class NaNModel:
        mask_token_id, vocab_size = 2, 2

        def __call__(self, tokens):
            return torch.full((*tokens.shape, 2), float("nan"))

    with pytest.raises(ValueError, match="NaN"):
        decode(NaNModel(), [0], 2, 2)


def test_order_only_sampling_keeps_argmax_tokens():
    model = _random_model()
    x = torch.tensor([[5, 1, 5, 5, 2, 5, 5, 5, 3, 5, 0, 5]])
    orders = set()
    for seed in range(6):
        with torch.no_grad():
            res = infill(model, x, 8, ScoreRemasking(temperature=0.0, position_temperature=2.0),
                         generator=torch.Generator().manual_seed(seed))  # fmt: skip
            orders.add(tuple(res.reveal_step[0].tolist()))
            for t in range(8):  # each token is the argmax given the state it was revealed in
                state = torch.where(res.reveal_step >= t, 5, res.tokens)
                now = res.reveal_step == t
                assert torch.equal(model(state).argmax(-1)[now], res.tokens[now])
    assert len(orders) > 1


def test_greedy_first_puts_the_greedy_path_among_the_candidates():
    model = _random_model()
    prompt = torch.tensor([[1, 2], [3, 4]])
    with torch.no_grad():
        greedy = decode(model, prompt, 8, 8, "confidence")
        bon = decode(model, prompt, 8, 8, BestOfN(5, temperature=1.0, greedy_first=True),
                     generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert torch.equal(bon.candidates[:, 0], greedy.tokens)
    torch.testing.assert_close(bon.candidate_path_ll[:, 0], greedy.path_ll)
    assert (bon.path_ll >= greedy.path_ll - 1e-6).all()


def test_pokesmc_has_no_greedy_slot():
    # a greedy slot's paths do not come from the proposal the weights assume
    with pytest.raises(TypeError):
        PokeSMC(4, greedy_first=True)
