"""Flow policy: gradients, solvers, chunks, the bimodal fit, bad input."""

import pytest
import torch
from rfo_flowpolicy import FlowPolicy, GaussianPolicy, Pendulum, entropy_estimate, stability_loss
from torch.func import functional_call


@pytest.mark.parametrize("solver", ["euler", "midpoint"])
def test_gradients_through_the_flow_match_finite_differences(solver):
    torch.manual_seed(0)
    pi = FlowPolicy(3, 2, hidden=(8, 8), steps=3, solver=solver, chunk=2).double()
    obs = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    noise = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda o, z: pi(o, z), (obs, noise))
    params = dict(pi.named_parameters())
    for name in ("in_x.weight", "in_obs.weight", "net.2.weight"):
        w = params[name].detach().clone().requires_grad_(True)
        torch.autograd.gradcheck(
            lambda w_, n=name: functional_call(
                pi, {**params, n: w_}, (obs.detach(), noise.detach())
            ),
            (w,),
        )


def test_gradient_through_flow_and_dynamics_matches_finite_differences():
    torch.manual_seed(1)
    pi = FlowPolicy(3, 1, hidden=(8,), steps=2, action_low=-2.0, action_high=2.0).double()
    model = Pendulum()
    obs0 = model.observe(torch.tensor([[2.5, 0.1], [1.0, -0.3]], dtype=torch.float64))
    noise = torch.randn(3, 2, 1, dtype=torch.float64)
    w0 = pi.in_x.weight.detach().clone().requires_grad_(True)

    def ret(w):
        obs, total = obs0, 0.0
        for t in range(3):
            a = functional_call(pi, {"in_x.weight": w}, (obs, noise[t]))
            obs, r, _ = model.step(obs, a)
            total = total + r.sum()
        return total

    torch.autograd.gradcheck(ret, (w0,))


def test_euler_and_midpoint_agree_as_steps_grow():
    torch.manual_seed(2)
    pi = FlowPolicy(2, 1, hidden=(16,), steps=64)
    with torch.no_grad():
        pi.net[-1].weight.mul_(30)  # a curved field
    obs, z = torch.randn(16, 2), torch.randn(16, 1)
    fine = pi.generate(obs, z)
    errs = {}
    for solver in ("euler", "midpoint"):
        pi.solver, pi.steps = solver, 4
        errs[solver] = (pi.generate(obs, z) - fine).abs().max().item()
    pi.steps = 64
    assert errs["midpoint"] < errs["euler"]


def test_chunked_shapes_and_box():
    pi = FlowPolicy(3, 2, chunk=4, action_low=[-1.0, 0.0], action_high=[1.0, 5.0])
    a = pi(torch.randn(7, 3) * 10)
    assert a.shape == (7, 4, 2)
    assert (a[..., 0].abs() <= 1).all() and (a[..., 1] >= 0).all() and (a[..., 1] <= 5).all()
    assert pi.act(torch.zeros(3).numpy(), deterministic=True).shape == (4, 2)


def test_flow_policy_fits_a_bimodal_target_gaussian_cannot():
    torch.manual_seed(0)
    n = 1024
    obs = torch.randn(n, 2)
    sign = torch.where(torch.rand(n, 1) < 0.5, -1.0, 1.0)
    target = 0.6 * sign + 0.03 * torch.randn(n, 1)
    pi = FlowPolicy(2, 1, hidden=(64, 64), steps=8)
    opt = torch.optim.Adam(pi.parameters(), lr=3e-3)
    raw = pi.unsquash(target[:, None, :])
    for _ in range(600):
        idx = torch.randint(0, n, (256,))
        loss = pi.flow_matching_loss(obs[idx], raw[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        a = pi(torch.randn(2000, 2))[:, 0]
    near_plus = ((a - 0.6).abs() < 0.2).float().mean().item()
    near_minus = ((a + 0.6).abs() < 0.2).float().mean().item()
    middle = (a.abs() < 0.2).float().mean().item()
    assert near_plus > 0.3 and near_minus > 0.3 and middle < 0.1
    # the best Gaussian (moment matching) puts far more mass between the modes
    g = torch.distributions.Normal(target.mean(), target.std())
    assert (g.cdf(torch.tensor(0.2)) - g.cdf(torch.tensor(-0.2))).item() > 2 * middle + 0.15


def test_regularizers():
    torch.manual_seed(3)
    pi = FlowPolicy(3, 2, hidden=(16,))
    ref = FlowPolicy(3, 2, hidden=(16,))
    ref.load_state_dict(pi.state_dict())
    obs = torch.randn(64, 3)
    # identical fields: the straight-path regression error is what remains (small),
    # a perturbed copy is farther
    same = stability_loss(pi, ref, obs).item()
    with torch.no_grad():
        ref.net[-1].weight.add_(1.0)
    assert stability_loss(pi, ref, obs).item() > same
    # entropy estimate: wide noise > narrow noise, and it has a gradient
    wide, narrow = FlowPolicy(3, 2, noise_scale=1.0), FlowPolicy(3, 2, noise_scale=0.05)
    narrow.load_state_dict(wide.state_dict())
    h_wide = entropy_estimate(wide, obs.repeat(8, 1))
    assert h_wide.item() > entropy_estimate(narrow, obs.repeat(8, 1)).item() + 1.0
    h_wide.backward()
    assert wide.in_x.weight.grad is not None


def test_gaussian_policy_is_reparameterized():
    pi = GaussianPolicy(3, 1, action_low=-2.0, action_high=2.0)
    a = pi(torch.randn(5, 3))
    a.sum().backward()
    assert pi.log_std.grad is not None and a.shape == (5, 1) and (a.abs() <= 2).all()


def test_policies_reject_bad_input():
    pi = FlowPolicy(3, 1)
    with pytest.raises(ValueError, match=r"obs must have shape \(batch, 3\)"):
        pi(torch.zeros(4, 5))
    with pytest.raises(ValueError, match="NaN"):
        pi(torch.tensor([[0.0, float("nan"), 0.0]]))
    with pytest.raises(TypeError, match=r"obs must be a torch\.Tensor"):
        pi([[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="noise must have shape"):
        pi(torch.zeros(4, 3), torch.zeros(4, 2))
    with pytest.raises(ValueError, match="solver"):
        FlowPolicy(3, 1, solver="rk4")
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        FlowPolicy(3, 1, steps=0)
    with pytest.raises(ValueError, match="action_high"):
        GaussianPolicy(3, 1, action_low=1.0, action_high=-1.0)
