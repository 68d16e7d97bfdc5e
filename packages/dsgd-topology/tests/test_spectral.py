import numpy as np
import pytest
from dsgd_topology import (
    MixingSchedule,
    SimulatedDSGD,
    mixing_matrix,
    mixing_schedule,
    schedule_profile,
    spectral_profile,
    topology,
)
from icml26_core.decentralized import TOPOLOGIES

N = 16


@pytest.mark.parametrize("name", [t for t in TOPOLOGIES if t != "hypercube"] + ["hypercube"])
def test_mixing_matrices_are_symmetric_doubly_stochastic_nonnegative(name):
    W = mixing_schedule(name, N).W
    np.testing.assert_allclose(W, W.T, atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    assert W.min() >= 0.0
    p = spectral_profile(W)
    assert p.eigenvalues[0] == pytest.approx(1.0)
    assert p.beta < 1.0  # connected and aperiodic


def test_ring_eigenvalues_closed_form():
    n = 12
    p = spectral_profile(mixing_matrix(topology("ring", n)))
    k = np.arange(n)
    expected = np.sort((1 + 2 * np.cos(2 * np.pi * k / n)) / 3)[::-1]
    np.testing.assert_allclose(p.eigenvalues, expected, atol=1e-12)
    lam = expected[1:]
    assert p.all_eigenvalue == pytest.approx(np.sum(lam**2 / (1 - lam**2)) / n, rel=1e-10)
    assert p.inverse_gap == pytest.approx(1 / (1 - lam[0]), rel=1e-10)
    assert p.gap_heterogeneous == pytest.approx(lam[0] ** 2 / (1 - lam[0]) ** 2, rel=1e-10)


def test_complete_graph_has_zero_eigenvalues_and_zero_prediction():
    p = spectral_profile(mixing_matrix(topology("complete", 8)))
    np.testing.assert_allclose(p.eigenvalues[1:], 0.0, atol=1e-12)
    assert p.all_eigenvalue == 0.0  # exact: eigenvalues below 1e-12 are set to 0
    assert p.predicted_consensus(0.1, 5.0) == 0.0  # exact: a sum of zeros


def test_star_vs_ring_all_eigenvalues_disagree_with_the_gap():
    ring = spectral_profile(mixing_matrix(topology("ring", N)))
    star = spectral_profile(mixing_matrix(topology("star", N)))
    assert star.inverse_gap < ring.inverse_gap  # the gap calls the star better
    assert star.all_eigenvalue > 4 * ring.all_eigenvalue  # all eigenvalues: much worse


@pytest.mark.parametrize("order", ["atc", "cta"])
@pytest.mark.parametrize("name", ["ring", "star", "barbell"])
def test_heterogeneous_fixed_point_is_exact_on_a_quadratic(name, order):
    # f_i(x) = mu/2 ||x - b_i||^2: deterministic gradients, so D-SGD converges to the
    # fixed point whose consensus error the closed form gives exactly.
    rng = np.random.default_rng(0)
    n, d, eta, mu = 10, 3, 0.1, 0.5
    W = mixing_matrix(topology(name, n))
    b = rng.standard_normal((n, d))
    opt = SimulatedDSGD(W, lr=eta, order=order)
    X = np.zeros((n, d))
    for _ in range(4000):
        X = opt.step(X, mu * (X - b))
    zeta = -mu * (b - b.mean(axis=0))  # grad f_i(x_bar) - grad f(x_bar)
    p = spectral_profile(W, zeta)
    predicted = p.predicted_consensus(eta, 0.0, mu=mu, order=order)
    assert opt.consensus_error(X) == pytest.approx(predicted, rel=1e-8)
    assert p.heterogeneous == pytest.approx(
        np.sum(p.eigenvalues[1:] ** 2 * p.zeta_modes[1:] / (1 - p.eigenvalues[1:]) ** 2) / n
    )


@pytest.mark.parametrize("name", ["ring", "star", "path"])
def test_homogeneous_noise_matches_xi_hom(name):
    rng = np.random.default_rng(1)
    n, d, eta, steps = 8, 200, 0.05, 3000
    W = mixing_matrix(topology(name, n))
    opt = SimulatedDSGD(W, lr=eta)
    X = np.zeros((n, d))
    total = 0.0
    for t in range(steps):
        X = opt.step(X, rng.standard_normal((n, d)))
        if t >= 500:
            total += opt.consensus_error(X)
    measured = total / (steps - 500)
    predicted = spectral_profile(W).predicted_consensus(eta, float(d))
    assert measured == pytest.approx(predicted, rel=0.10)


def test_zeta_mean_is_removed_and_torch_accepted():
    torch = pytest.importorskip("torch")
    W = mixing_matrix(topology("ring", 6))
    z = np.arange(6.0)
    p1 = spectral_profile(W, z)
    p2 = spectral_profile(W, torch.tensor(z + 100.0))
    assert p1.heterogeneous == pytest.approx(p2.heterogeneous)
    assert p1.zeta_modes[0] == 0.0  # exact: set to 0 by construction


def test_bad_input_raises():
    with pytest.raises(ValueError, match="disconnected"):
        mixing_matrix(np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]))
    A = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])  # doubly stochastic
    with pytest.raises(ValueError, match="not symmetric"):
        spectral_profile(A)
    with pytest.raises(ValueError, match="negative"):
        spectral_profile(np.array([[1.5, -0.5], [-0.5, 1.5]]))
    W = mixing_matrix(topology("ring", 5))
    with pytest.raises(ValueError, match="zeta"):
        spectral_profile(W, np.ones((4, 2)))
    p = spectral_profile(W)
    with pytest.raises(ValueError, match="eta"):
        p.predicted_consensus(0.0, 1.0)
    with pytest.raises(ValueError, match="sigma2"):
        p.predicted_consensus(0.1, -1.0)
    with pytest.raises(ValueError, match="order"):
        p.predicted_consensus(0.1, 1.0, order="both")


