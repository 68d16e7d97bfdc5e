import dataclasses

import numpy as np
import pytest
from icml26_core import RunContext
from icml26_core.testing import check_experiment
from stochastic_path_follower import experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("stochastic-path-follower", tmp_path)
    assert len(result.claims) == 3
    names = set(result.tables[0].column("method"))
    assert {"online SGD", "LSTM optimizer", "floor: zero decision"} <= names
    assert "prediction-correction (tvopt)" in names
    assert result.figures == ["accuracy_vs_t.png"]


def test_image_rows_drift_and_shape():
    rows = experiment.image_rows("page", 64)
    assert rows.shape == (191, 64) and rows.min() >= 0.0 and rows.max() <= 1.0
    drift = np.linalg.norm(np.diff(rows, axis=0), axis=1) / np.linalg.norm(rows[:-1], axis=1)
    assert 0.03 < np.median(drift) < 0.13  # the issue's 3-13% per step


def test_scales_have_the_issues_sizes():
    default, full = experiment.config("default"), experiment.config("full")
    assert default.dims == (64, 128, 256, 512) and default.widths == (16, 64, 256)
    assert default.train_seeds == 5  # the issue's "5 seeds": 5 retrainings of every model
    assert full.dims == (64, 128, 256, 512, 1024, 1411) and full.train_seeds == 20
    assert {"hubble_deep_field", "retina"} <= set(full.test_images)
    assert full.drifts == experiment.DRIFTS and len(full.drifts) == 4
    # the widest image really is 1411 pixels wide: d = 1411 resamples nothing away
    assert experiment.image_rows("retina", 1411).shape == (1411, 1411)


@pytest.mark.parametrize("process", experiment.DRIFTS)
def test_angle_processes_stay_on_the_grid(process):
    a = experiment.angle_path(process, 300, 3)
    assert a.shape == (300,) and a.dtype.kind == "i" and a.min() >= 0 and a.max() <= 90
    np.testing.assert_allclose(a, np.round(a))
    step = np.abs(np.diff(a))
    if process == "jumps":
        assert 0 < np.count_nonzero(step) < 40  # piecewise constant
    elif process == "sine":
        assert a.max() - a.min() > 80  # sweeps the range
    with pytest.raises(ValueError, match="process"):
        experiment.angle_path("spiral", 3, 0)


@pytest.mark.slow
def test_full_scale_code_path_at_a_tiny_size(tmp_path):
    """`--scale full` (wider images, 4 drift processes, seeds) at tiny sizes."""
    cfg = dataclasses.replace(
        experiment.config("full"),
        K=6,
        dims=(64, 128),
        widths=(16, 64),
        epochs=1,
        unroll=4,
        train_seeds=2,
        logit_walks=1,
        steps_t=2,
        time_repeats=3,
        td_epochs=1,
    )
    ctx = RunContext(scale="full", out_dir=tmp_path)
    result = experiment.run(ctx, cfg)
    ls, lg = result.tables[0], result.tables[1]
    assert "retina" in ls.title and "hubble_deep_field" in ls.title
    assert ls.rows[0]["n"] == 5 * 2  # 5 images x 2 training seeds
    assert set(lg.column("drift")) == set(experiment.DRIFTS)
    assert len(result.claims) == 3 and (tmp_path / "accuracy_vs_t.png").is_file()
