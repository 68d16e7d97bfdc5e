import math

import numpy as np
import pytest
import torch
from flow_optimizer import problems
from flow_optimizer.problems import ArmIK, Newsvendor, family

RNG = np.random.default_rng


def _np_rastrigin(z):
    return 10 * z.size + np.sum(z**2 - 10 * np.cos(2 * np.pi * z))


def _np_ackley(z):
    d = z.size
    return (
        -20 * np.exp(-0.2 * np.sqrt(np.sum(z**2) / d))
        - np.exp(np.sum(np.cos(2 * np.pi * z)) / d)
        + 20
        + np.e
    )


def _np_rosenbrock(z):
    y = z + 1
    return np.sum(100 * (y[1:] - y[:-1] ** 2) ** 2 + (1 - y[:-1]) ** 2)


def _np_levy(z):
    w = 1 + z / 4
    return (
        np.sin(np.pi * w[0]) ** 2
        + np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(np.pi * w[:-1] + 1) ** 2))
        + (w[-1] - 1) ** 2 * (1 + np.sin(2 * np.pi * w[-1]) ** 2)
    )


REFS = {
    "rastrigin": _np_rastrigin,
    "ackley": _np_ackley,
    "rosenbrock": _np_rosenbrock,
    "levy": _np_levy,
}


@pytest.mark.parametrize("name", sorted(REFS))
def test_benchmark_matches_numpy_and_optimum_at_shift(name):
    p = family(name).sample_instance(RNG(3), 6)
    X = p.sample_uniform(5, torch.Generator().manual_seed(0), torch.float64)
    got = p.f(X).numpy()
    R, s = p.rot.numpy(), p.shift.numpy()
    want = [REFS[name](R @ (x - s)) for x in X.numpy()]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    assert abs(float(p.f(p.shift[None])[0])) < 1e-10
    np.testing.assert_allclose(R @ R.T, np.eye(6), atol=1e-12)
    assert np.all(np.abs(s) <= 2.0)


@pytest.mark.parametrize(
    "name", ["rastrigin", "ackley", "rosenbrock", "levy", "arm-ik", "newsvendor"]
)
def test_gradient_matches_finite_differences(name):
    p = family(name).sample_instance(RNG(1), 4)
    X = p.sample_uniform(3, torch.Generator().manual_seed(1), torch.float64)
    F, G = p.value_and_grad(X)
    h = 1e-6
    for j in range(4):
        e = torch.zeros(4, dtype=torch.float64)
        e[j] = h
        fd = (p.f(X + e) - p.f(X - e)) / (2 * h)
        np.testing.assert_allclose(G[:, j].numpy(), fd.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(F.numpy(), p.f(X).numpy())


def test_arm_end_effector_and_reachable_target():
    fam = ArmIK()
    rng = RNG(7)
    p = fam.sample_instance(rng, 5)
    rng = RNG(7)
    theta = rng.uniform(-fam.limit, fam.limit, 5)  # the same draw as the target
    phi = np.cumsum(theta)
    tip = np.array([np.sum(np.cos(phi)), np.sum(np.sin(phi))]) / 5
    np.testing.assert_allclose(p.target.numpy(), tip, atol=1e-12)
    assert float(p.f(torch.as_tensor(theta)[None])[0]) < 1e-24
    assert abs(p.optimum) < 1e-300  # set to 0.0 by construction
    assert np.linalg.norm(tip) <= 1.0 + 1e-12


def test_newsvendor_matches_numpy_and_lp_is_a_lower_bound():
    p = Newsvendor(scenarios=20).sample_instance(RNG(2), 3)
    X = p.sample_uniform(64, torch.Generator().manual_seed(2), torch.float64)
    D, pr, c = p.demand.numpy(), p.price.numpy(), p.cost.numpy()
    want = [
        -(np.mean(np.minimum(x, D), 0) @ pr - x @ c) + p.penalty * max(x.sum() - p.capacity, 0)
        for x in X.numpy()
    ]
    np.testing.assert_allclose(p.f(X).numpy(), want, rtol=1e-10)
    opt = p.optimum
    assert math.isfinite(opt)
    assert np.all(p.f(X).numpy() >= opt - 1e-9)
    assert opt < 0  # ordering something is profitable (price > cost)


def test_bad_dim_names_the_argument():
    with pytest.raises(ValueError, match="dim"):
        family("rastrigin").sample_instance(RNG(0), 0)
    with pytest.raises(ValueError, match="dim"):
        family("rosenbrock").sample_instance(RNG(0), 1)
    with pytest.raises(ValueError, match="family"):
        family("sphere")


def test_families_listed():
    assert set(problems.FAMILIES) == {
        "rastrigin",
        "ackley",
        "rosenbrock",
        "levy",
        "arm-ik",
        "newsvendor",
    }
