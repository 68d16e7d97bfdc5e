import pytest

pytest.importorskip("pytorch_warmup")

from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("l0l1-warmup", tmp_path)
    assert len(result.claims) == 4
    names = {row["method"] for row in result.tables[0].rows}
    assert {"untrained (floor)", "none", "UntunedLinearWarmup", "RAdam"} <= names
