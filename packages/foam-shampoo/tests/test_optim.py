import itertools
import math

import numpy as np
import pytest
import scipy.linalg
import torch
from foam_shampoo import FOAM, Shampoo, matrix_inverse_root, staleness_error
from icml26_core.testing import check_optimizer


def _spd(k, cond, gen, dtype=torch.float64):
    Q, _ = torch.linalg.qr(torch.randn(k, k, generator=gen, dtype=dtype))
    eig = torch.logspace(0, math.log10(cond), k, dtype=dtype)
    return (Q * eig) @ Q.T


def _frac_power(M, p):
    return torch.as_tensor(np.real(scipy.linalg.fractional_matrix_power(M.numpy(), p)))


# -- the inverse root --------------------------------------------------------------------


def test_inverse_root_fourth_power_is_the_inverse_and_matches_scipy():
    gen = torch.Generator().manual_seed(0)
    A = _spd(7, 1e3, gen)
    damping = 1e-3
    X = matrix_inverse_root(A, damping)
    lam = damping * float(torch.linalg.eigvalsh(A).max())
    damped = A + lam * torch.eye(7, dtype=torch.float64)
    X4 = torch.linalg.matrix_power(X, 4)
    torch.testing.assert_close(X4 @ damped, torch.eye(7, dtype=torch.float64), atol=1e-5, rtol=0)
    torch.testing.assert_close(X, _frac_power(damped, -0.25), atol=1e-8, rtol=1e-8)
    # symmetric and positive definite
    torch.testing.assert_close(X, X.T, atol=1e-12, rtol=0)
    assert float(torch.linalg.eigvalsh(X).min()) > 0


def test_inverse_root_of_a_singular_matrix_is_finite_with_damping():
    v = torch.tensor([[1.0], [2.0], [0.0]], dtype=torch.float64)
    X = matrix_inverse_root(v @ v.T, 1e-4)
    assert torch.isfinite(X).all()
    # the null direction gets (1e-4 * 5)^(-1/4)
    e3 = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    assert float(e3 @ X @ e3) == pytest.approx((5e-4) ** -0.25, rel=1e-8)


# -- the Shampoo step against a hand-written dense one -------------------------------------


def test_ungrafted_f1_step_equals_dense_shampoo():
    gen = torch.Generator().manual_seed(1)
    W0 = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    W = W0.clone().requires_grad_(True)
    lr, b2, damping = 0.1, 0.9, 1e-4
    opt = Shampoo([W], lr=lr, betas=(0.0, b2), graft="none", damping=damping)
    grads = [torch.randn(5, 3, generator=gen, dtype=torch.float64) for _ in range(3)]
    L = torch.zeros(5, 5, dtype=torch.float64)
    R = torch.zeros(3, 3, dtype=torch.float64)
    expected = W0.clone()
    for G in grads:
        W.grad = G.clone()
        opt.step()
        L = b2 * L + G @ G.T
        R = b2 * R + G.T @ G

        def root(M):
            lam = damping * float(torch.linalg.eigvalsh(M).max())
            return _frac_power(M + lam * torch.eye(len(M), dtype=torch.float64), -0.25)

        expected = expected - lr * root(L) @ G @ root(R)
        torch.testing.assert_close(W.detach(), expected, atol=1e-10, rtol=1e-10)


def test_one_dim_parameters_take_torch_adam_steps():
    gen = torch.Generator().manual_seed(2)
    b = torch.randn(6, generator=gen, dtype=torch.float64)
    W = torch.randn(4, 9, generator=gen, dtype=torch.float64)  # 9 > max_precond_dim
    x = [b.clone().requires_grad_(True), W.clone().requires_grad_(True)]
    y = [b.clone().requires_grad_(True), W.clone().requires_grad_(True)]
    ours = Shampoo(x, lr=0.01, betas=(0.9, 0.5), graft_beta2=0.99, max_precond_dim=8)
    ref = torch.optim.Adam(y, lr=0.01, betas=(0.9, 0.99), eps=1e-8)
    for _ in range(5):
        g = [torch.randn(p.shape, generator=gen, dtype=torch.float64) for p in x]
        for p, q, gi in zip(x, y, g, strict=True):
            p.grad, q.grad = gi.clone(), gi.clone()
        ours.step()
        ref.step()
    for p, q in zip(x, y, strict=True):
        torch.testing.assert_close(p, q, atol=1e-12, rtol=1e-12)
    assert ours.factor_stats() == []


