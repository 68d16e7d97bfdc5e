import numpy as np
import pytest
from icml26_core.testing import check_experiment
from pmsa_moco.experiment import airport_instances


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("pmsa-moco", tmp_path)
    assert len(result.claims) == 6
    methods = {row["method"] for row in result.tables[0].rows}
    assert {"PMSA", "node-only", "WS-LKH", "random tours (floor)"} <= methods
    # the claims' unit is the training seed: one paired value per seed, each the mean
    # of that seed's model over the test instances
    seeds = result.data["seeds"]
    assert len(seeds) == 2 and len(result.tables[1].rows) == len(seeds)
    for claim in result.claims:
        assert all(len(v) == len(seeds) for v in claim.values.values() if isinstance(v, list))
    per_instance = result.data["hv"]["PMSA"]["n=20"]
    assert np.allclose(
        result.data["seed_hv"]["PMSA"]["n=20"], [np.mean(r) for r in per_instance], atol=1e-12
    )


def test_airport_instances_lie_in_the_unit_square_and_are_disjoint():
    x = airport_instances(3, 20, seed=0)
    assert x.shape == (3, 20, 4)
    assert x.min() >= 0.0 and x.max() <= 1.0 + 1e-6
    for m in range(2):  # each subset touches 0 and (on its longer side) 1
        assert np.allclose(x[:, :, 2 * m : 2 * m + 2].min(1), 0.0)
        assert np.allclose(x[:, :, 2 * m : 2 * m + 2].max((1, 2)), 1.0)
