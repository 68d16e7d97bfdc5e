"""LLaDA-style decoding: semi-autoregressive blocks, padded batches, end-of-sequence."""

import pytest
import torch
from poke_smc import (
    BestOfN,
    MajorityVote,
    MaskedDiffusionTransformer,
    NFECounter,
    PokeSMC,
    decode,
    majority_vote,
    path_log_likelihood,
)


def _model(vocab=6, length=24, seed=0, scale=200.0):
    torch.manual_seed(seed)
    m = MaskedDiffusionTransformer(vocab, length, d_model=16, n_layers=2, n_heads=2)
    with torch.no_grad():  # larger logits than the 0.02 init, so orders and tokens differ
        m.head.weight.mul_(scale)
    return m.eval()


@pytest.mark.parametrize("strategy", ["confidence", "random", BestOfN(3, temperature=1.0)])
def test_blocks_are_finished_in_order(strategy):
    model = _model()
    gen = torch.Generator().manual_seed(0)
    res = decode(model, [[1, 2, 3], [4, 5, 0]], 12, 6, strategy, block_length=4, generator=gen)
    steps = res.reveal_step[:, 3:].view(2, 3, 4)  # (row, block, position in block)
    # each block gets 6 / 3 = 2 steps, two tokens per step, and ends before the next starts
    assert (steps[:, 0] < 2).all() and ((steps[:, 1] >= 2) & (steps[:, 1] < 4)).all()
    assert (steps[:, 2] >= 4).all()
    for b in range(3):
        counts = torch.stack([torch.bincount(r, minlength=6) for r in steps[:, b]])
        assert (counts[:, 2 * b : 2 * b + 2] == 2).all()
    assert res.steps == 6
    torch.testing.assert_close(res.path_ll, path_log_likelihood(model, res.tokens, res.reveal_step))


def test_per_block_steps_and_errors():
    model = NFECounter(_model())
    res = decode(model, [1, 2], 8, [4, 1], block_length=4)
    assert res.nfe == 5 and model.nfe == 5
    assert torch.bincount(res.reveal_step[0, 2:]).tolist() == [1, 1, 1, 1, 4]
    with pytest.raises(ValueError, match="multiple of the number of blocks"):
        decode(model, [1, 2], 8, 5, block_length=4)
    with pytest.raises(ValueError, match="one entry per block"):
        decode(model, [1, 2], 8, [4, 1, 1], block_length=4)
    with pytest.raises(ValueError, match=r"steps \(5\) must be <= block_length"):
        decode(model, [1, 2], 8, [5, 1], block_length=4)
    with pytest.raises(ValueError, match="block_length must be an integer >= 1"):
        decode(model, [1, 2], 8, 4, block_length=0)


def test_one_block_of_the_whole_answer_is_the_plain_decoder():
    model = _model()
    a = decode(model, [[1, 2], [3, 4]], 8, 4)
    b = decode(model, [[1, 2], [3, 4]], 8, 4, block_length=8)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.reveal_step, b.reveal_step)


@pytest.mark.parametrize("block_length", [None, 3])
@pytest.mark.parametrize("score", ["confidence", "margin"])
def test_a_padded_row_equals_its_single_run(score, block_length):
    model = _model()
    prompts = [[1, 2, 3], [4, 5, 0, 1, 2, 3], [5]]
    batch = decode(model, prompts, 9, 9, score, block_length=block_length)
    width = 6
    assert batch.tokens.shape == (3, width + 9)
    assert batch.attention_mask[0].tolist() == [False] * 3 + [True] * 12
    for i, p in enumerate(prompts):
        alone = decode(model, p, 9, 9, score, block_length=block_length)
        assert torch.equal(batch.tokens[i, width:], alone.tokens[0, len(p) :])
        assert torch.equal(batch.reveal_step[i, width:], alone.reveal_step[0, len(p) :])
        torch.testing.assert_close(batch.path_ll[i], alone.path_ll[0], rtol=1e-4, atol=1e-4)
    again = path_log_likelihood(model, batch.tokens, batch.reveal_step, batch.attention_mask)
    torch.testing.assert_close(batch.path_ll, again, rtol=1e-5, atol=1e-5)


