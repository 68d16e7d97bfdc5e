import numpy as np
import pytest
from l0l1_warmup import quartic_descent


def test_the_l0l1_bound_holds_for_x4():
    s = np.linspace(-50, 50, 100001)
    assert np.all(12 * s**2 <= 9 + 4 * s**4 + 1e-9)


def test_adaptive_step_reaches_the_target_and_beats_fixed_steps():
    ours = quartic_descent([10.0], max_iter=20_000)
    assert ours.shape == (1,) and 500 < ours[0] < 5000
    fixed = quartic_descent([10.0], [1e-3, 4e-3, 6e-3], max_iter=20_000)
    assert np.all(fixed > ours[0])
    assert np.isinf(fixed[2])  # above 1/200 it oscillates or diverges from x0 = 10


def test_fixed_step_recursion_by_hand():
    # one step of x - 4 eta x^3 from x = 1 with eta = 0.1 gives 0.6; f = 0.1296
    assert quartic_descent([1.0], [0.1], target=0.13, max_iter=5)[0] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"x0": []}, "x0"),
        ({"x0": [np.inf]}, "x0"),
        ({"x0": [1.0], "step": [0.0]}, "step"),
        ({"x0": [1.0], "step": "cosine"}, "step"),
        ({"x0": [1.0], "target": 0.0}, "target"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        quartic_descent(**kwargs)
