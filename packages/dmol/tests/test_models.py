import pytest
import torch
import torch.nn.functional as F
from dmol import DMoLTrainer, GCNLayer, PairNorm, gcn_net, normalized_adjacency


def _graph():
    # a path 0-1-2-3 plus the edge 1-3, both directions
    e = torch.tensor([[0, 1, 1, 2, 2, 3, 1, 3], [1, 0, 2, 1, 3, 2, 3, 1]])
    return e, 4


def test_normalized_adjacency_matches_dense_formula():
    e, n = _graph()
    A = torch.zeros(n, n)
    A[e[0], e[1]] = 1.0
    A = A + torch.eye(n)
    d = A.sum(1).rsqrt()
    expected = d[:, None] * A * d[None, :]
    torch.testing.assert_close(normalized_adjacency(e, n).to_dense(), expected)
    with pytest.raises(ValueError, match="edge_index"):
        normalized_adjacency(e[0], n)
    with pytest.raises(ValueError, match="num_nodes"):
        normalized_adjacency(e, 0)


def test_gcn_layer_sparse_input_equals_dense_input():
    torch.manual_seed(0)
    e, n = _graph()
    adj = normalized_adjacency(e, n)
    layer = GCNLayer(5, 3).eval()  # eval: no dropout
    x = torch.relu(torch.randn(n, 5))
    out = layer(x, adj)
    torch.testing.assert_close(layer(x.to_sparse(), adj), out)
    torch.testing.assert_close(
        out, torch.relu(adj.to_dense() @ (x @ layer.lin.weight.T + layer.lin.bias))
    )


