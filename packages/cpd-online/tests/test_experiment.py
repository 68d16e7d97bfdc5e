import doctest

import cpd_online.cusum
import numpy as np
import pytest
from cpd_online.experiment import _auroc, _f1, _share
from icml26_core.testing import check_experiment


def test_docstring_examples_run():
    failed, attempted = doctest.testmod(cpd_online.cusum)
    assert attempted > 0 and failed == 0


def test_vectorized_metrics_match_sklearn():
    from sklearn.metrics import f1_score, roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 60)
    s = rng.normal(size=60) + y
    assert _auroc(s, y) == pytest.approx(roc_auc_score(y, s))
    assert _f1(s > 0.5, y) == pytest.approx(f1_score(y, s > 0.5))
    idx = rng.integers(0, 60, (7, 60))  # rows of resampled indices, as the bootstrap passes
    rows = [roc_auc_score(y[i], s[i]) for i in idx]
    np.testing.assert_allclose(_auroc(s[idx], y[idx]), rows)
    assert np.isnan(_share(np.ones(3, bool), np.zeros(3, bool)))


@pytest.mark.slow  # loads SmolLM2 and streams ~30 prompts: minutes on a loaded 2-core machine
def test_experiment_smoke(tmp_path):
    result = check_experiment("cpd-online", tmp_path)
    assert len(result.claims) == 7
    assert {r["detector"] for r in result.tables[0].rows} >= {"CPD k=0", "floor: random score"}
