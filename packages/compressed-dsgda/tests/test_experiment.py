import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("compressed-dsgda", tmp_path)
    assert len(result.claims) == 7
    assert {c.verdict for c in result.claims} <= {"holds", "does not hold", "inconclusive"}
