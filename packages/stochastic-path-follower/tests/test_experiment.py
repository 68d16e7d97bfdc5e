import numpy as np
import pytest
from icml26_core.testing import check_experiment
from stochastic_path_follower import experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("stochastic-path-follower", tmp_path)
    assert len(result.claims) == 3
    names = set(result.tables[0].column("method"))
    assert {"online SGD", "LSTM optimizer", "floor: zero decision"} <= names


def test_image_rows_drift_and_shape():
    rows = experiment.image_rows("page", 64)
    assert rows.shape == (191, 64) and rows.min() >= 0.0 and rows.max() <= 1.0
    drift = np.linalg.norm(np.diff(rows, axis=0), axis=1) / np.linalg.norm(rows[:-1], axis=1)
    assert 0.03 < np.median(drift) < 0.13  # the 3-13% per step
