import math

import numpy as np
import pytest
import torch
from geometry_misalignment.experiment import _wine_whitened, misaligned_problem
from icml26_core.testing import check_experiment


@pytest.mark.parametrize("kappa", [1.0, 1e2, 1e6])
def test_misaligned_problem_has_the_stated_condition_number(kappa):
    X = _wine_whitened()
    np.testing.assert_allclose(X.T @ X / len(X), np.eye(X.shape[1]), atol=1e-10)
    Z, Y, W0 = misaligned_problem(X, kappa, seed=3)
    assert float(torch.linalg.cond(Z.T @ Z / len(Z))) == pytest.approx(kappa, rel=1e-6)
    # the start is at the same intrinsic (output-space) distance for every kappa
    Z1, Y1, W1 = misaligned_problem(X, 1.0, seed=3)
    gap = float(((Z @ W0 - Y) ** 2).mean())
    gap1 = float(((Z1 @ W1 - Y1) ** 2).mean())
    assert math.isclose(gap, gap1, rel_tol=1e-6)


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("geometry-misalignment", tmp_path)
    assert len(result.claims) == 6
    wng = result.data["part1_wine"]["iters"]["wng"]
    assert all(v is not None for vs in wng.values() for v in vs)
    # part 1's tables time every run; the overhead table has its floor row first
    cpu = result.data["part1_wine"]["cpu_s"]
    assert all(t > 0 for vs in cpu["wng"].values() for t in vs)
    t1 = next(t for t in result.tables if t.title.startswith("part 1 (wine,"))
    assert {"GD CPU s", "Adam CPU s", "WNG CPU s", "calibrated CPU s"} <= set(t1.columns)
    t_time = next(t for t in result.tables if t.title.startswith("overhead"))
    assert t_time.column("method") == ["no update (floor)", "Adam", "calibrated"]
    assert t_time.column("x Adam")[1] == pytest.approx(1.0)
