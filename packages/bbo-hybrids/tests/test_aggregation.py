import numpy as np
import pytest
from bbo_hybrids import centred_ranks, es_gradient, gibbs_weights, soft_min


def test_gibbs_weights_concentrate_on_the_argmin_as_beta_grows():
    f = np.array([3.0, 1.0, 2.0, 1.5, 4.0])
    for beta, floor in ((10.0, 0.99), (100.0, 1 - 1e-12)):
        w = gibbs_weights(f, beta)
        assert w.argmax() == 1
        assert w[1] > floor
    np.testing.assert_allclose(gibbs_weights(f, np.inf), np.eye(5)[1])
    np.testing.assert_allclose(gibbs_weights(f, 0.0), np.full(5, 0.2))


def test_gibbs_weights_split_evenly_between_tied_minimizers_at_infinite_beta():
    w = gibbs_weights([1.0, 0.0, 0.0], np.inf)
    np.testing.assert_allclose(w, [0.0, 0.5, 0.5])


def test_gibbs_weights_are_invariant_to_adding_a_constant():
    rng = np.random.default_rng(0)
    f = rng.standard_normal(20)
    for standardize in (False, True):
        a = gibbs_weights(f, 3.0, standardize=standardize)
        b = gibbs_weights(f + 1e6, 3.0, standardize=standardize)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
        assert np.isclose(a.sum(), 1.0)


def test_standardized_gibbs_weights_are_invariant_to_positive_scaling():
    f = np.random.default_rng(1).standard_normal(12)
    np.testing.assert_allclose(
        gibbs_weights(f, 2.0, standardize=True), gibbs_weights(7.5 * f, 2.0, standardize=True)
    )


def test_centred_ranks_are_invariant_to_monotone_transforms():
    f = np.random.default_rng(2).standard_normal(15)
    u = centred_ranks(f)
    np.testing.assert_allclose(u, centred_ranks(np.exp(3 * f) + 5.0))
    assert np.isclose(u.sum(), 0.0, atol=1e-12)
    assert np.isclose(u[f.argmin()], 0.5) and np.isclose(u[f.argmax()], -0.5)


def test_centred_ranks_average_ties():
    np.testing.assert_allclose(centred_ranks([1.0, 1.0, 2.0]), [0.25, 0.25, -0.5])


def test_soft_min_limits_and_monotonicity():
    f = np.array([0.0, 1.0, 4.0])
    assert np.isclose(soft_min(f, 0.0), f.mean())
    assert np.isclose(soft_min(f, 1e-8), f.mean(), atol=1e-6)
    assert np.isclose(soft_min(f, 1e4), 0.0, atol=1e-3)
    vals = [soft_min(f, b) for b in (0.1, 1.0, 10.0)]
    assert vals[0] > vals[1] > vals[2]


def test_es_gradient_is_unbiased_for_a_quadratic():
    rng = np.random.default_rng(3)
    d = 4
    A = np.diag([1.0, 2.0, 3.0, 4.0])
    m = np.array([1.0, -1.0, 0.5, 2.0])
    sigma = 0.3
    half = rng.standard_normal((200_000, d))
    eps = np.concatenate([half, -half])
    f = 0.5 * np.einsum("ij,jk,ik->i", m + sigma * eps, A, m + sigma * eps)
    g = es_gradient(eps, f, sigma)
    np.testing.assert_allclose(g, A @ m, rtol=0.02, atol=0.02)


@pytest.mark.parametrize("bad", [[], [[1.0, 2.0]], [1.0, np.nan], [np.inf, 0.0]])
def test_bad_fitness_raises(bad):
    with pytest.raises(ValueError, match="fitness"):
        gibbs_weights(bad, 1.0)


def test_negative_beta_raises():
    with pytest.raises(ValueError, match="beta"):
        gibbs_weights([1.0, 2.0], -0.1)
