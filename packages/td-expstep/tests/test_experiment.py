import pytest

pytest.importorskip("gymnasium")

from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("td-expstep", tmp_path)
    assert len(result.claims) == 4
    names = {row["method"] for row in result.tables[1].rows}
    assert {"exponential", "zero (floor)", "LSTD", "1/t, omega-based"} <= names