def test_adam_grafting_gives_the_step_adams_norm():
    gen = torch.Generator().manual_seed(3)
    W = torch.randn(5, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    W0 = W.detach().clone()
    W.grad = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    Shampoo([W], lr=0.01, eps=1e-12).step()
    # Adam's first step is g / |g| elementwise: norm sqrt(20); grafted Shampoo keeps it
    assert float((W.detach() - W0).norm()) == pytest.approx(0.01 * math.sqrt(20), rel=1e-6)


def test_conv_kernels_are_preconditioned_as_matrices():
    K = torch.randn(8, 3, 3, 3, requires_grad=True)
    opt = Shampoo([K], lr=0.01)
    K.grad = torch.randn_like(K)
    opt.step()
    sizes = {r["factor"]: r["size"] for r in opt.factor_stats()}
    assert sizes == {"L": 8, "R": 27}


# -- FOAM's controls -----------------------------------------------------------------------


def _mlp_params(seed):
    gen = torch.Generator().manual_seed(seed)
    return [
        torch.randn(6, 5, generator=gen, dtype=torch.float64),
        torch.randn(6, generator=gen, dtype=torch.float64),
        torch.randn(3, 6, generator=gen, dtype=torch.float64),
    ]


def _loss(ps, x):
    h = torch.tanh(x @ ps[0].T + ps[1])
    return ((h @ ps[2].T) ** 2).mean()


def _run(make, steps=12, seed=0):
    ps = [p.clone().requires_grad_(True) for p in _mlp_params(seed)]
    opt = make(ps)
    gen = torch.Generator().manual_seed(99)
    for _ in range(steps):
        x = torch.randn(16, 5, generator=gen, dtype=torch.float64)
        opt.zero_grad()
        _loss(ps, x).backward()
        opt.step()
    return ps, opt


def test_tau_zero_reproduces_f1():
    a, oa = _run(lambda ps: FOAM(ps, lr=0.01, tau=0.0, c=0.0, delta0=1e-4, check_every=1))
    b, ob = _run(lambda ps: Shampoo(ps, lr=0.01, precondition_frequency=1, damping=1e-4))
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, atol=1e-12, rtol=0)
    assert oa.eigendecompositions() == ob.eigendecompositions() == 12 * 4


def test_tau_inf_reproduces_fixed_max_gap():
    a, oa = _run(lambda ps: FOAM(ps, lr=0.01, tau=math.inf, c=0.0, max_gap=4, check_every=1))
    b, ob = _run(lambda ps: Shampoo(ps, lr=0.01, precondition_frequency=4, damping=1e-6))
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, atol=1e-12, rtol=0)
    assert oa.eigendecompositions() == ob.eigendecompositions() == 3 * 4  # steps 1, 5, 9


def test_error_is_zero_right_after_a_recomputation_and_grows_when_stale():
    _, opt = _run(lambda ps: FOAM(ps, lr=0.01, tau=0.0, check_every=1), steps=5)
    for per in staleness_error(opt).values():
        assert per["L"] == pytest.approx(0.0, abs=1e-10)
        assert per["R"] == pytest.approx(0.0, abs=1e-10)
    assert all(r["error"] == pytest.approx(0.0, abs=1e-12) for r in opt.factor_stats())
    _, opt = _run(lambda ps: FOAM(ps, lr=0.01, tau=math.inf, max_gap=1000), steps=8)
    errs = [e for per in staleness_error(opt).values() for e in per.values()]
    assert min(errs) > 1e-3
    assert set(staleness_error(opt)) == {0, 2}  # the bias vector is on the Adam fallback


def test_error_is_the_two_product_definition_computed_in_o_n2():
    # FOAM computes ||L_t - L_decomposed||_F / ||Lambda||_F; as Q is orthogonal this is
    # ||Q^T L_t Q - Lambda||_F / ||Lambda||_F, the definition (two n x n products)
    _, opt = _run(lambda ps: FOAM(ps, lr=0.01, tau=math.inf, max_gap=1000), steps=8)
    now = staleness_error(opt)
    params = opt.param_groups[0]["params"]
    for i in (0, 2):
        st = opt.state[params[i]]
        for k in ("L", "R"):
            Q, eig = st[f"Q_{k}"], st[f"eig_{k}"]
            A = Q.T @ st[k] @ Q - torch.diag(eig)
            want = float(torch.linalg.matrix_norm(A) / torch.linalg.vector_norm(eig))
            assert want > 1e-3  # stale: a real comparison, not 0 against 0
            assert now[i][k] == pytest.approx(want, rel=1e-8)
            del st[f"ref_{k}"]  # a state saved before the O(n^2) proxy: the products
    for i, per in staleness_error(opt).items():
        for k, e in per.items():
            assert e == pytest.approx(now[i][k], rel=1e-8)


def test_damping_follows_the_law_and_grows_with_the_error():
    ps = [p.clone().requires_grad_(True) for p in _mlp_params(0)]
    delta0, c = 1e-4, 0.5
    opt = FOAM(ps, lr=0.01, tau=math.inf, c=c, delta0=delta0, check_every=1, max_gap=1000)
    gen = torch.Generator().manual_seed(5)
    seen = []
    for _ in range(10):
        opt.zero_grad()
        _loss(ps, torch.randn(16, 5, generator=gen, dtype=torch.float64)).backward()
        opt.step()
        st = opt.state[ps[0]]
        lmax = float(st["eig_L"].max())
        assert st["damping_L"] == pytest.approx((delta0 + c * st["error_L"]) * lmax, rel=1e-12)
        seen.append((st["error_L"], st["damping_L"] / lmax))
    seen.sort()
    rel = [d for _, d in seen]
    assert all(b >= a for a, b in itertools.pairwise(rel))
    assert rel[-1] > rel[0]


