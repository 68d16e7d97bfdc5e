from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("enmf", tmp_path)
    assert len(result.claims) == 3
    table = result.tables[0]
    # errors are relative (in [0, 1]); inf means no iterate finished within the budget
    for row in table.rows:
        for method in ("eNMF", "sklearn cd (nndsvda)", "HALS (nndsvda)"):
            assert 0.0 <= row[method] <= 1.0 or row[method] == float("inf")
    assert (tmp_path / "error_vs_time.png").is_file()
