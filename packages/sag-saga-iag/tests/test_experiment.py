import numpy as np
from icml26_core.testing import check_experiment
from sag_saga_iag.experiment import _pooled, _window


def test_experiment_smoke(tmp_path):
    result = check_experiment("sag-saga-iag", tmp_path)
    titles = [t.title for t in result.tables]
    assert any("unified bound" in t for t in titles)
    rate, below, nonconvex, dropin = result.claims
    # every rate part is a fitted slope with its interval, over the seeds' epochs
    assert rate.parts and all(p.evidence is not None and p.evidence.n >= 4 for p in rate.parts)
    # the bound check counts runs; its high-probability half is a Wilson interval
    assert below.parts[1].evidence is not None and below.parts[1].evidence.n > 0
    assert nonconvex.parts and dropin.parts
    # the floor rows are in the tables and exceed the bound (the check can fail)
    bound_tab = next(t for t in result.tables if "unified bound" in t.title)
    floors = [r for r in bound_tab.rows if str(r["method"]).startswith("stop at once")]
    assert floors and all(r["max meas/bound"] > 1 for r in floors)
    assert result.figures == ["suboptimality.png"]


def test_rate_window_stops_at_the_rounding_floor():
    rel = np.array([1.0, 1e-3, 1e-6, 1e-9, 1e-12, 1e-15, 0.0])
    assert list(_window(rel)) == [1, 2, 3, 4]
    x, y = _pooled([rel, rel])
    assert x.size == 8 and np.all(y > 0)
