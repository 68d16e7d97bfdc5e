import math

from icml26_core.stats import VERDICTS
from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("bo-stopping", tmp_path)
    level_table = result.tables[0]
    # the floor, then 3 acquisitions x 7 rules (ours, 3 fixed budgets, EI, PI, UCB-LCB)
    assert len(level_table.rows) == 22
    assert level_table.rows[0]["pair"] == "stop at once"
    for row in level_table.rows:
        # f* - best + cost >= the cost of the initial design > 0
        assert math.isfinite(row["regret"]) and row["regret"] > 0
        assert 0 <= row["evaluations"] <= 3
    floor = level_table.rows[0]
    assert floor["evaluations"] == 0 and abs(floor["vs stop at once"]) < 1e-12
    assert len(result.claims) == 5
    assert all(c.verdict in VERDICTS for c in result.claims)
    assert set(result.data["validation_seeds"]).isdisjoint(result.data["test_seeds"])
