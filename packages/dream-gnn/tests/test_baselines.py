import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from dream_gnn import (
    GCN,
    add_label_noise,
    cleanlab_filter,
    correct_and_smooth,
    coteaching,
    fit_classifier,
    forget_rate_schedule,
    small_loss_selection,
)
from torch_geometric.data import Data


# ---------------------------------------------------------------- co-teaching
def test_forget_rate_schedule_ramps_linearly_then_stays():
    r = forget_rate_schedule(15, 0.4, num_gradual=10)
    np.testing.assert_allclose(r[:11], 0.4 * np.arange(11) / 10)
    np.testing.assert_allclose(r[10:], 0.4)
    r2 = forget_rate_schedule(12, 0.5, num_gradual=4, exponent=2.0)
    np.testing.assert_allclose(r2[:5], 0.5 * (np.arange(5) / 4) ** 2)
    with pytest.raises(ValueError, match="forget_rate"):
        forget_rate_schedule(10, 1.0)
    with pytest.raises(ValueError, match="num_gradual"):
        forget_rate_schedule(10, 0.2, num_gradual=0)


def test_small_loss_selection_keeps_the_smallest():
    losses = torch.tensor([0.5, 0.1, 3.0, 0.2, 2.0, 0.1])
    keep = small_loss_selection(losses, 0.5)
    assert keep.tolist() == [1, 5, 3]  # ties in index order
    assert small_loss_selection(losses, 0.0).numel() == 6
    assert small_loss_selection(losses, 0.99).numel() == 1  # never empty
    with pytest.raises(ValueError, match="losses"):
        small_loss_selection(torch.zeros(2, 2), 0.1)


def test_coteaching_without_forgetting_is_cross_entropy_training(sbm, masks):
    # no dropout and forget rate 0: each network sees every labelled node, so the first
    # one trains exactly like fit_classifier's cross-entropy loop
    data, y = sbm()
    tm, vm = masks(y.size)
    torch.manual_seed(0)
    m = GCN(20, 16, 3, dropout=0.0)
    ref = copy.deepcopy(m)
    peer = GCN(20, 16, 3, dropout=0.0)
    yt = torch.from_numpy(y)
    coteaching(m, peer, data, tm, yt, 20, forget_rate=0.0, val_mask=vm)
    fit_classifier(ref, data, tm, yt, 20, val_mask=vm)
    for a, b in zip(m.state_dict().values(), ref.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)


