import numpy as np
import pytest
import torch
from pmsa_moco import (
    NodeOnlyModel,
    PMSAModel,
    is_tour,
    pomo_advantages,
    rollout,
    solve,
    tour_costs,
    train,
    uniform_prefs,
)
from pmsa_moco.problem import scalarize


def _pair(n_obj=2):
    torch.manual_seed(0)
    pmsa = PMSAModel(n_obj=n_obj, d_model=16, n_heads=2, n_layers=2, d_edge=8).double()
    node = NodeOnlyModel(n_obj=n_obj, d_model=16, n_heads=2, n_layers=2).double()
    return pmsa, node


def test_decoded_tours_are_permutations():
    pmsa, node = _pair()
    x = torch.rand(3, 9, 4, dtype=torch.float64)
    lam = torch.tensor([[0.3, 0.7]] * 3, dtype=torch.float64)
    for model in (pmsa, node):
        for greedy in (True, False):
            tours, logp = rollout(model, x, lam, greedy=greedy)
            assert tours.shape == (3, 9, 9) and is_tour(tours, 9)
            assert torch.equal(tours[:, :, 0], torch.arange(9).expand(3, 9))  # POMO starts
            assert bool((logp <= 0).all()) and bool(torch.isfinite(logp).all())


def test_zero_edge_bias_gives_the_node_only_network():
    pmsa, node = _pair()
    missing, unexpected = pmsa.load_state_dict(node.state_dict(), strict=False)
    assert not unexpected and all("edge" in k for k in missing)
    pmsa.zero_edge_bias_()
    x = torch.rand(2, 7, 4, dtype=torch.float64)
    lam = torch.tensor([[0.2, 0.8], [0.9, 0.1]], dtype=torch.float64)
    ea, eb = pmsa.encode(x, lam), node.encode(x, lam)
    torch.testing.assert_close(ea["h"], eb["h"], rtol=1e-10, atol=1e-10)
    first = torch.arange(7).expand(2, 7)
    mask = torch.ones(2, 7, 7, dtype=torch.bool)
    mask[:, torch.arange(7), torch.arange(7)] = False
    la = pmsa.logits(ea, first, first, mask)
    lb = node.logits(eb, first, first, mask)
    torch.testing.assert_close(la, lb, rtol=1e-10, atol=1e-10)
    assert torch.equal(rollout(pmsa, x, lam)[0], rollout(node, x, lam)[0])


def test_edges_change_the_output_when_not_zeroed():
    pmsa, node = _pair()
    pmsa.load_state_dict(node.state_dict(), strict=False)
    x = torch.rand(2, 7, 4, dtype=torch.float64)
    lam = torch.tensor([[0.2, 0.8], [0.9, 0.1]], dtype=torch.float64)
    assert not torch.allclose(pmsa.encode(x, lam)["h"], node.encode(x, lam)["h"])


@pytest.mark.parametrize("edge", [True, False])
def test_encoder_is_equivariant_to_node_permutation(edge):
    pmsa, node = _pair(n_obj=3)
    model = pmsa if edge else node
    x = torch.rand(2, 8, 6, dtype=torch.float64)
    lam = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]], dtype=torch.float64)
    perm = torch.randperm(8)
    a, b = model.encode(x, lam), model.encode(x[:, perm], lam)
    torch.testing.assert_close(b["h"], a["h"][:, perm], rtol=1e-9, atol=1e-9)
    if edge:
        torch.testing.assert_close(b["edge_bias"], a["edge_bias"][:, perm][:, :, perm])


def test_preference_modulates_the_edge_features():
    pmsa, _ = _pair()
    x = torch.rand(1, 6, 4, dtype=torch.float64)
    e1 = pmsa.edge_embedding(x, torch.tensor([[0.1, 0.9]], dtype=torch.float64))
    e2 = pmsa.edge_embedding(x, torch.tensor([[0.9, 0.1]], dtype=torch.float64))
    assert e1.shape == (1, 6, 6, 8) and not torch.allclose(e1, e2)


