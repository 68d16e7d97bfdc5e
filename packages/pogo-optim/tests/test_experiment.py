import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow  # ~20 s of CPU (four parts, seven methods); the wheel smoke runs it too
def test_experiment_smoke(tmp_path):
    result = check_experiment("pogo-optim", tmp_path)
    titles = " ".join(t.title for t in result.tables)
    assert "Online PCA" in titles and "Procrustes" in titles
    orth = next(c for c in result.claims if "orthogonality" in c.statement)
    assert orth.values["max_orth_error_pogo"] < 1e-3  # measured, whatever the verdict
    assert result.figures == ["pogo_optim.png"]
