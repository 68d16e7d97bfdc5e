import numpy as np
import pytest
from bbo_hybrids import (
    CBO,
    CBOOVI,
    ES,
    ESOVI,
    OVI,
    PopulationOptimizer,
    default_popsize,
    es_gradient,
    gibbs_weights,
)

D = 6


def sphere(X):
    return np.sum(np.asarray(X) ** 2, axis=-1)


ALL = [
    lambda s: ES(np.full(D, 2.0), 1.0, seed=s),
    lambda s: OVI(np.full(D, 2.0), 1.0, seed=s),
    lambda s: ESOVI(np.full(D, 2.0), 1.0, seed=s),
    lambda s: CBO(np.full(D, 2.0), 1.0, seed=s),
    lambda s: CBOOVI(np.full(D, 2.0), 1.0, seed=s),
    lambda s: CBOOVI(np.full(D, 2.0), 1.0, scope="local", kappa=2.0, seed=s),
]
IDS = ["ES", "OVI", "ESOVI", "CBO", "CBOOVI-global", "CBOOVI-local"]


@pytest.mark.parametrize("make", ALL, ids=IDS)
def test_every_method_is_a_population_optimizer_and_solves_the_sphere(make):
    opt = make(0)
    assert isinstance(opt, PopulationOptimizer)
    X = opt.ask()
    assert X.shape == (opt.popsize, D) and X.dtype == np.float64
    opt.tell(sphere(X))
    res = opt.optimize(sphere, 3000, vectorized=True)
    assert res.f < 1e-3 * sphere(np.full(D, 2.0))
    assert res.nfev <= 3000 + opt.popsize and res.nit == opt.nit
    assert np.isclose(sphere(res.x), res.f)
    assert opt.mean.shape == (D,)


@pytest.mark.parametrize("make", ALL, ids=IDS)
def test_same_seed_same_trajectory_and_state_dict_round_trip(make):
    a, b = make(7), make(7)
    a.optimize(sphere, 200, vectorized=True)
    b.optimize(lambda x: float(np.sum(x**2)), 200)  # per-sample evaluation, same numbers
    np.testing.assert_allclose(a.ask(), b.ask())
    state = a.state_dict()
    c = make(123)
    c.load_state_dict(state)
    fa = sphere(a._pending)
    a.tell(fa)
    c.tell(fa)
    np.testing.assert_allclose(a.ask(), c.ask())
    assert c.nfev == a.nfev and np.isclose(c.result.f, a.result.f)


def test_load_state_dict_checks_the_class_and_dimension():
    state = ES(np.zeros(3), seed=0).state_dict()
    with pytest.raises(ValueError, match="OVI"):
        OVI(np.zeros(3), seed=0).load_state_dict(state)
    with pytest.raises(ValueError, match="dimension"):
        ES(np.zeros(4), seed=0).load_state_dict(state)


def test_ovi_with_unit_step_moves_to_the_gibbs_mean():
    opt = OVI(np.zeros(D), 0.5, beta=2.0, standardize=False, eta_sigma=0.0, seed=1)
    X = opt.ask()
    f = sphere(X - 0.3)
    opt.tell(f)
    np.testing.assert_allclose(opt.mean, gibbs_weights(f, 2.0) @ X, atol=1e-12)


def test_cbo_consensus_point_is_the_gibbs_mean():
    opt = CBO(np.zeros(D), 1.0, 10, beta=5.0, standardize=False, seed=2)
    X = opt.ask()
    f = sphere(X)
    w = np.exp(-5.0 * f) / np.exp(-5.0 * f).sum()
    np.testing.assert_allclose(opt.consensus(X, f), w @ X, rtol=1e-10)
    opt.tell(f)
    np.testing.assert_allclose(opt.mean, w @ X, rtol=1e-10)


def _one_step(opt, f):
    X = opt.ask()
    opt.tell(f(X))
    return opt.mean


@pytest.mark.parametrize("beta", [1e-3, 1e-4])
def test_esovi_at_small_beta_is_the_es_step_to_first_order(beta):
    f = lambda X: sphere(X - np.arange(D))  # noqa: E731
    x0 = np.full(D, 0.5)
    es = ES(x0, 0.7, 12, shaping="standardize", seed=3)
    hy = ESOVI(x0, 0.7, 12, beta=beta, seed=3)
    d_es = _one_step(es, f) - x0
    d_hy = _one_step(hy, f) - x0
    # the difference is O(beta) relative to the step
    assert np.linalg.norm(d_hy - d_es) <= 5 * beta * np.linalg.norm(d_es)
    assert np.isclose(es.sigma, hy.sigma, rtol=10 * beta)


def test_ovi_step_at_small_beta_is_es_gradient_step_with_rate_beta_sigma_squared():
    f = lambda X: sphere(X - 1.0)  # noqa: E731
    x0, sigma, beta = np.zeros(D), 0.4, 1e-5
    opt = OVI(x0, sigma, 16, beta=beta, standardize=False, eta_sigma=0.0, seed=4)
    X = opt.ask()
    fx = f(X)
    opt.tell(fx)
    step = opt.mean - x0
    g = es_gradient((X - x0) / sigma, fx, sigma)
    np.testing.assert_allclose(step, -beta * sigma**2 * g, rtol=1e-3, atol=1e-12)


