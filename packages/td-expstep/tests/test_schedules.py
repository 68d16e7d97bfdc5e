import numpy as np
import pytest
from td_expstep import ExponentialSchedule, exponential_step_size, regularization


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


def test_total_steps_below_one_raises():
    for bad in (0, -3):
        with pytest.raises(ValueError, match="total_steps"):
            ExponentialSchedule(0.5, total_steps=bad)


def test_bad_eta0_and_beta_raise():
    with pytest.raises(ValueError, match="eta0"):
        ExponentialSchedule(0.0, total_steps=10)
    with pytest.raises(ValueError, match="beta"):
        ExponentialSchedule(0.1, total_steps=10, beta=0.0)


def test_regularization_choices():
    assert regularization(1000) == pytest.approx(np.log(1000) / 1000)
    assert regularization(400, kind="sqrt", c=2.0) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="kind"):
        regularization(10, kind="cubic")
