import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow  # about 20 s of CPU alone; minutes on a loaded 2-core machine
def test_experiment_smoke(tmp_path):
    result = check_experiment("dmol", tmp_path)
    assert len(result.claims) == 4
    assert {c.verdict for c in result.claims} <= {"holds", "does not hold", "inconclusive"}
    growth = result.claims[3].parts[1]
    assert growth.holds  # zero-initialised heads: growing never moves the objective
