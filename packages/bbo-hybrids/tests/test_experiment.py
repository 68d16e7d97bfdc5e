import math

import pytest

pytest.importorskip("ioh")
pytest.importorskip("gymnasium")

from bbo_hybrids.experiment import bbob_run
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("bbo-hybrids", tmp_path)
    assert len(result.claims) == 4
    methods = {row["method"] for row in result.tables[0].rows}
    assert {"ESOVI", "CBOOVI", "cma CMA-ES", "random search (floor)"} <= methods
    policies = {row["policy"] for row in result.tables[1].rows}
    assert "zero policy (floor)" in policies


def test_bbob_run_is_reproducible_and_respects_the_floor():
    a = bbob_run("ESOVI", 1, 5, 1, 0, 500)
    b = bbob_run("ESOVI", 1, 5, 1, 0, 500)
    assert math.isclose(a, b, rel_tol=0, abs_tol=1e-12)
    assert -8.0 - 1e-12 <= a < 3.0
    # the sphere is easy: ESOVI beats random search by orders of magnitude
    assert a < bbob_run("random search (floor)", 1, 5, 1, 0, 500) - 1.0
