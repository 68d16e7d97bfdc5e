from types import SimpleNamespace

import numpy as np
import pytest
import torch
from poke_smc import (
    MaskedDiffusionTransformer,
    SudokuTask,
    TransformersMaskedLM,
    decode,
    masked_diffusion_loss,
    train_masked_diffusion,
)


def test_transformer_shapes_and_errors():
    m = MaskedDiffusionTransformer(7, 10, d_model=16, n_layers=1, n_heads=2)
    assert m.mask_token_id == 7 and m.vocab_size == 7
    out = m(torch.randint(0, 8, (3, 10)))
    assert out.shape == (3, 10, 7)
    with pytest.raises(ValueError, match="max_len"):
        m(torch.zeros(1, 11, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids"):
        m(torch.full((1, 4), 8))
    with pytest.raises(ValueError, match="batch, length"):
        m(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="n_heads"):
        MaskedDiffusionTransformer(7, 10, d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="vocab_size"):
        MaskedDiffusionTransformer(0, 10)


def test_attention_is_bidirectional():
    torch.manual_seed(0)
    m = MaskedDiffusionTransformer(5, 6, d_model=16, n_layers=1, n_heads=2).eval()
    x = torch.tensor([[1, 2, 5, 5, 3, 4]])
    y = x.clone()
    y[0, 5] = 0  # change the last token: the first position's logits must move
    assert not torch.allclose(m(x)[0, 0], m(y)[0, 0])


def test_loss_masks_only_maskable_positions_and_is_weighted():
    seen = {}

    class Spy(torch.nn.Module):
        mask_token_id, vocab_size = 4, 4

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(4))

        def forward(self, tokens):
            seen["x"] = tokens.clone()
            return self.w.expand(*tokens.shape, 4)

    x0 = torch.randint(0, 4, (64, 10), generator=torch.Generator().manual_seed(0))
    maskable = torch.zeros_like(x0, dtype=torch.bool)
    maskable[:, 6:] = True
    loss = masked_diffusion_loss(Spy(), x0, maskable, generator=torch.Generator().manual_seed(1))
    assert torch.equal(seen["x"][:, :6], x0[:, :6])
    assert (seen["x"][:, 6:] == 4).any()
    # uniform logits: each masked token costs log 4, weighted by 1/t; E[masked/t] = 1 per
    # maskable token, so the loss estimates log 4
    assert loss.item() == pytest.approx(np.log(4), rel=0.25)
    loss.backward()
    with pytest.raises(ValueError, match="maskable"):
        masked_diffusion_loss(Spy(), x0, maskable[:, :5])
    with pytest.raises(ValueError, match="at least one"):
        masked_diffusion_loss(Spy(), x0, torch.zeros_like(maskable))


def test_training_lowers_the_loss_on_sudoku():
    task = SudokuTask(4)
    torch.manual_seed(0)
    m = MaskedDiffusionTransformer(task.vocab_size, task.seq_len, d_model=32, n_layers=2, n_heads=4)
    rng = np.random.default_rng(0)
    hist = train_masked_diffusion(m, lambda s: task.train_batch(32, rng), 80, lr=3e-3, warmup=10)
    assert hist.steps == 80 and not m.training
    assert np.mean(hist.loss[-20:]) < 0.85 * np.mean(hist.loss[:20])
    with pytest.raises(ValueError, match="steps"):
        train_masked_diffusion(m, lambda s: task.train_batch(4, rng), 0)


class _FakeHFMaskedLM(torch.nn.Module):
    """A transformers-like masked LM without transformers: ``.config``, keyword inputs,
    an output with ``.logits``; it attends to non-padding tokens and numbers positions by
    ``position_ids``, so a padded row gives what it gives alone only if both are passed."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(vocab_size=12, mask_token_id=3, pad_token_id=0,
                                      eos_token_id=[2, 5])  # fmt: skip
        self.tok = torch.nn.Embedding(12, 12)
        self.pos = torch.nn.Embedding(16, 12)

    def forward(self, input_ids, attention_mask=None, position_ids=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if position_ids is None:
            position_ids = torch.arange(input_ids.shape[1]).expand_as(input_ids)
        am = attention_mask.unsqueeze(-1).float()
        h = self.tok(input_ids) * am
        context = h.sum(1, keepdim=True) / am.sum(1, keepdim=True)
        return SimpleNamespace(logits=h + context + self.pos(position_ids))


def test_transformers_adapter_reads_the_config_and_pads_like_a_single_run():
    torch.manual_seed(0)
    model = TransformersMaskedLM(_FakeHFMaskedLM().eval())
    assert (model.mask_token_id, model.vocab_size) == (3, 12)
    assert (model.pad_token_id, model.eos_token_id) == (0, 2)  # the first of several EOS ids
    logits = model(torch.tensor([[1, 3, 3, 2]]))
    assert logits.shape == (1, 4, 12) and torch.isinf(logits[..., 3]).all()
    ragged = decode(model, [[1, 4, 6, 7], [6, 7]], 3, 3, "confidence")
    alone = decode(model, [6, 7], 3, 3, "confidence")
    assert torch.equal(ragged.tokens[1, 2:], alone.tokens[0])
    assert (ragged.tokens[1, :2] == model.pad_token_id).all()
    torch.testing.assert_close(ragged.path_ll[1], alone.path_ll[0])


@pytest.mark.slow  # importing transformers costs ~10 s of CPU; the fake above runs always
def test_transformers_adapter_decodes():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=12, hidden_size=16, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=32,
                                  max_position_embeddings=32)  # fmt: skip
    torch.manual_seed(0)
    bert = transformers.BertForMaskedLM(cfg).eval()
    with pytest.raises(ValueError, match="mask_token_id"):
        TransformersMaskedLM(bert)
    model = TransformersMaskedLM(bert, mask_token_id=3)
    logits = model(torch.tensor([[1, 3, 3, 2]]))
    assert logits.shape == (1, 4, 12) and torch.isinf(logits[..., 3]).all()
    with torch.no_grad():
        res = decode(model, [1, 2, 4], 5, 5, "confidence")
    assert res.tokens.shape == (1, 8) and (res.tokens != 3).all()
    assert torch.isfinite(res.path_ll).all()
