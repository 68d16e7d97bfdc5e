from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("dsgd-topology", tmp_path)
    assert len(result.claims) == 5
    methods = {row["method"] for row in result.tables[1].rows}
    assert {"ring", "complete", "centralized SGD (batch 256)", "zero model (floor)"} <= methods
    floor = next(r for r in result.tables[1].rows if r["method"] == "zero model (floor)")
    assert abs(floor["train loss"] - 2.302585) < 1e-4  # ln 10
