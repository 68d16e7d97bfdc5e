"""The full scale's code path (MLP in torch, one-peer graph in the claims) at a tiny size."""

import dataclasses

import numpy as np
import pytest
import torch
from dsgd_topology._problems import Softmax, TorchClassifier
from dsgd_topology.experiment import SCALES, run_settings
from icml26_core import RunContext

torch.set_num_threads(1)


def test_full_scale_settings_are_the_issues():
    full = SCALES["full"]
    assert full.n_nodes == 64 and len(full.seeds) == 5
    assert "mlp" in full.problems and full.torch and full.time_varying_in_claims
    assert len(full.static) == 11


def test_full_scale_path_runs_at_a_tiny_size(tmp_path):
    st = dataclasses.replace(
        SCALES["full"],
        n_nodes=8,
        steps=10,
        seeds=(0, 1),
        static=("ring", "complete"),
        problems=("mlp",),
        hidden=(8,),
        quad_steps=100,
        eval_every=5,
        max_train=400,
    )
    result = run_settings(RunContext("full", out_dir=tmp_path), st)
    assert result.data["topologies"] == ["ring", "complete", "one_peer_exponential"]
    assert len(result.claims) == 5  # claims 1-3 on the MLP, then the closed form
    assert {c.verdict for c in result.claims} <= {"holds", "does not hold", "inconclusive"}
    mlp = result.tables[1]
    assert "MLP 784-8-10" in mlp.title and "n = 8" in mlp.title
    rows = {r["method"]: r for r in mlp.rows}
    assert rows["complete"]["consensus error"] < 1e-10
    assert rows["one_peer_exponential"]["predicted (noise + bias)"] > 0
    assert (
        rows["centralized SGD (batch 128)"]["train loss"] < rows["zero model (floor)"]["train loss"]
    )
    quad = {r["topology"] for r in result.tables[-1].rows}
    assert "one_peer_exponential" in quad


def test_torch_softmax_matches_numpy_and_vmap_matches_a_loop():
    rng = np.random.default_rng(0)
    X = rng.random((40, 6)).astype(np.float32)
    y = rng.integers(0, 10, 40)
    tc = TorchClassifier(X, y, hidden=(), device="cpu")
    npx = Softmax(np.hstack([X, np.ones((40, 1), np.float32)]), y)
    theta = torch.tensor(rng.standard_normal(tc.n_params) * 0.1, dtype=torch.float32)
    # flat layout: W (6 x 10) row-major, then the bias (10): numpy's (7, 10) Theta
    Theta = torch.cat([theta[:60].view(6, 10), theta[60:].view(1, 10)]).numpy()
    idx = np.arange(40)
    g = tc.grad(theta, idx)
    np.testing.assert_allclose(g[:60].reshape(6, 10), npx.grad(Theta, idx)[:6], atol=1e-5)
    assert tc.loss_acc(theta, idx)[0] == pytest.approx(npx.loss_acc(Theta, idx)[0], rel=1e-5)

    mlp = TorchClassifier(X, y, hidden=(5,), device="cpu")
    P = torch.stack([mlp.init(0), mlp.init(1)])
    batches = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    G = mlp.stacked_grads(P, batches)
    for i in range(2):
        p = P[i].clone().requires_grad_(True)
        rows = torch.as_tensor(batches[i])
        mlp.loss(p, mlp.X[rows], mlp.y[rows]).backward()
        torch.testing.assert_close(G[i], p.grad, atol=1e-6, rtol=1e-5)
    # noise variance: E||g_B - g||^2 = (mean_s ||g_s||^2 - ||g||^2) / B, from a loop
    per = np.stack([mlp.grad(P[0], np.array([s])) for s in range(40)])
    expected = (np.mean(np.sum(per**2, axis=1)) - np.sum(per.mean(axis=0) ** 2)) / 4
    assert mlp.noise_variance(P[0], idx, 4, chunk=16) == pytest.approx(expected, rel=1e-4)
