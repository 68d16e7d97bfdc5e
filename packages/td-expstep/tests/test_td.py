import numpy as np
import pytest
from td_expstep import (
    ConstantSchedule,
    ExponentialSchedule,
    IIDSampler,
    LinearTD,
    boyan_chain,
    exponential_step_size,
    lstd,
    random_features,
    random_walk,
    td_fixed_point,
)

GAMMA = 0.9


def _ab(Phi, P, r, mu, gamma):
    A = Phi.T @ (mu[:, None] * (Phi - gamma * P @ Phi))
    return A, Phi.T @ (mu * r)


def test_theta_star_solves_A_theta_b():
    P, r, mu, Phi = boyan_chain()
    theta = td_fixed_point(Phi, P, r, mu, GAMMA)
    A, b = _ab(Phi, P, r, mu, GAMMA)
    np.testing.assert_allclose(A @ theta, b, atol=1e-10)


def test_mean_path_td_converges_geometrically_under_exponential_schedule():
    # expected TD: theta <- theta + eta_t (b - A theta); with sum_t eta_t ~ eta0 T / log T
    # the error contracts like exp(-c eta0 T / log T): far below any polynomial rate
    P, r, mu, Phi = boyan_chain()
    A, b = _ab(Phi, P, r, mu, GAMMA)
    theta_star = np.linalg.solve(A, b)
    errs = {}
    for T in (500, 1000, 2000):
        theta = np.zeros(4)
        for eta in exponential_step_size(np.arange(T), 1.0, T):
            theta = theta + eta * (b - A @ theta)
        errs[T] = np.linalg.norm(theta - theta_star) / np.linalg.norm(theta_star)
    assert errs[2000] < 1e-4
    assert np.log(errs[2000]) < 1.5 * np.log(errs[1000]) < 2.25 * np.log(errs[500]) < 0


def test_regularized_mean_path_bias_is_order_lambda():
    P, r, mu, Phi = boyan_chain()
    A, b = _ab(Phi, P, r, mu, GAMMA)
    theta_star = np.linalg.solve(A, b)
    ratios = []
    for lam in (1e-2, 1e-3, 1e-4):
        theta_lam = np.linalg.solve(A + lam * np.eye(4), b)
        # the regularized mean path converges to theta_lam
        theta = np.zeros(4)
        for eta in exponential_step_size(np.arange(3000), 1.0, 3000):
            theta = theta + eta * (b - A @ theta - lam * theta)
        np.testing.assert_allclose(theta, theta_lam, rtol=1e-6)
        ratios.append(np.linalg.norm(theta_lam - theta_star) / lam)
    assert max(ratios) < 2 * min(ratios)  # ||theta_lam - theta*|| = Theta(lambda)


def test_batched_fit_equals_per_seed_loop():
    P, r, mu = random_walk()
    rng = np.random.default_rng(0)
    Phi = random_features(len(r), 5, rng)
    s, s2 = IIDSampler(mu, P).sample((400, 3), rng)
    sched = ExponentialSchedule(np.array([0.2, 0.9]), total_steps=400)
    batched = LinearTD(5, GAMMA, sched, regularization=np.array([0.0, 0.01]))
    batched.fit((Phi[s][:, :, None], r[s][:, :, None], Phi[s2][:, :, None]))
    assert batched.theta_.shape == (3, 2, 5)
    for seed in range(3):
        for j, (eta0, lam) in enumerate([(0.2, 0.0), (0.9, 0.01)]):
            one = LinearTD(5, GAMMA, ExponentialSchedule(eta0, 400), regularization=lam)
            for t in range(400):
                one.update(Phi[s[t, seed]], r[s[t, seed]], Phi[s2[t, seed]])
            np.testing.assert_allclose(batched.theta_[seed, j], one.theta_, rtol=1e-10, atol=1e-12)


def test_iid_td_and_lstd_approach_theta_star():
    P, r, mu, Phi = boyan_chain()
    theta_star = td_fixed_point(Phi, P, r, mu, GAMMA)
    rng = np.random.default_rng(1)
    s, s2 = IIDSampler(mu, P).sample((20000, 4), rng)
    td = LinearTD(4, GAMMA, ExponentialSchedule(0.5, 20000)).fit((Phi[s], r[s], Phi[s2]))
    rel = np.linalg.norm(td.theta_ - theta_star, axis=-1) / np.linalg.norm(theta_star)
    assert np.all(rel < 0.05)
    th = lstd(Phi[s], r[s], Phi[s2], GAMMA)
    rel = np.linalg.norm(th - theta_star, axis=-1) / np.linalg.norm(theta_star)
    assert np.all(rel < 0.05)


def test_projection_keeps_norm_and_average_is_mean_of_iterates():
    td = LinearTD(2, 0.5, ConstantSchedule(1.0), projection_radius=0.3)
    iterates = []
    for _ in range(5):
        iterates.append(td.update(np.array([1.0, 0.0]), 10.0, np.array([0.0, 1.0])).copy())
        assert np.linalg.norm(td.theta_) <= 0.3 + 1e-12
    np.testing.assert_allclose(td.theta_avg_, np.mean(iterates, 0), rtol=1e-12)


def test_bad_input_raises_naming_the_argument():
    with pytest.raises(ValueError, match="gamma"):
        LinearTD(3, 1.0, ConstantSchedule(0.1))
    with pytest.raises(ValueError, match="gamma"):
        LinearTD(3, -0.1, ConstantSchedule(0.1))
    with pytest.raises(TypeError, match="schedule"):
        LinearTD(3, 0.5, 0.1)
    with pytest.raises(ValueError, match="regularization"):
        LinearTD(3, 0.5, ConstantSchedule(0.1), regularization=-1.0)
    td = LinearTD(3, 0.5, ConstantSchedule(0.1))
    with pytest.raises(ValueError, match="phi"):
        td.update(np.zeros(2), 0.0, np.zeros(3))
    with pytest.raises(ValueError, match="transitions"):
        td.fit((np.zeros((4, 3)), np.zeros(5), np.zeros((4, 3))))
