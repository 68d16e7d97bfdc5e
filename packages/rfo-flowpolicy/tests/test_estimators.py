"""TD(lambda) targets against their n-step definition; entropy estimates against known values."""

import math

import numpy as np
import pytest
import torch
from rfo_flowpolicy import FlowPolicy, entropy_estimate, knn_entropy, td_lambda_targets


def _digamma(x: float) -> float:
    return float(torch.special.digamma(torch.tensor(x, dtype=torch.float64)))


def _lambda_return_by_definition(r, v, term, trunc, gamma, lam):
    """G_t = (1 - lam) sum_{n < N} lam^(n-1) G_t^(n) + lam^(N-1) G_t^(N), N to the cut."""
    horizon = len(r)
    out = np.zeros(horizon)
    for t in range(horizon):
        e = t
        while not (term[e] or trunc[e] or e == horizon - 1):
            e += 1
        big_n = e - t + 1

        def n_step(n, t=t, e=e, big_n=big_n):
            g = sum(gamma**i * r[t + i] for i in range(n))
            if not (n == big_n and term[e]):
                g += gamma**n * v[t + n]
            return g

        out[t] = (1 - lam) * sum(lam ** (n - 1) * n_step(n) for n in range(1, big_n)) + lam ** (
            big_n - 1
        ) * n_step(big_n)
    return out


@pytest.mark.parametrize("lam", [0.0, 0.5, 0.95, 1.0])
def test_td_lambda_matches_the_n_step_definition(lam):
    rng = np.random.default_rng(0)
    horizon = 12
    r, v = rng.normal(size=horizon), rng.normal(size=horizon + 1)
    term = np.zeros(horizon, bool)
    trunc = np.zeros(horizon, bool)
    term[4] = True  # an episode ends at step 4 ...
    trunc[8] = True  # ... and another is cut by a time limit after step 8
    got = td_lambda_targets(r, v, term, trunc, gamma=0.9, lam=lam)
    want = _lambda_return_by_definition(r, v, term, trunc, 0.9, lam)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_td_lambda_special_cases_and_batches():
    rng = np.random.default_rng(1)
    r, v = rng.normal(size=(6, 3)), rng.normal(size=(7, 3))
    none = np.zeros((6, 3), bool)
    # lam = 0: one-step TD targets
    np.testing.assert_allclose(
        td_lambda_targets(r, v, none, gamma=0.8, lam=0.0), r + 0.8 * v[1:], atol=1e-12
    )
    # lam = 1: discounted return bootstrapped at the end
    mc = td_lambda_targets(r, v, none, gamma=0.8, lam=1.0)
    want0 = sum(0.8**i * r[i] for i in range(6)) + 0.8**6 * v[6]
    np.testing.assert_allclose(mc[0], want0, atol=1e-12)
    # a value after a terminal step is never read (NaN there is allowed)
    term = none.copy()
    term[2, 1] = True
    v_nan = v.copy()
    v_nan[3, 1] = np.nan
    a = td_lambda_targets(r, v_nan, term, gamma=0.8, lam=0.7)
    b = td_lambda_targets(r, v, term, gamma=0.8, lam=0.7)
    np.testing.assert_allclose(a[:3], b[:3], atol=1e-12)
    # torch in, torch out, same numbers; per column it is the 1-D computation
    t = td_lambda_targets(torch.tensor(r), torch.tensor(v), torch.tensor(term), gamma=0.8, lam=0.7)
    assert isinstance(t, torch.Tensor)
    np.testing.assert_allclose(t.numpy(), b, atol=1e-12)
    col = td_lambda_targets(r[:, 1], v[:, 1], term[:, 1], gamma=0.8, lam=0.7)
    np.testing.assert_allclose(col, b[:, 1], atol=1e-12)


def test_td_lambda_rejects_bad_input():
    r, v, d = np.zeros(3), np.zeros(4), np.zeros(3, bool)
    with pytest.raises(ValueError, match="values must have shape"):
        td_lambda_targets(r, np.zeros(3), d)
    with pytest.raises(ValueError, match="terminated must have the shape"):
        td_lambda_targets(r, v, np.zeros(2, bool))
    with pytest.raises(ValueError, match="lam must be"):
        td_lambda_targets(r, v, d, lam=1.5)
    with pytest.raises(ValueError, match="rewards contain NaN"):
        td_lambda_targets(np.array([0.0, np.nan, 0.0]), v, d)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_knn_entropy_recovers_a_uniform_distributions_entropy(d):
    # uniform on [-1, 1]^d: entropy d log 2; the estimator is consistent as m grows
    # (numpy's doubles: torch.rand's resolution gives ties at this size)
    x = torch.from_numpy(np.random.default_rng(d).uniform(-1, 1, size=(4000, 1, d)))
    est = float(knn_entropy(x)[0])
    assert abs(est - d * math.log(2)) < 0.04 * d + 0.02, (est, d * math.log(2))


@pytest.mark.parametrize("d", [1, 2, 4])
def test_two_sample_estimator_has_its_closed_form_mean(d):
    # two samples of N(0, s^2 I): r = s sqrt(2) chi_d, so
    # E[H] = psi(2) - psi(1) + log V_d + d (log s + log 2 + psi(d / 2) / 2); the constant
    # psi(2) - psi(1) = 1 (Euler's constant in its place would be off by 0.42 nats)
    s, n = 0.3, 400_000
    gen = torch.Generator().manual_seed(10 + d)
    x = s * torch.randn(2, n, d, generator=gen, dtype=torch.float64)
    log_vd = (d / 2) * math.log(math.pi) - math.lgamma(d / 2 + 1)
    want = 1 + log_vd + d * (math.log(s) + math.log(2) + _digamma(d / 2) / 2)
    got = float(knn_entropy(x).mean())
    assert abs(got - want) < 0.01 * d, (got, want)
    # and the m = 2 case of the general formula
    assert _digamma(2) - _digamma(1) == pytest.approx(1.0, abs=1e-12)


def test_two_sample_estimator_on_a_uniform_interval():
    # U(-1, 1): E log |U1 - U2| = log 2 - 3/2, so E[H] = 1 + log 2 + log 2 - 3/2 =
    # log 2 + 0.19: the two-sample form overestimates a bounded support by 0.19 nats
    gen = torch.Generator().manual_seed(5)
    x = torch.rand(2, 400_000, 1, generator=gen, dtype=torch.float64) * 2 - 1
    got = float(knn_entropy(x).mean())
    assert got == pytest.approx(2 * math.log(2) - 0.5, abs=0.01)


def test_entropy_estimate_of_a_policy_and_its_gradient():
    torch.manual_seed(3)
    obs = torch.randn(256, 3)
    wide, narrow = FlowPolicy(3, 2, noise_scale=1.0), FlowPolicy(3, 2, noise_scale=0.05)
    narrow.load_state_dict(wide.state_dict())
    g = torch.Generator().manual_seed(0)
    h_wide = entropy_estimate(wide, obs, generator=g)
    assert h_wide.item() > entropy_estimate(narrow, obs, generator=g).item() + 1.0
    h_wide.backward()
    assert wide.in_x.weight.grad is not None
    with pytest.raises(ValueError, match="m >= 2"):
        knn_entropy(torch.zeros(1, 4, 2))
