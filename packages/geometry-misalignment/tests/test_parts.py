import math

import numpy as np
import pytest
import torch
from geometry_misalignment import experiment as ex
from geometry_misalignment.sinkhorn import sinkhorn_divergence
from icml26_core import RunContext


def test_held_out_problem_true_map_has_zero_risk():
    X, X_test = ex._split_whitened("wine", 120, 58)
    np.testing.assert_allclose(X.T @ X / len(X), np.eye(13), atol=1e-10)
    M, A, _ = ex._factors(13, 1e4, seed=2)
    Zt, Yt = ex.held_out_problem(X_test, 1e4, seed=2)
    W_star = torch.tensor(np.linalg.solve(M, A))
    np.testing.assert_allclose((Zt @ W_star).numpy(), Yt.numpy(), atol=1e-8)
    Z, _, W0 = ex.misaligned_problem(X, 1e4, seed=2)
    assert float(torch.linalg.cond(Z.T @ Z / len(Z))) == pytest.approx(1e4, rel=1e-6)
    with torch.no_grad():
        assert float(sinkhorn_divergence(Zt @ W_star, Yt, 0.05)) == pytest.approx(0.0, abs=1e-9)
        assert float(sinkhorn_divergence(Zt @ W0, Yt, 0.05)) > 1e-2


def test_mlp_map_starts_near_the_affine_map_and_applies_to_new_points():
    g = torch.Generator().manual_seed(0)
    Z = torch.randn(40, 4, generator=g, dtype=torch.float64)
    Y = Z + 0.3
    W0, b0 = torch.eye(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    r0 = ex._fit_map("adam", Z, Y, W0, b0, 0, adam_lr=0.01, mlp=8)
    # the nonlinear branch starts at scale 1e-2: the start is about the identity
    assert float((r0["mapped"] - Z).abs().max()) < 0.1
    r = ex._fit_map("adam", Z, Y, W0, b0, 5, adam_lr=0.01, mlp=8)
    np.testing.assert_allclose(ex._apply(r, Z, 8).numpy(), r["mapped"].numpy(), atol=1e-12)
    assert len(r["params"]) == 5
    assert r["final_S"] < r0["final_S"]


def test_gd_snapshot_equals_a_separate_equal_budget_run():
    # one GD run gives the iterations to tolerance and the map after the equal budget
    X, _ = ex._split_whitened("wine", 120, 58)
    Z, Y, W0 = ex.misaligned_problem(X, 100.0, seed=1)
    long = ex._fit_map("gd", Z, Y, W0, None, 12, adam_lr=0.0, stop_at_tol=True, snapshot=4)
    short = ex._fit_map("gd", Z, Y, W0, None, 4, adam_lr=0.0)
    assert long["snap_rel"] == pytest.approx(short["final_rel"], rel=1e-9)
    np.testing.assert_allclose(long["snap_W"].numpy(), short["W"].numpy(), atol=1e-12)
    assert len(long["losses"]) == 13  # not stopped (the tolerance is not reached in 12)
    # at kappa = 1 the 1/L step solves it in a step or two: the snapshot is the solution
    Z1, Y1, W01 = ex.misaligned_problem(X, 1.0, seed=1)
    r = ex._fit_map("gd", Z1, Y1, W01, None, 12, adam_lr=0.0, stop_at_tol=True, snapshot=4)
    assert r["iters"] <= 2 and r["snap_rel"] < 1e-8


def test_iters_to_gap_uses_the_best_decrease_of_each_family():
    curves = {"a": [1.0, 0.5, 0.2, 0.2], "b": [1.0, 0.1, 0.0], "m": [2.0, 1.9, 1.8]}
    fam = {"a": "affine", "b": "affine", "m": "MLP"}
    it = ex._iters_to_gap(curves, fam)
    # affine: best 0.0, target 0.01: b reaches it at step 2, a never; MLP: m is its own best
    assert it == {"a": None, "b": 2, "m": 2}
    assert ex._iters_cell([None, None], 3) == "not reached within 3 (0/2)"
    assert ex._iters_cell([2, 4, None], 3) == "3 (2/3)"


def test_tune_lr_skips_the_grid_when_only_preconditioned_steps_are_taken():
    X, _ = ex._split_whitened("wine", 120, 58)
    val = [(*ex.misaligned_problem(X, 1e4, 1000), None)]
    lr, scores = ex._tune_lr("calibrated", val, 3, (1e-2, 1e-1, 1.0))
    assert lr == pytest.approx(1e-2)
    assert list(scores) == [pytest.approx(1e-2)]  # kappa 1e4 > 10: the base lr never acts
    lr, scores = ex._tune_lr("adam", val, 3, (1e-2, 1e-1))
    assert len(scores) == 2
    assert all(math.isfinite(v) for v in scores.values())


class _FullAtSmokeSize(RunContext):
    """The full scale's code path, each size taken at its smoke value; records the full ones."""

    def __init__(self) -> None:
        super().__init__(scale="full")
        self.full_sizes: list[object] = []

    def pick(self, smoke, default, full=None):
        self.full_sizes.append(default if full is None else full)
        return smoke


@pytest.mark.slow
@pytest.mark.parametrize("job", ["digits", "mnist"])
def test_full_scale_path_at_smoke_size(job):
    ctx = _FullAtSmokeSize()
    tables, data = ex._part(job, ctx, [0, 1])
    assert tables
    if job == "digits":
        p = data["part1_digits"]
        assert p["n_train"] == 100  # the smoke size ran ...
        assert (1200, 597) in ctx.full_sizes  # ... where full asks for 1,200 + 597 points
        assert all(v is not None for vs in p["iters"]["wng"].values() for v in vs)
    else:
        assert 1000 in ctx.full_sizes and 200 in ctx.full_sizes  # n and map steps at full
        acc = data["part2"]["accuracy"]["raw"]
        assert all(len(v) == 2 for v in acc.values())


@pytest.mark.slow
def test_part_worker_runs_in_a_spawned_process():
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        tables, data = pool.submit(ex._part_worker, "autompg", ("smoke", "cpu", 0), [0, 1]).result()
    assert "part3" in data and tables


def test_overhead_times_adam_calibrated_and_the_floor_in_the_same_rounds():
    times, steps = ex._overhead(RunContext(scale="smoke"))
    assert steps == 3
    assert set(times) == {"adam", "calibrated", "floor"}
    assert all(len(v) == 2 for v in times.values())  # one time per round each: paired
    assert all(t > 0 for v in times.values() for t in v)


class _ExtraSeedsAtSmokeSize(RunContext):
    """Part 2 at smoke sizes but with both feature regimes and one extra raw seed."""

    def pick(self, smoke, default, full=None):
        if default == ex.EXTRA_SEEDS_RAW and smoke == 0:
            return 1
        if default == ("raw", "standardized"):
            return default
        return smoke


@pytest.mark.slow
def test_part2_extra_seeds_go_to_the_raw_regime_only():
    tables, data = ex._part("mnist", _ExtraSeedsAtSmokeSize(scale="smoke"), [0, 1])
    p = data["part2"]
    assert p["seeds_raw"] == [0, 1, 2] and p["seeds"] == [0, 1]
    assert all(len(v) == 3 for v in p["accuracy"]["raw"].values())
    assert all(len(v) == 2 for v in p["accuracy"]["standardized"].values())
    raw, std = tables
    assert set(raw.column("n")) == {3} and set(std.column("n")) == {2}
