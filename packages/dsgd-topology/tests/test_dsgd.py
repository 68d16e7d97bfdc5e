import numpy as np
import pytest
import torch
from dsgd_topology import (
    DecentralizedSGD,
    MixingSchedule,
    SimulatedDSGD,
    mixing_matrix,
    mixing_schedule,
    topology,
)
from icml26_core.decentralized import GossipGroup, spawn_local


@pytest.mark.parametrize("name", ["ring", "star", "one_peer_exponential"])
def test_average_iterate_is_centralized_sgd_on_the_mean_gradient(name):
    rng = np.random.default_rng(0)
    n, d, eta = 8, 5, 0.3
    opt = SimulatedDSGD(mixing_schedule(name, n), lr=eta)
    X = rng.standard_normal((n, d))
    x_bar = X.mean(axis=0)
    for _ in range(30):
        G = rng.standard_normal((n, d)) + X  # depends on the iterate
        X = opt.step(X, G)
        x_bar = x_bar - eta * G.mean(axis=0)
    np.testing.assert_allclose(opt.average(X), x_bar, atol=1e-12)
    assert opt.t == 30 and opt.network.rounds == 30


def test_one_peer_exponential_averages_exactly_in_log2_n_rounds():
    n = 16
    opt = SimulatedDSGD(mixing_schedule("one_peer_exponential", n), lr=1.0)
    X = np.random.default_rng(0).standard_normal((n, 3))
    Z = np.zeros_like(X)
    for _ in range(4):
        X = opt.step(X, Z)
    assert opt.consensus_error(X) < 1e-24
    # one peer per round: one full-precision message per node and round
    np.testing.assert_allclose(opt.network.bits_sent, 4 * 3 * 64)


def test_numpy_and_torch_give_the_same_iterates():
    W = mixing_matrix(topology("torus", 9))
    rng = np.random.default_rng(0)
    X0, G = rng.standard_normal((9, 4)), rng.standard_normal((9, 4))
    for order in ("atc", "cta"):
        a = SimulatedDSGD(W, lr=0.1, order=order).step(X0, G)
        b = SimulatedDSGD(W, lr=0.1, order=order).step(torch.tensor(X0), torch.tensor(G))
        np.testing.assert_allclose(a, b.numpy(), atol=1e-12)
    cta = SimulatedDSGD(W, lr=0.1, order="cta").step(X0, G)
    np.testing.assert_allclose(cta, W @ X0 - 0.1 * G, atol=1e-12)


