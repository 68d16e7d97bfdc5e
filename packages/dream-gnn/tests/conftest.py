"""Fixtures shared by the method and baseline tests: one torch thread, a planted SBM."""

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # tiny graphs: torch's thread pool only costs time on a shared 2-core machine
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _make_sbm(seed=0, n_per=40, C=3, p_in=0.2, p_out=0.01, n_feat=20):
    """A planted stochastic block model: ``(Data, y)`` with class-centred features."""
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(C), n_per)
    n = y.size
    P = np.where(y[:, None] == y[None, :], p_in, p_out)
    A = np.triu(rng.random((n, n)) < P, 1)
    src, dst = np.nonzero(A)
    ei = np.concatenate([np.stack([src, dst]), np.stack([dst, src])], axis=1)
    centers = rng.normal(size=(C, n_feat))
    x = centers[y] * 0.5 + rng.normal(size=(n, n_feat))
    return Data(x=torch.tensor(x, dtype=torch.float32), edge_index=torch.tensor(ei)), y


def _make_masks(n, seed=0):
    """Train (first half) and validation (next quarter) masks of a random permutation."""
    perm = np.random.default_rng(seed).permutation(n)
    train, val = np.zeros(n, bool), np.zeros(n, bool)
    train[perm[: n // 2]] = True
    val[perm[n // 2 : 3 * n // 4]] = True
    return torch.tensor(train), torch.tensor(val)


@pytest.fixture
def sbm():
    return _make_sbm


@pytest.fixture
def masks():
    return _make_masks
