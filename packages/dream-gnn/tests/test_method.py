import numpy as np
import pytest
import torch
import torch.nn.functional as F
from dream_gnn import (
    GCN,
    DREAMLoss,
    DREAMTrainer,
    add_label_noise,
    dream_loss,
    fit_classifier,
    gce_loss,
    personalized_pagerank,
)

nx = pytest.importorskip("networkx")
from torch_geometric.data import Data  # noqa: E402


# ---------------------------------------------------------------- PageRank
@pytest.mark.parametrize("dense_max", [10_000, 1])
def test_ppr_matches_networkx(dense_max):
    g = nx.gnp_random_graph(30, 0.1, seed=3, directed=True)
    g.add_node(30)  # an isolated (dangling) node
    ei = np.array(list(g.edges())).T
    pr = personalized_pagerank(ei, 31, 0.15, dense_max=dense_max, tol=1e-13)
    for s in (0, 5, 30):
        ref = nx.pagerank(g, alpha=0.85, personalization={s: 1.0}, tol=1e-13, max_iter=10_000)
        np.testing.assert_allclose(pr[s], [ref[i] for i in range(31)], atol=1e-8)
    np.testing.assert_allclose(pr.sum(1), 1.0, atol=1e-12)


def test_ppr_sources_and_errors():
    ei = np.array([[0, 1, 1, 2], [1, 0, 2, 1]])
    full = personalized_pagerank(ei, 3)
    np.testing.assert_allclose(personalized_pagerank(ei, 3, sources=[2, 0]), full[[2, 0]])
    with pytest.raises(ValueError, match="alpha"):
        personalized_pagerank(ei, 3, alpha=1.0)
    with pytest.raises(ValueError, match="edge_index"):
        personalized_pagerank(np.array([[0], [3]]), 3)


# ---------------------------------------------------------------- losses
def test_dream_loss_ones_is_cross_entropy_and_weights_scale():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(7, 4, generator=g)
    y = torch.randint(0, 4, (7,), generator=g)
    ce = F.cross_entropy(logits, y, reduction="none")
    torch.testing.assert_close(dream_loss(logits, y), ce.mean())
    torch.testing.assert_close(dream_loss(logits, y, torch.ones(7)), ce.mean())
    w = torch.rand(7, generator=g)
    torch.testing.assert_close(dream_loss(logits, y, w, "sum"), (w * ce).sum())
    torch.testing.assert_close(DREAMLoss("none")(logits, y, w), w * ce)
    with pytest.raises(ValueError, match="weights"):
        dream_loss(logits, y, -w)
    with pytest.raises(ValueError, match="reduction"):
        dream_loss(logits, y, w, "avg")


