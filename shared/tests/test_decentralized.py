"""icml26_core.decentralized: topologies, mixing matrices, compressors, both gossip backends."""

import math

import networkx as nx
import numpy as np
import pytest
import torch
from icml26_core.decentralized import (
    MIXING_RULES,
    QSGD,
    TOPOLOGIES,
    GossipGroup,
    Identity,
    RandomK,
    ScaledSign,
    SimulatedNetwork,
    TopK,
    check_mixing_matrix,
    mixing_matrix,
    one_peer_exponential,
    spawn_local,
    spectrum,
    topology,
)

# ---- topologies and mixing matrices ---------------------------------------------------


def test_topologies_and_mixing_need_no_torch():
    import subprocess
    import sys

    code = (
        "import sys; from icml26_core.decentralized import topology, mixing_matrix, spectrum;"
        "spectrum(mixing_matrix(topology('ring', 5)));"
        "assert 'torch' not in sys.modules, 'torch imported for numpy-only pieces'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("rule", MIXING_RULES)
@pytest.mark.parametrize("name", TOPOLOGIES)
@pytest.mark.parametrize("n", [8, 16])
def test_every_topology_gives_a_symmetric_doubly_stochastic_matrix(name, rule, n):
    G = topology(name, n, seed=3)
    assert sorted(G.nodes) == list(range(n)) and nx.is_connected(G)
    assert nx.number_of_selfloops(G) == 0
    W = mixing_matrix(G, rule)
    assert W.dtype == np.float64 and W.shape == (n, n)
    assert np.all(W >= 0)
    np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(W, W.T, atol=0)
    # support = edges + diagonal, exactly
    A = nx.to_numpy_array(G, nodelist=range(n)) != 0
    np.testing.assert_array_equal((W > 0) & ~np.eye(n, dtype=bool), A)
    assert np.all(np.diag(W) > 0)
    s = spectrum(W)
    assert s.eigenvalues[0] == pytest.approx(1.0, abs=1e-12)
    assert 0 < s.spectral_gap <= 1 and s.second_largest_modulus < 1
    check_mixing_matrix(W)  # does not raise


@pytest.mark.parametrize("n", [5, 8, 13])
def test_ring_eigenvalues_match_the_closed_form(n):
    for rule in ("metropolis", "max-degree"):
        W = mixing_matrix(topology("ring", n), rule)
        np.testing.assert_allclose(W[0, [1, n - 1]], 1 / 3)
        expected = np.sort((1 + 2 * np.cos(2 * np.pi * np.arange(n) / n)) / 3)[::-1]
        np.testing.assert_allclose(spectrum(W).eigenvalues, expected, atol=1e-12)
    lazy = spectrum(mixing_matrix(topology("ring", n), "lazy-metropolis")).eigenvalues
    np.testing.assert_allclose(lazy, (1 + expected) / 2, atol=1e-12)
    assert lazy.min() >= 0


def test_complete_graph_mixes_in_one_round_and_star_vs_ring():
    s = spectrum(mixing_matrix(topology("complete", 6)))
    np.testing.assert_allclose(s.eigenvalues[1:], 0.0, atol=1e-12)
    assert s.spectral_gap == pytest.approx(1.0)
    # star: 1/gap is small, yet the leaves barely talk to each other (lambda_k = 1 - 1/n)
    star = spectrum(mixing_matrix(topology("star", 16)))
    np.testing.assert_allclose(star.eigenvalues[1:-1], 1 - 1 / 16, atol=1e-12)


def test_topology_shapes():
    assert dict(topology("torus", 16).degree()) == dict.fromkeys(range(16), 4)
    assert dict(topology("hypercube", 16).degree()) == dict.fromkeys(range(16), 4)
    assert set(dict(topology("exponential", 16).degree()).values()) == {7}  # +-1, +-2, +-4, 8
    assert topology("torus", 12, shape=(3, 4)).number_of_edges() == 24
    assert topology("grid", 9).number_of_edges() == 12
    assert topology("barbell", 9).number_of_nodes() == 9
    assert topology("lollipop", 10).number_of_nodes() == 10
    a, b = topology("erdos_renyi", 20, seed=1), topology("erdos_renyi", 20, seed=1)
    assert sorted(a.edges) == sorted(b.edges)
    assert "pos" in topology("random_geometric", 20, seed=0).nodes[0]


def test_topology_bad_input():
    with pytest.raises(ValueError, match="name must be one of"):
        topology("mesh", 8)
    with pytest.raises(ValueError, match="power of 2"):
        topology("hypercube", 12)
    with pytest.raises(ValueError, match="n must be"):
        topology("ring", 2)
    with pytest.raises(TypeError, match="n must be an integer"):
        topology("ring", 8.0)
    with pytest.raises(ValueError, match="factorization"):
        topology("torus", 7)
    with pytest.raises(ValueError, match="p must be"):
        topology("erdos_renyi", 10, p=0.0)


def test_mixing_matrix_bad_input():
    G = nx.Graph([(0, 1), (2, 3)])
    with pytest.raises(ValueError, match="disconnected"):
        mixing_matrix(G)
    with pytest.raises(ValueError, match="undirected"):
        mixing_matrix(nx.DiGraph([(0, 1), (1, 0)]))
    with pytest.raises(ValueError, match=r"0\.\.n-1"):
        mixing_matrix(nx.Graph([("a", "b")]))
    with pytest.raises(ValueError, match="rule must be one of"):
        mixing_matrix(topology("ring", 4), "uniform")
    # an adjacency matrix works too
    A = nx.to_numpy_array(topology("ring", 5))
    np.testing.assert_allclose(mixing_matrix(A), mixing_matrix(topology("ring", 5)))


def test_check_mixing_matrix_names_what_fails():
    W = mixing_matrix(topology("ring", 4))
    with pytest.raises(ValueError, match="negative weights"):
        check_mixing_matrix(W + np.array([[0, 0.2, 0, -0.2]] * 4))
    with pytest.raises(ValueError, match="not doubly stochastic"):
        check_mixing_matrix(W * 1.01)
    P = np.roll(np.eye(4), 1, axis=1)
    with pytest.raises(ValueError, match="not symmetric"):
        check_mixing_matrix(0.5 * (np.eye(4) + P))
    check_mixing_matrix(0.5 * (np.eye(4) + P), symmetric=False)
    with pytest.raises(ValueError, match="disconnected"):
        check_mixing_matrix(np.kron(np.eye(2), np.full((2, 2), 0.5)))
    with pytest.raises(ValueError, match="square"):
        check_mixing_matrix(np.ones((2, 3)) / 3)
    with pytest.raises(ValueError, match="NaN"):
        check_mixing_matrix(np.full((2, 2), np.nan))


def _ring32() -> np.ndarray:
    W = mixing_matrix(topology("ring", 16))
    W32 = (W / W.sum(axis=1, keepdims=True)).astype(np.float32)
    if np.max(np.abs(W32.astype(np.float64).sum(axis=1) - 1)) <= 1e-10:
        W32[0, 0] = np.nextafter(W32[0, 0], np.float32(1))  # make the round-off visible
    return W32


def test_check_mixing_matrix_float32_message_names_the_deviation_and_atol():
    # An explicit float64-sized atol on a float32 W: the message must say by how much and
    # how to pass, not a rounded "sums to 1 (must be 1)".
    with pytest.raises(ValueError, match=r"float32: pass a larger atol") as info:
        check_mixing_matrix(_ring32(), atol=1e-10)
    assert "sums to 1 (must be 1)" not in str(info.value)
    assert "atol=1e-10" in str(info.value)
    M = check_mixing_matrix(_ring32(), atol=1e-6)
    assert M.dtype == np.float64


def test_default_atol_follows_the_input_precision():
    torch = pytest.importorskip("torch")
    from icml26_core.decentralized import default_mixing_atol

    W32 = _ring32()
    assert default_mixing_atol(W32.astype(np.float64), 16) == pytest.approx(1e-10)
    assert default_mixing_atol([[1.0]], 1) == pytest.approx(1e-10)
    assert default_mixing_atol(W32, 16) == pytest.approx(16 * np.finfo(np.float32).eps)
    for W in (W32, torch.from_numpy(W32), torch.from_numpy(W32).to(torch.bfloat16)):
        M = check_mixing_matrix(W)  # a correct low-precision W passes by default
        np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-2)
        assert spectrum(W).spectral_gap > 0
    bad = W32.copy()
    bad[0, 0] += 1e-3  # a real error stays an error at float32's tolerance
    with pytest.raises(ValueError, match="not doubly stochastic"):
        check_mixing_matrix(bad)
    with pytest.raises(ValueError, match="not doubly stochastic"):
        check_mixing_matrix(W32.astype(np.float64))  # float64 keeps its tight default


