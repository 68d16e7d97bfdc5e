import pytest

pytest.importorskip("scipy")
pytest.importorskip("sklearn")
pytest.importorskip("mlxtend")

from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("paso-optim", tmp_path)
    assert len(result.claims) == 5
    methods = {row["method"] for row in result.tables[0].rows}
    assert {"untrained (floor)", "sequential Adam", "PASO P=8 tol=1e-09"} <= methods
    exact = result.claims[2]
    assert exact.verdict == "holds"  # tol = 0 is the sequential trajectory (the theorem)
