import copy
import itertools
import re

import dmol
import pytest
import torch
import torch.nn.functional as F
from dmol import BPTrainer, DMoLNet, DMoLTrainer, mlp_net, zero_head_
from torch import nn


def _net(depth=3, belief="additive", seed=0):
    torch.manual_seed(seed)
    net = mlp_net(6, 8, 4, depth, belief=belief)
    for head in net.heads:  # non-zero heads so that every depth contributes
        nn.init.normal_(head.weight, std=0.3)
    return net


def _data(n=32, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 6, generator=g), torch.randint(0, 4, (n,), generator=g)


def _sgd(params):
    return torch.optim.SGD(params, lr=0.1)


def test_beliefs_refine_additively():
    net = _net()
    x, _ = _data()
    zs = net(x, all_depths=True)
    h = x
    z = torch.zeros(len(x), 4)
    for block, head, z_l in zip(net.blocks, net.heads, zs, strict=True):
        h = block(h)
        z = z + head(h)
        torch.testing.assert_close(z_l, z)
    independent = DMoLNet(net.blocks, net.heads, belief="independent")
    torch.testing.assert_close(independent(x), net.heads[-1](h))


@pytest.mark.parametrize("belief", ["additive", "independent"])
def test_step_gradients_are_the_isolated_local_gradients(belief):
    net = _net(4, belief)
    ref = copy.deepcopy(net)  # the parameters before the step
    x, y = _data()
    trainer = DMoLTrainer(net, F.cross_entropy, _sgd)
    losses = trainer.step(x, y)
    assert losses.shape == (4,)
    for index in range(4):
        # the local loss of depth `index`, computed on a copy with autograd, alone
        model = copy.deepcopy(ref)
        model.zero_grad()
        z = model(x, depth=index + 1)
        loss = F.cross_entropy(z, y)
        torch.testing.assert_close(losses[index], loss.detach())
        loss.backward()
        for p_step, p_ref in zip(
            net.block_parameters(index), model.block_parameters(index), strict=True
        ):
            torch.testing.assert_close(p_step.grad, p_ref.grad)
        # nothing reaches the other blocks
        for other in range(4):
            if other != index:
                assert all(p.grad is None for p in model.block_parameters(other))


def test_changing_a_later_block_leaves_earlier_gradients_unchanged():
    x, y = _data()
    grads = []
    for scale in (1.0, 5.0):
        net = _net(3)
        with torch.no_grad():
            for p in net.blocks[2].parameters():
                p.mul_(scale)
        DMoLTrainer(net, F.cross_entropy, _sgd).step(x, y)
        grads.append([p.grad.clone() for i in (0, 1) for p in net.block_parameters(i)])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def test_grow_leaves_the_output_unchanged_bit_for_bit():
    net = _net(2)
    x, _ = _data()
    before = net(x)
    net.grow(dmol.ResidualMLPBlock(8), nn.Linear(8, 4))
    assert net.depth == 3
    assert torch.equal(net(x), before)  # exact: z + 0 is z
    assert torch.count_nonzero(net.heads[-1].weight) == 0


def test_truncate_returns_the_belief_at_that_depth():
    net = _net(4)
    x, _ = _data()
    zs = net(x, all_depths=True)
    net.truncate(2)
    assert net.depth == 2
    torch.testing.assert_close(net(x), zs[1])


def test_trainer_follows_growth_and_truncation():
    net = _net(2)
    x, y = _data()
    trainer = DMoLTrainer(net, F.cross_entropy, _sgd)
    assert trainer.step(x, y).shape == (2,)
    net.grow(dmol.ResidualMLPBlock(8), nn.Linear(8, 4))
    losses = trainer.step(x, y)
    assert losses.shape == (3,)
    assert net.heads[-1].weight.grad is not None
    net.truncate(1)
    assert trainer.step(x, y).shape == (1,)
    # a block added after the cut gets its own optimizer, which updates it
    block, head = dmol.ResidualMLPBlock(8), nn.Linear(8, 4)
    net.grow(block, head)
    before = [p.detach().clone() for p in block.parameters()]
    trainer.step(x, y)  # the zeroed head moves first (the block's gradient is 0 through it)
    assert torch.count_nonzero(head.weight) > 0
    trainer.step(x, y)
    assert any(not torch.allclose(a, b) for a, b in zip(before, block.parameters(), strict=True))


