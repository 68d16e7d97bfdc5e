"""Power-grid test cases bundled with pandapower (IEEE and PEGASE).

``load_power_grid(name)`` returns a fresh ``pandapowerNet``: tables ``net.bus``,
``net.line``, ``net.trafo``, ``net.gen``, ``net.load``, ``net.ext_grid`` (pandas
DataFrames; voltages in kV, powers in MW / MVAr, impedances in ohm per km for lines).
Run a power flow with ``pandapower.runpp(net)`` (results in ``net.res_bus.vm_pu`` ...)
or an optimal power flow with ``pandapower.runopp(net)``.

| name | buses | lines | transformers | generators | loads |
| --- | --- | --- | --- | --- | --- |
| case9 | 9 | 9 | 0 | 2 | 3 |
| case14 | 14 | 15 | 5 | 4 | 11 |
| case30 | 30 | 41 | 0 | 5 | 20 |
| case39 | 39 | 35 | 11 | 9 | 21 |
| case57 | 57 | 63 | 17 | 6 | 42 |
| case89pegase | 89 | 160 | 50 | 11 | 29 |
| case118 | 118 | 173 | 13 | 53 | 99 |
| case300 | 300 | 283 | 128 | 68 | 193 |
| case1354pegase | 1354 | 1751 | 240 | 259 | 621 |
| case2869pegase | 2869 | 4051 | 531 | 509 | 1311 |
| case9241pegase | 9241 | 13797 | 2252 | 1444 | 4461 |

Each case also has one external grid (slack bus). Source: pandapower (BSD-3-Clause),
converted from MATPOWER's case files (BSD-3-Clause); PEGASE cases by Josz, Fliscounakis,
Maeght, Panciatici (2016), CC BY 4.0.
"""

from __future__ import annotations

from typing import Any

from icml26_core._lazy import require
from icml26_core.datasets._registry import DatasetInfo, dataset_info, register

__all__ = ["load_power_grid"]

# name -> (buses, lines, transformers, generators, loads)
_CASES: dict[str, tuple[int, int, int, int, int]] = {
    "case9": (9, 9, 0, 2, 3),
    "case14": (14, 15, 5, 4, 11),
    "case30": (30, 41, 0, 5, 20),
    "case39": (39, 35, 11, 9, 21),
    "case57": (57, 63, 17, 6, 42),
    "case89pegase": (89, 160, 50, 11, 29),
    "case118": (118, 173, 13, 53, 99),
    "case300": (300, 283, 128, 68, 193),
    "case1354pegase": (1354, 1751, 240, 259, 621),
    "case2869pegase": (2869, 4051, 531, 509, 1311),
    "case9241pegase": (9241, 13797, 2252, 1444, 4461),
}

for _name, (_b, _l, _t, _g, _d) in _CASES.items():
    _pegase = "pegase" in _name
    register(
        DatasetInfo(
            name=_name,
            kind="power_grid",
            loader="icml26_core.datasets.grids.load_power_grid",
            extra="data-grids",
            modules=("pandapower",),
            shape=f"{_b} buses, {_l} lines, {_t} trafos, {_g} gens, {_d} loads",
            source=f"pandapower (pandapower.networks.{_name}, bundled); MATPOWER"
            + (" / PEGASE" if _pegase else ""),
            license="CC BY 4.0 (PEGASE data); pandapower and MATPOWER BSD-3-Clause"
            if _pegase
            else "BSD-3-Clause (pandapower, MATPOWER); IEEE test case data public",
            description=("PEGASE European transmission grid" if _pegase else "IEEE test case")
            + f" with {_b} buses",
        )
    )


def load_power_grid(name: str) -> Any:
    """Load a bundled power-grid case as a fresh ``pandapowerNet``.

    Args:
        name: Case name, case-insensitive: ``"case9"``, ``"case14"``, ..., ``"case9241pegase"``
            (see this module's table or ``icml26 data list --kind power_grid``).

    Returns:
        A ``pandapowerNet`` (mutable; each call returns a new one). Counts of its
        ``bus``, ``line``, ``trafo``, ``gen`` and ``load`` tables are in the table above.

    Raises:
        ValueError: If ``name`` is unknown (lists the known ones).
        icml26_core._lazy.MissingExtraError: If pandapower is not installed
            (``pip install 'icml26-core[data-grids]'``).

    Example:
        >>> import pandapower
        >>> net = load_power_grid("case14")
        >>> pandapower.runpp(net)
        >>> round(float(net.res_bus.vm_pu.iloc[0]), 2)
        1.06
    """
    info = dataset_info("power_grid", name)
    networks = require("pandapower.networks", "data-grids")
    net = getattr(networks, info.name)()
    expected = _CASES[info.name]
    got = (len(net.bus), len(net.line), len(net.trafo), len(net.gen), len(net.load))
    if got != expected:
        raise RuntimeError(
            f"{info.name}: pandapower returned (buses, lines, trafos, gens, loads) = {got}, "
            f"expected {expected}; the installed pandapower changed the case"
        )
    return net
