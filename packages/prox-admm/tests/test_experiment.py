import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("prox-admm", tmp_path)
    assert result.claims