def test_one_block_equals_ordinary_training():
    torch.manual_seed(0)
    block, head = nn.Sequential(nn.Linear(6, 8), nn.Tanh()), nn.Linear(8, 4)
    ref_block, ref_head = copy.deepcopy(block), copy.deepcopy(head)
    trainer = DMoLTrainer(
        DMoLNet([block], [head]), F.cross_entropy, lambda p: torch.optim.Adam(p, lr=0.01)
    )
    opt = torch.optim.Adam([*ref_block.parameters(), *ref_head.parameters()], lr=0.01)
    for seed in range(5):
        x, y = _data(seed=seed)
        trainer.step(x, y)
        opt.zero_grad()
        F.cross_entropy(ref_head(ref_block(x)), y).backward()
        opt.step()
    for a, b in zip(
        [*block.parameters(), *head.parameters()],
        [*ref_block.parameters(), *ref_head.parameters()],
        strict=True,
    ):
        torch.testing.assert_close(a, b)


def test_linear_gaussian_optimal_refinement_is_monotone():
    # y = X w + noise; block l gives fixed features h_l; the optimal refinement at depth l
    # is the least-squares fit of the residual y - z_{l-1} on h_l (closed form). Since the
    # zero refinement is feasible, the objective cannot rise with depth.
    g = torch.Generator().manual_seed(0)
    n, d, depth = 200, 5, 5
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = X @ torch.randn(d, 1, generator=g, dtype=torch.float64) + 0.3 * torch.randn(
        n, 1, generator=g, dtype=torch.float64
    )
    blocks = [nn.Sequential(nn.Linear(d, d), nn.Tanh()).double() for _ in range(depth)]
    heads = [zero_head_(nn.Linear(d, 1).double()) for _ in range(depth)]
    net = DMoLNet(blocks, heads)
    h, z, objectives = X, torch.zeros(n, 1, dtype=torch.float64), []
    with torch.no_grad():
        for block, head in zip(blocks, heads, strict=True):
            h = block(h)
            A = torch.cat([h, torch.ones(n, 1, dtype=torch.float64)], dim=1)
            beta = torch.linalg.lstsq(A, y - z).solution
            head.weight.copy_(beta[:-1].T)
            head.bias.copy_(beta[-1])
            z = z + head(h)
            objectives.append(float(F.mse_loss(z, y)))
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(objectives))
    assert objectives[-1] < objectives[0]
    zs = net(X, all_depths=True)
    torch.testing.assert_close(
        torch.stack([F.mse_loss(z, y) for z in zs]), torch.tensor(objectives, dtype=torch.float64)
    )
    # DMoL training of the heads alone (frozen blocks: convex local problems) reaches the
    # same closed-form objectives
    for block in blocks:
        block.requires_grad_(False)
    for head in heads:
        zero_head_(head)
    trainer = DMoLTrainer(
        net, F.mse_loss, lambda p: torch.optim.Adam([q for q in p if q.requires_grad], lr=0.05)
    )
    for _ in range(600):
        trainer.step(X, y)
    trained = trainer.objectives(X, y)
    assert (trained[1:] <= trained[:-1] + 1e-6).all()
    # close to the sequential closed form (Adam, 600 steps: within 5%)
    torch.testing.assert_close(
        trained, torch.tensor(objectives, dtype=torch.float64), rtol=5e-2, atol=1e-4
    )


def test_bp_trainer_reaches_every_block():
    x, y = _data()
    for mode, n_losses in (("final", 1), ("deep_supervision", 3)):
        net = _net(3)
        trainer = BPTrainer(net, F.cross_entropy, _sgd, mode=mode)
        losses = trainer.step(x, y)
        assert losses.shape == (n_losses,)
        assert all(p.grad is not None for p in net.blocks.parameters())
        assert (net.heads[0].weight.grad is None) == (mode == "final")
        torch.testing.assert_close(
            trainer.predict(x), net.heads[2](net.blocks[2](net.blocks[1](net.blocks[0](x))))
        )


