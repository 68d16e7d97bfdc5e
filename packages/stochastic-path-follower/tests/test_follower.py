import numpy as np
import pytest
import torch
from stochastic_path_follower import (
    DriftingLeastSquares,
    LSTMOptimizer,
    SPFOptimizer,
    StochasticPathFollower,
    relative_errors,
    stream,
)
from stochastic_path_follower.baselines import OnlineSGD


def _static(K=60, d=16, noise=0.01):
    x = np.random.default_rng(0).normal(size=d)
    return DriftingLeastSquares(np.tile(x, (K, 1)), m=d // 4, noise=noise)


def _drift(K=24, d=16):
    rng = np.random.default_rng(1)
    return DriftingLeastSquares(np.cumsum(0.1 * rng.normal(size=(K, d)), 0) + 1.0, m=d // 4)


@pytest.fixture(scope="module")
def trained():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # module scope runs before the autouse one-thread fixture
    try:
        spf = StochasticPathFollower(width=8, seed=0)
        return spf.fit([_drift()], epochs=3, episodes=2, unroll=12, seed=0)
    finally:
        torch.set_num_threads(threads)


def test_fit_records_history_and_keeps_weights_finite(trained):
    assert len(trained.history_) == 3 and np.all(np.isfinite(trained.history_))
    assert all(torch.isfinite(p).all() for p in trained.parameters())


def test_converges_on_a_static_distribution(trained):
    prob = _static()
    with torch.no_grad():
        X = trained.rollout(prob, 2, torch.Generator().manual_seed(0))
    err = relative_errors(X, prob.reference_path())
    assert float(err[-1].max()) < 1e-2
    assert float(err[0].min()) > float(err[-1].max())


def test_network_is_permutation_equivariant(trained):
    torch.manual_seed(0)
    feats = torch.randn(3, 10, len(trained.features))
    perm = torch.randperm(10)
    out = trained.net(feats).squeeze(-1)
    out_p = trained.net(feats[:, perm]).squeeze(-1)
    torch.testing.assert_close(out_p, out[:, perm])


def test_whole_update_is_permutation_equivariant(trained):
    """Permuting the coordinates of the problem permutes the decisions."""
    prob = _drift()
    perm = torch.randperm(prob.dim, generator=torch.Generator().manual_seed(5))
    xs, xs_p = [], []
    for (t, b), (_, bp) in zip(stream(prob, seed=3), stream(prob, seed=3), strict=True):
        bp.A = bp.A[:, :, perm]
        xs.append((t, b))
        xs_p.append((t, bp))
    x0 = torch.zeros(prob.dim)
    a = torch.stack(list(trained.track(xs, x0)))
    b = torch.stack(list(trained.track(xs_p, x0)))
    torch.testing.assert_close(b, a[:, perm], atol=1e-5, rtol=1e-5)


def test_one_network_runs_at_any_dimension(trained):
    for d in (8, 40):
        X = trained.rollout(_static(K=5, d=d), 1, torch.Generator().manual_seed(0))
        assert X.shape == (5, 1, d)


def test_tracking_is_causal(trained):
    """Changing the batches after step k leaves X_0..X_k unchanged."""
    prob, k = _drift(), 9
    base = list(stream(prob, seed=0))
    changed = base[: k + 1] + list(stream(prob, seed=99))[k + 1 :]
    x0 = torch.zeros(prob.dim)
    a = list(trained.track(base, x0))
    b = list(trained.track(changed, x0))
    for i in range(k + 1):
        torch.testing.assert_close(a[i], b[i], atol=0.0, rtol=0.0)
    assert float((a[k + 1] - b[k + 1]).abs().max()) > 0


def test_save_load_round_trip(trained, tmp_path):
    path = tmp_path / "spf.pt"
    trained.save(path)
    back = StochasticPathFollower.load(path)
    assert back.config == trained.config
    prob = _drift()
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    with torch.no_grad():
        torch.testing.assert_close(back.rollout(prob, 2, g1), trained.rollout(prob, 2, g2))
    with pytest.raises(ValueError, match="not a LSTMOptimizer"):
        LSTMOptimizer.load(path)


def test_lstm_optimizer_trains_and_saves(tmp_path):
    lstm = LSTMOptimizer(hidden=4).fit([_drift()], epochs=1, episodes=2, unroll=6)
    lstm.save(tmp_path / "l.pt")
    back = LSTMOptimizer.load(tmp_path / "l.pt")
    with torch.no_grad():
        a = back.rollout(_drift(), 1, torch.Generator().manual_seed(0))
        b = lstm.rollout(_drift(), 1, torch.Generator().manual_seed(0))
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"width": 0}, ValueError, "width"),
        ({"features": ("prev_grad",)}, ValueError, "include 'grad'"),
        ({"features": ("grad", "nope")}, ValueError, "features"),
        ({"features": "grad"}, TypeError, "sequence"),
        ({"residual_weight": -1.0}, ValueError, "residual_weight"),
        ({"time_scale": 0.0}, ValueError, "time_scale"),
        ({"seed": 1.5}, TypeError, "seed must be an integer"),
        ({"seed": "a"}, TypeError, "seed must be an integer"),
    ],
)
def test_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        StochasticPathFollower(**kwargs)


