import numpy as np
import pytest
import torch

from td_expstep import ExponentialSchedule, ExponentialStepSize, exponential_step_size, regularization


@pytest.mark.parametrize(("eta0", "T", "beta"), [(0.5, 100, 1.0), (1.0, 1000, 3.0), (0.1, 1, 1.0)])
def test_exponential_endpoints_and_monotone(eta0, T, beta):
    eta = exponential_step_size(np.arange(T + 1), eta0, T, beta)
    assert eta[0] == pytest.approx(eta0)
    assert eta[-1] == pytest.approx(eta0 * beta / T, rel=1e-12)
    if beta < T:
        assert np.all(np.diff(eta) < 0)
    # past the horizon the step stays at its final value
    assert exponential_step_size(2 * T, eta0, T, beta) == pytest.approx(eta[-1])
    # geometric: constant ratio between consecutive steps
    np.testing.assert_allclose(eta[1:] / eta[:-1], (beta / T) ** (1 / T), rtol=1e-10)


def test_schedule_array_eta0_broadcasts():
    s = ExponentialSchedule(np.array([0.1, 1.0]), total_steps=10)
    np.testing.assert_allclose(s(10), [0.01, 0.1])


@pytest.mark.parametrize("bad", [0, -3])
def test_total_steps_below_one_raises(bad):
    with pytest.raises(ValueError, match="total_steps"):
        ExponentialSchedule(0.5, total_steps=bad)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    with pytest.raises(ValueError, match="total_steps"):
        ExponentialStepSize(opt, total_steps=bad)


def test_bad_eta0_and_beta_raise():
    with pytest.raises(ValueError, match="eta0"):
        ExponentialSchedule(0.0, total_steps=10)
    with pytest.raises(ValueError, match="beta"):
        ExponentialSchedule(0.1, total_steps=10, beta=0.0)


def test_torch_scheduler_matches_numpy_and_two_groups():
    p1, p2 = torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([{"params": [p1], "lr": 0.5}, {"params": [p2], "lr": 0.05}])
    sched = ExponentialStepSize(opt, total_steps=50, beta=2.0)
    lrs = []
    for _ in range(60):
        lrs.append([g["lr"] for g in opt.param_groups])
        opt.step()
        sched.step()
    ref = exponential_step_size(np.arange(60)[:, None], np.array([0.5, 0.05]), 50, 2.0)
    np.testing.assert_allclose(np.array(lrs), ref, rtol=1e-12)


def test_torch_scheduler_state_dict_round_trip():
    def make():
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.3)
        return opt, ExponentialStepSize(opt, total_steps=40)

    opt, sched = make()
    for _ in range(17):
        opt.step()
        sched.step()
    state = sched.state_dict()
    opt2, sched2 = make()
    sched2.load_state_dict(state)
    opt2.param_groups[0]["lr"] = sched2.get_last_lr()[0]
    assert sched2.last_epoch == 17  # exact: integer counter
    for _ in range(10):
        opt.step()
        sched.step()
        opt2.step()
        sched2.step()
    assert sched2.get_last_lr()[0] == pytest.approx(sched.get_last_lr()[0], rel=1e-12)


def test_regularization_choices():
    assert regularization(1000) == pytest.approx(np.log(1000) / 1000)
    assert regularization(400, kind="sqrt", c=2.0) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="kind"):
        regularization(10, kind="cubic")