def test_padded_tensor_with_attention_mask_equals_the_list():
    model = _model()
    listed = decode(model, [[1, 2, 3], [4, 5]], 6, 3, pad_token_id=3)
    ids = torch.tensor([[1, 2, 3], [6, 4, 5]])  # the mask id on padding is overwritten
    masked = decode(model, ids, 6, 3, attention_mask=torch.tensor([[1, 1, 1], [0, 1, 1]]))
    assert torch.equal(listed.tokens[:, 3:], masked.tokens[:, 3:])
    same = decode(model, ids[:1], 6, 3, attention_mask=torch.ones(1, 3))
    assert same.attention_mask is None  # nothing padded: a plain call
    with pytest.raises(ValueError, match="attention_mask"):
        decode(model, ids, 6, 3, attention_mask=torch.ones(2, 2))
    with pytest.raises(ValueError, match="0/1"):
        decode(model, ids, 6, 3, attention_mask=torch.full((2, 3), 2))
    with pytest.raises(ValueError, match="pad_token_id"):
        decode(model, [[1], [1, 2]], 6, 3, pad_token_id=6)


def test_padding_needs_a_model_that_takes_an_attention_mask(table_model):
    with pytest.raises(TypeError, match="attention_mask"):
        decode(table_model, [[0], [0, 1]], 1, 1)


def test_max_len_counts_attended_positions():
    model = _model(length=10)
    res = decode(model, [[1, 2, 3, 4], [1]], 6, 6)  # 4 + 6 = max_len, the pad is free
    assert res.tokens.shape == (2, 10)
    with pytest.raises(ValueError, match="max_len"):
        decode(model, [[1, 2, 3, 4, 5], [1]], 6, 6)


class EOSModel:
    """Vocabulary {0, 1, 2=EOS}, mask 3: EOS from position ``stop`` on, surest at ``stop``."""

    mask_token_id, vocab_size = 3, 3

    def __init__(self, stop):
        self.stop, self.calls = stop, 0

    def __call__(self, tokens):
        self.calls += 1
        b, length = tokens.shape
        logits = torch.zeros(b, length, 3)
        pos = torch.arange(length)
        late = pos >= self.stop
        logits[:, ~late, 0] = 2.0
        logits[:, late, 2] = 10.0 - pos[late].float()
        return logits


def test_eos_fills_the_rest_of_the_answer_and_stops_early():
    model = EOSModel(stop=4)
    res = decode(model, [1], 8, 8, "confidence", eos_token_id=2)
    # step 0 reveals the EOS at position 4 (the surest) and fills positions 5..8 with EOS;
    # steps 1-3 reveal positions 1-3, and the 4 steps left have nothing to do
    assert res.tokens[0, 1:].tolist() == [0, 0, 0, 2, 2, 2, 2, 2]
    assert res.reveal_step[0, 4:].tolist() == [0] * 5
    assert res.answer_lengths.tolist() == [3]
    assert res.nfe == 4 and model.calls == 4
    again = path_log_likelihood(model, res.tokens, res.reveal_step)
    torch.testing.assert_close(res.path_ll, again)
    plain = decode(EOSModel(stop=4), [1], 8, 8, "confidence")
    assert plain.nfe == 8 and plain.answer_lengths is None
    assert plain.tokens[0, 1:].tolist() == res.tokens[0, 1:].tolist()


def test_eos_in_smc_and_best_of_n():
    model = EOSModel(stop=3)
    gen = torch.Generator().manual_seed(0)
    for strat in (BestOfN(3, temperature=0.5), PokeSMC(3, value="greedy", temperature=0.5)):
        res = decode(model, [[1, 0], [0, 1]], 6, 6, strat, eos_token_id=2, generator=gen)
        is_eos = res.tokens[:, 2:] == 2
        first = torch.where(is_eos, torch.arange(6), 6).min(-1).values
        assert torch.equal(res.answer_lengths, first)
        assert res.nfe < 3 * 6  # the EOS filled the answers before the last steps
        again = path_log_likelihood(model, res.tokens, res.reveal_step)
        torch.testing.assert_close(res.path_ll, again)


def test_majority_vote_by_hand():
    cands = torch.tensor([[[1, 2], [3, 4], [1, 2], [3, 4], [0, 0]]])
    pll = torch.tensor([[-5.0, -1.0, -2.0, -3.0, -0.1]])
    # two answers with 2 votes each: the tie goes to the better Path LL (index 1, -1.0)
    assert majority_vote(cands, pll).tolist() == [1]
    assert majority_vote(cands[:, :3], pll[:, :3]).tolist() == [2]  # [1, 2] twice
    with pytest.raises(ValueError, match="candidates"):
        majority_vote(cands[0], pll)


def test_majority_vote_strategy_returns_the_commonest_candidate():
    model = _model()
    res = decode(model, [[1, 2], [3, 4]], 6, 6, MajorityVote(7, temperature=1.0),
                 generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert res.nfe == 42 and res.candidates.shape == (2, 7, 8)
    for i in range(2):
        votes = (res.candidates[i] == res.tokens[i]).all(-1).sum()
        others = [(res.candidates[i] == c).all(-1).sum() for c in res.candidates[i]]
        assert votes == max(others)
