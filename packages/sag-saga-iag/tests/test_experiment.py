from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("sag-saga-iag", tmp_path)
    names = [t.title for t in result.tables]
    assert any("unified bound" in t for t in names)
    # the claims read measured numbers: every bound ratio is a real measurement
    bound_claim = result.claims[1]
    assert all(v > 0 for v in bound_claim.values.values())
    assert result.figures == ["suboptimality.png"]
