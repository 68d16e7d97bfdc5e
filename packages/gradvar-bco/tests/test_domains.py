"""Projections onto the domains: optimality conditions and shrinking."""

import numpy as np
import pytest
from gradvar_bco import Ball, Box, Simplex


@pytest.mark.parametrize(
    "domain", [Ball(4, 1.5, center=np.ones(4)), Box(-1.0, 2.0, dim=4), Simplex(4)]
)
@pytest.mark.parametrize("shrink", [0.0, 0.3])
def test_projection_is_optimal(domain, shrink):
    rng = np.random.default_rng(0)
    x = 3 * rng.standard_normal((50, domain.dim))
    p = domain.project(x, shrink)
    # p lies in the shrunk set: its preimage c + (p - c) / (1 - shrink) lies in the set
    pre = domain.center + (p - domain.center) / (1 - shrink)
    assert np.all(domain.contains(pre, atol=1e-9))
    # variational inequality <x - p, q - p> <= 0 for q in the shrunk set
    q = domain.center + (1 - shrink) * (
        domain.project(3 * rng.standard_normal((50, domain.dim))) - domain.center
    )
    assert np.all(np.einsum("si,si->s", x - p, q - p) <= 1e-9)
    # points inside are fixed
    np.testing.assert_allclose(domain.project(q, shrink), q, atol=1e-12)


def test_simplex_directions_and_radius():
    s = Simplex(5)
    u = s.sample_directions(np.random.default_rng(1), 100)
    np.testing.assert_allclose(u.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0)
    # the inner ball touches the faces: c + r u stays in the simplex for unit u in the hull
    assert np.all(s.contains(s.center + s.inner_radius * u, atol=1e-12))
    assert s.direction_dim == 4


def test_ball_shrink_radius():
    b = Ball(3, 2.0)
    p = b.project(np.array([10.0, 0.0, 0.0]), shrink=0.25)
    np.testing.assert_allclose(p, [1.5, 0.0, 0.0])
