import pytest
from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("smave", tmp_path)
    assert len(result.claims) == 4
    assert result.figures == ["smave.png"]
    # every verdict comes from the core's statistics: evidence or statistical parts
    recovery, opg, rmave, cost = result.claims
    assert recovery.evidence is not None and "ratio" in recovery.evidence.effect_name
    assert recovery.evidence.n == len(recovery.values["SMAVE"])
    for claim in (opg, rmave, cost):
        assert claim.parts
    assert (
        cost.parts[1].evidence.threshold == pytest.approx(100.0)
        and cost.parts[0].values["seeds"] == 2
    )
    # the floors are in the tables
    synth, cost_table, _, err, _ = result.tables
    assert {"random subspace", "start only"} <= set(synth.columns)
    assert "start only dist" in cost_table.columns
    assert {"mean predictor", "no reduction"} <= set(err.columns)
    row = err.rows[0]
    assert row["SMAVE"] < row["mean predictor"]
