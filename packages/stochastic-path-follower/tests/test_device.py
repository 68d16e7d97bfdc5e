"""`device` passed through: scenarios, baselines, followers and the experiment.

The CPU path runs with ``device="cpu"`` given explicitly; the CUDA path is marked
``gpu`` (skipped without a CUDA device).
"""

import dataclasses

import numpy as np
import pytest
import torch
from icml26_core import RunContext
from stochastic_path_follower import (
    DriftingLeastSquares,
    DriftingLogistic,
    LSTMOptimizer,
    StochasticPathFollower,
    experiment,
    stream,
    tracking_error,
)
from stochastic_path_follower.baselines import (
    KalmanFilter,
    OnlineAdam,
    OnlineSGD,
    PerStepSolution,
    PredictionCorrection,
    TvoptPredictionCorrection,
)


def _problems(device):
    rng = np.random.default_rng(0)
    ls = DriftingLeastSquares(
        1.0 + np.cumsum(0.05 * rng.normal(size=(12, 16)), 0), m=4, noise=0.1, device=device
    )
    feats = rng.normal(size=(3, 40, 6))
    labels = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    lg = DriftingLogistic(feats, labels, np.array([0, 1, 2, 1, 0, 2]), batch=8, device=device)
    return ls, lg


def _tiny_cfg():
    return dataclasses.replace(
        experiment.config("smoke"),
        K=6,
        dims=(64, 128),
        widths=(16, 64),
        epochs=1,
        unroll=4,
        train_seeds=2,
        logit_walks=2,
        steps_t=2,
        time_repeats=3,
        td_epochs=1,
    )


def _check_all_on(device):
    want = torch.device(device).type
    ls, lg = _problems(device)
    gen = torch.Generator(device=device).manual_seed(0)
    for scen in (ls, lg):
        assert scen.reference_path().device.type == want
        b = scen.sample(0, 2, gen)
        x = torch.zeros(2, scen.dim, device=device)
        assert b.grad(x).device.type == want
        g1, g2 = b.grad_pair(x, x + 1)
        assert g1.device.type == want and g2.device.type == want
        torch.testing.assert_close(g2, b.grad(x + 1), rtol=1e-5, atol=1e-5)
    trackers = [OnlineSGD(0.1), OnlineAdam(0.01), PredictionCorrection(0.1)]
    trackers += [TvoptPredictionCorrection(0.1), KalmanFilter(0.01, 0.01), PerStepSolution()]
    for tr in trackers:
        X = tr.rollout(ls, 2, torch.Generator(device=device).manual_seed(1))
        assert X.device.type == want and torch.isfinite(X).all()
    for model in (StochasticPathFollower(width=4), LSTMOptimizer(hidden=3)):
        model.to(device).fit([ls, lg], epochs=1, episodes=2, unroll=4, seed=0)
        assert all(p.device.type == want for p in model.parameters())
        for scen in (ls, lg):
            with torch.no_grad():
                X = model.rollout(scen, 2, torch.Generator(device=device).manual_seed(2))
            assert X.device.type == want
            assert tracking_error(X, scen.reference_path()).device.type == want
    spf = StochasticPathFollower(width=4).to(device)
    xs = list(spf.track(stream(ls, seed=0), x0=torch.zeros(16, device=device)))
    assert xs[-1].device.type == want


def test_everything_stays_on_the_cpu_when_asked():
    _check_all_on("cpu")


def test_logistic_with_state_shares_the_fits():
    _, lg = _problems("cpu")
    other = lg.with_state(np.array([2, 2, 0]))
    assert len(other) == 3 and other.features is lg.features
    np.testing.assert_allclose(other.reference_path()[0].numpy(), lg.reference_path()[2].numpy())
    assert 2 in lg._fits  # solved once, shared
    with pytest.raises(ValueError, match="state"):
        lg.with_state(np.array([3]))
    with pytest.raises(ValueError, match="device"):
        DriftingLeastSquares(np.ones((3, 4)), m=2, device="no-such-device")


@pytest.mark.slow
def test_experiment_code_path_on_cpu_explicitly(tmp_path):
    ctx = RunContext(scale="smoke", device="cpu", out_dir=tmp_path)
    result = experiment.run(ctx, _tiny_cfg())
    assert len(result.claims) == 3 and result.tables[0].rows[0]["n"] == 3 * 2


@pytest.mark.gpu
def test_everything_stays_on_cuda():
    _check_all_on("cuda")


@pytest.mark.gpu
def test_experiment_runs_on_cuda(tmp_path):
    ctx = RunContext(scale="smoke", device="cuda", out_dir=tmp_path)
    result = experiment.run(ctx, _tiny_cfg())
    assert len(result.claims) == 3
    errs = result.tables[0].column("d = 64")
    assert all(np.isfinite(e) for e in errs if e is not None)
