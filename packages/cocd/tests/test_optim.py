import io
import math
import warnings

import cocd
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cocd import BCCD, SPSA, CoCD, RandomCoordinate, RandomSubspace
from torch import nn


def smooth_loss(x):
    return (torch.sin(x) + 0.5 * x**2).sum() + x[0] * x[1]


def smooth_grad(x):
    g = torch.cos(x) + x
    g[0] += x[1]
    g[1] += x[0]
    return g


def block_estimate(x0, h, central, k=4):
    x = x0.clone()
    opt = CoCD([x], lr=1e-300, block_size=k, fd_step=h, central=central)
    opt.step(lambda: smooth_loss(x))
    return opt.state[x]["g"][:k].clone()


@pytest.mark.parametrize("central, order", [(False, 1), (True, 2)])
def test_block_estimate_matches_autograd_to_order_h(central, order):
    x0 = torch.tensor([0.3, -0.7, 1.1, 0.2, 0.5], dtype=torch.float64)
    true = smooth_grad(x0)[:4]
    errs = [float((block_estimate(x0, h, central) - true).abs().max()) for h in (1e-2, 5e-3)]
    assert errs[0] < 0.05
    ratio = errs[0] / errs[1]  # halving h divides the error by 2 (forward) or 4 (central)
    assert ratio == pytest.approx(2**order, rel=0.1)


def test_central_differences_exact_on_a_quadratic():
    A = torch.tensor([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 3.0]], dtype=torch.float64)
    x = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    opt = CoCD([x], lr=1e-300, block_size=3, fd_step=0.37, central=True)
    opt.step(lambda: 0.5 * x @ A @ x)
    torch.testing.assert_close(opt.state[x]["g"], A @ x, atol=1e-12, rtol=0)


def test_full_block_is_finite_difference_gradient_descent():
    x = torch.tensor([0.3, -0.7, 1.1, 0.2], dtype=torch.float64)
    y = x.detach().numpy().copy()
    h, lr = 1e-3, 0.05
    opt = CoCD([x], lr=lr, block_size=4, fd_step=h)
    bccd_x = x.clone()
    bccd = BCCD([bccd_x], lr=lr, block_size=4, fd_step=h)

    def f(z):
        return float(np.sin(z).sum() + 0.5 * (z**2).sum() + z[0] * z[1])

    for _ in range(20):
        opt.step(lambda: smooth_loss(x))
        bccd.step(lambda: smooth_loss(bccd_x))
        f0 = f(y)
        g = np.array([(f(y + h * np.eye(4)[i]) - f0) / h for i in range(4)])
        y = y - lr * g
    np.testing.assert_allclose(x.numpy(), y, atol=1e-10)
    torch.testing.assert_close(x, bccd_x, atol=1e-12, rtol=0)


def test_separable_quadratic_follows_the_closed_form_stale_path():
    # d = 2, k = 1: coordinate i is refreshed every 2 steps and moved twice with it, so
    # after t = 2s steps x_0 = (1 - 2 lr a_0)^s x_0(0), after t = 2s + 1 steps
    # x_1 = (1 - 2 lr a_1)^s x_1(0) (its g is 0 until its first refresh at step 2).
    a = torch.tensor([1.0, 3.0], dtype=torch.float64)
    x0 = torch.tensor([2.0, -1.0], dtype=torch.float64)
    x = x0.clone()
    lr = 0.07
    opt = CoCD([x], lr=lr, block_size=1, fd_step=0.5, central=True)
    for t in range(1, 41):
        opt.step(lambda: 0.5 * (a * x**2).sum())
        if t % 2 == 0:
            s = t // 2
            assert float(x[0]) == pytest.approx(float((1 - 2 * lr * a[0]) ** s * x0[0]), rel=1e-10)
        else:
            s = (t - 1) // 2
            assert float(x[1]) == pytest.approx(float((1 - 2 * lr * a[1]) ** s * x0[1]), rel=1e-10)