def test_one_peer_exponential_averages_exactly_in_log2_n_rounds():
    n = 8
    prod = np.eye(n)
    for t in range(3):
        Wt = one_peer_exponential(n, t)
        check_mixing_matrix(Wt, symmetric=False, connected=False)
        assert np.count_nonzero(Wt - np.diag(np.diag(Wt))) == n  # one peer per node
        prod = Wt @ prod
    np.testing.assert_allclose(prod, np.full((n, n), 1 / n), atol=1e-15)
    with pytest.raises(ValueError, match="disconnected"):  # one round alone: pairs i, i + 4
        check_mixing_matrix(one_peer_exponential(n, 2), symmetric=False)
    s = spectrum(one_peer_exponential(n, 0))
    assert not s.symmetric and s.contraction >= s.second_largest_modulus - 1e-12


# ---- compressors -------------------------------------------------------------------------

D = 50


def _mean_sq_error(comp, x, draws, seed=0):
    g = torch.Generator().manual_seed(seed)
    errs = torch.stack([(comp(x, g) - x).pow(2).sum() for _ in range(draws)])
    return float(errs.mean()), float(errs.std() / math.sqrt(draws))


@pytest.mark.parametrize(
    "comp",
    [
        Identity(),
        TopK(0.1),
        TopK(k=7),
        RandomK(0.2),
        ScaledSign(),
        QSGD(4, unbiased=False),
        QSGD(2, unbiased=False),
    ],
    ids=repr,
)
def test_contraction_factor_holds(comp):
    rng = np.random.default_rng(0)
    for kind in ("gaussian", "sparse", "equal"):
        if kind == "gaussian":
            x = torch.from_numpy(rng.standard_normal(D))
        elif kind == "sparse":
            x = torch.zeros(D, dtype=torch.float64)
            x[3] = 2.0
        else:
            x = torch.ones(D, dtype=torch.float64)
        bound = (1 - comp.delta(D)) * float(x.pow(2).sum())
        err, se = _mean_sq_error(comp, x, draws=400)
        assert err <= bound + 3 * se + 1e-12, (kind, err, bound)


