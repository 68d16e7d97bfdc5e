import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("flow-optimizer", tmp_path)
    assert len(result.claims) == 4
