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
        "dispatch",
    }


pandapower = pytest.importorskip("pandapower")


def _dispatch(case, seed=0):
    from flow_optimizer.problems import DCDispatch

    return DCDispatch(case).sample_instance(RNG(seed))


def test_dispatch_case9_reproduces_rundcpp_line_flows():
    import warnings

    from flow_optimizer.problems import DCDispatch
    from icml26_core.datasets import load_power_grid

    p = DCDispatch("case9").sample_instance(RNG(3))
    assert p.dim == 3 and p.model.ptdf.shape == (9, 9)
    net = load_power_grid("case9")
    net.load["p_mw"] = p.load_mw  # this instance's loads (scaling 1 in case9)
    net.gen["p_mw"] = [120.0, 90.0]  # a dispatch; the slack (ext grid) takes the rest
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pandapower.rundcpp(net)
    X = torch.tensor([[float(net.res_ext_grid.p_mw.iloc[0]), 120.0, 90.0]], dtype=torch.float64)
    np.testing.assert_allclose(
        p.line_flows(X)[0].numpy(), net.res_line.p_from_mw.to_numpy(), rtol=1e-9, atol=1e-9
    )
    assert abs(float(X.sum()) - p.total_demand) < 1e-8  # rundcpp balances the slack


def test_dispatch_case30_ptdf_and_objective_match_numpy():
    p = _dispatch("case30", 1)
    assert p.dim == 6 and p.model.ptdf.shape == (41, 30)
    X = p.sample_uniform(16, torch.Generator().manual_seed(0), torch.float64)
    m = p.model
    demand = m.fixed_mw.copy()
    np.add.at(demand, m.load_bus, p.load_mw)
    want = []
    for x in X.numpy():
        inj = -demand.copy()
        np.add.at(inj, m.gen_bus, x)
        flow = m.ptdf @ inj
        viol = abs(x.sum() - demand.sum()) + np.maximum(np.abs(flow) - m.rate_mw, 0).sum()
        cost = (m.cost[:, 0] + m.cost[:, 1] * x + m.cost[:, 2] * x**2).sum()
        want.append(cost + p.penalty * viol)
    np.testing.assert_allclose(p.f(X).numpy(), want, rtol=1e-10)
    assert np.all(p.f(X).numpy() >= p.lower_bound)
    _, G = p.value_and_grad(X)
    h = 1e-5
    for j in range(6):
        e = torch.zeros(6, dtype=torch.float64)
        e[j] = h
        fd = (p.f(X + e) - p.f(X - e)) / (2 * h)
        np.testing.assert_allclose(G[:, j].numpy(), fd.numpy(), rtol=1e-5, atol=1e-4)


def test_dispatch_opf_optimum_is_feasible_and_scores_no_penalty():
    p = _dispatch("case30", 2)
    ref = p.reference_dispatch
    assert ref is not None and ref.shape == (6,)
    X = torch.as_tensor(ref, dtype=torch.float64)[None]
    assert float(p.violation(X)[0]) < 1e-4  # MW (the OPF's own tolerance)
    assert abs(float(p.f(X)[0]) - p.optimum) < 1e-2
    assert abs(float(p.cost(X)[0]) - p.optimum) < 1e-6 * p.optimum
    Y = p.sample_uniform(256, torch.Generator().manual_seed(2), torch.float64)
    assert float(p.f(Y).min()) >= p.optimum - 1e-6  # the exact penalty: nothing scores lower


def test_dispatch_dim_must_match_the_case():
    from flow_optimizer.problems import DCDispatch

    with pytest.raises(ValueError, match="dim"):
        DCDispatch("case30").sample_instance(RNG(0), 10)
    assert DCDispatch("case30").sample_instance(RNG(0), 6).dim == 6


def test_training_on_dispatch_never_calls_the_reference_solver():
    from unittest import mock

    from flow_optimizer import FlowOptimizer
    from flow_optimizer.l2l import LSTMOptimizer
    from flow_optimizer.problems import DCDispatch

    fam = DCDispatch("case9")

    def sampler(r):
        return fam.sample_instance(r)

    with mock.patch.object(pandapower, "rundcopp", side_effect=AssertionError("OPF called")):
        opt = FlowOptimizer(n_candidates=4, n_steps=2)
        opt.fit_flow_matching(sampler, iterations=1, instances_per_iteration=1)
        opt.fine_tune(sampler, iterations=1, instances_per_iteration=1)
        LSTMOptimizer(n_candidates=4, n_steps=2).fit(
            sampler, iterations=1, instances_per_iteration=1
        )
        res = opt.minimize(sampler(RNG(0)), 12)
    assert res.evaluations == 12