def test_normalize_is_lr_over_n_blocks():
    x1 = torch.linspace(-1, 1, 10, dtype=torch.float64)
    x2 = x1.clone()
    o1 = CoCD([x1], lr=0.3, block_size=3, fd_step=1e-3, normalize=True)
    o2 = CoCD([x2], lr=0.3 / 4, block_size=3, fd_step=1e-3)
    assert o1.n_blocks == 4
    for _ in range(9):
        o1.step(lambda: smooth_loss(x1))
        o2.step(lambda: smooth_loss(x2))
    torch.testing.assert_close(x1, x2, atol=1e-14, rtol=0)


def test_momentum_is_heavy_ball_on_g():
    x1 = torch.tensor([1.0, -0.5], dtype=torch.float64)
    x2 = x1.clone()
    o1 = CoCD([x1], lr=0.1, block_size=2, fd_step=0.5, central=True, momentum=0.5)
    buf = None
    for _ in range(5):
        o1.step(lambda: 0.5 * (x1**2).sum())
        g = x2.clone()
        buf = g if buf is None else 0.5 * buf + g
        x2 = x2 - 0.1 * buf
    torch.testing.assert_close(x1, x2, atol=1e-12, rtol=0)


@pytest.mark.parametrize("central", [False, True])
@pytest.mark.parametrize("make", [CoCD, BCCD, RandomCoordinate])
def test_probes_touch_one_coordinate_and_restore_bitwise(make, central):
    w = torch.randn(3, 4, dtype=torch.float32, generator=torch.Generator().manual_seed(0))
    b = torch.randn(5, dtype=torch.float32, generator=torch.Generator().manual_seed(1))
    before = torch.cat([w.reshape(-1), b]).clone()
    seen = []

    def closure():
        seen.append(torch.cat([w.reshape(-1), b]).clone())
        return (w.sin().sum() + b.cos().sum()).item()

    opt = make([w, b], lr=0.1, block_size=6, fd_step=0.25, central=central)
    _, _ = opt._probe_coords(
        closure, None, opt._indices() if make is not CoCD else opt.next_block(), 0.25, central
    )
    assert torch.equal(torch.cat([w.reshape(-1), b]), before)  # bitwise restored
    assert len(seen) == (12 if central else 7)
    for s in seen[(0 if central else 1) :]:
        assert int((s != before).sum()) == 1
    if not central:
        assert torch.equal(seen[0], before)


@pytest.mark.parametrize("make", [SPSA, RandomSubspace])
def test_dense_probes_restore_bitwise(make):
    w = torch.randn(7, dtype=torch.float32, generator=torch.Generator().manual_seed(0))
    before = w.clone()
    opt = make([w], lr=0.1, n_directions=3, fd_step=0.3)
    Z = opt._directions(3, w.dtype, w.device)
    opt._probe_dirs(lambda: float(w.square().sum()), None, Z, 0.3)
    assert torch.equal(w, before)


@pytest.mark.parametrize(
    "make, central, calls",
    [
        (lambda p: CoCD(p, block_size=5), False, 6),
        (lambda p: CoCD(p, block_size=5, central=True), True, 10),
        (lambda p: BCCD(p, block_size=5), False, 6),
        (lambda p: RandomCoordinate(p, block_size=5), False, 6),
        (lambda p: SPSA(p, n_directions=5), False, 6),
        (lambda p: RandomSubspace(p, n_directions=5), False, 6),
    ],
)
def test_closure_calls_per_step(make, central, calls):
    x = torch.linspace(-1, 1, 12, dtype=torch.float64)
    n = {"c": 0}

    def closure():
        n["c"] += 1
        return smooth_loss(x)

    opt = make([x])
    for step in range(1, 4):
        opt.step(closure)
        assert n["c"] == calls * step
        assert opt.queries == calls * step
    assert opt.state[x]["queries"] == 3 * calls


