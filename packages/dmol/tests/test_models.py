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
