from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("bo-stopping", tmp_path)
    summary = result.tables[0]
    assert len(summary.rows) == 15  # 3 acquisitions x 5 stopping rules
    for row in summary.rows:
        assert row["R/R0"] > 0
