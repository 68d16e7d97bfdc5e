from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("poke-smc", tmp_path)
    assert len(result.claims) == 3
    corr, poke, strategies = result.tables
    assert {r["task"] for r in corr.rows} == {r["task"] for r in poke.rows}
    for r in poke.rows:
        assert r["RMSE POKE"] >= 0 and r["RMSE greedy"] >= 0
    methods = {r["method"] for r in strategies.rows}
    assert {"greedy confidence", "best-of-N", "POKE-SMC", "greedy random"} <= methods
    for r in strategies.rows:
        assert r["NFE"] == r["steps"] * r["particles"]
        assert 0.0 <= r["accuracy"] <= r["token accuracy"] <= 1.0
    assert (tmp_path / "accuracy_vs_nfe.png").is_file()
