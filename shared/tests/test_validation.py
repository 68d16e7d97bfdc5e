import math

import numpy as np
import pytest
from icml26_core.validation import check_choice, check_float, check_int


def test_check_int_accepts_python_and_numpy_integers():
    assert check_int("n", 3, low=1) == 3
    out = check_int("n", np.int64(7), low=0, high=10)
    assert out == 7 and type(out) is int


@pytest.mark.parametrize("bad", [True, 2.0, "3", None, np.float64(1.0)])
def test_check_int_rejects_non_integers_with_type_error(bad):
    with pytest.raises(TypeError, match="n_iter must be an integer"):
        check_int("n_iter", bad)


def test_check_int_range_errors_name_the_bounds():
    with pytest.raises(ValueError, match=r"n must be an integer >= 1, got 0"):
        check_int("n", 0, low=1)
    with pytest.raises(ValueError, match=r">= 1 and <= 5, got 6"):
        check_int("n", 6, low=1, high=5)


def test_check_float():
    assert check_float("lr", 1) == pytest.approx(1.0)
    assert check_float("lr", np.float32(0.5), low=0, high=1) == pytest.approx(0.5)
    assert check_float("lr", np.array(0.25)) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="lr must be > 0"):
        check_float("lr", 0.0, low=0.0, low_inclusive=False)
    with pytest.raises(ValueError, match="finite"):
        check_float("lr", math.nan)
    with pytest.raises(ValueError, match="finite"):
        check_float("lr", math.inf)
    assert math.isinf(check_float("tol", math.inf, finite=False))
    with pytest.raises(TypeError, match="real number"):
        check_float("lr", "fast")
    with pytest.raises(TypeError, match="real number"):
        check_float("lr", False)


def test_check_choice():
    assert check_choice("reduction", "sum", ("mean", "sum")) == "sum"
    with pytest.raises(ValueError, match="reduction must be one of 'mean', 'sum'; got 'max'"):
        check_choice("reduction", "max", ("mean", "sum"))
