"""The mathematics: the linearised matrix, the gradient near zero, autograd, alignment."""

import networkx as nx
import numpy as np
import pytest
from deepwalk_sgns import (
    DeepWalkSGNS,
    alignment,
    as_adjacency,
    energy,
    random_walks,
    sbm_graph,
    sgns_gradients,
    sgns_loss,
    sgns_matrix,
    skipgram_pairs,
    target_subspace,
)


@pytest.fixture(scope="module")
def karate():
    return as_adjacency(nx.karate_club_graph())  # weighted (networkx >= 2.8 stores weights)


def _stationary(adj):
    deg = np.asarray(adj.sum(axis=1)).ravel()
    return deg / deg.sum()


def test_sgns_matrix_matches_long_walk_cooccurrence(karate):
    T, k = 3, 5
    walks = random_walks(karate, walk_length=3000, walks_per_node=6, seed=1)
    c, x = skipgram_pairs(walks, T)
    n = karate.shape[0]
    counts = np.bincount(c * n + x, minlength=n * n).reshape(n, n) / c.size
    pi = _stationary(karate)
    S = sgns_matrix(karate, T, k) + k * np.outer(pi, pi)
    np.testing.assert_allclose(S.sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(S, S.T, atol=1e-15)
    rel = np.linalg.norm(counts - S) / np.linalg.norm(S)
    assert rel < 0.05


def test_gradient_near_zero_is_half_M_C(karate):
    rng = np.random.default_rng(0)
    n, d, k, T = karate.shape[0], 4, 5, 2
    M = sgns_matrix(karate, T, k)
    pi = _stationary(karate)
    S = M + k * np.outer(pi, pi)
    W = rng.standard_normal((n, d)) * 1e-4
    C = rng.standard_normal((n, d)) * 1e-4
    gW, gC, total = np.zeros((n, d)), np.zeros((n, d)), 0
    cdf_s, cdf_pi = np.cumsum(S.ravel()), np.cumsum(pi)
    for _ in range(4):  # pairs drawn from S, negatives from pi: the expected gradient
        B = 150_000
        flat = np.minimum(np.searchsorted(cdf_s, rng.random(B) * cdf_s[-1]), n * n - 1)
        neg = np.minimum(np.searchsorted(cdf_pi, rng.random((B, k)) * cdf_pi[-1]), n - 1)
        a, b = sgns_gradients(W, C, flat // n, flat % n, neg)
        gW, gC, total = gW + a, gC + b, total + B
    want_W, want_C = 0.5 * M @ C, 0.5 * M.T @ W
    for got, want in ((-gW / total, want_W), (-gC / total, want_C)):
        cos = np.sum(got * want) / np.linalg.norm(got) / np.linalg.norm(want)
        assert cos > 0.99, cos


def test_gradients_match_autograd_and_finite_differences():
    rng = np.random.default_rng(3)
    n, d, B, k = 9, 3, 20, 4
    W, C = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    u, v = rng.integers(n, size=B), rng.integers(n, size=B)
    neg = rng.integers(n, size=(B, k))
    gW, gC = sgns_gradients(W, C, u, v, neg)
    torch = pytest.importorskip("torch")
    Wt = torch.tensor(W, requires_grad=True)
    Ct = torch.tensor(C, requires_grad=True)
    ut, vt, nt = (torch.tensor(a) for a in (u, v, neg))
    xp = (Wt[ut] * Ct[vt]).sum(-1)
    xn = torch.einsum("bd,bkd->bk", Wt[ut], Ct[nt])
    loss = -torch.nn.functional.logsigmoid(xp).sum() - torch.nn.functional.logsigmoid(-xn).sum()
    loss.backward()
    np.testing.assert_allclose(loss.item(), sgns_loss(W, C, u, v, neg), rtol=1e-12)
    np.testing.assert_allclose(gW, Wt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gC, Ct.grad.numpy(), rtol=1e-10, atol=1e-12)
    # and one central finite difference on an entry of C that is used as a negative
    i, j, h = int(neg[0, 0]), 1, 1e-6
    Cp, Cm = C.copy(), C.copy()
    Cp[i, j] += h
    Cm[i, j] -= h
    fd = (sgns_loss(W, Cp, u, v, neg) - sgns_loss(W, Cm, u, v, neg)) / (2 * h)
    np.testing.assert_allclose(fd, gC[i, j], rtol=1e-6, atol=1e-8)


def test_alignment_inside_span_and_at_chance():
    rng = np.random.default_rng(0)
    n, r, d = 400, 4, 16
    U, _ = np.linalg.qr(rng.standard_normal((n, r)))
    inside = alignment(U @ rng.standard_normal((r, d)), U)
    np.testing.assert_allclose(inside.energy, 1.0, atol=1e-12)
    np.testing.assert_allclose(inside.angles, 0.0, atol=1e-6)
    chance = [energy(rng.standard_normal((n, d)), U) for _ in range(20)]
    np.testing.assert_allclose(np.mean(chance), r / n, rtol=0.2)
    with pytest.raises(ValueError, match="orthonormal"):
        alignment(rng.standard_normal((n, d)), 2 * U)


def test_target_subspace_of_an_sbm():
    adj, y = sbm_graph((60, 60, 60), 0.3, 0.02, seed=0)
    M = sgns_matrix(adj, 5, 5)
    t = target_subspace(M, rank=3)
    assert t.rank == 3 and t.basis.shape == (180, 3)
    assert t.gap_ratio > 2.0
    assert t.eigenvalues[0] < 0  # the first one is the negative degree direction
    pi = _stationary(adj)
    np.testing.assert_allclose(abs(t.basis[:, 0] @ pi) / np.linalg.norm(pi), 1.0, atol=0.02)
    # the rest lies in the span of the block indicators
    Z = np.eye(3)[y] / np.sqrt(60)
    np.testing.assert_allclose(energy(t.basis, Z), 1.0, atol=0.05)
    assert target_subspace(M).rank == 3  # the automatic rank finds the block gap
    # eigsh (large-n path) agrees with the dense eigendecomposition
    np.testing.assert_allclose(np.linalg.norm(t.basis.T @ t.basis), np.sqrt(3), rtol=1e-10)


def test_small_init_trajectory_enters_the_target():
    adj, _ = sbm_graph((100,) * 4, 0.1, 0.01, seed=5)
    t = target_subspace(sgns_matrix(adj, 5, 5), rank=4)
    model = DeepWalkSGNS(dim=8, init_scale=1e-3, max_steps=150, record_every=10, seed=0)
    model.fit(adj, target=t)
    e = model.trajectory_["energy"]
    assert e[0] < 0.1 and e.max() > 0.9  # from chance (4/400) to inside the target
    assert model.trajectory_["step"][-1] == 150
    assert model.peak_step_ > 0
    np.testing.assert_allclose(energy(model.peak_embedding_, t.basis), e.max(), rtol=1e-12)