def test_batched_closure_equals_the_loop():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)).double()
    twin = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)).double()
    twin.load_state_dict(model.state_dict())
    xb = torch.randn(8, 4, dtype=torch.float64)
    yb = torch.randint(0, 2, (8,))
    o1 = CoCD(model.parameters(), lr=0.1, block_size=5, fd_step=1e-4)
    o2 = CoCD(twin.parameters(), lr=0.1, block_size=5, fd_step=1e-4)
    for _ in range(6):
        l1 = o1.step(lambda: F.cross_entropy(model(xb), yb))
        l2 = o2.step(batched_closure=cocd.batched_loss(twin, F.cross_entropy, xb, yb))
        assert l1 == pytest.approx(l2, abs=1e-12)
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(p, q, atol=1e-9, rtol=0)
    assert o2.queries == 6 * 6


def test_batched_loss_in_chunks_equals_all_at_once():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)).double()
    xb = torch.randn(8, 4, dtype=torch.float64)
    yb = torch.randint(0, 2, (8,))
    X = torch.randn(7, 23, dtype=torch.float64)
    whole = cocd.batched_loss(model, F.cross_entropy, xb, yb)(X)
    for chunk in (1, 3, 7, 50):
        part = cocd.batched_loss(model, F.cross_entropy, xb, yb, chunk_size=chunk)(X)
        torch.testing.assert_close(part, whole, atol=1e-13, rtol=0)
    with pytest.raises(ValueError, match="chunk_size"):
        cocd.batched_loss(model, F.cross_entropy, xb, yb, chunk_size=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda p: CoCD(p, lr=0.05, block_size=3, momentum=0.9),
        lambda p: CoCD(p, lr=0.05, block_size=4, order="permuted", seed=5),
        lambda p: BCCD(p, lr=0.05, block_size=4, order="permuted", seed=5),
        lambda p: BCCD(p, lr=0.05, block_size=3),
        lambda p: RandomCoordinate(p, lr=0.05, block_size=3, seed=3),
        lambda p: SPSA(p, lr=0.01, n_directions=2, seed=3, distribution="rademacher"),
        lambda p: RandomSubspace(p, lr=0.05, n_directions=2, seed=3),
    ],
)
def test_state_dict_resumes_cycle_g_and_rng(make):
    gen = torch.Generator().manual_seed(0)
    ps = [torch.randn(3, 2, generator=gen), torch.randn(4, generator=gen)]
    opt = make(ps)

    def loop(o, params, n):
        for _ in range(n):
            o.step(lambda: sum(smooth_loss(p.reshape(-1)) for p in params))

    loop(opt, ps, 4)
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    buf.seek(0)
    twin_ps = [p.clone() for p in ps]
    twin = make(twin_ps)
    twin.load_state_dict(torch.load(buf, weights_only=True))
    loop(opt, ps, 5)
    loop(twin, twin_ps, 5)
    for p, q in zip(ps, twin_ps, strict=True):
        assert torch.equal(p, q)
    assert twin.queries == opt.queries


def test_param_group_lr_acts_on_its_group_only():
    def run(lr2):
        gen = torch.Generator().manual_seed(0)
        a = torch.randn(5, generator=gen, dtype=torch.float64)
        b = torch.randn(4, generator=gen, dtype=torch.float64)
        opt = CoCD([{"params": [a]}, {"params": [b], "lr": lr2}], lr=0.1, block_size=3)
        for _ in range(7):
            opt.step(lambda: smooth_loss(a) + smooth_loss(b))  # separable in (a, b)
        return a, b

    a1, b1 = run(0.1)
    a2, b2 = run(0.02)
    # equal up to the round-off of f's other terms in the differences
    torch.testing.assert_close(a1, a2, atol=1e-10, rtol=0)
    assert not torch.allclose(b1, b2, atol=1e-3)


def test_dtype_and_params_needing_grad():
    w = torch.randn(6, dtype=torch.float32, requires_grad=True)
    opt = CoCD([w], lr=0.1, block_size=2)
    with torch.enable_grad():
        loss = opt.step(lambda: (w**2).sum())  # closure on a leaf that requires grad
    assert isinstance(loss, float)
    assert w.grad is None and w.requires_grad
    assert opt.state[w]["g"].dtype == torch.float32