def test_rank_es_is_invariant_to_monotone_transforms_of_the_fitness():
    a = ES(np.full(D, 1.5), 0.8, seed=5)
    b = ES(np.full(D, 1.5), 0.8, seed=5)
    for _ in range(20):
        Xa, Xb = a.ask(), b.ask()
        np.testing.assert_allclose(Xa, Xb)
        a.tell(sphere(Xa))
        b.tell(np.log1p(sphere(Xb)) * 3.0 - 2.0)
    np.testing.assert_allclose(a.mean, b.mean)


def test_cboovi_local_scope_with_tiny_kernel_is_uncoupled():
    # with kappa -> 0 each Gaussian's consensus point is its own mean: no drift
    x0 = np.zeros(D)
    loc = CBOOVI(x0, 1.0, 3, 8, scope="local", kappa=1e-6, lam=0.5, seed=6)
    free = CBOOVI(x0, 1.0, 3, 8, scope="global", lam=0.0, seed=6)
    for _ in range(5):
        X = loc.ask()
        np.testing.assert_allclose(X, free.ask())
        loc.tell(sphere(X - 1.0))
        free.tell(sphere(X - 1.0))
    np.testing.assert_allclose(loc.M, free.M, atol=1e-10)


def test_cboovi_global_consensus_pulls_means_together():
    x0 = np.zeros(D)
    a = CBOOVI(x0, 2.0, 4, 8, lam=0.5, seed=8)
    b = CBOOVI(x0, 2.0, 4, 8, lam=0.0, seed=8)
    for _ in range(10):
        X = a.ask()
        b.ask()
        a.tell(sphere(X))
        b.tell(sphere(X))
    spread = lambda o: np.linalg.norm(o.M - o.M.mean(0), axis=1).mean()  # noqa: E731
    assert spread(a) < spread(b)


def test_torch_batched_evaluation_matches_numpy():
    torch = pytest.importorskip("torch")
    a = ESOVI(np.ones(D), 0.5, seed=9)
    b = ESOVI(np.ones(D), 0.5, seed=9)
    ra = a.optimize(sphere, 240, vectorized=True)
    rb = b.optimize(lambda T: (T**2).sum(dim=1), 240, device="cpu")
    assert torch.is_tensor(torch.ones(1))
    np.testing.assert_allclose(ra.f, rb.f, rtol=1e-5)


def test_default_popsize_is_even_and_grows_with_dimension():
    sizes = [default_popsize(d) for d in (1, 10, 100, 1000)]
    assert all(s % 2 == 0 for s in sizes) and sizes == sorted(sizes)
    assert default_popsize(10) == 10


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: ES(np.zeros(3), sigma=0.0), ValueError, "sigma"),
        (lambda: ES(np.zeros(3), sigma=-1.0), ValueError, "sigma"),
        (lambda: OVI(np.zeros(3), beta=-1.0), ValueError, "beta"),
        (lambda: ESOVI(np.zeros(3), beta=0.0), ValueError, "beta"),
        (lambda: CBO(np.zeros(3), n_particles=1), ValueError, "n_particles"),
        (lambda: CBOOVI(np.zeros(3), samples=5), ValueError, "samples"),
        (lambda: CBOOVI(np.zeros(3), scope="polar"), ValueError, "scope"),
        (lambda: ES(np.zeros((2, 2))), ValueError, "x0"),
        (lambda: ES([np.nan, 0.0]), ValueError, "x0"),
        (lambda: ES(np.zeros(3), popsize=2.5), TypeError, "popsize"),
        (lambda: ES(np.zeros(3), shaping="linear"), ValueError, "shaping"),
    ],
)
def test_bad_arguments_raise_naming_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_bad_budget_and_tell_raise_clearly():
    opt = ES(np.zeros(3), popsize=8, seed=0)
    with pytest.raises(ValueError, match="budget must be >= popsize=8"):
        opt.optimize(sphere, 4, vectorized=True)
    with pytest.raises(RuntimeError, match="ask"):
        opt.tell(np.zeros(8))
    opt.ask()
    with pytest.raises(RuntimeError, match="ask\\(\\) called twice"):
        opt.ask()
    with pytest.raises(ValueError, match="length popsize=8"):
        opt.tell(np.zeros(7))
    with pytest.raises(ValueError, match="finite; entry 2"):
        opt.tell([0, 0, np.nan, 0, 0, 0, 0, 0])
    opt.tell(np.arange(8.0))  # a good tell still works after the rejected ones
    assert opt.nfev == 8
    with pytest.raises(ValueError, match="fitness must have length"):
        opt.optimize(lambda X: np.zeros(3), 16, vectorized=True)
