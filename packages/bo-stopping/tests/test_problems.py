import numpy as np
import pytest
import torch
from bo_stopping.problems import (
    KnownPriorGP,
    coordinate_cost_shape,
    discretize,
    gp_prior_problem,
    synthetic_problem,
)

D = torch.float64


def test_gp_prior_problem_is_a_draw_from_its_prior():
    prob = gp_prior_problem(2, seed=0, n_candidates=256)
    assert prob.candidates.shape == (256, 2) and prob.values.shape == (256,)
    assert float(prob.values.max()) == pytest.approx(0.0, abs=1e-12)
    # sample variance of many draws at one point ~ the prior variance
    draws = np.array([gp_prior_problem(2, s, 64).values for s in range(200)])
    centred = draws - draws.mean(1, keepdims=True)
    assert float(centred.var()) == pytest.approx(0.1 * (1 - 1 / 64), rel=0.35)
    # the prior model interpolates and reports its own variance far from data
    model = prob.fit_model(prob.candidates[:5], torch.as_tensor(prob.values[:5]), prob.bounds)
    post = model.posterior(prob.candidates[:5].unsqueeze(1))
    torch.testing.assert_close(post.mean.reshape(-1), torch.as_tensor(prob.values[:5]),
                               atol=1e-4, rtol=0)  # fmt: skip
    with torch.no_grad():
        far = model.posterior(torch.full((1, 1, 2), 0.5, dtype=D) + 10.0)
    assert float(far.variance) == pytest.approx(0.1, rel=1e-6)
    # far from data the posterior reverts to the prior mean, shifted with the values
    assert float(far.mean) == pytest.approx(prob.fit_model.mean, abs=1e-9)
    assert prob.fit_model.mean < 0.0  # minus the draw's maximum
    assert prob.lookup()(prob.candidates[7]) == pytest.approx(float(prob.values[7]))


def test_discretized_test_function_is_rescaled_on_its_set():
    prob = discretize(synthetic_problem("levy", 3, seed=1), 128, seed=1)
    assert float(prob.values.max()) == pytest.approx(0.0, abs=1e-12)
    assert float(np.median(prob.values)) == pytest.approx(-1.0, abs=1e-9)
    assert bool(((prob.candidates >= prob.bounds[0]) & (prob.candidates <= prob.bounds[1])).all())


def test_costs_of_the_problems():
    u = np.array([[0.0, 0.5], [1.0, 0.5], [0.5, 0.2]])
    np.testing.assert_allclose(coordinate_cost_shape(u, 0), [0.1, 10.0, 1.0])
    prob = synthetic_problem("ackley", 2, seed=0, c0=0.02, cost="uniform")
    X = torch.rand(4, 2, dtype=D) * 10 - 5
    torch.testing.assert_close(prob.cost(X), torch.full((4,), 0.02, dtype=D))
    het = synthetic_problem("ackley", 2, seed=0, c0=0.02)
    c = het.cost(het.bounds)  # the two corners: 10x below and above c0
    assert float(c.max() / c.min()) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="cost"):
        synthetic_problem("ackley", 2, seed=0, cost="cheap")
    with pytest.raises(ValueError, match="lengthscale"):
        KnownPriorGP(0.0, 1.0)
