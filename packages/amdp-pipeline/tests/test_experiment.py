import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("amdp-pipeline", tmp_path)
    assert len(result.claims) == 4
    names = {row["schedule"] for row in result.tables[0].rows}
    assert {"untrained (floor)", "1F1B", "AMDP", "PipeDream (async)", "PipeDream-2BW"} <= names
