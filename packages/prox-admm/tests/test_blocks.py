"""Penalty blocks: exact proximal maps against brute force, values, errors."""

import numpy as np
import pytest
from prox_admm import box, l1, least_squares, mcp, quadratic, scad


def mcp_pen(x, lam, gamma):
    a = np.abs(x)
    return np.where(a <= gamma * lam, lam * a - a * a / (2 * gamma), gamma * lam * lam / 2)


def scad_pen(x, lam, a):
    t = np.abs(x)
    mid = (2 * a * lam * t - t * t - lam * lam) / (2 * (a - 1))
    return np.where(t <= lam, lam * t, np.where(t <= a * lam, mid, lam * lam * (a + 1) / 2))


@pytest.mark.parametrize("t", [0.2, 1.0, 2.9, 3.0, 5.0])
@pytest.mark.parametrize("kind", ["mcp", "mcp+", "mcp-box", "scad", "scad+", "l1-box"])
def test_prox_is_the_exact_minimizer(kind, t):
    """The prox beats every point of a fine grid on the box (independent formulas)."""
    lam, gamma, a = 0.7, 3.0, 3.7
    lo, hi = -np.inf, np.inf
    if kind == "mcp":
        b, pen = mcp(lam, gamma), lambda x: mcp_pen(x, lam, gamma)
    elif kind == "mcp+":
        b, pen, lo = mcp(lam, gamma, nonneg=True), lambda x: mcp_pen(x, lam, gamma), 0.0
    elif kind == "mcp-box":
        b, pen, lo, hi = (
            mcp(lam, gamma, lower=-0.5, upper=1.2),
            lambda x: mcp_pen(x, lam, gamma),
            -0.5,
            1.2,
        )
    elif kind == "scad":
        b, pen = scad(lam, a), lambda x: scad_pen(x, lam, a)
    elif kind == "scad+":
        b, pen, lo = scad(lam, a, nonneg=True), lambda x: scad_pen(x, lam, a), 0.0
    else:
        b, pen, lo, hi = l1(lam, lower=-1.0, upper=0.8), lambda x: lam * np.abs(x), -1.0, 0.8
    vs = np.linspace(-6, 6, 49)
    got = b.prox(vs, t)
    grid = np.linspace(max(lo, -8.0), min(hi, 8.0), 40001)
    for v, x in zip(vs, got, strict=True):
        best = float(np.min(pen(grid) + (grid - v) ** 2 / (2 * t)))
        assert lo - 1e-12 <= x <= hi + 1e-12
        assert float(pen(np.array([x]))[0] + (x - v) ** 2 / (2 * t)) <= best + 1e-9


def test_mcp_and_scad_values():
    b = mcp(1.0, 2.0)
    np.testing.assert_allclose(b.value(np.array([0.5])), 0.5 - 0.25 / 4)
    np.testing.assert_allclose(b.value(np.array([3.0])), 1.0)  # gamma lam^2 / 2
    s = scad(1.0, 3.0)
    np.testing.assert_allclose(s.value(np.array([0.5])), 0.5)
    np.testing.assert_allclose(s.value(np.array([2.0])), (12 - 4 - 1) / 4)
    np.testing.assert_allclose(s.value(np.array([5.0])), 2.0)
    assert mcp(1.0, 2.0, nonneg=True).value(np.array([-0.1])) == np.inf
    assert b.curvature == pytest.approx(-0.5) and s.curvature == pytest.approx(-0.5)


def test_quadratic_and_least_squares(rng):
    X = rng.standard_normal((20, 4))
    y = rng.standard_normal(20)
    b = least_squares(X, y, scale=0.1, ridge=0.3)
    x = rng.standard_normal(4)
    np.testing.assert_allclose(b.value(x), 0.05 * np.sum((X @ x - y) ** 2) + 0.15 * x @ x)
    np.testing.assert_allclose(b.grad(x), 0.1 * X.T @ (X @ x - y) + 0.3 * x)
    ev = np.linalg.eigvalsh(0.1 * X.T @ X + 0.3 * np.eye(4))
    assert b.lipschitz == pytest.approx(ev[-1]) and b.curvature == pytest.approx(ev[0])


def test_block_errors():
    with pytest.raises(ValueError, match="lam"):
        mcp(0.0, 3.0)
    with pytest.raises(ValueError, match="gamma"):
        mcp(1.0, -1.0)
    with pytest.raises(ValueError, match="a must be"):
        scad(1.0, 2.0)
    with pytest.raises(ValueError, match="contain 0"):
        mcp(1.0, 3.0, lower=0.5)
    with pytest.raises(ValueError, match="symmetric"):
        quadratic(np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="q must have shape"):
        quadratic(np.eye(2), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="NaN"):
        quadratic(np.eye(2), [np.nan, 0.0])
    with pytest.raises(ValueError, match="lower must not exceed upper"):
        box(1.0, 0.0)
    from prox_admm import Block

    with pytest.raises(ValueError, match="at least one"):
        Block(f=lambda x: 0.0)
    with pytest.raises(TypeError, match="callable"):
        Block(prox=3)
