import math

import numpy as np
import pytest
import torch
from geometry_misalignment import (
    MetricOperator,
    conjugate_gradient,
    lanczos_extremes,
    metric_matrix,
    misalignment,
)

torch.manual_seed(0)


def _ill_conditioned(n=300, d=5, kappa=1e3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    scale = torch.tensor(kappa ** (-0.5 * np.linspace(0, 1, d)), dtype=torch.float64)
    return x * scale


@pytest.mark.parametrize("kappa", [1.0, 1e2, 1e5])
def test_linear_map_kappa_is_cond_of_second_moment(kappa):
    x = _ill_conditioned(kappa=kappa)
    lin = torch.nn.Linear(5, 3, bias=False).double()
    expected = float(torch.linalg.cond(x.T @ x / len(x)))
    got = misalignment(lin, x, n_iter=20)
    assert got == pytest.approx(expected, rel=1e-6)


def test_affine_map_kappa_includes_the_bias_column():
    x = _ill_conditioned(kappa=50.0) + 0.3
    lin = torch.nn.Linear(5, 2).double()
    aug = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1)
    expected = float(torch.linalg.cond(aug.T @ aug / len(x)))
    assert misalignment(lin, x) == pytest.approx(expected, rel=1e-6)


def test_metric_vector_product_equals_jtjv_on_a_small_mlp():
    mlp = torch.nn.Sequential(
        torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)
    ).double()
    x = torch.randn(9, 4, dtype=torch.float64)
    params = list(mlp.parameters())
    names = [n for n, _ in mlp.named_parameters()]

    def f(*ps):
        return torch.func.functional_call(mlp, dict(zip(names, ps, strict=True)), (x,))

    jac = torch.autograd.functional.jacobian(f, tuple(params))
    J = torch.cat([j.reshape(9 * 3, -1) for j in jac], dim=1)
    G_ref = J.T @ J / 9
    G = metric_matrix(mlp(x), params)
    torch.testing.assert_close(G, G_ref, rtol=1e-10, atol=1e-12)
    op = MetricOperator(mlp(x), params)
    v = torch.randn(op.dim, dtype=torch.float64)
    torch.testing.assert_close(op.matvec(v), G_ref @ v, rtol=1e-10, atol=1e-12)
    # the dense Jacobian and G of the exact solve (one vectorized reverse pass)
    torch.testing.assert_close(op.jacobian(), J, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(op.dense(), G_ref, rtol=1e-10, atol=1e-12)


def test_lanczos_bounds_the_spectrum_from_inside_and_is_exact_at_full_dimension():
    g = torch.Generator().manual_seed(1)
    B = torch.randn(30, 30, generator=g, dtype=torch.float64)
    A = B @ B.T + 1e-3 * torch.eye(30, dtype=torch.float64)
    ev = torch.linalg.eigvalsh(A)
    lmax, lmin = lanczos_extremes(lambda v: A @ v, 30, n_iter=8, generator=g)
    assert lmax <= float(ev.max()) * (1 + 1e-12)
    assert lmin >= float(ev.min()) * (1 - 1e-12)
    lmax, lmin = lanczos_extremes(lambda v: A @ v, 30, n_iter=30, generator=g)
    assert lmax == pytest.approx(float(ev.max()), rel=1e-8)
    assert lmin == pytest.approx(float(ev.min()), rel=1e-6)


def test_lanczos_skips_the_null_space():
    A = torch.diag(torch.tensor([4.0, 2.0, 0.0, 0.0], dtype=torch.float64))
    lmax, lmin = lanczos_extremes(lambda v: A @ v, 4, n_iter=4)
    assert (lmax, lmin) == (pytest.approx(4.0), pytest.approx(2.0))


def test_lanczos_can_overestimate_kappa_with_a_null_space_until_converged():
    # the README's caveat: Ritz values may fall between 0 and the smallest nonzero
    # eigenvalue, so the "never exceeds" bound holds for nonsingular operators only
    A = torch.diag(torch.tensor([4.0, 3.0, 2.0, 0.0, 0.0, 0.0], dtype=torch.float64))
    ests = []
    for s in range(50):
        lmax, lmin = lanczos_extremes(
            lambda v: A @ v, 6, n_iter=2, generator=torch.Generator().manual_seed(s)
        )
        ests.append(lmax / lmin)
    assert min(ests) > 2.0 * (1 + 1e-9) and max(ests) > 100.0
    lmax, lmin = lanczos_extremes(lambda v: A @ v, 6, n_iter=4)  # 3 nonzero + the zero
    assert lmax / lmin == pytest.approx(2.0, rel=1e-9)


def test_conjugate_gradient_solves_spd_system():
    g = torch.Generator().manual_seed(2)
    B = torch.randn(12, 12, generator=g, dtype=torch.float64)
    A = B @ B.T + torch.eye(12, dtype=torch.float64)
    b = torch.randn(12, generator=g, dtype=torch.float64)
    s, iters, res = conjugate_gradient(lambda v: A @ v, b, max_iter=50)
    torch.testing.assert_close(s, torch.linalg.solve(A, b), rtol=1e-8, atol=1e-10)
    assert iters <= 13 and res < 1e-9


def test_misalignment_bad_input():
    lin = torch.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="x"):
        misalignment(lin, torch.empty(0, 3))
    with pytest.raises(ValueError, match="NaN"):
        misalignment(lin, torch.tensor([[1.0, math.nan, 0.0]]))
    with pytest.raises(TypeError, match="x"):
        misalignment(lin, [[1.0, 2.0, 3.0]])
    with pytest.raises(RuntimeError):
        misalignment(lin, torch.ones(4, 5))  # dimension mismatch, from torch
    with pytest.raises(ValueError, match="n_iter"):
        misalignment(lin, torch.ones(4, 3), n_iter=0)
    with pytest.raises(ValueError, match="n_iter"):
        misalignment(lin, torch.ones(4, 3), n_iter=1)  # was kappa = 1.0 for any G, silently
    with pytest.raises(TypeError, match="params"):
        misalignment(lambda x: x, torch.ones(4, 3))
    with pytest.raises(TypeError, match="params"):
        misalignment(lin, torch.ones(4, 3), params=lin.weight)  # a tensor, not a list


def test_bad_seed_model_and_solver_arguments_name_the_argument():
    lin = torch.nn.Linear(3, 2)
    x = torch.ones(4, 3)
    with pytest.raises(TypeError, match="seed"):
        misalignment(lin, x, seed="a")  # was int()'s message, naming no argument
    with pytest.raises(TypeError, match="seed"):
        misalignment(lin, x, seed=1.7)  # was silently truncated to 1
    with pytest.raises(TypeError, match="model"):
        misalignment("abc", x, params=list(lin.parameters()))
    A = torch.eye(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="b must be a 1-D"):
        conjugate_gradient(lambda v: A @ v, torch.ones(3, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match="b must be"):
        conjugate_gradient(lambda v: A @ v, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="max_iter"):
        conjugate_gradient(lambda v: A @ v, torch.ones(3, dtype=torch.float64), max_iter=-1)
    with pytest.raises(ValueError, match="rtol"):
        conjugate_gradient(lambda v: A @ v, torch.ones(3, dtype=torch.float64), rtol=-1.0)
    with pytest.raises(ValueError, match="matvec"):
        lanczos_extremes(lambda v: v[:2], 3)  # was a size error from inside torch
