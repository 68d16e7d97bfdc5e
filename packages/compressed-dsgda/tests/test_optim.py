import doctest

import compressed_dsgda
import numpy as np
import pytest
import torch
from compressed_dsgda import (
    QSGD,
    CompressedDSGDA,
    Identity,
    RandomK,
    ScaledSign,
    TopK,
    default_gamma,
    make_compressor,
)
from compressed_dsgda import compressors as compressors_mod
from compressed_dsgda import losses as losses_mod
from compressed_dsgda import optim as optim_mod
from icml26_core.decentralized import (
    GossipGroup,
    SimulatedNetwork,
    mixing_matrix,
    spawn_local,
    topology,
)


@pytest.fixture(autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def test_module_docstring_examples_run():
    for mod in (optim_mod, losses_mod, compressors_mod):
        assert doctest.testmod(mod).failed == 0


# ---- a strongly-convex-strongly-concave quadratic saddle, heterogeneous across nodes ------
# f_i(x, y) = 1/2 x'A_i x + x'B y - 1/2 y'C y - b_i'x + c_i'y  (A_i, C positive definite)


def _saddle(n, dx=6, dy=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    A = torch.stack([torch.eye(dx, dtype=torch.float64) * (1 + i % 3) for i in range(n)])
    B = torch.randn(dx, dy, generator=g, dtype=torch.float64) * 0.5
    C = torch.eye(dy, dtype=torch.float64) * 2.0
    b = torch.randn(n, dx, generator=g, dtype=torch.float64)
    c = torch.randn(n, dy, generator=g, dtype=torch.float64)
    A_bar, b_bar, c_bar = A.mean(0), b.mean(0), c.mean(0)
    # stationarity: A x + B y = b, B'x - C y = -c
    K = torch.cat([torch.cat([A_bar, B], 1), torch.cat([B.T, -C], 1)], 0)
    sol = torch.linalg.solve(K, torch.cat([b_bar, -c_bar]))
    return A, B, C, b, c, sol[:dx], sol[dx:]


def _loss(x, y, A, B, C, b, c):
    quad = 0.5 * torch.einsum("ni,nij,nj->", x, A, x) + torch.einsum("ni,ij,nj->", x, B, y)
    return quad - 0.5 * torch.einsum("ni,ij,nj->", y, C, y) - (b * x).sum() + (c * y).sum()


def _run(opt, x, y, prob, steps, noise=0.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        opt.zero_grad()
        _loss(x, y, *prob).backward()
        if noise:
            x.grad += noise * torch.randn(x.shape, generator=g, dtype=x.dtype)
            y.grad += noise * torch.randn(y.shape, generator=g, dtype=y.dtype)
        opt.step()


@pytest.mark.parametrize(
    "comp",
    [
        TopK(0.34),
        pytest.param(Identity(), marks=pytest.mark.slow),
        pytest.param(QSGD(4, unbiased=False), marks=pytest.mark.slow),
        pytest.param(ScaledSign(), marks=pytest.mark.slow),
    ],
)
def test_converges_to_the_saddle_point(comp):
    n = 6
    A, B, C, b, c, xs, ys = _saddle(n)
    x = torch.zeros(n, 6, dtype=torch.float64, requires_grad=True)
    y = torch.zeros(n, 4, dtype=torch.float64, requires_grad=True)
    W = mixing_matrix(topology("ring", n))
    opt = CompressedDSGDA(
        [x], [y], W, comp, lr_primal=0.2, lr_dual=0.2, momentum=0.5, gamma=None, seed=1
    )
    _run(opt, x, y, (A, B, C, b, c), 300 if isinstance(comp, TopK) else 1500)
    # every node at the saddle of the average objective (deterministic gradients)
    assert torch.allclose(x.detach(), xs.expand(n, -1), atol=1e-5)
    assert torch.allclose(y.detach(), ys.expand(n, -1), atol=1e-5)
    assert opt.consensus_error() < 1e-10


def _reference_dsgda(W, x0, y0, prob, steps, lr_x, lr_y, beta):
    """Uncompressed decentralized SGDA with EMA momentum and gradient tracking, plainly."""
    W = torch.as_tensor(W, dtype=torch.float64)
    x, y = x0.clone(), y0.clone()
    ux = uy = zx = zy = None
    for _ in range(steps):
        xr, yr = x.clone().requires_grad_(), y.clone().requires_grad_()
        gx, gy = torch.autograd.grad(_loss(xr, yr, *prob), [xr, yr])
        if ux is None:
            nux, nuy = gx, gy
            zx, zy = W @ nux, W @ nuy
        else:
            nux, nuy = beta * ux + (1 - beta) * gx, beta * uy + (1 - beta) * gy
            zx, zy = W @ (zx + nux - ux), W @ (zy + nuy - uy)
        ux, uy = nux, nuy
        x, y = W @ (x - lr_x * zx), W @ (y + lr_y * zy)
    return x, y


@pytest.mark.parametrize("fast", [True, False])
def test_identity_compressor_equals_uncompressed_dsgda(fast):
    n = 5
    prob = _saddle(n)[:5]
    W = mixing_matrix(topology("ring", n))
    x = torch.zeros(n, 6, dtype=torch.float64, requires_grad=True)
    y = torch.zeros(n, 4, dtype=torch.float64, requires_grad=True)
    opt = CompressedDSGDA(
        [x], [y], W, Identity(), lr_primal=0.05, lr_dual=0.2, momentum=0.8, fast=fast
    )
    assert opt.param_groups[0]["gamma"] == pytest.approx(1.0)
    _run(opt, x, y, prob, 40)
    xr, yr = _reference_dsgda(
        W,
        torch.zeros(n, 6, dtype=torch.float64),
        torch.zeros(n, 4, dtype=torch.float64),
        prob,
        40,
        0.05,
        0.2,
        0.8,
    )
    # x_half + (W x_half - x_half) vs W x_half: equal up to float64 rounding
    torch.testing.assert_close(x.detach(), xr, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(y.detach(), yr, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("comp", [TopK(0.2), RandomK(0.3, unbiased=True), QSGD(3), ScaledSign()])
def test_node_average_follows_the_centralized_update(comp):
    n = 6
    prob = _saddle(n)[:5]
    W = mixing_matrix(topology("ring", n))
    x = torch.randn(n, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    x.requires_grad_()
    y = torch.zeros(n, 4, dtype=torch.float64, requires_grad=True)
    opt = CompressedDSGDA([x], [y], W, comp, lr_primal=0.05, lr_dual=0.1, momentum=0.7)
    for _ in range(15):
        x_bar, y_bar = x.detach().mean(0).clone(), y.detach().mean(0).clone()
        opt.zero_grad()
        _loss(x, y, *prob).backward()
        opt.step()
        ux = opt.state[x]["u"].mean(0)
        uy = opt.state[y]["u"].mean(0)
        # the tracker's average is the momentum's average, and gossip keeps averages
        torch.testing.assert_close(opt.state[x]["z"].mean(0), ux, atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(x.detach().mean(0), x_bar - 0.05 * ux, atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(y.detach().mean(0), y_bar + 0.1 * uy, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize(
    "comp", [TopK(0.3), RandomK(0.3), RandomK(0.5, unbiased=True), QSGD(4), ScaledSign()]
)
def test_batched_compression_matches_the_per_node_path(comp):
    n = 4
    prob = _saddle(n)[:5]
    W = mixing_matrix(topology("ring", n))
    out = []
    for fast in (True, False):
        x = torch.zeros(n, 6, dtype=torch.float64, requires_grad=True)
        y = torch.zeros(n, 4, dtype=torch.float64, requires_grad=True)
        opt = CompressedDSGDA(
            [x], [y], W, comp, lr_primal=0.1, lr_dual=0.1, momentum=0.5, fast=fast, seed=7
        )
        _run(opt, x, y, prob, 20)
        out.append((x.detach().clone(), y.detach().clone(), opt.bits_sent.copy()))
    torch.testing.assert_close(out[0][0], out[1][0], atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(out[0][1], out[1][1], atol=1e-10, rtol=1e-10)
    np.testing.assert_allclose(out[0][2], out[1][2])


def test_bits_accounting():
    n, steps = 8, 7
    W = mixing_matrix(topology("ring", n))
    x = torch.zeros(n, 3, 10, requires_grad=True)  # 30 primal entries per node, float32
    y = torch.zeros(n, 2, requires_grad=True)
    comp = TopK(0.1)
    opt = CompressedDSGDA([x], [y], W, comp, lr_primal=0.1, lr_dual=0.1)
    for _ in range(steps):
        opt.zero_grad()
        ((x**2).sum() - (y**2).sum() + (x.sum((1, 2)) * y.sum(1)).sum()).backward()
        opt.step()
    # per step: the x tracker and x (k = 3 of 30: 3 * (32 + 5) bits), the y tracker and y
    # (k = 1 of 2: 1 * (32 + 1) bits), each to the 2 ring neighbours
    per_step = 2 * (3 * (32 + 5) + 1 * (32 + 1)) * 2
    np.testing.assert_allclose(opt.bits_sent, np.full(n, steps * per_step))
    assert opt.network.rounds == 4 * steps
    assert comp.bits(30) == 3 * 37
    # without tracking: two messages per step
    opt2 = CompressedDSGDA([x], [y], W, Identity(), tracking=False, momentum=0.0)
    opt2.zero_grad()
    ((x**2).sum() - (y**2).sum()).backward()
    opt2.step()
    np.testing.assert_allclose(opt2.bits_sent, np.full(n, (30 + 2) * 32 * 2))


def test_naive_compression_does_not_reach_consensus_but_error_feedback_does():
    n = 6
    prob = _saddle(n)[:5]
    W = mixing_matrix(topology("ring", n))
    err = {}
    for ef in (True, False):
        x = torch.zeros(n, 6, dtype=torch.float64, requires_grad=True)
        y = torch.zeros(n, 4, dtype=torch.float64, requires_grad=True)
        opt = CompressedDSGDA(
            [x], [y], W, TopK(k=2), lr_primal=0.2, lr_dual=0.2, momentum=0.5, error_feedback=ef
        )
        _run(opt, x, y, prob, 250)
        err[ef] = opt.consensus_error()
    assert err[True] < 1e-8 < 1e-3 < err[False]


def test_storm_momentum_runs_and_beta_zero_is_the_gradient():
    n = 4
    prob = _saddle(n)[:5]
    W = mixing_matrix(topology("complete", n))
    xs = []
    for kind in ("storm", "ema"):
        x = torch.zeros(n, 6, dtype=torch.float64, requires_grad=True)
        y = torch.zeros(n, 4, dtype=torch.float64, requires_grad=True)
        opt = CompressedDSGDA(
            [x], [y], W, Identity(), lr_primal=0.1, lr_dual=0.1, momentum=0.0, momentum_kind=kind
        )

        def closure(x=x, y=y, opt=opt):
            opt.zero_grad()
            loss = _loss(x, y, *prob)
            loss.backward()
            return loss

        for _ in range(30):
            opt.step(closure)
        xs.append(x.detach().clone())
    torch.testing.assert_close(xs[0], xs[1], atol=1e-10, rtol=1e-10)


@pytest.mark.slow
def test_storm_converges_to_the_saddle_point():
    n = 4
    W = mixing_matrix(topology("complete", n))
    A, B, C, b, c, x_star, _ = _saddle(n)
    x = torch.zeros(n, 6, dtype=torch.float64, requires_grad=True)
    y = torch.zeros(n, 4, dtype=torch.float64, requires_grad=True)
    opt = CompressedDSGDA(
        [x], [y], W, TopK(0.5), lr_primal=0.2, lr_dual=0.2, momentum=0.5, momentum_kind="storm"
    )

    def closure2():
        opt.zero_grad()
        loss = _loss(x, y, A, B, C, b, c)
        loss.backward()
        return loss

    for _ in range(600):
        opt.step(closure2)
    assert torch.allclose(x.detach(), x_star.expand(n, -1), atol=1e-5)


def test_state_dict_round_trip():
    n = 4
    prob = _saddle(n)[:5]
    W = mixing_matrix(topology("ring", n))

    def make():
        x = torch.zeros(n, 6, dtype=torch.float64, requires_grad=True)
        y = torch.zeros(n, 4, dtype=torch.float64, requires_grad=True)
        return x, y, CompressedDSGDA([x], [y], W, TopK(0.5), lr_primal=0.1, lr_dual=0.1)

    x, y, opt = make()
    _run(opt, x, y, prob, 5)
    x2, y2, opt2 = make()
    with torch.no_grad():
        x2.copy_(x)
        y2.copy_(y)
    opt2.load_state_dict(opt.state_dict())
    _run(opt, x, y, prob, 5)
    _run(opt2, x2, y2, prob, 5)
    torch.testing.assert_close(x.detach(), x2.detach(), atol=1e-10, rtol=1e-10)


# ---- compressors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "comp", [TopK(0.1), TopK(k=3), RandomK(0.2), QSGD(4, unbiased=False), QSGD(2, unbiased=False)]
)
def test_contraction_delta_holds_numerically(comp):
    d, draws = 50, 200
    g = torch.Generator().manual_seed(0)
    x = torch.randn(d, generator=g, dtype=torch.float64) ** 3  # heavy-tailed entries
    err = torch.stack([((comp(x, g) - x) ** 2).sum() for _ in range(draws)]).mean()
    bound = (1 - comp.delta(d)) * (x**2).sum()
    assert float(err) <= float(bound) * 1.05  # Monte-Carlo slack for the random ones


def test_scaled_sign_delta_is_exact():
    x = torch.randn(40, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    c = ScaledSign()
    ratio = float(((c(x) - x) ** 2).sum() / (x**2).sum())
    assert abs(ratio - (1 - c.delta_of(x))) < 1e-12
    assert c.delta(40) <= c.delta_of(x)


@pytest.mark.parametrize("comp", [RandomK(0.25, unbiased=True), QSGD(3)])
def test_unbiased_compressors_are_unbiased(comp):
    d, draws = 20, 1500
    g = torch.Generator().manual_seed(2)
    x = torch.randn(d, generator=g, dtype=torch.float64)
    mean = torch.stack([comp(x, g) for _ in range(draws)]).mean(0)
    omega = comp.omega(d)
    se = np.sqrt(omega * float((x**2).sum()) / d / draws)  # per-entry standard error (avg)
    assert float((mean - x).abs().max()) < 6 * se + 1e-12


def test_make_compressor_and_default_gamma():
    assert isinstance(make_compressor("rand10%"), RandomK)
    assert make_compressor("rand10%").unbiased
    assert isinstance(make_compressor("identity"), Identity)
    assert isinstance(make_compressor("sign"), ScaledSign)
    with pytest.raises(ValueError, match="compressor name"):
        make_compressor("zip")
    with pytest.raises(ValueError, match="ratio"):
        make_compressor("top0%")
    assert default_gamma(Identity(), 10) == pytest.approx(1.0)
    assert abs(default_gamma(TopK(0.04), 100) - 0.2) < 1e-12


# ---- bad input -----------------------------------------------------------------------------


def _params(n=4):
    return torch.zeros(n, 3, requires_grad=True), torch.zeros(n, 1, requires_grad=True)


def test_bad_input_raises():
    x, y = _params()
    W = mixing_matrix(topology("ring", 4))
    with pytest.raises(ValueError, match="sum"):
        CompressedDSGDA([x], [y], W * 0.9)  # not doubly stochastic
    disconnected = np.kron(np.eye(2), np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="connected"):
        CompressedDSGDA([x], [y], disconnected)
    with pytest.raises(ValueError, match="k must be"):
        TopK(k=0)
    with pytest.raises(ValueError, match="lr_primal"):
        CompressedDSGDA([x], [y], W, lr_primal=-1.0)
    with pytest.raises(ValueError, match="momentum"):
        CompressedDSGDA([x], [y], W, momentum=1.0)
    with pytest.raises(ValueError, match="gamma"):
        CompressedDSGDA([x], [y], W, gamma=1.5)
    with pytest.raises(ValueError, match="dual_params is empty"):
        CompressedDSGDA([x], [], W)
    with pytest.raises(TypeError, match="compressor"):
        CompressedDSGDA([x], [y], W, compressor="top5%")
    with pytest.raises(ValueError, match="stacked on dimension 0 with 4 rows"):
        CompressedDSGDA([torch.zeros(3, 3, requires_grad=True)], [y], W)
    with pytest.raises(ValueError, match="momentum_kind"):
        CompressedDSGDA([x], [y], W, momentum_kind="nesterov")
    # a single tensor was split into its rows; a non-tensor or a string W failed deep inside
    with pytest.raises(TypeError, match="primal_params must be an iterable of tensors"):
        CompressedDSGDA(x, [y], W)
    with pytest.raises(TypeError, match=r"dual_params\[0\] must be a torch.Tensor"):
        CompressedDSGDA([x], [np.zeros((4, 1))], W)
    with pytest.raises(ValueError, match=r"primal_params\[0\] must be floating point"):
        CompressedDSGDA([torch.zeros(4, 3, dtype=torch.long)], [y], W)
    with pytest.raises(TypeError, match="group must be"):
        CompressedDSGDA([x], [y], "ring")
    with pytest.raises(TypeError, match="compressor"):
        default_gamma("top5%", 10)
    opt = CompressedDSGDA([x], [y], W)
    with pytest.raises(ValueError, match="no gradient"):
        opt.step()
    x.grad = torch.full_like(x, float("nan"))
    y.grad = torch.zeros_like(y)
    with pytest.raises(ValueError, match="NaN or inf"):
        opt.step()
    storm = CompressedDSGDA([x], [y], W, momentum_kind="storm")
    with pytest.raises(ValueError, match="closure"):
        storm.step()


# ---- the torch.distributed path -------------------------------------------------------------


def _topology(n):
    return mixing_matrix(topology("ring" if n >= 3 else "complete", n))


def _dist_worker(rank, world, steps):
    torch.set_num_threads(1)
    n = world
    A, B, C, b, c, _, _ = _saddle(n)
    W = _topology(n)
    group = GossipGroup(W, seed=3)
    x = torch.zeros(6, dtype=torch.float64, requires_grad=True)
    y = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    opt = CompressedDSGDA([x], [y], group, QSGD(4, unbiased=False), lr_primal=0.1, lr_dual=0.1)
    for _ in range(steps):
        opt.zero_grad()
        loss = 0.5 * x @ A[rank] @ x + x @ B @ y - 0.5 * y @ C @ y - b[rank] @ x + c[rank] @ y
        loss.backward()
        opt.step()
    return x.detach(), y.detach(), group.bits_sent, opt.consensus_error()


def _simulated(n, steps):
    prob = _saddle(n)[:5]
    W = _topology(n)
    net = SimulatedNetwork(W, seed=3)
    x = torch.zeros(n, 6, dtype=torch.float64, requires_grad=True)
    y = torch.zeros(n, 4, dtype=torch.float64, requires_grad=True)
    opt = CompressedDSGDA([x], [y], net, QSGD(4, unbiased=False), lr_primal=0.1, lr_dual=0.1)
    _run(opt, x, y, prob, steps)
    return x.detach(), y.detach(), net.bits_sent, opt.consensus_error()


def _check_same(out, sim):
    for rank, (x, y, bits, cons) in enumerate(out):
        np.testing.assert_allclose(x, sim[0][rank].numpy(), atol=1e-6)
        np.testing.assert_allclose(y, sim[1][rank].numpy(), atol=1e-6)
        assert bits == pytest.approx(sim[2][rank])
        assert cons == pytest.approx(sim[3], rel=1e-6, abs=1e-12)


def test_two_gloo_processes_match_the_simulation():
    out = spawn_local(_dist_worker, 2, args=(20,), timeout_s=120)
    _check_same(out, _simulated(2, 20))


@pytest.mark.slow
def test_four_gloo_processes_match_the_simulation():
    out = spawn_local(_dist_worker, 4, args=(20,), timeout_s=240)
    _check_same(out, _simulated(4, 20))


def _mismatch(rank, world):
    try:
        GossipGroup(mixing_matrix(topology("ring", 4)))
    except ValueError as e:
        return str(e)
    return ""


def test_world_size_that_does_not_match_the_topology_raises():
    out = spawn_local(_mismatch, 2, timeout_s=120)
    assert all("world size is 2" in m for m in out)


def test_version():
    assert compressed_dsgda.__version__
