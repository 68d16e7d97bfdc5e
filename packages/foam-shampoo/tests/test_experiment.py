import math

import pytest
import torch
from foam_shampoo import experiment
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("foam-shampoo", tmp_path)
    assert len(result.claims) == 4
    names = {row["method"] for row in result.tables[0].rows}
    assert {"FOAM", "Shampoo f=1", "adaptive frequency only (ablation)", "floor: no step"} <= names


def test_train_counts_and_target_time():
    cfg = {"hidden": (8,), "steps": 6, "batch": 16, "eval_every": 2}
    data = experiment._data(4)
    assert data["Xtr"].shape == (4000, 49) and data["Xte"].shape == (1000, 49)
    make = experiment._methods()["Shampoo f=1"][1]
    r = experiment._train(make, 1e-3, 0, data, cfg)
    assert len(r["curve_loss"]) == 4 and r["eighs"] == 6 * 4
    assert r["final"] < r["init"] and not r["diverged"]
    assert experiment._time_to(r, r["init"]) == 0.0  # exact: the first curve point is t = 0
    assert experiment._time_to(r, -1.0) is None
    floor = experiment._train(None, 0.0, 0, data, cfg)
    assert floor["final"] == pytest.approx(floor["init"])
    assert floor["time"] == 0.0  # exact: no step is timed


def test_a_peer_that_raises_counts_as_diverged():
    class Broken(torch.optim.SGD):
        def step(self, closure=None):
            raise RuntimeError("linalg.svd: failed to converge")

    cfg = {"hidden": (8,), "steps": 4, "batch": 16, "eval_every": 2}
    r = experiment._train(lambda p, lr: Broken(p, lr=lr), 0.1, 0, experiment._data(4), cfg)
    assert r["diverged"] and math.isinf(r["final"])
