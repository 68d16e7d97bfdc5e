import numpy as np
import pytest
from dream_gnn.experiment import weight_auc
from icml26_core.testing import check_experiment


def test_weight_auc():
    assert weight_auc(np.array([3.0, 2.0, 1.0]), np.array([True, True, False])) == pytest.approx(1)
    assert weight_auc(np.array([1.0, 2.0]), np.array([True, False])) == pytest.approx(0.0)
    assert weight_auc(np.array([1.0, 1.0]), np.array([True, False])) == pytest.approx(0.5)


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("dream-gnn", tmp_path)
    assert len(result.claims) == 4
    assert "majority class (floor)" in result.tables[1].columns
