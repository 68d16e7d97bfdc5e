import pytest
import torch
from lk_losses import acceptance_rate, lk_loss, speculative_generate
from lk_losses.drafts import FeatureHead, VocabMappedLM, draft_vocabulary, tiny_draft_lm


def test_draft_vocabulary_is_the_most_frequent_ids():
    ids = torch.tensor([3, 3, 3, 1, 1, 7, 0, 9, 9, 9, 9])
    assert draft_vocabulary(ids, 3, 10).tolist() == [9, 3, 1]
    assert draft_vocabulary(ids, 5, 10).tolist() == [9, 3, 1, 0, 7]  # ties: lower id
    with pytest.raises(ValueError, match="size"):
        draft_vocabulary(ids, 11, 10)
    with pytest.raises(ValueError, match="token_ids"):
        draft_vocabulary([10], 1, 10)


def test_vocab_mapped_lm_maps_inputs_and_outputs():
    vocab = torch.tensor([4, 0, 7])
    lm = tiny_draft_lm(vocab, 10, hidden_size=16, num_attention_heads=2, seed=0).eval()
    assert lm.get_output_embeddings().out_features == 3
    ids = torch.tensor([[4, 5, 7, 9]])
    out = lm(input_ids=ids).logits
    assert out.shape == (1, 4, 3)
    # tokens outside the draft vocabulary share one input id: 5 and 9 read alike
    assert lm.to_draft[5] == lm.to_draft[9] == 3
    same = lm(input_ids=torch.tensor([[4, 9, 7, 5]])).logits
    torch.testing.assert_close(out, same)
    with pytest.raises(ValueError, match="distinct"):
        VocabMappedLM(lm.model, torch.tensor([1, 1]), 10)
    with pytest.raises(ValueError, match="lie in"):
        VocabMappedLM(lm.model, torch.tensor([1, 12]), 10)


def test_mapped_draft_decodes_exactly_with_a_real_target():
    from icml26_core.lm import tiny_llama

    target = tiny_llama(
        "1M",
        40,
        seed=3,
        num_hidden_layers=1,
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=2,
        num_key_value_heads=2,
        initializer_range=0.3,
    ).eval()
    vocab = torch.arange(0, 40, 2)  # the even tokens
    draft = tiny_draft_lm(vocab, 40, hidden_size=16, num_attention_heads=2, seed=1).eval()
    ids = torch.tensor([[1, 2, 3, 4]])
    out = speculative_generate(
        target, draft, ids, gamma=3, max_new_tokens=10, temperature=0, draft_vocab=vocab
    )
    ref = target.generate(
        ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False, pad_token_id=0
    )
    assert torch.equal(out.tokens, ref)
    with pytest.raises(ValueError, match="draft vocabulary"):
        speculative_generate(target, draft, ids, max_new_tokens=2)  # no draft_vocab


def test_feature_head_shapes_and_training_signal():
    g = torch.Generator().manual_seed(0)
    emb = torch.randn(30, 8, generator=g)
    head = FeatureHead(emb, vocab=5, rank=3, seed=0)
    hidden = torch.randn(2, 6, 8, generator=g)
    nxt = torch.randint(0, 30, (2, 6), generator=g)
    logits = head(hidden, nxt)
    assert logits.shape == (2, 6, 5)
    assert [n for n, _ in head.named_parameters()] == [
        "inp.weight",
        "inp.bias",
        "out.weight",
        "out.bias",
    ]
    target = torch.randn(2, 6, 5, generator=g).log_softmax(-1) - 0.2  # mass 0.82 on V_d
    opt = torch.optim.Adam(head.parameters(), lr=0.05)
    before = float(acceptance_rate(logits.detach(), target, renormalize_target=False).mean())
    for _ in range(100):
        loss = lk_loss(head(hidden, nxt), target, renormalize_target=False)
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = acceptance_rate(head(hidden, nxt).detach(), target, renormalize_target=False)
    assert float(after.mean()) > before + 0.1
    assert bool((after <= 0.82 + 1e-3).all())  # never above the mass on the vocabulary
    with pytest.raises(ValueError, match="embedding"):
        FeatureHead(torch.randn(3), vocab=5)
