import pytest
from icml26_core.testing import check_experiment
from poke_smc.experiment import BON, CONF, NO_LOOK, RANDOM_FLOOR, SMC, VOTE


@pytest.mark.slow  # ~15 s of CPU (three tasks, 15 strategies); the wheel smoke runs it too
def test_experiment_smoke(tmp_path):
    result = check_experiment("poke-smc", tmp_path)
    assert len(result.claims) == 5
    tuning, selection, poke, strategies, evidence = result.tables
    tasks = {r["task"] for r in strategies.rows}
    assert {r["task"] for r in selection.rows} == tasks == {r["task"] for r in poke.rows}
    assert sum(r["chosen"] for r in tuning.rows) == len(tasks)  # one temperature per task
    for r in poke.rows:
        assert r["RMSE"] >= 0
    assert {r["predictor"] for r in poke.rows} == {"POKE", "greedy estimate", "mean predictor"}
    methods = {r["method"] for r in strategies.rows}
    assert {BON, VOTE, SMC, CONF, NO_LOOK, RANDOM_FLOOR} <= methods
    for r in strategies.rows:
        assert r["NFE"] == r["steps"] * r["particles"]
        assert 0.0 <= r["accuracy"] <= r["token accuracy"] <= 1.0
    assert {r["task"] for r in evidence.rows} == tasks | {"all tasks"}
    assert (tmp_path / "accuracy_vs_nfe.png").is_file()
