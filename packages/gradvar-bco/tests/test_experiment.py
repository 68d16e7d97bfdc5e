from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("gradvar-bco", tmp_path)
    assert len(result.claims) == 7
    assert all(c.verdict in ("holds", "does not hold", "inconclusive") for c in result.claims)
