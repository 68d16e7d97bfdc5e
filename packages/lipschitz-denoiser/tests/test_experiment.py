import pytest
from icml26_core.testing import check_experiment


@pytest.mark.slow  # ~30 s of CPU (training four networks, BM3D-free); integration-tests run it too
def test_experiment_smoke(tmp_path):
    result = check_experiment("lipschitz-denoiser", tmp_path)
    assert len(result.claims) == 3
    lip = result.tables[2]
    ours = lip.rows[0]
    assert ours["certified bound"] <= 1.0
    assert ours["adversarial lower bound"] <= ours["certified bound"] * (1 + 1e-9)
    assert all(c.verdict in ("holds", "does not hold", "inconclusive") for c in result.claims)
    assert result.claims[1].parts  # competitiveness: one non-inferiority part per task
    assert (tmp_path / "pnp_residuals.png").is_file()
