"""Mathematics of POGO and Landing: feasibility, fixed points, cost, agreement with references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from pogo_optim import (
    POGO,
    Landing,
    landing_update,
    orthogonality_error,
    pogo_update,
    project,
    random_stiefel,
    relative_gradient,
    vadam_direction,
)
from torch.utils._python_dispatch import TorchDispatchMode


def _quadratic_problem(shape, layout, seed):
    """f(X) = sum ||X - B||^2 / 2 + tr(X^T A X)-like coupling with a random A, any batch."""
    g = torch.Generator().manual_seed(seed)
    b = torch.randn(*shape, generator=g)
    k = shape[-1]
    a = torch.randn(k, k, generator=g)
    a = a @ a.T / k

    def loss(x):
        return 0.5 * (x - b).square().sum() + (x @ a * x).sum()

    return loss


@pytest.mark.parametrize("layout", ["rows", "columns"])
@pytest.mark.parametrize("shape", [(5, 12), (3, 4, 9), (2, 2, 3, 7)])
@pytest.mark.parametrize(
    "kwargs",
    [dict(base="vadam", lr=0.05), dict(base="sgd", lr=0.05, momentum=0.9), dict(base="adam")],
)
def test_orthogonality_is_kept_at_every_step(layout, shape, kwargs):
    if layout == "columns":
        shape = (*shape[:-2], shape[-1], shape[-2])
    x = torch.nn.Parameter(random_stiefel(*shape, layout=layout, generator=torch.Generator()))
    opt = POGO([x], layout=layout, **kwargs)
    loss_fn = _quadratic_problem(shape, layout, seed=1)
    start = x.detach().clone()
    for _ in range(60):
        opt.zero_grad()
        loss_fn(x).backward()
        opt.step()
        assert orthogonality_error(x.detach(), layout).max() < 1e-5
    assert (x.detach() - start).abs().max() > 1e-2  # it moved


def test_columns_layout_is_the_transposed_rows_run():
    g = torch.Generator().manual_seed(3)
    x0 = random_stiefel(4, 3, 10, generator=g, dtype=torch.float64)
    target = torch.randn(4, 3, 10, generator=g, dtype=torch.float64)
    xr = torch.nn.Parameter(x0.clone())
    xc = torch.nn.Parameter(x0.mT.clone())
    opt_r = POGO([xr], lr=0.1, base="sgd", momentum=0.5)
    opt_c = POGO([xc], lr=0.1, base="sgd", momentum=0.5, layout="columns")
    for _ in range(10):
        for x, opt, t in ((xr, opt_r, target), (xc, opt_c, target.mT)):
            opt.zero_grad()
            (x * t).sum().backward()
            opt.step()
    torch.testing.assert_close(xc.detach().mT, xr.detach(), atol=1e-12, rtol=0)


def test_relative_gradient_is_tangent_and_vanishes_on_the_normal_space():
    g = torch.Generator().manual_seed(0)
    x = random_stiefel(6, 3, 8, generator=g, dtype=torch.float64)
    d = torch.randn(6, 3, 8, generator=g, dtype=torch.float64)
    r = relative_gradient(x, d)
    xr = x @ r.mT
    torch.testing.assert_close(xr, -xr.mT, atol=1e-12, rtol=0)  # X R^T skew <=> tangent
    sym = torch.randn(6, 3, 3, generator=g, dtype=torch.float64)
    normal = (sym + sym.mT) @ x  # normal-space direction: Riemannian gradient 0
    assert relative_gradient(x, normal).abs().max() < 1e-12
    torch.testing.assert_close(pogo_update(x, normal, 0.3), x, atol=1e-12, rtol=0)


def _pca(seed=0, n=20, p=3):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((200, n)) * np.linspace(3, 0.5, n)
    cov = data.T @ data / 200
    evals, evecs = np.linalg.eigh(cov)
    top = evecs[:, ::-1][:, :p].T.copy()  # (p, n), rows orthonormal
    return torch.from_numpy(cov), torch.from_numpy(top), evals[::-1][:p].sum()


def test_fixed_points_are_riemannian_critical_points():
    cov, top, _ = _pca()
    # at the optimum (a critical point) a step does not move, for SGD and VectorAdam
    for kwargs in (dict(base="sgd", lr=0.1), dict(base="vadam", lr=0.1)):
        x = torch.nn.Parameter(top.clone())
        opt = POGO([x], **kwargs)
        (-0.5 * torch.trace(x @ cov @ x.T)).backward()
        opt.step()
        torch.testing.assert_close(x.detach(), top, atol=1e-10, rtol=0)
    # conversely, iterating POGO to a fixed point lands on a critical point: the top
    # eigen-subspace of numpy.linalg.eigh
    x = torch.nn.Parameter(random_stiefel(3, 20, generator=torch.Generator(), dtype=torch.float64))
    opt = POGO([x], base="sgd", lr=0.2)
    for _ in range(400):
        opt.zero_grad()
        (-0.5 * torch.trace(x @ cov @ x.T)).backward()
        opt.step()
    g = -(x.detach() @ cov)
    rgrad = g - 0.5 * (x @ g.T + g @ x.T).detach() @ x.detach()
    assert rgrad.norm() < 1e-7
    proj_err = (x.detach().T @ x.detach() - top.T @ top).norm()
    assert proj_err < 1e-6


class _CountMatmuls(TorchDispatchMode):
    """Counts matrix products and flags any inverse or decomposition."""

    PRODUCTS = ("aten.mm", "aten.bmm", "aten.addmm", "aten.baddbmm", "aten.addbmm")
    FORBIDDEN = ("svd", "qr", "inv", "solve", "eig", "cholesky", "lu", "matrix_exp", "pinv")

    @classmethod
    def is_forbidden(cls, name):
        op = name.split(".")[-1].removeprefix("_").removeprefix("linalg_")
        return any(op.startswith(f) for f in cls.FORBIDDEN)

    def __init__(self):
        super().__init__()
        self.products = 0
        self.forbidden = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        if name in self.PRODUCTS:
            self.products += 1
        if self.is_forbidden(name):
            self.forbidden.append(name)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("shape", [(6, 11), (50, 4, 9), (2, 3, 4, 9)])
@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda x: POGO([x], lr=0.1), 5),
        (lambda x: POGO([x], lr=0.1, base="sgd", momentum=0.9), 5),
        (lambda x: POGO([x], lr=0.1, normalization_order=1), 4),
        (lambda x: POGO([x], lr=0.1, normalization_order=3), 6),
        (lambda x: Landing([x], lr=0.1), 5),
        (lambda x: Landing([x], lr=0.1, safe_step=None), 4),
    ],
)
def test_matrix_products_per_step_match_the_docstrings(shape, make, expected):
    x = torch.nn.Parameter(random_stiefel(*shape, generator=torch.Generator()))
    opt = make(x)
    x.grad = torch.randn_like(x)
    opt.step()  # first step creates the state
    x.grad = torch.randn_like(x)
    with _CountMatmuls() as counter:
        opt.step()
    assert counter.products == expected
    assert counter.forbidden == []


@pytest.mark.parametrize(("order", "power"), [(1, 4), (2, 6)])
def test_pogo_update_error_has_the_documented_order_in_the_step(order, power):
    g = torch.Generator().manual_seed(5)
    x = random_stiefel(4, 16, generator=g, dtype=torch.float64)
    d = torch.randn(4, 16, generator=g, dtype=torch.float64)
    d = d / relative_gradient(x, d).norm()  # ||R||_F = 1, so the step length is lr
    errs = [
        float(orthogonality_error(pogo_update(x, d, lr, normalization_order=order)))
        for lr in (0.08, 0.04)
    ]
    # halving the step divides the error by about 2^power
    assert 0.75 * 2**power < errs[0] / errs[1] < 1.25 * 2**power
    assert errs[0] < 1e-3


@pytest.mark.parametrize(("order", "power"), [(1, 2), (2, 3)])
def test_pogo_pulls_an_off_manifold_point_back(order, power):
    g = torch.Generator().manual_seed(6)
    x = random_stiefel(5, 12, generator=g, dtype=torch.float64)
    x = x + 1e-2 * torch.randn(5, 12, generator=g, dtype=torch.float64)
    e0 = float(orthogonality_error(x))
    e1 = float(
        orthogonality_error(pogo_update(x, torch.zeros_like(x), 0.1, normalization_order=order))
    )
    assert e1 < e0**power


def test_large_learning_rates_do_not_diverge():
    x = torch.nn.Parameter(random_stiefel(8, 32, generator=torch.Generator()))
    opt = POGO([x], lr=1e3, base="sgd")
    for _ in range(20):
        opt.zero_grad()
        (100 * x.square().sum(0) @ torch.arange(32.0)).backward()
        opt.step()
    assert torch.isfinite(x).all()
    assert orthogonality_error(x.detach()) < 1e-5


def test_max_step_bounds_the_orthogonality_error_of_any_step():
    g = torch.Generator().manual_seed(11)
    x = random_stiefel(50, 8, 20, generator=g, dtype=torch.float64)
    d = 1e6 * torch.randn(50, 8, 20, generator=g, dtype=torch.float64)
    for lr in (1e-3, 1.0, 1e3):
        err = orthogonality_error(pogo_update(x, d, lr)).max()
        assert err < 5 / 8 * 0.1**6 * 1.01
    moved = (pogo_update(x, d, 1e3) - x).norm(dim=(-2, -1))
    assert moved.max() < 0.1 * 1.01  # the cap is a trust region of radius 0.1
    assert moved.min() > 0.09


def test_landing_safe_step_keeps_the_iterates_in_the_safe_region():
    g = torch.Generator().manual_seed(7)
    x = torch.nn.Parameter(random_stiefel(10, 6, 15, generator=g, dtype=torch.float64))
    target = torch.randn(10, 6, 15, generator=g, dtype=torch.float64)
    opt = Landing([x], lr=5.0, safe_step=0.3)
    worst = 0.0
    for _ in range(100):
        opt.zero_grad()
        (10 * (x - target).square().sum()).backward()
        opt.step()
        worst = max(worst, float(orthogonality_error(x.detach()).max()))
    assert worst <= 0.3 + 1e-9
    assert worst > 1e-3  # Landing is infeasible: it does leave the manifold


def test_landing_attracts_to_the_manifold_without_gradient():
    g = torch.Generator().manual_seed(8)
    x = random_stiefel(5, 12, generator=g, dtype=torch.float64)
    x = x + 0.05 * torch.randn(5, 12, generator=g, dtype=torch.float64)
    errs = [float(orthogonality_error(x))]
    for _ in range(30):
        x = landing_update(x, torch.zeros_like(x), 0.2, lambda_regul=1.0, safe_step=None)
        errs.append(float(orthogonality_error(x)))
    assert errs[-1] < 1e-2 * errs[0]
    assert all(b < a for a, b in itertools.pairwise(errs))


def test_vadam_is_rotation_equivariant():
    g = torch.Generator().manual_seed(9)
    q = random_stiefel(5, 5, generator=g, dtype=torch.float64)
    grads = [torch.randn(3, 5, 7, generator=g, dtype=torch.float64) for _ in range(4)]
    s1, s2 = {}, {}
    for t, gr in enumerate(grads, start=1):
        d1 = vadam_direction(gr, s1, step=t)
        d2 = vadam_direction(q @ gr, s2, step=t)
        torch.testing.assert_close(d2, q @ d1, atol=1e-12, rtol=0)
    assert s1["exp_avg_sq"].shape == (3,)


@pytest.mark.parametrize(
    ("base", "kwargs", "reference"),
    [
        ("sgd", dict(momentum=0.9, nesterov=True, weight_decay=0.01), torch.optim.SGD),
        ("sgd", dict(momentum=0.5, dampening=0.1), torch.optim.SGD),
        ("adam", dict(betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), torch.optim.Adam),
    ],
)
def test_non_orthogonal_groups_follow_the_torch_base_optimizer(base, kwargs, reference):
    g = torch.Generator().manual_seed(10)
    w0 = torch.randn(4, 6, generator=g, dtype=torch.float64)
    a = torch.nn.Parameter(w0.clone())
    b = torch.nn.Parameter(w0.clone())
    ours = POGO([a], lr=0.05, base=base, orthogonal=False, **kwargs)
    ref = reference([b], lr=0.05, **kwargs)
    for _ in range(20):
        for p, opt in ((a, ours), (b, ref)):
            opt.zero_grad()
            (p.sin().sum() + p.square().sum()).backward()
            opt.step()
    torch.testing.assert_close(a.detach(), b.detach(), atol=1e-12, rtol=1e-12)


def test_pogo_reaches_the_eigh_solution_on_digits_pca():
    from sklearn.datasets import load_digits

    data = load_digits().data
    data = (data - data.mean(0)) / 16.0
    cov = data.T @ data / len(data)
    evals = np.linalg.eigh(cov)[0][::-1]
    p = 5
    c = torch.from_numpy(cov)
    x = torch.nn.Parameter(random_stiefel(p, 64, generator=torch.Generator(), dtype=torch.float64))
    opt = POGO([x], lr=2.0, base="sgd", momentum=0.5)
    for _ in range(250):
        opt.zero_grad()
        (-0.5 * torch.trace(x @ c @ x.T)).backward()
        opt.step()
    explained = float(torch.trace(x.detach() @ c @ x.detach().T))
    gap = (evals[:p].sum() - explained) / evals[:p].sum()
    assert 0 <= gap < 1e-8


# ------------------------------------------------------------------------ complex (unitary)
def test_complex_relative_gradient_is_tangent():
    g = torch.Generator().manual_seed(0)
    x = random_stiefel(6, 4, 10, generator=g, dtype=torch.complex128)
    d = torch.randn(x.shape, dtype=x.dtype, generator=g)
    xr = x @ relative_gradient(x, d).mH
    torch.testing.assert_close(xr, -xr.mH, atol=1e-12, rtol=0)  # skew-Hermitian


@pytest.mark.parametrize("cls", [POGO, Landing])
def test_complex_parameters_stay_unitary_and_reach_the_polar_solution(cls):
    # min ||X A - B||^2 over unitary X (square, so ||X A|| is constant; U(n) is
    # connected): the solution is the polar factor of B A^H
    g = torch.Generator().manual_seed(2)
    dt = torch.complex128
    x0 = random_stiefel(6, 6, 6, generator=g, dtype=dt)
    a = torch.randn(6, 6, 12, generator=g, dtype=dt) / 12**0.5
    q = random_stiefel(6, 6, 6, generator=g, dtype=dt)
    b = q @ a + 0.1 * torch.randn(6, 6, 12, generator=g, dtype=dt) / 12**0.5
    u, _, vh = torch.linalg.svd(b @ a.mH)
    x_star = u @ vh
    x = torch.nn.Parameter(x0.clone())
    opt = cls([x], lr=0.2, base="sgd", momentum=0.5)
    worst = 0.0
    for _ in range(200):
        opt.zero_grad()
        (x @ a - b).abs().square().sum().backward()
        opt.step()
        worst = max(worst, float(orthogonality_error(x.detach()).max()))
    assert worst < (1e-6 if cls is POGO else 0.5)  # POGO: 5/8 max_step^6 per step
    assert (x.detach() - x_star).abs().max() < 1e-4


@pytest.mark.parametrize("base", ["vadam", "adam", "sgd"])
def test_complex_matches_the_real_embedding_for_a_real_problem(base):
    # a real problem run in complex arithmetic stays real and equals the real run
    g = torch.Generator().manual_seed(3)
    x0 = random_stiefel(3, 4, 9, generator=g, dtype=torch.float64)
    target = torch.randn(3, 4, 9, generator=g, dtype=torch.float64)
    runs = []
    for dt in (torch.float64, torch.complex128):
        x = torch.nn.Parameter(x0.to(dt, copy=True))
        opt = POGO([x], lr=0.05, base=base, momentum=0.9 if base == "sgd" else 0.0)
        for _ in range(20):
            opt.zero_grad()
            (x - target.to(dt)).abs().square().sum().backward()
            opt.step()
        runs.append(x.detach())
    assert runs[1].imag.abs().max() < 1e-12
    torch.testing.assert_close(runs[1].real, runs[0], atol=1e-12, rtol=0)


# -------------------------------------------------------------- functional-form guards
@pytest.mark.parametrize("update", [pogo_update, landing_update])
def test_functional_forms_refuse_points_far_from_the_manifold(update):
    g = torch.Generator().manual_seed(12)
    x = random_stiefel(4, 3, 8, generator=g, dtype=torch.float64)
    far = x + torch.randn(4, 3, 8, generator=g, dtype=torch.float64)  # distance ~ 3-5
    d = torch.randn(4, 3, 8, generator=g, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"distance \|\|X X\^H - I\|\|_F = .* >= 1.*project"):
        update(far, d, 0.1)
    with pytest.raises(ValueError, match="direction must match x"):
        update(x, d[..., :5], 0.1)
    with pytest.raises(ValueError, match="p <= n"):
        update(x.mT.contiguous(), d.mT.contiguous(), 0.1)
    with pytest.raises(ValueError, match=r"lr must be >= 0\.0"):
        update(x, d, -0.1)
    with pytest.raises(ValueError, match="NaN or inf"):
        update(x, torch.full_like(d, float("nan")), 0.1)
    # inside distance 1 the functional form pulls the point back without blowing up
    near = project(x) + 0.05 * torch.randn(4, 3, 8, generator=g, dtype=torch.float64)
    for _ in range(20):
        near = update(near, torch.zeros_like(near), 0.2)
    assert orthogonality_error(near).max() < 1e-3


def test_pogo_update_validates_its_hyperparameters():
    x = random_stiefel(3, 8, generator=torch.Generator(), dtype=torch.float64)
    with pytest.raises(ValueError, match=r"max_step must be > 0\.0 and <= 1\.0"):
        pogo_update(x, x, 0.1, max_step=2.0)
    with pytest.raises(ValueError, match="normalization_order must be an integer >= 1"):
        pogo_update(x, x, 0.1, normalization_order=7)
    with pytest.raises(TypeError, match="must be real floating point or complex"):
        pogo_update(x.long(), x.long(), 0.1)


def test_square_matrices_keep_the_sign_of_their_determinant():
    g = torch.Generator().manual_seed(13)
    x0 = random_stiefel(6, 5, 5, generator=g, dtype=torch.float64)
    x0[:3, 0] *= -1  # three reflections (det -1), three rotations (det +1)
    signs = torch.linalg.det(x0).sign()
    reflect = torch.eye(5, dtype=torch.float64)
    reflect[0, 0] = -1
    x = torch.nn.Parameter(x0.clone())
    opt = POGO([x], lr=0.2, base="sgd", momentum=0.9)
    for _ in range(200):
        opt.zero_grad()
        (x - reflect).square().sum().backward()  # every matrix is pulled towards det -1
        opt.step()
    assert torch.equal(torch.linalg.det(x.detach()).sign(), signs)


# ------------------------------------------------------------ the authors' release
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_matches_the_authors_pogo_torch(dtype):
    pogo = pytest.importorskip("pogo")
    base = pytest.importorskip("pogo.base")
    g = torch.Generator().manual_seed(14)
    x0 = random_stiefel(6, 4, 10, generator=g, dtype=dtype)
    a = torch.randn(6, 10, 12, generator=g, dtype=dtype)
    b = torch.randn(6, 4, 12, generator=g, dtype=dtype)
    theirs = torch.nn.Parameter(x0.clone())
    ours = torch.nn.Parameter(x0.clone())
    # their default step is a Newton-Schulz normalization without a step cap: our
    # normalization_order=1, max_step=1 (the cap never binds at lr 0.05 with VectorAdam)
    opts = [
        pogo.POGO([theirs], base.VectorAdam(), 0.05),
        POGO([ours], lr=0.05, normalization_order=1, max_step=1.0),
    ]
    for _ in range(40):
        for x, opt in zip((theirs, ours), opts, strict=True):
            opt.zero_grad()
            (x @ a - b).abs().square().sum().backward()
            opt.step()
    # equal up to the orthogonality error of the iterates (~1e-7 at order 1): their
    # relative gradient uses X X^H D, ours D, which agree on the manifold only
    torch.testing.assert_close(ours.detach(), theirs.detach(), atol=1e-6, rtol=0)