def test_pomo_advantages_sum_to_zero():
    r = torch.randn(5, 11, dtype=torch.float64)
    a = pomo_advantages(r)
    torch.testing.assert_close(a.sum(1), torch.zeros(5, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(a - a[:, :1], r - r[:, :1])


def test_training_updates_the_edge_parameters_and_same_seed_same_data():
    torch.manual_seed(0)
    model = PMSAModel(d_model=16, n_heads=2, n_layers=1, d_edge=4)
    before = model.edge_film.weight.detach().clone()
    hist = train(model, 8, 2, 3, 4, seed=5)
    assert len(hist) == 3 and all(np.isfinite(h["loss"]) for h in hist)
    assert not torch.allclose(before, model.edge_film.weight)
    # the data stream depends on the seed only: both models see the same first batch
    torch.manual_seed(0)
    a = train(PMSAModel(d_model=16, n_heads=2, n_layers=1, d_edge=4), 8, 2, 1, 4, seed=5)
    assert a[0]["cost"] == pytest.approx(hist[0]["cost"], rel=1e-6)


def test_solve_keeps_the_best_start_per_preference():
    pmsa, _ = _pair()
    x = torch.rand(2, 8, 4, dtype=torch.float64)
    prefs = uniform_prefs(3)
    tours, obj = solve(pmsa, x, prefs, chunk=4)
    assert tours.shape == (2, 3, 8) and obj.shape == (2, 3, 2) and is_tour(tours, 8)
    np.testing.assert_allclose(obj, tour_costs(x, torch.as_tensor(tours)).numpy(), rtol=1e-9)
    lam = torch.as_tensor(prefs, dtype=torch.float64)
    for b in range(2):
        for p in range(3):
            all_tours, _ = rollout(pmsa, x[b : b + 1], lam[p : p + 1])
            best = scalarize(tour_costs(x[b : b + 1], all_tours), lam[p]).min()
            assert float(scalarize(torch.as_tensor(obj[b, p]), lam[p])) == pytest.approx(
                float(best)
            )


@pytest.mark.parametrize(
    ("coords", "prefs", "match"),
    [
        (np.zeros((2, 5, 3)), [[0.5, 0.5]], "coords"),
        (np.full((1, 5, 4), np.nan), [[0.5, 0.5]], "coords.*NaN"),
        (np.zeros((1, 2, 4)), [[0.5, 0.5]], "coords.*n >= 3"),
        (np.zeros((1, 5, 6)), [[0.5, 0.5]], "coords.*n_obj"),
        (np.zeros((1, 5, 4)), [[-0.5, 1.5]], "prefs.*nonnegative"),
        (np.zeros((1, 5, 4)), [[0.5, 0.6]], "prefs.*sum to 1"),
        (np.zeros((1, 5, 4)), [[0.3, 0.3, 0.4]], "prefs.*shape"),
    ],
)
def test_bad_input_names_the_argument(coords, prefs, match):
    pmsa, _ = _pair()
    with pytest.raises(ValueError, match=match):
        solve(pmsa, coords, prefs)


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="n_heads"):
        PMSAModel(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="n_obj"):
        train(PMSAModel(n_obj=2, d_model=8, n_heads=2, n_layers=1), 5, 3, 1, 2)
    with pytest.raises(ValueError, match="n_nodes"):
        train(PMSAModel(d_model=8, n_heads=2, n_layers=1), 2, 2, 1, 2)


def test_rollout_validates_and_casts_its_inputs():
    pmsa, _ = _pair()  # float64 model
    x = np.random.default_rng(0).random((2, 6, 4)).astype(np.float32)
    tours, logp = rollout(pmsa, x, np.array([[0.5, 0.5], [0.2, 0.8]]))  # used to raise in torch
    assert tours.shape == (2, 6, 6) and logp.dtype == torch.float64 and is_tour(tours, 6)
    assert rollout(pmsa, x, [0.5, 0.5])[0].shape == (2, 6, 6)  # one preference for all
    with pytest.raises(ValueError, match="prefs must have one row per instance"):
        rollout(pmsa, x, uniform_prefs(3))
    with pytest.raises(ValueError, match=r"coords.*n_obj"):
        rollout(pmsa, np.zeros((2, 6, 6)), [0.5, 0.5])


def test_bad_model_or_device_names_the_argument():
    # these used to be an AttributeError on None and torch's "Expected one of cpu, ..."
    x, lam = np.random.default_rng(0).random((1, 5, 4)), [[0.5, 0.5]]
    with pytest.raises(TypeError, match="model must be a PMSAModel"):
        solve(None, x, lam)
    with pytest.raises(TypeError, match="model must be a PMSAModel"):
        train(torch.nn.Linear(2, 2), 5, 2, 1)
    with pytest.raises(ValueError, match="device"):
        train(PMSAModel(d_model=8, n_heads=2, n_layers=1), 5, 2, 1, 2, device="foo")


def test_ablation_switches_drop_exactly_their_part():
    """edge_aggregation=False equals PMSA with the edge update zeroed; decoder_edge_bias=False
    equals PMSA with the decoder's edge bias zeroed (same weights otherwise)."""
    torch.manual_seed(0)
    kw = dict(n_obj=2, d_model=16, n_heads=2, n_layers=2, d_edge=8)
    full = PMSAModel(**kw).double()
    no_agg = PMSAModel(**kw, edge_aggregation=False).double()
    no_dec = PMSAModel(**kw, decoder_edge_bias=False).double()
    assert all(layer.edge_agg is None for layer in no_agg.layers) and no_dec.dec_edge_bias is None
    for part in (no_agg, no_dec):
        missing, unexpected = part.load_state_dict(full.state_dict(), strict=False)
        assert not missing and unexpected
    x = torch.rand(2, 7, 4, dtype=torch.float64)
    lam = torch.tensor([[0.2, 0.8], [0.9, 0.1]], dtype=torch.float64)
    assert no_dec.encode(x, lam)["edge_bias"] is None
    ref_agg, ref_dec = PMSAModel(**kw).double(), PMSAModel(**kw).double()
    ref_agg.load_state_dict(full.state_dict())
    ref_dec.load_state_dict(full.state_dict())
    with torch.no_grad():
        for layer in ref_agg.layers:  # the edge update's output layer at 0: e stays e
            layer.edge_agg.out.weight.zero_()
            layer.edge_agg.out.bias.zero_()
        ref_dec.dec_edge_bias.weight.zero_()
        ref_dec.dec_edge_bias.bias.zero_()
    first = torch.arange(7).expand(2, 7)
    mask = torch.ones(2, 7, 7, dtype=torch.bool)
    mask[:, torch.arange(7), torch.arange(7)] = False
    for part, ref in ((no_agg, ref_agg), (no_dec, ref_dec)):
        ea, eb = part.encode(x, lam), ref.encode(x, lam)
        torch.testing.assert_close(ea["h"], eb["h"], rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(
            part.logits(ea, first, first, mask),
            ref.logits(eb, first, first, mask),
            rtol=1e-10,
            atol=1e-10,
        )
        tours, _ = rollout(part, x, lam, greedy=False)
        assert is_tour(tours, 7)
    # the full model differs from each (both parts matter for the output)
    ef = full.encode(x, lam)
    assert not torch.allclose(
        full.logits(ef, first, first, mask),
        no_agg.logits(no_agg.encode(x, lam), first, first, mask),
    )
