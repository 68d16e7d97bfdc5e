"""The mathematics of the updates: unbiasedness, geometry, convergence, rates."""

import numpy as np
import pytest
from compressed_oja import CompressedOja, TheorySchedule, rates, sin2_error
from compressed_oja import _kernels as k

D = 6
SIGMA = np.diag([3.0, 2.0, 1.0, 1.0, 0.5, 0.5])


def _unit(rng, d):
    w = rng.standard_normal(d)
    return w / np.linalg.norm(w)


def test_orthogonal_direction_is_unit_and_orthogonal():
    rng = np.random.default_rng(0)
    for _ in range(100):
        w = _unit(rng, D)
        u = rng.standard_normal(D)
        k.orthogonal_unit_(u, w)
        assert abs(u @ w) < 1e-12
        assert np.linalg.norm(u) == pytest.approx(1.0, abs=1e-12)


def test_adaptive_update_is_unbiased_for_the_oja_direction():
    # E[(d-1) y1 y2 u] = (I - ww^T) Sigma w, with u uniform on the sphere orthogonal to w
    rng = np.random.default_rng(1)
    w = _unit(rng, D)
    n = 100_000
    X = rng.multivariate_normal(np.zeros(D), SIGMA, size=n)
    G = rng.standard_normal((n, D))
    for g in G:
        k.orthogonal_unit_(g, w)
    U = G
    est = (D - 1) * (X @ w)[:, None] * np.sum(U * X, axis=1)[:, None] * U
    target = (np.eye(D) - np.outer(w, w)) @ SIGMA @ w
    se = est.std(axis=0) / np.sqrt(n)
    assert np.all(np.abs(est.mean(axis=0) - target) < 3.5 * se)


def test_nonadaptive_estimate_is_unbiased_for_the_covariance():
    rng = np.random.default_rng(2)
    n = 200_000
    X = rng.multivariate_normal(np.zeros(D), SIGMA, size=n)
    A = rng.standard_normal((n, D))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    B = rng.standard_normal((n, D))
    B /= np.linalg.norm(B, axis=1, keepdims=True)
    y1, y2 = np.sum(A * X, axis=1), np.sum(B * X, axis=1)
    C = (
        D**2
        * (y1 * y2)[:, None, None]
        * (A[:, :, None] * B[:, None, :] + B[:, :, None] * A[:, None, :])
        / 2
    )
    se = C.std(axis=0) / np.sqrt(n)
    assert np.all(np.abs(C.mean(axis=0) - SIGMA) < 3.5 * se + 1e-12)


def test_kernel_steps_match_their_formulas():
    rng = np.random.default_rng(3)
    w, u, a, b, x = (rng.standard_normal(D) for _ in range(5))
    w /= np.linalg.norm(w)
    eta, y1, y2 = 0.01, 0.7, -0.4

    def unit(v):
        return v / np.linalg.norm(v)

    got = w.copy()
    k.adaptive_step_(got, u, y1, y2, eta)
    np.testing.assert_allclose(got, unit(w + eta * (D - 1) * y1 * y2 * u), atol=1e-14)
    got = w.copy()
    k.nonadaptive_step_(got, a, b, y1, y2, eta)
    C = D**2 * y1 * y2 * (np.outer(a, b) + np.outer(b, a)) / 2
    np.testing.assert_allclose(got, unit(w + eta * C @ w), atol=1e-14)
    got = w.copy()
    k.full_step_(got, x, eta)
    np.testing.assert_allclose(got, unit(w + eta * (w @ x) * x), atol=1e-14)
    got = w.copy()
    k.coordinate_step_(got, 1, 4, x[1], x[4], eta)
    C = np.zeros((D, D))
    C[1, 1], C[4, 4] = D / 2 * x[1] ** 2, D / 2 * x[4] ** 2
    C[1, 4] = C[4, 1] = D * (D - 1) / 2 * x[1] * x[4]
    np.testing.assert_allclose(got, unit(w + eta * C @ w), atol=1e-14)


