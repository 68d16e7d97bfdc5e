import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow  # about 30 s of CPU at smoke scale: over the 30 s budget under load
def test_experiment_smoke(tmp_path):
    result = check_experiment("gradvar-bco", tmp_path)
    assert len(result.claims) == 4
