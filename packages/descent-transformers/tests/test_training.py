import pytest
import torch
import torch.nn.functional as F
from descent_transformers import (
    UnrolledTransformer,
    descent_share,
    is_monotone,
    layer_losses,
    with_layer_heads,
)
from torch import nn


def _net(**kw):
    torch.manual_seed(0)
    args = dict(dim=16, depth=3, heads=2, patch=4, frames=2, size=8)
    return UnrolledTransformer(**{**args, **kw})


def test_layer_losses_equal_a_manual_loop():
    net = _net()
    for p in net.readout.parameters():  # break the zero init so layers differ
        nn.init.normal_(p, std=0.1)
    x = torch.rand(3, 2, 8, 8)
    noisy = x + 0.1 * torch.randn_like(x)
    got = layer_losses(net, noisy, x)
    states = net.hidden_states(noisy)
    manual = [F.mse_loss(noisy, x)]
    for h in states[1:]:
        manual.append(F.mse_loss(noisy - net.unpatchify(net.readout(h)), x))
    assert torch.allclose(got, torch.stack(manual), atol=1e-6)
    assert got.shape == (4,)


def test_patchify_round_trip_and_shapes():
    net = _net()
    x = torch.rand(2, 2, 8, 8)
    assert net.patchify(x).shape == (2, 2 * 4, 16)
    assert torch.equal(net.unpatchify(net.patchify(x)), x)
    assert net(x).shape == x.shape


def test_zero_initialised_readout_starts_at_the_input():
    net = _net()
    x = torch.rand(2, 2, 8, 8)
    for out in net.layer_outputs(x):
        assert torch.allclose(out, x)


def test_perturb_hook_reaches_only_its_layer():
    net = _net()
    for p in net.readout.parameters():
        nn.init.normal_(p, std=0.1)
    x = torch.rand(2, 2, 8, 8)
    clean = net.layer_outputs(x)
    hit = net.layer_outputs(x, perturb=lambda i, h: h + torch.randn_like(h) if i == 2 else h)
    assert torch.allclose(clean[1], hit[1])
    assert not torch.allclose(clean[2], hit[2])


def test_is_monotone_and_share_with_ties():
    assert is_monotone([1.0, 1.0, 0.5, 0.5])
    assert not is_monotone([1.0, 0.5, 0.50001])
    assert is_monotone([1.0, 0.5, 0.50001], tol=1e-4)
    assert descent_share([1.0, 2.0, 1.0, 0.5, 0.6]) == pytest.approx(0.5)
    assert is_monotone(torch.tensor([3.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="at least 2"):
        descent_share([1.0])


def test_model_without_per_layer_outputs_gets_a_clear_error():
    lin = nn.Linear(3, 3)
    with pytest.raises(TypeError, match="output_hidden_states"):
        layer_losses(lin, torch.rand(2, 3), torch.rand(2, 3))
    with pytest.raises(TypeError, match="output_hidden_states"):
        layer_losses(lin, torch.rand(2, 3), torch.rand(2, 3), readout=lambda h: h)


def test_readout_over_returned_hidden_states():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(3, 3) for _ in range(2))

        def forward(self, x):
            hs = [x]
            for layer in self.layers:
                hs.append(layer(hs[-1]))
            return hs

    m = Stack()
    x, y = torch.rand(4, 3), torch.randint(0, 3, (4,))
    got = layer_losses(m, x, y, readout=lambda h: h)
    assert got.shape == (3,)
    assert float(got[0].detach()) == pytest.approx(float(F.cross_entropy(x, y)), rel=1e-6)


@pytest.mark.slow  # importing transformers alone takes 10-50 s on the loaded machine
def test_with_layer_heads_on_a_tiny_bert():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16,
    )  # fmt: skip
    torch.manual_seed(0)
    model = with_layer_heads(transformers.BertModel(config), n_classes=3)
    inputs = {
        "input_ids": torch.randint(0, 50, (4, 7)),
        "attention_mask": torch.ones(4, 7, dtype=torch.long),
    }
    outs = model.layer_outputs(inputs)
    assert len(outs) == 3 and outs[-1].shape == (4, 3)
    assert layer_losses(model, inputs, torch.tensor([0, 1, 2, 0])).shape == (3,)
    with pytest.raises(TypeError, match="num_hidden_layers"):
        with_layer_heads(nn.Linear(2, 2), 3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"heads": 3}, "heads must divide dim"),
        ({"size": 10}, "multiple of patch"),
        ({"dim": 0}, "dim"),
    ],
)
def test_bad_model_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _net(**kwargs)


def test_bad_input_shape():
    with pytest.raises(ValueError, match=r"x must have shape \(B, 2, 8, 8\)"):
        _net()(torch.rand(2, 3, 8, 8))