def test_coordinate_estimate_is_unbiased_for_the_covariance():
    rng = np.random.default_rng(4)
    n = 200_000
    X = rng.multivariate_normal(np.zeros(D), SIGMA, size=n)
    pairs = np.argsort(rng.random((n, D)), axis=1)[:, :2]
    C = np.zeros((D, D))
    for (i, j), x in zip(pairs, X, strict=True):
        C[i, i] += D / 2 * x[i] ** 2
        C[j, j] += D / 2 * x[j] ** 2
        C[i, j] += D * (D - 1) / 2 * x[i] * x[j]
        C[j, i] += D * (D - 1) / 2 * x[i] * x[j]
    np.testing.assert_allclose(C / n, SIGMA, atol=0.15)


def test_noiseless_rank_one_converges_geometrically_with_a_constant_step():
    rng = np.random.default_rng(5)
    v = _unit(rng, D)
    est = CompressedOja(D, 0.002, random_state=0)
    errs = []
    for t in range(1000):
        x = rng.standard_normal() * 2.0 * v
        est.step(lambda M: M @ x)  # noqa: B023 - the sample of this round
        assert np.linalg.norm(est.components_) == pytest.approx(1.0, abs=1e-12)
        if t % 100 == 99:
            errs.append(sin2_error(est.components_[0], v))
    assert errs[-1] < 1e-5
    # log error falls about linearly in t (geometric decay), by ~1 decade per 100 steps
    slope = np.polyfit(np.arange(len(errs)), np.log10(errs), 1)[0]
    assert slope < -0.5


@pytest.mark.parametrize(
    ("method", "p", "theory"), [("full", 1, 4 / 3 * 7 * 2), ("adaptive", 2, 4 / 3 * 49 * 2)]
)
def test_simulated_error_constant_matches_the_asymptotic_variance(method, p, theory):
    # With eta = alpha/(Delta t), alpha = 2, t sin^2 -> alpha^2/(2 alpha - 1) sum_i s_i^2 / Delta^2,
    # s_i^2 = lam1 lam2 (full) or (d-1) lam1 lam2 (adaptive) per trailing direction.
    d, lam1, lam2 = 8, 2.0, 1.0
    scale = np.ones(d) * np.sqrt(lam2)
    scale[0] = np.sqrt(lam1)
    truth = np.eye(d)[0]
    t0 = d**p * lam1 / (lam1 - lam2)
    T = int(100 * t0) if p > 1 else 20000
    cps = np.unique(np.geomspace(T / 10, T, 9).astype(np.int64))
    rng = np.random.default_rng(6)
    vals = []
    for s in range(30):
        w0 = _unit(rng, d)
        errs = k.simulate(
            k.METHOD_CODES[method],
            np.empty((0, d)),
            scale,
            w0,
            truth,
            T,
            t0,
            2.0,
            cps,
            np.random.default_rng(s),
        )
        vals.append(np.mean(errs * cps))
    assert np.mean(vals) == pytest.approx(theory, rel=0.3)


def test_rates_are_the_abstracts_leading_terms():
    r = rates(2.0, 1.0, 10, 1000.0)
    assert r["full"] == pytest.approx(2 * 10 / 1000)
    assert r["adaptive"] == pytest.approx(2 * 100 / 1000)
    assert r["nonadaptive"] == pytest.approx(1000 / 1000)
    with pytest.raises(ValueError, match="lam1"):
        rates(1.0, 1.0, 10, 10)


def test_sin2_error():
    assert sin2_error([1.0, 0.0], [0.0, 3.0]) == pytest.approx(1.0)
    assert sin2_error([1.0, 1.0], [-2.0, -2.0]) == pytest.approx(0.0, abs=1e-15)
    np.testing.assert_allclose(sin2_error(np.eye(2), [1.0, 0.0]), [0.0, 1.0], atol=1e-15)
    with pytest.raises(ValueError, match="nonzero"):
        sin2_error([0.0, 0.0], [1.0, 0.0])


def test_theory_schedule():
    s = TheorySchedule(eigengap=0.5, t0=10.0)
    assert s(10) == pytest.approx(2.0 / (0.5 * 20))
    with pytest.raises(ValueError, match="eigengap"):
        TheorySchedule(eigengap=0.0, t0=1.0)
    with pytest.raises(ValueError, match="t0"):
        TheorySchedule(eigengap=1.0, t0=-1.0)
