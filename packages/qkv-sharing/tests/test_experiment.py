import pytest
from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("qkv-sharing", tmp_path)
    primary, second, cache, conversion, vision = result.tables
    assert [r["model"] for r in primary.rows][-1].startswith("floor")
    assert len(primary.rows) == 5 + 1 and len(second.rows) == 2 + 1
    assert all(row["measured = formula"] for row in cache.rows)
    reductions = {(r["sharing"], r["heads"]): r["reduction"] for r in cache.rows}
    assert reductions[("Q-K=V", "MHA")] == pytest.approx(0.5, abs=1e-12)
    assert reductions[("Q-K=V", "MQA")] == pytest.approx(1 - 1 / 32, abs=1e-12)
    assert reductions[("Q=K-V", "MHA")] == pytest.approx(0.0, abs=1e-12)
    assert len(conversion.rows) == 4
    assert vision.rows[-1]["variant"].startswith("floor")
    assert len(result.claims) == 4
    # the cache claims are exact byte counts; with one seed the statistical ones cannot decide
    assert result.claims[1].verdict == "holds"
    assert result.claims[2].verdict == "inconclusive"
