from icml26_core.testing import check_experiment


def test_experiment_smoke(tmp_path):
    result = check_experiment("compressed-oja", tmp_path)
    names = [c.statement.split(":")[0] for c in result.claims]
    assert names == [
        "Rate in t",
        "Three powers of d",
        "The cost of compression on real data",
        "Bounded constant",
    ]
    floors = [r for t in result.tables for r in t.rows if str(r["method"]).startswith("floor")]
    assert floors
