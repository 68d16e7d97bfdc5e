import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("deepwalk-sgns", tmp_path)
    names = [c.statement.split(":")[0] for c in result.claims]
    assert names == [
        "Alignment",
        "Small initialisation aligns better",
        "Cluster recovery",
        "Spectral gap",
    ]
    floors = [
        r for t in result.tables for r in t.rows if str(r.get("method", "")).startswith("floor")
    ]
    assert floors
