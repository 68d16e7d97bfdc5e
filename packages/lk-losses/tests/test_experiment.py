import math

from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("lk-losses", tmp_path)
    assert len(result.claims) == 2
    rows = result.tables[0].rows
    assert {r["loss"] for r in rows} == {"kl", "tv", "log_alpha", "hybrid"}
    for r in rows:
        assert 0.0 <= r["alpha T=1"] <= 1.0 and 0.0 <= r["alpha T=0"] <= 1.0
        assert 1.0 <= r["E tau g=3"] <= 4.0 and 1.0 <= r["E tau g=5"] <= 6.0
        tau = r["tau g=5 T=1"]
        assert math.isnan(tau) or 1.0 <= tau <= 6.0
    assert (tmp_path / "acceptance.png").is_file()
