import pytest

pytest.importorskip("transformers")
pytest.importorskip("pyrit", reason="AdvBench ships in the pyrit wheel")

from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("submodular-augment", tmp_path)
    assert len(result.claims) == 4
    methods = {row["method"] for row in result.tables[0].rows}
    assert {
        "no augmentation",
        "all transformations",
        "greedy cover",
        "random, greedy size",
        "modular top-k",
    } <= methods
    assert any("floor" in m for m in methods)