def test_bad_input_raises():
    W = mixing_matrix(topology("ring", 4))
    with pytest.raises(ValueError, match="lr"):
        SimulatedDSGD(W, lr=0.0)
    with pytest.raises(ValueError, match="order"):
        SimulatedDSGD(W, lr=0.1, order="both")
    with pytest.raises(ValueError, match="negative"):
        SimulatedDSGD(np.array([[1.5, -0.5], [-0.5, 1.5]]), lr=0.1)
    with pytest.raises(TypeError, match="MixingSchedule"):
        SimulatedDSGD(lambda t: W, lr=0.1)
    with pytest.raises(ValueError, match="same shape"):
        SimulatedDSGD(W, lr=0.1).step(np.zeros((4, 2)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="4 rows"):
        SimulatedDSGD(W, lr=0.1).step(np.zeros((3, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="n is required"):
        MixingSchedule(lambda t: W)
    with pytest.raises(ValueError, match="name"):
        mixing_schedule("tree", 8)
    model = torch.nn.Linear(2, 1)
    with pytest.raises(TypeError, match="optimizer"):
        DecentralizedSGD(object(), object())
    with pytest.raises(TypeError, match="mix"):
        DecentralizedSGD(torch.optim.SGD(model.parameters(), lr=0.1), object())


def _problem(n, d=3, m=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, m, d)), rng.standard_normal((n, m))


def _simulated(name, n, order, steps, eta=0.1):
    A, b = _problem(n)
    opt = SimulatedDSGD(mixing_schedule(name, n), lr=eta, order=order)
    X = np.zeros((n, A.shape[2]))
    for _ in range(steps):
        r = np.einsum("nmd,nd->nm", A, X) - b
        X = opt.step(X, np.einsum("nmd,nm->nd", A, r) / A.shape[1])
    return X


def _worker(rank, world, name, order, steps, eta=0.1):
    A, b = _problem(world)
    model = torch.nn.Linear(A.shape[2], 1, bias=False, dtype=torch.float64)
    torch.nn.init.zeros_(model.weight)
    sched = mixing_schedule(name, world)
    group = GossipGroup(sched.W if sched.static else np.full((world, world), 1.0 / world))
    opt = DecentralizedSGD(
        torch.optim.SGD(model.parameters(), lr=eta),
        group,
        order=order,
        schedule=None if sched.static else sched,
    )
    Ai, bi = torch.tensor(A[rank]), torch.tensor(b[rank])
    for _ in range(steps):
        opt.zero_grad()
        loss = 0.5 * ((model(Ai).squeeze(1) - bi) ** 2).mean()
        loss.backward()
        opt.step()
    state = opt.state_dict()
    return model.weight.detach().reshape(-1), state["t"]


@pytest.mark.parametrize("order", ["atc", "cta"])
def test_two_gloo_processes_match_the_simulation(order):
    out = spawn_local(_worker, 2, args=("complete", order, 20), timeout_s=120)
    X = _simulated("complete", 2, order, 20)
    for rank, (w, t) in enumerate(out):
        np.testing.assert_allclose(w, X[rank], atol=1e-10)
        assert t == 20


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ring", "star", "one_peer_exponential"])
def test_four_gloo_processes_match_the_simulation(name):
    out = spawn_local(_worker, 4, args=(name, "atc", 20), timeout_s=240)
    X = _simulated(name, 4, "atc", 20)
    for rank, (w, _) in enumerate(out):
        np.testing.assert_allclose(w, X[rank], atol=1e-10)


def _mismatch(rank, world):
    try:
        GossipGroup(mixing_matrix(topology("ring", 4)))
    except ValueError as e:
        return str(e)
    return ""


def test_world_size_must_match_the_topology():
    out = spawn_local(_mismatch, 2, timeout_s=120)
    assert all("world size is 2" in m for m in out)


def test_state_dict_round_trip():
    class Fake:
        n_nodes = 1

        def mix(self, x, W=None):
            return x

    model = torch.nn.Linear(2, 1)
    opt = DecentralizedSGD(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), Fake())
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    opt2 = DecentralizedSGD(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), Fake())
    opt2.load_state_dict(sd)
    assert opt2.t == 1
    assert opt2.param_groups[0]["momentum"] == pytest.approx(0.9)
    assert len(opt2.optimizer.state) == len(opt.optimizer.state)
    with pytest.raises(ValueError, match="state_dict must be"):
        opt2.load_state_dict(opt.optimizer.state_dict())  # the inner optimizer's own
    with pytest.raises(ValueError, match="t must be"):
        opt2.load_state_dict({**sd, "t": -1})
    assert opt2.t == 1


def test_lr_scheduler_drives_the_wrapped_optimizer():
    class Fake:
        n_nodes = 1

        def mix(self, x, W=None):
            return x

    model = torch.nn.Linear(2, 1)
    opt = DecentralizedSGD(torch.optim.SGD(model.parameters(), lr=0.1), Fake())
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    sched.step()
    assert opt.optimizer.param_groups[0]["lr"] == pytest.approx(0.05)


def test_bad_stack_types_raise_a_clear_error():
    opt = SimulatedDSGD(mixing_schedule("ring", 4), lr=0.1)
    with pytest.raises(TypeError, match="X must be a numpy array or a torch tensor"):
        opt.step([[0.0, 0.0]] * 4, [[0.0, 0.0]] * 4)
    with pytest.raises(TypeError, match="same library"):
        opt.step(torch.zeros(4, 2), np.ones((4, 2)))
    with pytest.raises(TypeError, match="X must be"):
        opt.consensus_error([[0.0, 0.0]] * 4)
    with pytest.raises(TypeError, match="mixing_schedule"):
        SimulatedDSGD("ring", lr=0.1)
    assert opt.t == 0
