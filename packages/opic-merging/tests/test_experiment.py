import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow  # a tiny random Llama fine-tuned on 2 tasks: minutes on 2 shared cores
def test_experiment_smoke(tmp_path):
    result = check_experiment("opic-merging", tmp_path)
    names = [c.statement for c in result.claims]
    assert len(names) == 6
    labels = next(c for c in result.claims if "no labeled" in c.statement)
    assert labels.holds
