import pytest
import torch
from descent_transformers import DescentConstraints, PrimalDualTrainer
from torch import nn

BASE = 10.0  # l_0 of the toy: large, so constraint 0 stays inactive
EPS = 0.5


class Toy(nn.Module):
    """Layer 'predictions' are the losses themselves: l_0 = 10, l_1, l_2 below.

    With the additive form, constraint 1 (l_2 <= l_1 - eps) is 1 - x0 - x1 <= 0 and the
    objective l_2 is ||x||^2: min ||x||^2 s.t. x0 + x1 >= 1, KKT x = (0.5, 0.5), lambda = 1.
    """

    def __init__(self):
        super().__init__()
        self.x = nn.Parameter(torch.tensor([2.0, -1.0], dtype=torch.float64))

    def layer_outputs(self, _inputs):
        sq = (self.x**2).sum()
        l1 = sq + self.x.sum() - 1.0 + EPS
        return [torch.tensor(BASE, dtype=torch.float64), l1, sq]


def _identity(pred, _target):
    return pred


def _ours(steps, lr=0.2, dual_lr=0.2):
    toy = Toy()
    cons = DescentConstraints(2, eps=EPS, dual_lr=dual_lr, form="additive", normalize=False)
    cons.double()
    trainer = PrimalDualTrainer(
        toy, None, torch.optim.SGD(toy.parameters(), lr=lr), cons, _identity
    )
    traj = []
    for _ in range(steps):
        trainer.step(None, torch.zeros(()))
        traj.append((toy.x.detach().clone(), cons.multipliers.clone()))
    return toy, cons, traj


def _cooper(steps, lr=0.2, dual_lr=0.2):
    cooper = pytest.importorskip("cooper")

    class CMP(cooper.ConstrainedMinimizationProblem):
        def __init__(self):
            super().__init__()
            mult = cooper.multipliers.DenseMultiplier(num_constraints=2, dtype=torch.float64)
            self.constraint = cooper.Constraint(
                multiplier=mult, constraint_type=cooper.ConstraintType.INEQUALITY
            )

        def compute_cmp_state(self, model):
            l0, l1, l2 = model.layer_outputs(None)
            g = torch.stack([l1 - l0 + EPS, l2 - l1 + EPS])
            return cooper.CMPState(
                loss=l2, observed_constraints={self.constraint: cooper.ConstraintState(violation=g)}
            )

    toy = Toy()
    cmp = CMP()
    opt = cooper.optim.SimultaneousOptimizer(
        cmp=cmp,
        primal_optimizers=torch.optim.SGD(toy.parameters(), lr=lr),
        dual_optimizers=torch.optim.SGD(cmp.dual_parameters(), lr=dual_lr, maximize=True),
    )
    traj = []
    for _ in range(steps):
        opt.roll(compute_cmp_state_kwargs={"model": toy})
        lam = cmp.constraint.multiplier.weight.detach().clone().reshape(-1)
        traj.append((toy.x.detach().clone(), lam))
    return toy, traj


def test_toy_converges_to_kkt_and_agrees_with_cooper():
    toy, cons, ours = _ours(300)
    assert toy.x.detach().tolist() == pytest.approx([0.5, 0.5], abs=1e-3)
    assert cons.multipliers.tolist() == pytest.approx([0.0, 1.0], abs=1e-3)
    _, theirs = _cooper(300)
    for (xo, lo), (xc, lc) in zip(ours[::10], theirs[::10], strict=True):
        assert torch.allclose(xo, xc, atol=1e-9)
        assert torch.allclose(lo, lc, atol=1e-9)
    assert torch.allclose(ours[-1][1], theirs[-1][1], atol=1e-3)


def test_multipliers_nonnegative_and_grow_only_on_violated_constraints():
    c = DescentConstraints(3, eps=0.1, dual_lr=0.5)
    base = torch.tensor(1.0)
    # layer 1 violates (0.95 > 0.9), layers 2 and 3 satisfy theirs
    lam = c.dual_step(torch.tensor([0.95, 0.5, 0.3]), base)
    assert lam[0] > 0 and lam[1] == pytest.approx(0.0) and lam[2] == pytest.approx(0.0)
    assert lam[0] == pytest.approx(0.5 * (0.95 - 0.9), rel=1e-6)
    for _ in range(20):  # all satisfied: the multiplier decays to 0 and stays there
        lam = c.dual_step(torch.tensor([0.5, 0.3, 0.1]), base)
        assert (lam >= 0).all()
    assert lam.tolist() == pytest.approx([0.0, 0.0, 0.0])