def test_contraction_factors_are_tight_where_they_should_be():
    x = torch.ones(D, dtype=torch.float64)  # all magnitudes equal: top-k loses 1 - k/d exactly
    assert float((TopK(k=10)(x) - x).pow(2).sum()) == pytest.approx((1 - 10 / D) * D)
    e = torch.zeros(D, dtype=torch.float64)
    e[0] = 1.0  # one nonzero: scaled sign's worst case, delta = 1/d
    assert float((ScaledSign()(e) - e).pow(2).sum()) == pytest.approx(1 - 1 / D)
    x = torch.randn(D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    exact = 1 - float((ScaledSign()(x) - x).pow(2).sum()) / float(x.pow(2).sum())
    assert ScaledSign.delta_of(x) == pytest.approx(exact, rel=1e-12)
    err, _ = _mean_sq_error(RandomK(k=10), x, draws=2000)
    assert err == pytest.approx((1 - 10 / D) * float(x.pow(2).sum()), rel=0.05)


@pytest.mark.parametrize("comp", [RandomK(k=5, unbiased=True), QSGD(3)], ids=repr)
def test_unbiased_compressors_are_unbiased_with_their_variance(comp):
    x = torch.randn(D, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([comp(x, g) for _ in range(4000)])
    mean, se = draws.mean(0), draws.std(0) / math.sqrt(draws.shape[0])
    assert torch.all((mean - x).abs() <= 4 * se + 1e-12)
    var = float((draws - x).pow(2).sum(1).mean())
    assert var <= comp.omega(D) * float(x.pow(2).sum()) * 1.1
    assert comp.delta(D) == pytest.approx(1 / (1 + comp.omega(D)))


def test_bits_accounting():
    assert Identity().bits(100) == 3200 and Identity().bits(100, torch.float64) == 6400
    assert TopK(0.05).bits(1000) == 50 * (32 + 10)
    assert TopK(0.05).k_for(785) == 40  # ceil(39.25)
    assert RandomK(k=3).bits(8, torch.float64) == 3 * (64 + 3)
    assert QSGD(4).bits(100) == 32 + 400
    assert ScaledSign().bits(100) == 32 + 100
    x = torch.randn(30, 4)
    for comp in (Identity(), TopK(0.1), RandomK(0.2), QSGD(4), ScaledSign()):
        msg = comp.compress(x, torch.Generator().manual_seed(0))
        assert msg.bits == comp.bits(120)
        back = msg.from_bytes(msg.to_bytes())
        assert torch.equal(back.decode(), msg.decode())
        assert msg.decode().shape == x.shape and msg.decode().dtype == x.dtype
    assert TopK(0.01).bits(10**6) * 8 < Identity().bits(10**6)


def test_compressor_bad_input():
    with pytest.raises(ValueError, match="k must be"):
        TopK(k=0)
    with pytest.raises(ValueError, match="exactly one"):
        TopK()
    with pytest.raises(ValueError, match="ratio must be"):
        RandomK(1.5)
    with pytest.raises(ValueError, match="exceeds"):
        TopK(k=20).compress(torch.ones(10))
    with pytest.raises(ValueError, match="bits must be"):
        QSGD(1)
    with pytest.raises(TypeError, match="floating"):
        TopK(0.5).compress(torch.arange(4))
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        TopK(0.5).compress(np.ones(4))


# ---- the simulated backend -----------------------------------------------------------------


def test_simulated_mix_is_w_times_x_and_counts_bits():
    W = mixing_matrix(topology("torus", 9))
    net = SimulatedNetwork(W)
    X = np.random.default_rng(0).standard_normal((9, 3, 2))
    out = net.mix(X)
    np.testing.assert_allclose(out.reshape(9, 6), W @ X.reshape(9, 6))
    np.testing.assert_allclose(net.average(out), net.average(X), atol=1e-14)  # average kept
    np.testing.assert_array_equal(net.bits_sent, 6 * 64 * 4)  # 6 float64 to 4 neighbours
    Xt = torch.from_numpy(X).float()
    np.testing.assert_allclose(net.mix(Xt).numpy(), out, rtol=1e-5, atol=1e-6)
    assert net.rounds == 2 and len(net.bits_history) == 2
    q = net.compress(Xt, TopK(k=2))
    net.mix(q)
    np.testing.assert_array_equal(net.bits_history[-1], 2 * (32 + 3) * 4)
    with pytest.raises(ValueError, match="9 rows"):
        net.mix(np.ones((8, 2)))
    net.reset_counters()
    assert net.rounds == 0 and net.bits_sent.sum() == 0


def test_simulated_gossip_converges_at_the_spectral_rate():
    W = mixing_matrix(topology("ring", 10))
    net = SimulatedNetwork(W)
    X = np.random.default_rng(1).standard_normal((10, 4))
    errs = []
    for _ in range(200):
        X = net.mix(X)
        errs.append(net.consensus_error(X))
    rate = (errs[-1] / errs[-101]) ** (1 / 100)
    assert rate == pytest.approx(spectrum(W).second_largest_modulus ** 2, rel=1e-3)


def test_time_varying_mixing_and_bad_matrices():
    net = SimulatedNetwork(mixing_matrix(topology("complete", 8)))
    X = np.random.default_rng(2).standard_normal((8, 3))
    Y = X
    for t in range(3):
        Y = net.mix(Y, W=one_peer_exponential(8, t))
    np.testing.assert_allclose(Y, np.tile(X.mean(0), (8, 1)), atol=1e-12)
    assert net.bits_history[0][0] == 3 * 64  # one peer
    with pytest.raises(ValueError, match="doubly stochastic"):
        SimulatedNetwork(np.ones((3, 3)))


# ---- the torch.distributed backend against the simulation --------------------------------


def _choco_trace(rank, world, W, x0, compressor, rounds, seed):
    """CHOCO-style compressed gossip, one node per process, as a package would write it."""
    group = GossipGroup(W, seed=seed)
    return _choco(group, torch.from_numpy(x0[rank]), compressor, rounds)


def _choco(net, x, compressor, rounds):
    x_hat, s = torch.zeros_like(x), torch.zeros_like(x)
    trace = []
    for _ in range(rounds):
        x = 0.9 * net.mix(x)  # a full-precision round
        q = net.compress(x - x_hat, compressor)  # a compressed round
        x_hat = x_hat + q.decode()
        s = s + net.mix(q)
        x = x + 0.3 * (s - x_hat)
        trace.append(x.clone())
    return {
        "trace": torch.stack(trace),
        "bits": net.bits_sent,
        "rounds": net.rounds,
        "consensus": net.consensus_error(x),
    }


def _compare_backends(world, name, compressors):
    W = mixing_matrix(topology(name, world)) if world > 2 else np.full((2, 2), 0.5)
    x0 = np.random.default_rng(world).standard_normal((world, 12))
    for comp in compressors:
        outs = spawn_local(_choco_trace, world, args=(W, x0, comp, 20, 7), timeout_s=120)
        sim = _choco(SimulatedNetwork(W, seed=7), torch.from_numpy(x0), comp, 20)
        for r in range(world):
            np.testing.assert_allclose(
                outs[r]["trace"], sim["trace"][:, r].numpy(), rtol=0, atol=1e-6
            )
            assert outs[r]["bits"] == pytest.approx(sim["bits"][r])
            assert outs[r]["rounds"] == sim["rounds"] == 40
            assert outs[r]["consensus"] == pytest.approx(sim["consensus"], rel=1e-9)


def test_gossip_group_matches_simulation_on_2_gloo_processes():
    _compare_backends(2, "ring", [TopK(0.25), RandomK(0.5, unbiased=True)])


def test_gossip_group_matches_simulation_on_4_gloo_processes():
    _compare_backends(4, "ring", [QSGD(4), ScaledSign(), Identity()])


def _group_from(rank, world, W):
    try:
        GossipGroup(W)
    except ValueError as exc:
        return str(exc)
    return "no error"


def _raise(rank, world):
    if rank == 1:
        raise KeyError("boom on rank 1")
    return rank


def test_gossip_group_errors():
    with pytest.raises(RuntimeError, match="not initialized"):
        GossipGroup(mixing_matrix(topology("ring", 4)))
    msgs = spawn_local(_group_from, 2, args=(mixing_matrix(topology("ring", 4)),), timeout_s=60)
    assert all("world size is 2 but W has 4 nodes" in m for m in msgs)
    with pytest.raises(RuntimeError, match="boom on rank 1"):
        spawn_local(_raise, 2, timeout_s=60)
