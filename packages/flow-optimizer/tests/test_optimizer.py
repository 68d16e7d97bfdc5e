from unittest import mock

import numpy as np
import pytest
import torch
from flow_optimizer import N_FEATURES, FlowOptimizer, VelocityField, population_features
from flow_optimizer.problems import Newsvendor, Problem, Rastrigin, family
from torch import nn


def _pop(N=6, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(N, d, generator=g, dtype=torch.float64)
    F = torch.randn(N, generator=g, dtype=torch.float64)
    G = torch.randn(N, d, generator=g, dtype=torch.float64)
    return X, F, G


def _field(seed=0):
    torch.manual_seed(seed)
    f = VelocityField(hidden=8).double()
    for p in f.parameters():  # non-zero last layer so the test sees real outputs
        nn.init.normal_(p, std=0.5)
    return f


def test_field_is_equivariant_to_coordinate_and_candidate_permutations():
    X, F, G = _pop()
    width = torch.full((4,), 10.0, dtype=torch.float64)
    field = _field()
    h, _ = population_features(X, F, G, 0.3, width)
    u = field(h)
    pc = torch.tensor([2, 0, 3, 1])
    h2, _ = population_features(X[:, pc], F, G[:, pc], 0.3, width[pc])
    torch.testing.assert_close(field(h2), u[:, pc])
    pn = torch.tensor([5, 3, 1, 0, 2, 4])
    h3, _ = population_features(X[pn], F[pn], G[pn], 0.3, width)
    torch.testing.assert_close(field(h3), u[pn])


@pytest.mark.parametrize("d", [1, 3, 50])
def test_field_runs_at_any_dimension(d):
    X, F, G = _pop(N=5, d=d)
    h, scale = population_features(X, F, G, 0.0, torch.ones(d, dtype=torch.float64))
    assert h.shape == (5, d, N_FEATURES) and scale.shape == (1, d)
    assert _field()(h).shape == (5, d)


def test_untrained_field_is_the_no_op_step():
    p = Rastrigin().sample_instance(np.random.default_rng(0), 3)
    opt = FlowOptimizer(n_candidates=8, n_steps=4)
    res = opt.minimize(p, 40, seed=1)
    assert res.evaluations == 40 and res.n_steps == 4
    assert max(res.history) - min(res.history) < 1e-6  # nothing moves: best never changes


class _ToBest(nn.Module):
    """The exact velocity of the map 'every candidate goes to the best one': u = b."""

    hidden = 1

    def forward(self, h):
        return h[..., 1]


def test_euler_with_the_exact_velocity_reaches_the_target():
    p = Rastrigin().sample_instance(np.random.default_rng(0), 5)
    opt = FlowOptimizer(_ToBest(), n_candidates=8, n_steps=1, dtype=torch.float64)
    lo, hi = p.lower, p.upper
    X = p.sample_uniform(8, torch.Generator().manual_seed(0), torch.float64)
    F, G = p.value_and_grad(X)
    X1 = opt._step(p, X, F, G, 0.0, 1.0, lo, hi)
    torch.testing.assert_close(X1, X[int(F.argmin())].expand_as(X1))


class _Line(Problem):
    """1-D problem f(x) = x^2 on [-1, 1]."""

    def __init__(self):
        self.dim, self.name = 1, "line"
        self.lower = torch.tensor([-1.0], dtype=torch.float64)
        self.upper = torch.tensor([1.0], dtype=torch.float64)
        self.lower_bound = 0.0

    def f(self, X):
        return (X**2).sum(-1)


def test_flow_matching_learns_a_known_target_map():
    """Target map: move every candidate up by half the population std, so the straight-path
    displacement in std units is x1 - x0 = 0.5 at every point of the path."""

    def up_half_std(self, problem, X, F, M, g):
        X1 = X + 0.5 * X.std(0, keepdim=True, unbiased=False)
        return X1, problem.f(X1)

    torch.manual_seed(0)
    opt = FlowOptimizer(VelocityField(hidden=16), n_candidates=16, n_steps=3)
    with mock.patch.object(FlowOptimizer, "_targets", up_half_std):
        losses = opt.fit_flow_matching(
            lambda rng: _Line(), iterations=100, instances_per_iteration=1, lr=1e-2
        )
    assert np.mean(losses[-10:]) < 0.05 * np.mean(losses[:10])
    X = _Line().sample_uniform(16, torch.Generator().manual_seed(5), torch.float32)
    F, G = _Line().value_and_grad(X)
    h, _ = population_features(X, F, G, 0.1, torch.tensor([2.0]))
    with torch.no_grad():
        u = opt.field(h)
    assert float((u - 0.5).abs().max()) < 0.05


def test_training_improves_over_untrained_and_never_calls_the_reference_solver():
    fam = Newsvendor(scenarios=10)
    opt = FlowOptimizer(n_candidates=8, n_steps=4)
    with mock.patch("flow_optimizer.problems._newsvendor_lp") as lp:
        opt.fit_flow_matching(
            lambda r: fam.sample_instance(r, 3), iterations=2, instances_per_iteration=1
        )
        opt.fine_tune(lambda r: fam.sample_instance(r, 3), iterations=2, instances_per_iteration=1)
        opt.minimize(fam.sample_instance(np.random.default_rng(9), 3), 40)
    lp.assert_not_called()


def test_fine_tune_lowers_the_unrolled_loss():
    fam = family("rastrigin")
    torch.manual_seed(0)
    opt = FlowOptimizer(n_candidates=16, n_steps=5)
    losses = opt.fine_tune(
        lambda r: fam.sample_instance(r, 3), iterations=25, instances_per_iteration=2, lr=3e-3
    )
    assert np.mean(losses[-10:]) < np.mean(losses[:10])


def test_save_load_round_trip(tmp_path):
    opt = FlowOptimizer(_field().float(), n_candidates=8, n_steps=3)
    opt.save(tmp_path / "f.pt")
    back = FlowOptimizer.load(tmp_path / "f.pt")
    p = Rastrigin().sample_instance(np.random.default_rng(0), 4)
    a, b = opt.minimize(p, 32, seed=3), back.minimize(p, 32, seed=3)
    assert (back.n_candidates, back.n_steps) == (8, 3)
    np.testing.assert_allclose(a.x, b.x)
    assert abs(a.f - b.f) < 1e-6


def test_bad_input():
    p = Rastrigin().sample_instance(np.random.default_rng(0), 3)
    with pytest.raises(ValueError, match="n_candidates"):
        FlowOptimizer(n_candidates=1)
    with pytest.raises(ValueError, match="n_steps"):
        FlowOptimizer(n_steps=0)
    opt = FlowOptimizer(n_candidates=8, n_steps=3)
    with pytest.raises(ValueError, match="budget"):
        opt.minimize(p, 15)
    with pytest.raises(ValueError, match="x0"):
        opt.minimize(p, 32, x0=torch.zeros(3, 3))

    unbounded = _Line()
    unbounded.lower = unbounded.upper = None
    with pytest.raises(ValueError, match="no bounds"):
        opt.minimize(unbounded, 32)
    with pytest.raises(ValueError, match="no bounds"):
        opt.fit_flow_matching(lambda r: unbounded, iterations=1)

    class _NaN(_Line):
        def f(self, X):
            out = (X**2).sum(-1)
            out[3] = float("nan")
            return out

    with pytest.raises(ValueError, match="candidate index 3"):
        opt.minimize(_NaN(), 32)


def test_bad_arguments_name_the_argument():
    p = Rastrigin().sample_instance(np.random.default_rng(0), 3)
    opt = FlowOptimizer(n_candidates=4, n_steps=1)
    with pytest.raises(TypeError, match="dtype"):
        FlowOptimizer(dtype="float64")
    with pytest.raises(TypeError, match="dtype"):
        FlowOptimizer(dtype=torch.int64)
    with pytest.raises(TypeError, match="field"):
        FlowOptimizer("abc")
    with pytest.raises(TypeError, match="problem must be"):
        opt.minimize(lambda X: X.sum(1), 8)
    with pytest.raises(TypeError, match="seed"):
        opt.minimize(p, 8, seed="a")
    with pytest.raises(TypeError, match="problem_sampler"):
        opt.fit_flow_matching(None, iterations=1)
    with pytest.raises(TypeError, match="problem must be"):
        opt.fine_tune(lambda rng: 5, iterations=1)
    with pytest.raises(TypeError, match="rng"):
        Rastrigin().sample_instance(0, 3)


def test_save_load_keeps_the_dtype(tmp_path):
    opt = FlowOptimizer(n_candidates=4, n_steps=1, dtype=torch.float64)
    opt.save(tmp_path / "f.pt")
    assert FlowOptimizer.load(tmp_path / "f.pt").dtype == torch.float64