def test_dual_step_is_normalised_by_the_base_loss():
    a = DescentConstraints(1, eps=0.0, dual_lr=1.0)
    b = DescentConstraints(1, eps=0.0, dual_lr=1.0)
    a.dual_step(torch.tensor([2.0]), torch.tensor(1.0))  # relative slack 1
    b.dual_step(torch.tensor([20.0]), torch.tensor(10.0))  # same relative slack, 10x units
    assert float(a.multipliers) == pytest.approx(float(b.multipliers))


def test_resilient_multipliers_stay_bounded_on_infeasible_margins():
    hard = DescentConstraints(1, eps=0.5, dual_lr=1.0)
    soft = DescentConstraints(1, eps=0.5, dual_lr=1.0, resilience=2.0)
    for _ in range(200):  # l_1 = l_0: the 50% margin is never met, g = 0.5
        hard.dual_step(torch.tensor([1.0]), torch.tensor(1.0))
        soft.dual_step(torch.tensor([1.0]), torch.tensor(1.0))
    assert float(hard.multipliers) == pytest.approx(100.0)
    assert float(soft.multipliers) == pytest.approx(2.0 * 0.5, rel=1e-3)  # alpha * g
    assert float(soft.relaxations) == pytest.approx(0.5, rel=1e-3)


def test_eps_zero_satisfied_constraints_leave_the_erm_gradient_unchanged():
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(3))
    c = DescentConstraints(2, eps=0.0, dual_lr=1.0)

    def losses():
        return torch.stack([(w**2).sum() * 0.5, (w**2).sum() * 0.25]), (w**2).sum()

    for _ in range(5):
        layer, base = losses()
        c.dual_step(layer, base)
    assert c.multipliers.tolist() == [0.0, 0.0]
    layer, base = losses()
    (g_ours,) = torch.autograd.grad(c.lagrangian(layer, base), w)
    layer, _ = losses()
    (g_erm,) = torch.autograd.grad(layer[-1], w)
    assert torch.allclose(g_ours, g_erm)


def test_lagrangian_matches_its_formula():
    c = DescentConstraints(2, eps=0.1, dual_lr=1.0)
    c.multipliers.copy_(torch.tensor([0.3, 2.0]))
    layer, base = torch.tensor([0.8, 0.7]), torch.tensor(1.0)
    want = 0.7 + 0.3 * (0.8 - 0.9 * 1.0) + 2.0 * (0.7 - 0.9 * 0.8)
    assert float(c.lagrangian(layer, base)) == pytest.approx(want, rel=1e-6)
    add = DescentConstraints(2, eps=0.1, form="additive")
    assert add.constraint_values(layer, base).tolist() == pytest.approx([-0.1, 0.0], abs=1e-6)


def test_state_dict_round_trip():
    c = DescentConstraints(2, eps=0.1)
    c.dual_step(torch.tensor([1.0, 1.0]), torch.tensor(1.0))
    d = DescentConstraints(2, eps=0.1)
    d.load_state_dict(c.state_dict())
    assert torch.equal(c.multipliers, d.multipliers)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"eps": 1.0}, "eps"),
        ({"eps": -0.1}, "eps"),
        ({"dual_lr": 0.0}, "dual_lr"),
        ({"dual_lr": -1.0}, "dual_lr"),
        ({"form": "ratio"}, "form"),
        ({"resilience": 0.0}, "resilience"),
        ({"n_layers": 0}, "n_layers"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, name):
    args = {"n_layers": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        DescentConstraints(**args)


def test_mismatched_layer_counts():
    c = DescentConstraints(3)
    with pytest.raises(ValueError, match="layer_losses must have shape"):
        c.lagrangian(torch.ones(2), torch.tensor(1.0))
    toy = Toy()
    trainer = PrimalDualTrainer(toy, None, torch.optim.SGD(toy.parameters(), lr=0.1), c, _identity)
    with pytest.raises(ValueError, match="n_layers=3"):
        trainer.step(None, torch.zeros(()))
