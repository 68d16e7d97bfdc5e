from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("qkv-sharing", tmp_path)
    lm, vision = result.tables
    assert len(lm.rows) == 12 + 1  # 4 sharings x 3 head layouts, + one 2-D encoding run
    assert all(row["measured = formula"] for row in lm.rows)
    reductions = {(r["sharing"], r["heads"]): r["cache reduction"] for r in lm.rows}
    assert reductions[("Q-K=V", "MHA")] == 0.5
    assert reductions[("Q-K=V", "MQA")] == 1 - 1 / 32
    assert all(0.0 <= acc <= 1.0 for acc in vision.column("digits"))
    assert len(result.claims) == 4
