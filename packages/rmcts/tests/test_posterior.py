import numpy as np
import pytest
from rmcts import lambda_n, pi_bar, regularized_policy
from scipy.optimize import minimize
from scipy.special import softmax


def _objective(y, prior, q, lam):
    support = prior > 0
    return q @ y - lam * np.sum(prior[support] * np.log(prior[support] / y[support]))


def _brute_force(prior, q, lam):
    """Maximize q.y - lam KL(prior, y) over the simplex with a generic solver.

    The simplex is parameterized by softmax logits and BFGS runs unconstrained; SLSQP
    with an equality constraint stalled 1e-3 away from the optimum on scipy 1.11.
    """
    k = len(prior)

    def negative(z):
        y = softmax(z)
        grad_y = q + lam * prior / y
        return -_objective(y, prior, q, lam), -(y * (grad_y - y @ grad_y))

    res = minimize(
        negative, np.zeros(k), jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 5000}
    )
    return softmax(res.x)


def test_sums_to_one_and_kkt(rng):
    prior = rng.dirichlet(np.ones(7), size=50)
    q = rng.uniform(-1, 1, size=(50, 7))
    lam = rng.uniform(0.01, 2.0, size=50)
    y = regularized_policy(prior, q, lam)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(y > 0)
    # Stationarity of the Lagrangian: q_b + lam * prior_b / y_b is the same alpha for all b.
    alpha = q + lam[:, None] * prior / y
    np.testing.assert_allclose(alpha.std(axis=1), 0.0, atol=1e-9)
    # alpha lies in Grill et al.'s bracket [max(q + lam pi), max(q) + lam].
    assert np.all(alpha[:, 0] >= (q + lam[:, None] * prior).max(axis=1) - 1e-9)
    assert np.all(alpha[:, 0] <= q.max(axis=1) + lam + 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_matches_generic_convex_solver(seed):
    r = np.random.default_rng(seed)
    k = int(r.integers(2, 8))
    prior = r.dirichlet(np.full(k, 0.7))
    q = r.uniform(-1, 1, size=k)
    lam = float(r.uniform(0.05, 1.5))
    ours = regularized_policy(prior, q, lam)
    ref = _brute_force(prior, q, lam)
    np.testing.assert_allclose(ours, ref, atol=1e-4)
    # ours is at least as good as the generic solver's point, and as any random point
    assert _objective(ours, prior, q, lam) >= _objective(ref, prior, q, lam) - 1e-10
    for y in r.dirichlet(np.ones(k), size=200):
        assert _objective(ours, prior, q, lam) >= _objective(y, prior, q, lam)


def test_limits_prior_and_greedy(rng):
    prior = np.array([0.1, 0.6, 0.3])
    q = np.array([0.9, -0.2, 0.1])
    # Strong regularization (large lam, e.g. a large c) gives back the prior.
    np.testing.assert_allclose(regularized_policy(prior, q, 1e6), prior, atol=1e-5)
    # As N grows lambda_N -> 0 and pi_bar concentrates on the best action.
    masses = [pi_bar(prior, q, n, c=1.25)[0] for n in (10, 1e3, 1e5, 1e8)]
    assert np.all(np.diff(masses) > 0) and masses[-1] > 0.999
    np.testing.assert_array_equal(regularized_policy(prior, q, 0.0), [1.0, 0.0, 0.0])
    # lambda_N = c sqrt(N) / (|A| + N): zero at N = 0, largest at N = |A|, vanishing as N grows
    lam = lambda_n(np.array([0.0, 3.0, 1e4]), 3, c=2.0)
    np.testing.assert_allclose(lam, [0.0, 2 * np.sqrt(3) / 6, 2 * 100 / (3 + 1e4)])


def test_illegal_and_zero_prior_actions_get_nothing(rng):
    prior = rng.dirichlet(np.ones(6), size=20)
    prior[:, 2] = 0.0
    q = rng.uniform(-1, 1, size=(20, 6))
    q[:, 4] = np.nan  # illegal entries may be anything
    mask = np.ones((20, 6), dtype=bool)
    mask[:, 4] = False
    mask[::2, 0] = False
    y = pi_bar(prior, q, n=rng.integers(0, 50, size=20), c=1.5, mask=mask)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(y[:, 2] == 0) and np.all(y[:, 4] == 0) and np.all(y[::2, 0] == 0)


def test_tiny_lambda_is_stable_and_inputs_untouched():
    prior = np.array([0.5, 0.3, 0.2])
    q = np.array([0.5, 0.5, 0.1])
    prior_copy, q_copy = prior.copy(), q.copy()
    y = regularized_policy(prior, q, 1e-300)
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, [0.625, 0.375, 0.0], atol=1e-12)
    np.testing.assert_array_equal(prior, prior_copy)
    np.testing.assert_array_equal(q, q_copy)


def test_single_action_and_unnormalized_prior():
    np.testing.assert_array_equal(pi_bar(np.array([3.0]), np.array([0.2]), 5), [1.0])
    a = regularized_policy(np.array([2.0, 6.0]), np.array([0.0, 1.0]), 0.3)
    b = regularized_policy(np.array([0.25, 0.75]), np.array([0.0, 1.0]), 0.3)
    np.testing.assert_allclose(a, b)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"prior": np.zeros((2, 0)), "q": np.zeros((2, 0)), "n": 1}, "nonempty"),
        ({"prior": np.ones(3), "q": np.array([0.0, np.nan, 1.0]), "n": 1}, "finite"),
        ({"prior": np.ones(3), "q": np.zeros(3), "n": -1}, "n"),
        ({"prior": np.array([0.5, -0.1, 0.6]), "q": np.zeros(3), "n": 1}, "nonnegative"),
        ({"prior": np.ones(3), "q": np.zeros(4), "n": 1}, "shape"),
        ({"prior": np.ones(3), "q": np.zeros(3), "n": 1, "c": -1.0}, "c must"),
        ({"prior": np.ones(2), "q": np.zeros(2), "n": 1, "mask": np.zeros(2, bool)}, "empty"),
        (
            {
                "prior": np.array([0.0, 1.0]),
                "q": np.zeros(2),
                "n": 1,
                "mask": np.array([True, False]),
            },
            "mass",
        ),
    ],
)
def test_bad_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        pi_bar(**kwargs)


def test_type_errors():
    with pytest.raises(TypeError, match="prior"):
        regularized_policy(np.array(["a", "b"]), np.zeros(2), 0.1)
    with pytest.raises(TypeError, match="mask"):
        regularized_policy(np.ones(2), np.zeros(2), 0.1, mask=np.ones(2))