def test_gce_limits():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(9, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (9,), generator=g)
    p = F.softmax(logits, 1)[torch.arange(9), y]
    torch.testing.assert_close(gce_loss(logits, y, q=1.0), (1 - p).mean())  # MAE
    ce = F.cross_entropy(logits, y)
    torch.testing.assert_close(gce_loss(logits, y, q=1e-5), ce, rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------- noise
@pytest.mark.parametrize("kind", ["uniform", "pair", "structure"])
def test_noise_rate_exact_and_mapping(kind, sbm):
    data, y = sbm(seed=2)
    mask = np.zeros(y.size, bool)
    mask[::2] = True
    noisy = add_label_noise(y, 0.4, kind, edge_index=data.edge_index, mask=mask, seed=5)
    flipped = noisy != y
    assert flipped.sum() == round(0.4 * mask.sum())
    assert not flipped[~mask].any()
    C = 3
    if kind == "pair":
        np.testing.assert_array_equal(noisy[flipped], (y[flipped] + 1) % C)
    if kind == "structure":
        ei = data.edge_index.numpy()
        for v in np.flatnonzero(flipped):
            nb = np.concatenate([ei[1][ei[0] == v], ei[0][ei[1] == v]])
            counts = np.bincount(y[nb], minlength=C)
            counts[y[v]] = 0
            assert noisy[v] == counts.argmax()
    y_before = y.copy()
    add_label_noise(y, 0.4, kind, edge_index=data.edge_index, seed=5)
    np.testing.assert_array_equal(y, y_before)  # not mutated


def test_noise_uniform_spreads_over_other_classes():
    y = np.zeros(3000, dtype=np.int64)
    y[:1] = 3
    noisy = add_label_noise(y, 0.5, "uniform", num_classes=4, seed=0)
    counts = np.bincount(noisy[noisy != y], minlength=4)
    assert counts[0] < 5  # only the one node of class 3 can go to 0
    assert all(abs(c - 500) < 100 for c in counts[1:])


def test_noise_errors():
    y = np.array([0, 1, 2, 0])
    for rate in (-0.1, 1.0):
        with pytest.raises(ValueError, match="rate"):
            add_label_noise(y, rate)
    with pytest.raises(ValueError, match="kind"):
        add_label_noise(y, 0.2, "flip")
    with pytest.raises(ValueError, match="edge_index"):
        add_label_noise(y, 0.2, "structure")
    with pytest.raises(ValueError, match="edge_index"):
        add_label_noise(y, 0.2, "structure", edge_index=np.array([[0], [9]]))
    with pytest.raises(TypeError, match="y"):
        add_label_noise(y.astype(float), 0.2)


# ---------------------------------------------------------------- trainer
def test_no_reweighting_equals_cross_entropy_training(sbm, masks):
    data, y = sbm()
    tm, vm = masks(y.size)
    yt = torch.tensor(y)
    torch.manual_seed(0)
    m1 = GCN(20, 16, 3)
    m2 = GCN(20, 16, 3)
    m2.load_state_dict(m1.state_dict())
    DREAMTrainer(m1, k_proximity=3, k_topology=3, warmup=30, seed=1).fit(
        data, tm, yt, 30, val_mask=vm
    )
    fit_classifier(m2, data, tm, yt, 30, loss="ce", val_mask=vm, seed=1)
    for a, b in zip(m1.state_dict().values(), m2.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)


def test_anchors_exclude_self_and_are_labelled(sbm, masks):
    data, y = sbm()
    tm, vm = masks(y.size)
    torch.manual_seed(0)
    tr = DREAMTrainer(GCN(20, 16, 3), k_proximity=4, k_topology=5, warmup=5, every=5)
    tr.fit(data, tm, torch.tensor(y), 20, val_mask=vm)
    L = int(tm.sum())
    assert tr.anchors_.shape == (L, 9)
    assert tr.reliability_.shape == (L,)
    assert bool(tm[tr.anchors_].all())
    assert not bool((tr.anchors_ == tr.train_idx_[:, None]).any())
    assert tr.reliability_.mean().item() == pytest.approx(1.0, abs=1e-5)
    # each standard's anchors are distinct nodes
    for row in tr.anchors_:
        assert len(set(row[:4].tolist())) == 4 and len(set(row[4:].tolist())) == 5


def test_topology_anchors_are_top_ppr(sbm, masks):
    data, y = sbm(seed=1)
    tm, _ = masks(y.size, seed=1)
    torch.manual_seed(0)
    tr = DREAMTrainer(GCN(20, 8, 3), k_proximity=0, k_topology=3, warmup=0, ppr_alpha=0.2)
    tr.fit(data, tm, torch.tensor(y), 2)
    idx = tr.train_idx_.numpy()
    ppr = personalized_pagerank(data.edge_index.numpy(), y.size, 0.2, sources=idx)
    for i, v in enumerate(idx):
        scores = ppr[i, idx].copy()
        scores[i] = -1
        kth = np.sort(scores)[-3]
        assert all(ppr[i, a] >= kth - 1e-12 for a in tr.anchors_[i].tolist())
        assert v not in tr.anchors_[i].tolist()


def test_clean_nodes_get_larger_weights_on_sbm(sbm, masks):
    data, y = sbm(seed=4, n_per=50)
    tm, vm = masks(y.size, seed=4)
    mask = (tm | vm).numpy()
    noisy = add_label_noise(y, 0.3, "uniform", mask=mask, seed=4)
    torch.manual_seed(0)
    tr = DREAMTrainer(GCN(20, 16, 3), k_proximity=5, k_topology=5, warmup=20, every=10)
    tr.fit(data, tm, torch.tensor(noisy), 60, val_mask=vm)
    idx = tr.train_idx_.numpy()
    clean = noisy[idx] == y[idx]
    w = tr.reliability_.numpy()
    assert w[clean].mean() > w[~clean].mean() + 0.3


def test_relabel_fixes_some_noisy_labels_and_keeps_input(sbm, masks):
    data, y = sbm(seed=4, n_per=50)
    tm, vm = masks(y.size, seed=4)
    noisy = add_label_noise(y, 0.3, "pair", mask=(tm | vm).numpy(), seed=4)
    noisy_t = torch.tensor(noisy)
    torch.manual_seed(0)
    tr = DREAMTrainer(GCN(20, 16, 3), 5, 5, warmup=20, relabel=True, relabel_fraction=0.2)
    tr.fit(data, tm, noisy_t, 40, val_mask=vm)
    np.testing.assert_array_equal(noisy_t.numpy(), noisy)
    idx = tr.train_idx_.numpy()
    changed = tr.labels_.numpy()[idx] != noisy[idx]
    assert 0 < changed.sum() <= round(0.2 * idx.size)
    # most relabelled nodes were noisy and now carry the true label
    assert (tr.labels_.numpy()[idx][changed] == y[idx][changed]).mean() > 0.6


def test_determinism(sbm, masks):
    data, y = sbm()
    tm, vm = masks(y.size)
    out = []
    for _ in range(2):
        torch.manual_seed(3)
        tr = DREAMTrainer(GCN(20, 16, 3), 3, 3, warmup=5, every=5, seed=7)
        tr.fit(data, tm, torch.tensor(y), 15, val_mask=vm)
        out.append(tr.reliability_)
    torch.testing.assert_close(out[0], out[1])


def test_trainer_errors(sbm, masks):
    data, y = sbm(n_per=5)
    tm, _ = masks(y.size)
    yt = torch.tensor(y)
    L = int(tm.sum())
    with pytest.raises(ValueError, match="k_proximity"):
        DREAMTrainer(GCN(20, 4, 3), k_proximity=L, k_topology=1).fit(data, tm, yt, 2)
    with pytest.raises(ValueError, match="k_topology"):
        DREAMTrainer(GCN(20, 4, 3), k_proximity=1, k_topology=L).fit(data, tm, yt, 2)
    with pytest.raises(ValueError, match="k_proximity"):
        DREAMTrainer(GCN(20, 4, 3), k_proximity=0, k_topology=0)
    y_missing = yt.clone()
    y_missing[tm & (yt == 2)] = 0
    with pytest.raises(ValueError, match="no labelled node"):
        DREAMTrainer(GCN(20, 4, 3), 1, 1).fit(data, tm, y_missing, 2)
    bad = Data(x=data.x, edge_index=torch.tensor([[0], [y.size]]))
    with pytest.raises(ValueError, match="edge_index"):
        DREAMTrainer(GCN(20, 4, 3), 1, 1).fit(bad, tm, yt, 2)
    with pytest.raises(ValueError, match="train_mask"):
        DREAMTrainer(GCN(20, 4, 3), 1, 1).fit(data, tm.numpy()[:-1], yt, 2)
    with pytest.raises(ValueError, match="ppr_alpha"):
        DREAMTrainer(GCN(20, 4, 3), ppr_alpha=0.0)


def test_bad_inputs_name_the_argument(sbm, masks):
    # found by review: these reached torch/numpy/PyG and failed there, or passed silently
    data, y = sbm(n_per=5)
    tm, _ = masks(y.size)
    yt = torch.tensor(y)
    with pytest.raises(ValueError, match=r"data\.x is torch\.float64"):
        DREAMTrainer(GCN(20, 4, 3), 1, 1).fit(
            Data(x=data.x.double(), edge_index=data.edge_index), tm, yt, 2
        )
    with pytest.raises(ValueError, match=r"data\.edge_index must be an int64"):
        DREAMTrainer(GCN(20, 4, 3), 1, 1).fit(
            Data(x=data.x, edge_index=data.edge_index.float()), tm, yt, 2
        )
    with pytest.raises(ValueError, match=r"noisy_y\[train_mask\] must lie in 0\.\.2"):
        DREAMTrainer(GCN(20, 4, 3), 1, 1).fit(data, tm, yt + 1, 2)
    with pytest.raises(TypeError, match="seed"):
        DREAMTrainer(GCN(20, 4, 3), seed="a")
    with pytest.raises(TypeError, match="model"):
        fit_classifier("gcn", data, tm, yt, 2)
    with pytest.raises(ValueError, match="lr"):
        fit_classifier(GCN(20, 4, 3), data, tm, yt, 2, lr=-1.0)
    with pytest.raises(ValueError, match="data must have 'x'"):
        DREAMTrainer(GCN(20, 4, 3), 1, 1).predict(None)
    logits = torch.randn(4, 3)
    with pytest.raises(ValueError, match=r"y must lie in 0\.\.2"):
        dream_loss(logits, torch.tensor([0, 1, 3, 0]))
    with pytest.raises(ValueError, match=r"y must lie in 0\.\.2"):
        gce_loss(logits, torch.tensor([0, 1, 5, 0]))
    with pytest.raises(TypeError, match=r"y must be an integer torch\.Tensor"):
        dream_loss(logits, [0, 1, 2, 0])
    with pytest.raises(TypeError, match="logits"):
        dream_loss(logits.numpy(), torch.tensor([0, 1, 2, 0]))
    with pytest.raises(ValueError, match="non-empty"):
        add_label_noise(np.array([], dtype=np.int64), 0.2)
    with pytest.raises(TypeError, match="sources"):
        personalized_pagerank(data.edge_index, y.size, sources=[1.5])
    for kw in ({"tol": "a"}, {"max_iter": 0}, {"dense_max": -1}):
        with pytest.raises((TypeError, ValueError), match=next(iter(kw))):
            personalized_pagerank(data.edge_index, y.size, sources=[0], **kw)


def test_gcn_caches_the_normalization_and_matches_pyg(sbm):
    from torch_geometric.nn import GCNConv

    data, _ = sbm(seed=3)
    torch.manual_seed(0)
    model = GCN(20, 16, 3).eval()
    ref1, ref2 = GCNConv(20, 16), GCNConv(16, 3)  # normalize=True: recomputed per call
    ref1.load_state_dict(model.conv1.state_dict())
    ref2.load_state_dict(model.conv2.state_dict())
    with torch.no_grad():
        h = torch.relu(ref1(data.x, data.edge_index))
        out, hid = model(data.x, data.edge_index)
        torch.testing.assert_close(hid, h, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out, ref2(h, data.edge_index), rtol=1e-5, atol=1e-6)
        first = model._norm
        model(data.x, data.edge_index)
        assert model._norm is first  # same graph tensor: not recomputed
        other = data.edge_index[:, :-2].clone()
        model(data.x, other)
        assert model._norm is not first and model._norm[0].shape[1] < first[0].shape[1]


def test_input_dropout_draws_on_nonzeros_only():
    model = GCN(50, 8, 2, dropout=0.5).train()
    x = torch.zeros(400, 50)
    x[torch.rand(400, 50, generator=torch.Generator().manual_seed(0)) < 0.1] = 3.0
    torch.manual_seed(0)
    h = model._input_dropout(x)
    assert bool((h[x == 0] == 0).all())  # zeros stay zeros
    kept = h[x != 0]
    assert bool(((kept == 0) | ((kept - 6.0).abs() < 1e-6)).all())  # x / (1 - p) or 0
    assert abs(float((kept != 0).float().mean()) - 0.5) < 0.05
    assert model.eval()._input_dropout(x) is x


def test_ppr_is_cached_per_graph_and_callers_cannot_corrupt_it():
    from dream_gnn.ppr import _CACHE, clear_ppr_cache

    clear_ppr_cache()
    ei = np.array([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    a = personalized_pagerank(ei, 4, sources=[0, 2])
    assert len(_CACHE) == 1
    a[:] = -1.0  # the caller's copy only
    b = personalized_pagerank(ei, 4, sources=[2, 0])
    assert len(_CACHE) == 1  # dense: one matrix per graph, any sources
    np.testing.assert_allclose(b.sum(1), 1.0)
    np.testing.assert_allclose(b[::-1], personalized_pagerank(ei, 4, sources=[0, 2]))
    s = personalized_pagerank(ei, 4, sources=[1], dense_max=1, tol=1e-13)
    np.testing.assert_allclose(s, personalized_pagerank(ei, 4, sources=[1]), atol=1e-9)
    clear_ppr_cache()
    assert not _CACHE


def test_gcn_caches_see_in_place_edits_and_clear_cache(sbm):
    # found by review: the caches are keyed on the tensor and its version counter, so an
    # in-place torch edit of the caller's tensors must recompute them
    data, _ = sbm(seed=3)
    torch.manual_seed(0)
    model = GCN(20, 8, 3).eval()
    ei = data.edge_index.clone()
    model(data.x, ei)
    ei[:, :4] = ei[:, 4:8].clone()  # same size, other edges, same tensor
    fresh = GCN(20, 8, 3).eval()
    fresh.load_state_dict(model.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(model(data.x, ei)[0], fresh(data.x, ei)[0])
    model.train()
    x = torch.zeros(50, 20)
    x[0, 0] = 1.0
    model._input_dropout(x)
    x[1, 1] = 2.0  # a new nonzero entry: dropout must be able to keep it
    kept = [float(model._input_dropout(x)[1, 1]) for _ in range(20)]
    assert max(kept) == pytest.approx(4.0)  # 2 / (1 - 0.5)
    model.clear_cache()
    assert model._norm is None and model._nz is None
    with pytest.raises(ValueError, match=r"x must be \(num_nodes, 20\)"):
        model(torch.zeros(5, 7), ei)