@pytest.mark.parametrize("order", ["atc", "cta"])
@pytest.mark.parametrize("name", ["ring", "star", "barbell"])
def test_schedule_profile_of_a_static_graph_is_the_closed_form(name, order):
    n, eta, mu = 10, 0.1, 0.5
    W = mixing_matrix(topology(name, n))
    zeta = np.random.default_rng(0).standard_normal((n, 3))
    closed = spectral_profile(W, zeta)
    as_fn = MixingSchedule(lambda t: W, n=n)  # a "time-varying" schedule of period 1
    rec = schedule_profile(as_fn, zeta, order=order, eta_mu=eta * mu)
    assert rec.period == 1
    assert rec.inverse_gap == pytest.approx(closed.inverse_gap, rel=1e-10)
    assert rec.gap_heterogeneous == pytest.approx(closed.gap_heterogeneous, rel=1e-8)
    want = closed.predicted_consensus(eta, 2.0, mu=mu, order=order)
    assert rec.predicted_consensus(eta, 2.0) == pytest.approx(want, rel=1e-8)
    if order == "atc":
        plain = schedule_profile(mixing_schedule(name, n), zeta)
        assert plain.all_eigenvalue == pytest.approx(closed.all_eigenvalue, rel=1e-10)
        assert plain.heterogeneous == pytest.approx(closed.heterogeneous, rel=1e-8)


def test_one_peer_exponential_bias_fixed_point_is_exact():
    # deterministic gradients mu (x_i - b_i): the periodic steady state's time average
    rng = np.random.default_rng(0)
    n, d, eta, mu = 8, 3, 0.1, 0.5
    sched = mixing_schedule("one_peer_exponential", n)
    b = rng.standard_normal((n, d))
    opt = SimulatedDSGD(sched, lr=eta)
    X = np.zeros((n, d))
    for _ in range(3000):  # a multiple of the period 3
        X = opt.step(X, mu * (X - b))
    measured = []
    for _ in range(3):
        X = opt.step(X, mu * (X - b))
        measured.append(opt.consensus_error(X))
    p = schedule_profile(sched, -mu * (b - b.mean(axis=0)), eta_mu=eta * mu)
    assert p.period == 3 and p.beta == 0.0  # exact: set to 0 below 1e-9 (exact averaging)
    assert np.mean(measured) == pytest.approx(p.predicted_consensus(eta, 0.0), rel=1e-8)


def test_one_peer_exponential_noise_matches_the_recursion():
    rng = np.random.default_rng(1)
    n, d, eta, steps = 16, 200, 0.05, 3000
    sched = mixing_schedule("one_peer_exponential", n)
    opt = SimulatedDSGD(sched, lr=eta)
    X = np.zeros((n, d))
    total = 0.0
    for t in range(steps):
        X = opt.step(X, rng.standard_normal((n, d)))
        if t >= 500:
            total += opt.consensus_error(X)
    predicted = schedule_profile(sched).predicted_consensus(eta, float(d))
    assert total / (steps - 500) == pytest.approx(predicted, rel=0.10)


def test_schedule_profile_bad_input():
    with pytest.raises(ValueError, match="does not contract"):
        schedule_profile(MixingSchedule(lambda t: np.eye(4), n=4))
    with pytest.raises(ValueError, match="negative"):
        schedule_profile(MixingSchedule(lambda t: np.array([[1.5, -0.5], [-0.5, 1.5]]), n=2))
    with pytest.raises(ValueError, match="n attribute"):
        schedule_profile(lambda t: np.eye(2))
    with pytest.raises(ValueError, match="order"):
        schedule_profile(mixing_schedule("ring", 4), order="both")


def test_bad_argument_types_and_recursion_limits_raise_early():
    W = mixing_schedule("ring", 16).W
    with pytest.raises(TypeError, match="mixing_schedule"):
        spectral_profile("ring")
    with pytest.raises(TypeError, match="zeta"):
        spectral_profile(W, zeta="abc")
    with pytest.raises(ValueError, match="tol"):
        schedule_profile(mixing_schedule("ring", 16), tol=-1.0)
    with pytest.raises(ValueError, match="max_rounds"):
        schedule_profile(mixing_schedule("ring", 16), max_rounds=0)


def test_spectral_profile_accepts_a_float32_mixing_matrix():
    # A float32 W sums to 1 only to ~1e-7; the default tolerance follows its precision.
    W = mixing_matrix(topology("ring", 16))
    p64 = spectral_profile(W)
    p32 = spectral_profile(W.astype(np.float32))
    assert p32.inverse_gap == pytest.approx(p64.inverse_gap, rel=1e-4)
    with pytest.raises(ValueError, match="float32: pass a larger atol"):
        bad = W.astype(np.float32)
        bad[0, 0] = np.nextafter(bad[0, 0], np.float32(1))
        spectral_profile(bad, atol=1e-12)