def test_bad_input():
    lin = nn.Linear(4, 4)
    with pytest.raises(ValueError, match="blocks"):
        DMoLNet([], [])
    with pytest.raises(ValueError, match="heads"):
        DMoLNet([lin, lin], [lin])
    with pytest.raises(TypeError, match=r"blocks\[0\]"):
        DMoLNet([lambda h: h], [lin])
    with pytest.raises(ValueError, match="belief"):
        DMoLNet([lin], [lin], belief="logits")
    net = DMoLNet([nn.Linear(4, 4), nn.Linear(4, 4)], [nn.Linear(4, 3), nn.Linear(4, 2)])
    with pytest.raises(ValueError, match=r"heads\[1\].*shape"):
        net(torch.zeros(2, 4))
    net = _net(3)
    for bad in (0, 4):
        with pytest.raises(ValueError, match="depth"):
            net.truncate(bad)
    with pytest.raises(TypeError, match="depth"):
        net.truncate(1.5)
    with pytest.raises(ValueError, match="depth"):
        net(torch.zeros(2, 6), depth=9)
    with pytest.raises(TypeError, match="net"):
        DMoLTrainer(nn.Linear(2, 2), F.mse_loss, _sgd)
    with pytest.raises(TypeError, match="optimizer_factory"):
        DMoLTrainer(net, F.mse_loss, "adam")
    with pytest.raises(ValueError, match="mode"):
        BPTrainer(net, F.cross_entropy, _sgd, mode="greedy")
    x, y = _data()
    with pytest.raises(ValueError, match=r"loss_fn.*scalar"):
        DMoLTrainer(net, lambda z, t: F.cross_entropy(z, t, reduction="none"), _sgd).step(x, y)
    with pytest.raises(TypeError, match="optimizer_factory"):
        DMoLTrainer(net, F.cross_entropy, lambda p: None).step(x, y)
    with pytest.raises(ValueError, match="head"):
        zero_head_(nn.ReLU())


def test_bad_input_names_the_argument():
    net = _net(3)
    x, y = _data()
    with pytest.raises(TypeError, match="blocks"):
        DMoLNet(None, None)
    with pytest.raises(TypeError, match="head"):
        zero_head_(None)
    trainer = DMoLTrainer(net, F.cross_entropy, _sgd)
    # wrong width, wrong dtype, not a tensor: torch's error, with a note naming x
    for bad, note in (
        (torch.randn(32, 7), r"blocks\[0\] on x of shape \(32, 7\)"),
        (x.double(), r"x of shape \(32, 6\), dtype torch.float64.*parameters are torch.float32"),
        (x.numpy(), "x of type ndarray"),
    ):
        with pytest.raises((RuntimeError, TypeError)) as info:
            trainer.step(bad, y)
        assert any(re.search(note, n) for n in info.value.__notes__)
    with pytest.raises(ValueError) as info:
        trainer.step(x, y[:5])
    assert any(r"y of shape (5,)" in n for n in info.value.__notes__)
    with pytest.raises(RuntimeError) as info:
        BPTrainer(_net(3), F.cross_entropy, _sgd).step(torch.randn(32, 7), y)
    assert any("x of shape (32, 7)" in n for n in info.value.__notes__)


def test_inputs_are_not_mutated():
    x, y = _data()
    x0, y0 = x.clone(), y.clone()
    for trainer in (
        DMoLTrainer(_net(3), F.cross_entropy, _sgd),
        BPTrainer(_net(3), F.cross_entropy, _sgd),
    ):
        trainer.step(x, y)
        trainer.predict(x)
    assert torch.equal(x, x0) and torch.equal(y, y0)


def test_bp_trainer_refuses_a_grown_or_cut_net():
    # its optimizer is made once: after grow, the new zeroed last head was never trained
    # and BP served zeros forever without a word (the bug)
    x, y = _data()
    net = _net(2)
    trainer = BPTrainer(net, F.cross_entropy, _sgd)
    trainer.step(x, y)
    net.grow(dmol.ResidualMLPBlock(8), nn.Linear(8, 4))
    with pytest.raises(ValueError, match=r"net: changed.*depth 2 -> 3.*new BPTrainer"):
        trainer.step(x, y)
    with pytest.raises(ValueError, match="new BPTrainer"):
        trainer.predict(x)
    net.truncate(1)
    with pytest.raises(ValueError, match="new BPTrainer"):
        trainer.step(x, y)
    fresh = BPTrainer(net, F.cross_entropy, _sgd)
    assert fresh.step(x, y).shape == (1,)


def test_block_index_out_of_range_names_the_argument():
    # before: torch's container IndexError ("index 9 is out of range"), naming nothing
    net = _net(3)
    trainer = DMoLTrainer(net, F.cross_entropy, _sgd)
    for bad in (3, -1):
        with pytest.raises(ValueError, match=r"index must be an integer >= 0 and <= 2"):
            net.block_parameters(bad)
        with pytest.raises(ValueError, match=r"index must be an integer >= 0 and <= 2"):
            trainer.optimizer(bad)
    with pytest.raises(TypeError, match="index"):
        trainer.optimizer(1.0)