def test_seed_is_checked_not_truncated():
    with pytest.raises(TypeError, match="seed must be an integer"):
        LSTMOptimizer(seed=0.5)
    with pytest.raises(TypeError, match="seed must be an integer"):
        StochasticPathFollower(width=4).fit([_drift()], epochs=1, seed="0")


def test_bad_input_to_fit_and_track(trained):
    with pytest.raises(ValueError, match="scenarios must not be empty"):
        trained.fit([], epochs=1)
    with pytest.raises(TypeError, match="Scenario protocol"):
        trained.fit([object()], epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        trained.fit([_drift()], epochs=0)
    prob = _drift()
    items = list(stream(prob))
    with pytest.raises(ValueError, match="increase strictly"):
        list(trained.track([items[1], items[0]], torch.zeros(prob.dim)))
    with pytest.raises(ValueError, match="NaN"):
        list(trained.track(items, torch.full((prob.dim,), float("nan"))))
    with pytest.raises(ValueError, match="shape"):
        list(trained.track(items, torch.zeros(prob.dim + 1)))
    with pytest.raises(TypeError, match="x0 must be a torch"):
        list(trained.track(items, np.zeros(prob.dim)))
    with pytest.raises(TypeError, match="stream must be an iterable"):
        list(trained.track(5, torch.zeros(prob.dim)))
    with pytest.raises(TypeError, match="scenarios must be a Scenario or an iterable"):
        trained.fit(3, epochs=1)
    with pytest.raises(TypeError, match=r"stream must yield \(t, batch\) pairs with a float t"):
        list(trained.track([np.zeros(prob.dim)], torch.zeros(prob.dim)))
    with pytest.raises(TypeError, match="whose batch has a grad"):
        list(trained.track([(0.0, 3)], torch.zeros(prob.dim)))


def test_scenario_dtype_must_match_the_follower(trained):
    p64 = DriftingLeastSquares(np.ones((6, 4)), m=2, dtype=torch.float64)
    with pytest.raises(TypeError, match="cast the follower"):
        trained.rollout(p64, 1, torch.Generator())
    with pytest.raises(TypeError, match="cast the follower"):
        StochasticPathFollower(width=4).fit(p64, epochs=1)
    with pytest.raises(ValueError, match="need the follower cast"):
        list(trained.track(stream(p64), torch.zeros(4)))
    f64 = StochasticPathFollower(width=4).to(torch.float64).fit(p64, epochs=1, unroll=4)
    X = torch.stack(list(f64.track(stream(p64), torch.zeros(4, dtype=torch.float64))))
    assert X.dtype == torch.float64 and X.shape == (6, 4)


def test_baselines_check_rollout_arguments():
    prob, g = _drift(), torch.Generator()
    with pytest.raises(ValueError, match="episodes must be"):
        OnlineSGD(0.1).rollout(prob, 0, g)
    with pytest.raises(ValueError, match="steps must be"):
        OnlineSGD(0.1).rollout(prob, 1, g, start=2, steps=len(prob))


def test_bad_input_to_rollout(trained):
    prob, g = _drift(), torch.Generator()
    with pytest.raises(ValueError, match="episodes must be"):
        trained.rollout(prob, -1, g)
    with pytest.raises(ValueError, match="start must be"):
        trained.rollout(prob, 1, g, start=len(prob))
    with pytest.raises(ValueError, match="steps must be"):
        trained.rollout(prob, 1, g, steps=len(prob) + 1)
    with pytest.raises(ValueError, match="x0 must be a tensor of shape"):
        trained.rollout(prob, 2, g, x0=torch.zeros(prob.dim))


def test_optimizer_state_dict_round_trip(trained):
    torch.manual_seed(0)
    target = torch.randn(5)

    def make():
        w = torch.zeros(5, requires_grad=True)
        return w, SPFOptimizer([w], trained)

    def closure_for(w, opt, t):
        def closure():
            opt.zero_grad()
            loss = 0.5 * ((w - target * (1 + 0.01 * t)) ** 2).sum()
            loss.backward()
            return loss

        return closure

    w1, o1 = make()
    for t in range(4):
        o1.step(closure_for(w1, o1, t))
    sd = o1.state_dict()
    w2, o2 = make()
    with torch.no_grad():
        w2.copy_(w1)
    o2.load_state_dict(sd)
    for t in range(4, 8):
        o1.step(closure_for(w1, o1, t))
        o2.step(closure_for(w2, o2, t))
    torch.testing.assert_close(w1, w2, atol=0.0, rtol=0.0)


def test_optimizer_matches_the_follower_on_a_drifting_quadratic(trained):
    """SPFOptimizer on a full-batch quadratic = the follower's own update."""
    prob = DriftingLeastSquares(np.ones((6, 4)), m=4, noise=0.0)
    batches = list(stream(prob, seed=0))
    w = torch.zeros(4, requires_grad=True)
    opt = SPFOptimizer([w], trained)
    ours = []
    for t, b in batches:

        def closure(b=b):
            opt.zero_grad()
            loss = b.loss(w[None]).sum()
            loss.backward()
            return loss

        opt.step(closure, t=t)
        ours.append(w.detach().clone())
    ref = list(trained.track(batches, torch.zeros(4)))
    torch.testing.assert_close(torch.stack(ours), torch.stack(ref), atol=1e-6, rtol=1e-5)


def test_optimizer_bad_input(trained):
    w = torch.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="StochasticPathFollower"):
        SPFOptimizer([w], object())
    opt = SPFOptimizer([w], trained)
    assert opt.step() is None  # no closure and no gradients: nothing to do
    torch.testing.assert_close(w.detach(), torch.zeros(2), atol=0.0, rtol=0.0)

    def closure():
        opt.zero_grad()
        loss = (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure, t=1.0)
    before = w.detach().clone()
    with pytest.raises(ValueError, match="t must increase"):
        opt.step(closure, t=1.0)
    with pytest.raises(TypeError, match="t must be a real number"):
        opt.step(closure, t="2")
    with pytest.raises(ValueError, match="t must be a finite number"):
        opt.step(closure, t=float("nan"))
    w.grad = torch.tensor([1.0, float("nan")])
    with pytest.raises(ValueError, match=r"\.grad of a parameter in param group 0 contains NaN"):
        opt.step(t=3.0)
    torch.testing.assert_close(w.detach(), before, atol=0.0, rtol=0.0)
