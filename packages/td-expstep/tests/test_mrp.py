import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from td_expstep import (  # noqa: E402
    ChainSampler,
    IIDSampler,
    TrajectorySampler,
    boyan_chain,
    exact_value,
    mixing_time,
    mrp_from_env,
    omega,
    random_features,
    random_walk,
    td_fixed_point,
)


@pytest.mark.parametrize(("name", "visited"), [("FrozenLake-v1", 11), ("CliffWalking-v1", 37)])
def test_converted_chain_is_stochastic_and_mu_stationary(name, visited):
    P, _, mu = mrp_from_env(gym.make(name))
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(mu @ P, mu, atol=1e-12)
    assert mu.sum() == pytest.approx(1.0)
    assert int((mu > 0).sum()) == visited


def test_frozenlake_omega_is_small_with_8_random_features():
    _, _, mu = mrp_from_env(gym.make("FrozenLake-v1"))
    Phi = random_features(16, 8, np.random.default_rng(1000))
    assert 1e-4 < omega(Phi, mu) < 1e-2


def test_exact_value_matches_monte_carlo_within_3_se():
    P, r, _ = random_walk(7)
    gamma, horizon, n = 0.6, 40, 4000
    start = 2
    states = ChainSampler(P, np.eye(7)[start]).sample(horizon, n, np.random.default_rng(0))
    returns = (gamma ** np.arange(horizon)[:, None] * r[states[:-1]]).sum(0)
    se = returns.std(ddof=1) / np.sqrt(n)
    v = exact_value(P, r, gamma)
    assert abs(returns.mean() - v[start]) < 3 * se + gamma**horizon


def test_iid_sampler_matches_mu_and_P():
    P, _, mu, _ = boyan_chain()
    n = 200_000
    s, s2 = IIDSampler(mu, P).sample((n,), np.random.default_rng(0))
    freq = np.bincount(s, minlength=13) / n
    assert np.all(np.abs(freq - mu) < 4 * np.sqrt(mu * (1 - mu) / n) + 1e-12)
    # next states from state 5 follow P[5]
    nxt = np.bincount(s2[s == 5], minlength=13) / (s == 5).sum()
    np.testing.assert_allclose(nxt, P[5], atol=0.02)


def test_chain_and_trajectory_samplers_match_mu():
    env = gym.make("FrozenLake-v1")
    P, _, mu = mrp_from_env(env)
    rng = np.random.default_rng(0)
    states, rewards = TrajectorySampler(env, None).sample(20_000, rng)
    np.testing.assert_allclose(np.bincount(states, minlength=16) / len(states), mu, atol=0.02)
    assert rewards.shape == (20_000,)
    chains = ChainSampler(P, np.eye(16)[0]).sample(2000, 20, rng)
    np.testing.assert_allclose(
        np.bincount(chains.ravel(), minlength=16) / chains.size, mu, atol=0.01
    )


def test_mixing_time_is_exact_on_a_two_state_chain():
    # P^t - 1 mu has eigenvalue (1 - a - b)^t; TV from state 0 is b/(a+b) * |1-a-b|^t
    a, b = 0.1, 0.1
    P = np.array([[1 - a, a], [b, 1 - b]])
    mu = np.array([0.5, 0.5])
    t = mixing_time(P, mu, eps=0.25)
    expected = int(np.ceil(np.log(0.5) / np.log(0.8)))  # 0.5 * 0.8^t <= 0.25
    assert t == pytest.approx(expected)
    assert mixing_time(np.array([[0.0, 1.0], [1.0, 0.0]]), mu, max_steps=64) == float("inf")


def test_env_without_model_raises_naming_it():
    with pytest.raises(ValueError, match=r"CartPole.*unwrapped\.P"):
        mrp_from_env(gym.make("CartPole-v1").unwrapped)
    with pytest.raises(ValueError, match=r"unwrapped\.P"):
        mrp_from_env(gym.make("CartPole-v1"))


def test_features_of_low_rank_raise():
    P, r, mu, Phi = boyan_chain()
    bad = np.column_stack([Phi, Phi[:, 0] + Phi[:, 1]])
    with pytest.raises(ValueError, match="rank 4 < k = 5"):
        td_fixed_point(bad, P, r, mu, 0.9)


def test_bad_gamma_and_shapes_raise():
    P, r, _ = random_walk()
    with pytest.raises(ValueError, match="gamma"):
        exact_value(P, r, 1.0)
    with pytest.raises(ValueError, match="P must be row-stochastic"):
        exact_value(P * 0.5, r, 0.9)
    with pytest.raises(ValueError, match="policy"):
        mrp_from_env(gym.make("FrozenLake-v1"), policy=np.ones((3, 4)))
