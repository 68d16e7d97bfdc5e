from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("enmf", tmp_path)
    assert len(result.claims) == 5
    assert {c.verdict for c in result.claims} <= {"holds", "does not hold", "inconclusive"}
    table = result.tables[0]
    # errors are relative, in [0, 1] (1: no iterate finished within the budget)
    for row in table.rows:
        for problem in [c for c in table.columns if c not in ("method", "n")]:
            assert 0.0 <= row[problem] <= 1.0
    # the floors are in the summary table
    assert any("stop at once" in row["method"] for row in result.tables[1].rows)
    assert (tmp_path / "error_vs_time.png").is_file()