def test_foam_converges_on_a_kronecker_quadratic():
    gen = torch.Generator().manual_seed(0)
    A, B = _spd(6, 50.0, gen), _spd(4, 50.0, gen)
    W_star = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    W = torch.zeros(6, 4, dtype=torch.float64, requires_grad=True)
    opt = FOAM([W], lr=2.0, graft="none", betas=(0.0, 1.0), check_every=1)

    def f():
        D = W - W_star
        return 0.5 * torch.trace(D.T @ A @ D @ B)

    f0 = float(f().detach())
    for _ in range(500):
        opt.zero_grad()
        f().backward()
        opt.step()
    assert float(f().detach()) < 1e-9 * f0
    assert float((W.detach() - W_star).norm()) < 1e-3
    assert opt.eigendecompositions() < 2 * 500 / 5  # far fewer than two factors per step


# -- conventions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "zero_grad_atol"),
    [
        (lambda g: Shampoo(g, lr=0.01), 0.0),
        (
            lambda g: Shampoo(g, lr=0.01, graft="none", precondition_frequency=3, weight_decay=0.1),
            None,
        ),
        (lambda g: Shampoo(g, lr=0.01, adaptive_frequency=True, check_every=2), 0.0),
        (lambda g: FOAM(g, lr=0.01, check_every=1), 0.0),
    ],
    ids=["shampoo", "ungrafted-f3-wd", "ablation", "foam"],
)
def test_conformance(make, zero_grad_atol):
    ran = check_optimizer(make, zero_grad_atol=zero_grad_atol)
    assert "state_dict round trip" in ran


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_conformance_cuda():
    check_optimizer(lambda g: FOAM(g, lr=0.01, check_every=1), device="cuda", atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"lr": -1.0}, "lr"),
        ({"damping": -1e-3}, "damping"),
        ({"tau": -0.1}, "tau"),
        ({"tau": math.nan}, "tau"),
        ({"c": -1.0}, "c"),
        ({"betas": (0.9, 0.0)}, "betas[1]"),
        ({"betas": (0.9, 1.5)}, "betas[1]"),
        ({"betas": (1.0, 0.9)}, "betas[0]"),
        ({"betas": 0.9}, "betas"),
        ({"eps": 0.0}, "eps"),
        ({"precondition_frequency": 0}, "precondition_frequency"),
        ({"graft": "sgd"}, "graft"),
        ({"min_gap": 5, "max_gap": 2}, "max_gap"),
    ],
)
def test_bad_settings_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name.replace("[", r"\[").replace("]", r"\]")):
        Shampoo([torch.zeros(2, 2, requires_grad=True)], **kwargs)


def test_bad_tensors_and_foam_overrides():
    with pytest.raises(TypeError, match="params"):
        Shampoo([torch.zeros(2, 2, dtype=torch.complex64, requires_grad=True)])
    emb = torch.nn.Embedding(5, 3, sparse=True)
    opt = Shampoo(emb.parameters())
    emb(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(ValueError, match="sparse"):
        opt.step()
    with pytest.raises(TypeError, match="damping"):
        FOAM([torch.zeros(2, 2, requires_grad=True)], damping=1e-3)
    with pytest.raises(TypeError, match="optimizer"):
        staleness_error(torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1))
    with pytest.raises(ValueError, match="square"):
        matrix_inverse_root(torch.zeros(2, 3))


def test_add_param_group_is_checked_like_init():
    opt = Shampoo([torch.zeros(2, 2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        opt.add_param_group({"params": [torch.zeros(3, 3, requires_grad=True)], "lr": -1.0})
    with pytest.raises(TypeError, match="params"):
        opt.add_param_group({"params": [torch.zeros(3, 3, dtype=torch.long)]})
    assert len(opt.param_groups) == 1  # a refused group is not kept
    opt.add_param_group({"params": [torch.zeros(3, 3, requires_grad=True)], "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["tau"] == 0.1  # exact: stored


def test_foam_names_delta0_and_profile_must_be_a_bool():
    with pytest.raises(ValueError, match="delta0"):
        FOAM([torch.zeros(2, 2, requires_grad=True)], delta0=-1e-3)
    with pytest.raises(TypeError, match="profile"):
        Shampoo([torch.zeros(2, 2, requires_grad=True)], profile="yes")


def test_non_finite_inputs_give_errors_that_name_them():
    W = torch.zeros(4, 3, requires_grad=True)
    opt = FOAM([W], lr=0.1)
    W.grad = torch.full((4, 3), math.nan)
    # a RuntimeError (the experiment counts it as a divergence), naming the parameter
    with pytest.raises(torch.linalg.LinAlgError, match=r"parameter 0 \(shape \(4, 3\)\).*finite"):
        opt.step()
    with pytest.raises(ValueError, match="A must be finite"):
        matrix_inverse_root(torch.full((2, 2), math.inf))
    with pytest.raises(TypeError, match=r"dtype torch\.int64"):
        matrix_inverse_root(torch.eye(2, dtype=torch.long))