def test_coteaching_trains_on_the_peers_small_loss_nodes(monkeypatch, sbm, masks):
    # the nodes each network steps on are the peer's small-loss set of the scheduled size
    import dream_gnn.baselines as bl

    seen = []
    orig = bl.small_loss_selection

    def spy(losses, rate):
        out = orig(losses, rate)
        seen.append((losses.detach().clone(), rate, out))
        return out

    monkeypatch.setattr(bl, "small_loss_selection", spy)
    data, y = sbm()
    tm, _ = masks(y.size)
    noisy = torch.from_numpy(add_label_noise(y, 0.3, mask=tm.numpy(), seed=0))
    torch.manual_seed(0)
    coteaching(GCN(20, 16, 3), GCN(20, 16, 3), data, tm, noisy, 14, forget_rate=0.3)
    rates = forget_rate_schedule(14, 0.3)
    L = int(tm.sum())
    assert len(seen) == 28
    for i, (losses, rate, out) in enumerate(seen):
        assert rate == pytest.approx(rates[i // 2])
        assert out.numel() == max(1, round((1 - rate) * L))
        rest = losses[~torch.isin(torch.arange(L), out)]
        if rest.numel():
            assert losses[out].max() <= rest.min() + 1e-6


# ---------------------------------------------------------------- cleanlab
def test_cleanlab_flags_a_noisier_set_than_it_keeps(sbm, masks):
    pytest.importorskip("cleanlab")
    data, y = sbm(seed=4, n_per=50)
    tm, vm = masks(y.size, seed=1)
    noisy = add_label_noise(y, 0.3, mask=(tm | vm).numpy(), seed=0)
    keep, probs = cleanlab_filter(
        lambda: GCN(20, 16, 3), data, tm, torch.from_numpy(noisy), 40, folds=3, val_mask=vm
    )
    assert probs.shape == (int(tm.sum()), 3)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    assert not keep[~tm.numpy()].any()  # only labelled nodes are kept
    flagged = tm.numpy() & ~keep
    wrong = noisy != y
    assert flagged.sum() > 5
    assert wrong[flagged].mean() > 2 * wrong[keep].mean()
    with pytest.raises(ValueError, match="folds"):
        cleanlab_filter(lambda: GCN(20, 16, 3), data, tm, torch.from_numpy(noisy), 2, folds=1)


# ---------------------------------------------------------------- correct and smooth
def test_correct_and_smooth_helps_a_weak_base_on_a_homophilous_graph(sbm, masks):
    data, y = sbm(seed=2, p_in=0.3)
    tm, _ = masks(y.size)
    te = ~tm.numpy()
    rng = np.random.default_rng(0)
    base = F.softmax(torch.tensor(rng.normal(size=(y.size, 3)), dtype=torch.float32), 1)
    out = correct_and_smooth(base, torch.from_numpy(y), tm, data.edge_index)
    assert out.shape == (y.size, 3)
    acc_base = (base.argmax(1).numpy()[te] == y[te]).mean()
    acc_cs = (out.argmax(1).numpy()[te] == y[te]).mean()
    assert acc_cs > acc_base + 0.2


def test_baselines_bad_inputs_name_the_argument():
    # found by review: these reached PyG/numpy/cleanlab and failed there, or passed silently
    torch.manual_seed(0)
    n, C = 12, 3
    y = torch.arange(n) % C
    ei = torch.tensor([[i for i in range(n - 1)], [i + 1 for i in range(n - 1)]])
    ei = torch.cat([ei, ei.flip(0)], 1)
    tm = torch.zeros(n, dtype=torch.bool)
    tm[:8] = True
    ys = torch.softmax(torch.randn(n, C), 1)
    ys0 = ys.clone()
    out = correct_and_smooth(ys, y, tm, ei)
    assert out.shape == (n, C) and torch.equal(ys, ys0)  # the input is not modified
    with pytest.raises(ValueError, match="y_soft"):
        correct_and_smooth(ys.numpy(), y, tm, ei)
    with pytest.raises(ValueError, match="train_mask"):
        correct_and_smooth(ys, y, tm[:5], ei)
    with pytest.raises(ValueError, match="train_mask"):
        correct_and_smooth(ys[:5], y, tm, ei)
    with pytest.raises(ValueError, match=r"y\[train_mask\] must lie in 0\.\.2"):
        correct_and_smooth(ys, y + 1, tm, ei)
    with pytest.raises(ValueError, match=r"edge_index must lie in 0\.\.11"):
        correct_and_smooth(ys, y, tm, ei + n)
    with pytest.raises(ValueError, match="edge_index must be an int64"):
        correct_and_smooth(ys, y, tm, ei.numpy())
    with pytest.raises(ValueError, match="num_correction_layers"):
        correct_and_smooth(ys, y, tm, ei, num_correction_layers=-1)
    data = Data(x=torch.randn(n, 4), edge_index=ei)
    make = lambda: GCN(4, 4, C)  # noqa: E731
    with pytest.raises(TypeError, match="make_model"):
        cleanlab_filter(make(), data, tm, y, 2)
    with pytest.raises(ValueError, match="train_mask"):
        cleanlab_filter(make, data, tm.float() * 0.5, y, 2)
    with pytest.raises(ValueError, match="seed"):
        cleanlab_filter(make, data, tm, y, 2, seed=-1)
    with pytest.raises(ValueError, match="filter_by"):
        cleanlab_filter(make, data, tm, y, 2, filter_by="nope")
    with pytest.raises(ValueError, match="lr"):
        coteaching(make(), make(), data, tm, y, 2, lr=-1.0)
    with pytest.raises(TypeError, match="peer"):
        coteaching(make(), "gcn", data, tm, y, 2)
    with pytest.raises(TypeError, match="losses"):
        small_loss_selection([1.0, 2.0], 0.2)