def test_pairnorm_centres_and_rescales():
    h = PairNorm(scale=2.0)(torch.randn(10, 4) + 3.0)
    torch.testing.assert_close(h.mean(0), torch.zeros(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(h.pow(2).sum(1).mean(), torch.tensor(4.0), rtol=1e-4, atol=1e-4)


def test_deep_dmol_gcn_learns_a_separable_graph():
    # two cliques of 6 nodes, labels = clique, features = noise: a depth-8 DMoL GCN fits it
    torch.manual_seed(0)
    idx = [(i, j) for c in (0, 6) for i in range(c, c + 6) for j in range(c, c + 6) if i != j]
    e = torch.tensor(idx).T
    adj = normalized_adjacency(e, 12)
    x, y = torch.randn(12, 4), torch.tensor([0] * 6 + [1] * 6)
    net = gcn_net(4, 16, 2, 8, dropout=0.0)
    trainer = DMoLTrainer(net, F.cross_entropy, lambda p: torch.optim.Adam(p, lr=0.01))
    for _ in range(60):
        losses = trainer.step(x, y, adj)
    assert (trainer.predict(x, adj).argmax(1) == y).all()
    assert losses[-1] < 0.1


def test_bad_sizes_and_edges_name_the_argument():
    from dmol import ResidualMLPBlock, mlp_net

    for kwargs, name in (
        ({"in_dim": 0}, "in_dim"),
        ({"dim": -1}, "dim"),
        ({"out_dim": -3}, "out_dim"),
        ({"depth": 0}, "depth"),
    ):
        args = {"in_dim": 5, "dim": 8, "out_dim": 3, "depth": 2, **kwargs}
        with pytest.raises(ValueError, match=name):
            mlp_net(**args)
        with pytest.raises(ValueError, match=name):
            gcn_net(**args)
    with pytest.raises(TypeError, match="in_dim"):
        mlp_net("5", 8, 3, 2)
    with pytest.raises(ValueError, match="expansion"):
        ResidualMLPBlock(8, expansion=0)
    e, n = _graph()
    with pytest.raises(ValueError, match=r"edge_index.*0\.\.2"):
        normalized_adjacency(e, 3)  # node 3 does not exist
    with pytest.raises(ValueError, match="edge_index"):
        normalized_adjacency(-e, n)
    with pytest.raises(TypeError, match=r"edge_index.*integer"):
        normalized_adjacency(e.float(), n)
    with pytest.raises(TypeError, match=r"edge_index.*Tensor"):
        normalized_adjacency(e.numpy(), n)
    e0 = e.clone()
    normalized_adjacency(e.int(), n)  # int32 edges work
    assert torch.equal(e, e0)


def test_conv_nets_shapes_zero_beliefs_and_downsampling():
    from dmol import (
        ConvResBlock,
        cnn_net,
        pool_head,
        resnet18_net,
        time_embedding,
        unet_denoiser,
    )

    torch.manual_seed(0)
    x = torch.randn(3, 1, 28, 28)
    net = cnn_net(1, 4, 10, 8).eval()
    zs = net(x, all_depths=True)
    assert net.depth == 8 and len(zs) == 8
    for z in zs:  # zeroed heads: every belief starts at 0
        torch.testing.assert_close(z, torch.zeros(3, 10), rtol=0, atol=0)
    flat = cnn_net(1, 4, 10, 8, pool=7).eval()  # flattened heads on the 7x7 maps
    assert flat.heads[0][-1].in_features == 4 * 7 * 7
    torch.testing.assert_close(flat(x), torch.zeros(3, 10), rtol=0, atol=0)
    head = pool_head(4, 10, 7)
    with torch.no_grad():
        head[-1].weight.normal_()
    h = torch.randn(2, 4, 7, 7)  # pooling a 7x7 map to 7x7 is the identity: a flat head
    torch.testing.assert_close(head(h), h.flatten(1) @ head[-1].weight.t())
    with pytest.raises(ValueError, match="size"):
        pool_head(4, 10, 0)
    res = resnet18_net(1, 10, width=2).eval()
    assert res.depth == 8
    assert [b.conv2.out_channels for b in list(res.blocks)[1:]] == [2, 4, 4, 8, 8, 16, 16]
    assert res(x).shape == (3, 10)
    block = ConvResBlock(4, in_channels=2, stride=2)
    assert block(torch.randn(2, 2, 8, 8)).shape == (2, 4, 4, 4)
    eye = ConvResBlock(3)
    with torch.no_grad():
        eye.conv2.weight.zero_()
    h = torch.randn(2, 3, 5, 5)
    torch.testing.assert_close(eye(h), h)  # identity shortcut when the branch is zero
    den = unet_denoiser(3, 4, 8)
    xt, temb = torch.randn(5, 1, 8, 8), time_embedding(torch.tensor([0, 1, 2, 3, 4]), 8)
    z = den(xt, temb)
    assert z.shape == (5, 1, 8, 8)
    torch.testing.assert_close(z, torch.zeros_like(z), rtol=0, atol=0)
    with pytest.raises(ValueError, match="channels"):
        cnn_net(1, 0, 10, 8)
    with pytest.raises(ValueError, match="width"):
        resnet18_net(1, 10, width=0)
    with pytest.raises(ValueError, match="belief"):
        unet_denoiser(2, 4, 8, belief="nope")


def test_dmol_cnn_learns_to_separate_two_patterns():
    from dmol import cnn_net

    torch.manual_seed(0)
    y = torch.arange(32) % 2
    x = torch.randn(32, 1, 8, 8) * 0.3
    x[y == 1, :, :4] += 1.0  # class 1: bright top half
    net = cnn_net(1, 4, 2, 3, patch=2)
    trainer = DMoLTrainer(net, F.cross_entropy, lambda p: torch.optim.Adam(p, lr=0.01))
    first = trainer.step(x, y)
    for _ in range(40):
        losses = trainer.step(x, y)
    assert (losses < first).all()
    assert (trainer.predict(x).argmax(1) == y).float().mean() > 0.9


@pytest.mark.slow  # imports torch_geometric (tens of seconds without a bytecode cache)
def test_torch_geometric_peers():
    pytest.importorskip("torch_geometric")
    from dmol.peers import GCNII, use_pyg_pairnorm

    torch.manual_seed(0)
    h = torch.randn(10, 4) + 3.0
    net = use_pyg_pairnorm(gcn_net(4, 4, 2, 2, pairnorm=True))
    norms = [layer.norm for layer in net.blocks]
    assert all(type(n).__module__.startswith("torch_geometric") for n in norms)
    torch.testing.assert_close(norms[0](h), PairNorm()(h), rtol=1e-5, atol=1e-5)  # same "PN"
    e, n = _graph()
    adj = normalized_adjacency(e, n)
    model = GCNII(5, 8, 3, 4).eval()
    out = model(torch.randn(n, 5), adj.indices(), adj.values())
    assert out.shape == (n, 3) and torch.isfinite(out).all()
    with pytest.raises(ValueError, match="alpha"):
        GCNII(5, 8, 3, 4, alpha=2.0)


def test_time_embedding_checks_t():
    # before: a list gave AttributeError ('list' has no 'float'), a 2-D t a broadcast error
    from dmol import time_embedding

    emb = time_embedding(torch.tensor([0, 3]), 6)
    assert emb.shape == (2, 6) and emb.dtype == torch.float32
    with pytest.raises(TypeError, match=r"t: expected a 1-D torch.Tensor"):
        time_embedding([0, 3], 6)
    with pytest.raises(ValueError, match=r"t: expected a 1-D tensor.*\(2, 2\)"):
        time_embedding(torch.ones(2, 2), 6)


def test_peers_without_torch_geometric_say_how_to_install(monkeypatch):
    # before: a bare "No module named 'torch_geometric'" from inside GCNII.__init__
    import sys

    from dmol import peers

    monkeypatch.setitem(sys.modules, "torch_geometric.nn", None)
    with pytest.raises(ImportError, match=r"dmol\[repro\]"):
        peers.GCNII(4, 8, 3, 2)
    with pytest.raises(ImportError, match=r"dmol\[repro\]"):
        peers.use_pyg_pairnorm(gcn_net(4, 8, 3, 2, pairnorm=True))
