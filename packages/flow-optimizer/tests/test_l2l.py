import math

import numpy as np
import pytest
import torch
from flow_optimizer.l2l import LSTMOptimizer, preprocess_gradient
from flow_optimizer.problems import Problem, ProblemFamily, family


class _Quadratic(Problem):
    """``sum_j a_j (x_j - s_j)^2`` in [-5, 5]^d, optimum 0 at ``s``."""

    def __init__(self, a: np.ndarray, s: np.ndarray) -> None:
        d = len(a)
        self.name, self.dim = "quadratic", d
        self.a = torch.as_tensor(a, dtype=torch.float64)
        self.s = torch.as_tensor(s, dtype=torch.float64)
        self.lower = torch.full((d,), -5.0, dtype=torch.float64)
        self.upper = torch.full((d,), 5.0, dtype=torch.float64)
        self.optimum = 0.0
        self.lower_bound = 0.0

    def f(self, X: torch.Tensor) -> torch.Tensor:
        return (self.a.to(X) * (X - self.s.to(X)) ** 2).sum(-1)


class _QuadraticFamily(ProblemFamily):
    name = "quadratic"

    def sample_instance(self, rng: np.random.Generator, dim: int) -> Problem:
        return _Quadratic(np.exp(rng.uniform(-1.0, 1.0, dim)), rng.uniform(-2.0, 2.0, dim))


def test_preprocessing_matches_the_paper():
    p = 10.0
    g = torch.tensor([3.0, -0.5, 1e-6, -2e-5, 0.0], dtype=torch.float64)
    out = preprocess_gradient(g, p)
    assert out.shape == (5, 2) and out.dtype == torch.float64
    # |g| >= e^-10 ~ 4.5e-5: (log|g| / p, sign g)
    torch.testing.assert_close(out[0], torch.tensor([math.log(3.0) / p, 1.0], dtype=torch.float64))
    torch.testing.assert_close(out[1], torch.tensor([math.log(0.5) / p, -1.0], dtype=torch.float64))
    # smaller: (-1, e^p g)
    torch.testing.assert_close(
        out[2], torch.tensor([-1.0, math.exp(p) * 1e-6], dtype=torch.float64)
    )
    torch.testing.assert_close(
        out[3], torch.tensor([-1.0, -math.exp(p) * 2e-5], dtype=torch.float64)
    )
    torch.testing.assert_close(out[4], torch.tensor([-1.0, 0.0], dtype=torch.float64))


@pytest.mark.parametrize("d", [1, 3, 40])
def test_shapes_and_budget(d):
    torch.manual_seed(0)
    lstm = LSTMOptimizer(n_candidates=5, n_steps=4, hidden=6)
    p = family("rastrigin").sample_instance(np.random.default_rng(0), d)
    X = torch.zeros(5, d)
    G = torch.randn(5, d)
    X1, state = lstm._step(X, G, None, p.lower.float(), p.upper.float())
    assert X1.shape == (5, d)
    assert state[0].shape == (2, 5 * d, 6) and state[1].shape == (2, 5 * d, 6)
    res = lstm.minimize(p, 23, seed=1)  # 23 // 5 = 4 evaluations, 3 steps
    assert res.evaluations == 20 and res.n_steps == 3 and len(res.history) == 4
    assert res.x.shape == (d,) and res.x.dtype == np.float64
    assert np.all(res.x >= -5 - 1e-6) and np.all(res.x <= 5 + 1e-6)
    f = float(p.f(torch.as_tensor(res.x)[None])[0])
    assert abs(f - res.f) <= 1e-4 * max(1.0, abs(f))  # float32 run, float64 re-evaluation
    assert all(a >= b for a, b in zip(res.history, res.history[1:], strict=False))


def test_coordinate_wise_update_is_equivariant_to_coordinate_permutations():
    torch.manual_seed(0)
    lstm = LSTMOptimizer(n_candidates=3, n_steps=2, hidden=4, dtype=torch.float64)
    X = torch.randn(3, 4, dtype=torch.float64)
    G = torch.randn(3, 4, dtype=torch.float64)
    lo, hi = -10 * torch.ones(4, dtype=torch.float64), 10 * torch.ones(4, dtype=torch.float64)
    X1, _ = lstm._step(X, G, None, lo, hi)
    pc = torch.tensor([2, 0, 3, 1])
    X2, _ = lstm._step(X[:, pc], G[:, pc], None, lo, hi)
    torch.testing.assert_close(X2, X1[:, pc])


def test_it_learns_on_a_quadratic_family():
    torch.manual_seed(0)
    fam = _QuadraticFamily()
    test = [fam.sample_instance(np.random.default_rng(10_000 + i), 5) for i in range(6)]
    lstm = LSTMOptimizer(n_candidates=4, n_steps=10)

    def median_gap() -> float:
        return float(np.median([lstm.minimize(p, 44, seed=i).f for i, p in enumerate(test)]))

    before = median_gap()
    losses = lstm.fit(
        lambda r: fam.sample_instance(r, 5), iterations=60, instances_per_iteration=2, lr=1e-2
    )
    after = median_gap()
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 1.0  # log-scale loss falls
    assert after < 0.1 * before, (before, after)


def test_training_never_reads_the_optimum():
    fam = _QuadraticFamily()

    class Guarded(_Quadratic):
        def __getattribute__(self, name: str):
            if name == "optimum":
                raise AssertionError("training read the optimum")
            return super().__getattribute__(name)

    def sampler(r):
        p = fam.sample_instance(r, 3)
        return Guarded(p.a.numpy(), p.s.numpy())

    LSTMOptimizer(n_candidates=3, n_steps=3).fit(sampler, iterations=2, instances_per_iteration=1)


def test_bad_input():
    p = family("rastrigin").sample_instance(np.random.default_rng(0), 3)
    with pytest.raises(ValueError, match="n_candidates"):
        LSTMOptimizer(n_candidates=0)
    with pytest.raises(ValueError, match="out_scale"):
        LSTMOptimizer(out_scale=0.0)
    with pytest.raises(TypeError, match="dtype"):
        LSTMOptimizer(dtype=torch.int64)
    with pytest.raises(ValueError, match="budget"):
        LSTMOptimizer(n_candidates=8).minimize(p, 15)
    with pytest.raises(TypeError, match="problem_sampler"):
        LSTMOptimizer().fit(3)  # type: ignore[arg-type]
