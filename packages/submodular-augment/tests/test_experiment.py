import pytest
from icml26_core.testing import check_experiment


@pytest.mark.xfail(reason="template: the experiment is not written yet", strict=True)
def test_experiment_smoke(tmp_path):
    result = check_experiment("submodular-augment", tmp_path)
    assert result.claims