def test_block_size_for_budget_rule():
    d = 1000
    k = cocd.block_size_for_budget(d, 30_000)
    assert 10 * (d + math.ceil(d / k)) <= 30_000
    assert k == 1 or 10 * (d + math.ceil(d / (k - 1))) > 30_000
    assert cocd.block_size_for_budget(d, 5_000) == d
    x = torch.zeros(100)
    assert CoCD([x], budget=10 * (100 + 50)).block_size == 2


def test_bad_input_names_the_argument():
    x = torch.zeros(4)
    with pytest.raises(ValueError, match="fd_step"):
        CoCD([x], fd_step=0.0)
    with pytest.raises(ValueError, match="block_size"):
        CoCD([x], block_size=0)
    with pytest.raises(ValueError, match="block_size"):
        CoCD([x], block_size=5)
    with pytest.raises(ValueError, match="lr"):
        BCCD([x], lr=-1.0)
    with pytest.raises(ValueError, match="momentum"):
        CoCD([x], momentum=1.0)
    with pytest.raises(TypeError, match="block_size"):
        CoCD([x], block_size=2.5)
    with pytest.raises(ValueError, match="distribution"):
        SPSA([x], distribution="uniform")
    with pytest.raises(ValueError, match="n_directions"):
        RandomSubspace([x], n_directions=5)
    with pytest.warns(UserWarning, match="below one sweep"):
        CoCD([torch.zeros(100)], budget=50)
    opt = CoCD([x], block_size=2)
    with pytest.raises(ValueError, match="closure"):
        opt.step()
    with pytest.raises(ValueError, match="scalar"):
        opt.step(lambda: x + 1.0)
    with pytest.raises(ValueError, match="non-finite"):
        opt.step(lambda: float("nan"))
    with pytest.raises(ValueError, match="None"):
        opt.step(lambda: None)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        opt.step(batched_closure=lambda X: X.sum())
    with pytest.raises(TypeError, match="floating"):
        CoCD([torch.zeros(3, dtype=torch.long)])


def test_bccd_moves_only_the_block_and_random_coordinate_draws_distinct():
    x = torch.linspace(-1, 1, 8, dtype=torch.float64)
    before = x.clone()
    BCCD([x], lr=0.1, block_size=3).step(lambda: smooth_loss(x))
    assert torch.equal(x[3:], before[3:]) and not torch.equal(x[:3], before[:3])
    opt = RandomCoordinate([x], block_size=8, seed=0)
    idx = opt._indices()
    assert sorted(idx.tolist()) == list(range(8))


def test_spsa_is_unbiased_and_subspace_projects():
    c = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64)
    x = torch.zeros(4, dtype=torch.float64)
    opt = SPSA([x], n_directions=4000, fd_step=1e-3, seed=0)
    Z = opt._directions(4000, x.dtype, x.device)
    _, est = opt._probe_dirs(lambda: float(c @ x), None, Z, 1e-3)
    np.testing.assert_allclose(opt._estimate(Z, est).numpy(), c.numpy(), atol=0.15)
    sub = RandomSubspace([x], n_directions=2, fd_step=1e-3, seed=0)
    U = sub._directions(2, x.dtype, x.device)
    torch.testing.assert_close(U @ U.T, torch.eye(2, dtype=torch.float64), atol=1e-12, rtol=0)
    _, est = sub._probe_dirs(lambda: float(c @ x), None, U, 1e-3)
    torch.testing.assert_close(sub._estimate(U, est), U.T @ (U @ c), atol=1e-6, rtol=0)


