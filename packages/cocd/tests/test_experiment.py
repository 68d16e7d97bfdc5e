import numpy as np
import pytest
from cocd import experiment
from icml26_core.testing import check_experiment


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("cocd", tmp_path)
    assert len(result.claims) == 5
    names = {row["method"] for row in result.tables[0].rows}
    assert {"CoCD", "BCCD", "SPSA (k directions)", "floor: no step (initial loss)"} <= names
    assert result.claims[2].holds  # queries per step are k + 1 at both sizes


def test_batched_mlp_matches_the_module():
    import torch
    import torch.nn.functional as F

    model = experiment._mlp(64, 0, torch.float64)
    xb = torch.rand(16, 64, dtype=torch.float64)
    yb = torch.randint(0, 10, (16,))
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    X = torch.stack([flat, flat + 0.01])
    f = experiment._batched_mlp(64, xb, yb)(X)
    with torch.no_grad():
        assert float(f[0]) == pytest.approx(float(F.cross_entropy(model(xb), yb)), abs=1e-12)
        for p in model.parameters():
            p.add_(0.01)
        assert float(f[1]) == pytest.approx(float(F.cross_entropy(model(xb), yb)), abs=1e-12)


def test_train_counts_equal_queries():
    data = experiment._data()
    assert len(data["ytr"]) + len(data["yte"]) == 1797
    assert np.bincount(data["yte"]).min() >= 30
    r = experiment._train("BCCD", 1.0, 0, data, queries=33 * 4, batch=16)
    assert r["queries"] == 33 * 4 and r["steps"] == 4
    assert r["final"] < r["init"] + 0.5
