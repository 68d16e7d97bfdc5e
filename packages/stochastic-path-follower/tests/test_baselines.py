"""The hand-designed baselines against their definitions and the reference library."""

import numpy as np
import pytest
import torch
from stochastic_path_follower import DriftingLeastSquares
from stochastic_path_follower.baselines import PredictionCorrection


def _scenario(dtype=torch.float64):
    rng = np.random.default_rng(0)
    path = 1.0 + np.cumsum(0.05 * rng.normal(size=(20, 12)), axis=0)
    return DriftingLeastSquares(path, m=4, noise=0.1, dtype=dtype)


def test_prediction_correction_follows_its_recursion():
    sc = _scenario()
    lr = 0.2
    X = PredictionCorrection(lr).rollout(sc, 2, torch.Generator().manual_seed(3))
    gen = torch.Generator().manual_seed(3)
    pred, prev = torch.zeros(2, 12, dtype=torch.float64), None
    for k in range(len(sc)):
        b = sc.sample(k, 2, gen)
        x = pred - lr * b.grad(pred)
        np.testing.assert_allclose(X[k].numpy(), x.numpy(), rtol=1e-12, atol=1e-12)
        g = b.grad(x) if k < 2 else 2 * b.grad(x) - prev.grad(x)
        pred, prev = x - lr * g, b


def test_prediction_correction_matches_tvopt():
    pytest.importorskip("tvopt")
    from stochastic_path_follower.baselines import TvoptPredictionCorrection

    sc = _scenario()
    ours = PredictionCorrection(0.2).rollout(sc, 3, torch.Generator().manual_seed(1))
    ref = TvoptPredictionCorrection(0.2).rollout(sc, 3, torch.Generator().manual_seed(1))
    assert ref.shape == (20, 3, 12) and ref.dtype == torch.float64
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="lr"):
        TvoptPredictionCorrection(0.0)