def test_minimize_matches_the_torch_optimizer_and_respects_budget():
    x = torch.tensor([0.3, -0.7, 1.1, 0.2, -0.4], dtype=torch.float64)
    x0 = x.numpy().copy()
    opt = CoCD([x], lr=0.05, block_size=2, fd_step=1e-3, momentum=0.5)
    calls = {"n": 0}

    def f(z):
        calls["n"] += 1
        return float(np.sin(z).sum() + 0.5 * (z**2).sum() + z[0] * z[1])

    res = cocd.minimize(f, x0, budget=3 * 10 + 1, lr=0.05, block_size=2, fd_step=1e-3, momentum=0.5)
    for _ in range(res.nit):
        opt.step(lambda: smooth_loss(x))
    assert res.nit == 10 and res.nfev == calls["n"] <= 31
    np.testing.assert_allclose(res.x, x.numpy(), atol=1e-12)
    assert res.fun == pytest.approx(f(res.x))
    with pytest.raises(ValueError, match="budget"):
        cocd.minimize(f, x0, budget=1)
    with pytest.raises(ValueError, match="block_size"):
        cocd.minimize(f, x0, budget=100, block_size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cocd.minimize(f, x0, budget=100, block_size=2)


def test_permuted_order_visits_every_coordinate_once_per_sweep():
    x = torch.zeros(10, dtype=torch.float64)
    opt = CoCD([x], lr=0.1, block_size=5, order="permuted", seed=2)
    seen = []
    for _ in range(2):
        seen += opt.next_block().tolist()
        opt.step(lambda: smooth_loss(x))
    assert sorted(seen) == list(range(10)) and seen != list(range(10))
    twin = CoCD([torch.zeros(10)], block_size=5, order="permuted", seed=2)
    assert twin.next_block().tolist() == seen[:5]
    with pytest.raises(ValueError, match="order"):
        BCCD([x], block_size=2, order="random")


@pytest.mark.parametrize(
    "make",
    [
        lambda x: CoCD([x], lr=0.1, block_size=2),
        lambda x: CoCD([x], lr=0.1, block_size=2, central=True),
        lambda x: BCCD([x], lr=0.1, block_size=2),
        lambda x: SPSA([x], lr=0.1, n_directions=2),
        lambda x: RandomSubspace([x], lr=0.1, n_directions=2),
    ],
)
def test_a_failing_probe_leaves_the_parameters_as_they_were(make):
    x = torch.tensor([0.5, -1.0, 2.0])
    before = x.clone()
    calls = [0]

    def closure():  # the second call (a probe at x + h e_i) returns NaN
        calls[0] += 1
        return float("nan") if calls[0] == 2 else float((x**2).sum())

    opt = make(x)
    with pytest.raises(ValueError, match="non-finite"):
        opt.step(closure)
    assert torch.equal(x, before)


def test_bad_closures_and_batched_loss_inputs_name_the_argument():
    from cocd import batched_loss, minimize

    x = torch.zeros(4)
    opt = CoCD([x], block_size=2)
    with pytest.raises(TypeError, match="closure must be callable"):
        opt.step(3)
    with pytest.raises(TypeError, match="closure must return the loss"):
        opt.step(lambda: "abc")
    with pytest.raises(TypeError, match="batched_closure must be callable"):
        opt.step(batched_closure=3)
    model = nn.Linear(3, 2)
    xb, yb = torch.randn(5, 3), torch.randint(0, 2, (5,))
    with pytest.raises(TypeError, match="model"):
        batched_loss(3, F.cross_entropy, xb, yb)
    with pytest.raises(ValueError, match="params"):
        batched_loss(model, F.cross_entropy, xb, yb, params=["nope"])
    f = batched_loss(model, F.cross_entropy, xb, yb)
    with pytest.raises(ValueError, match=r"X must be a tensor of shape \(m, 8\)"):
        f(torch.zeros(2, 10))
    with pytest.raises(ValueError, match="X must be"):
        f(torch.zeros(8))
    with pytest.raises(TypeError, match="x0"):
        minimize(lambda v: 0.0, "abc", 100)
    with pytest.raises(TypeError, match="f must be callable"):
        minimize(3, np.zeros(3), 100)
    with pytest.raises(ValueError, match="f returned None"):
        minimize(lambda v: None, np.zeros(3), 100, block_size=2)
