"""Graphs and power grids, with the network off."""

import socket

import numpy as np
import pytest
from icml26_core.datasets import Graph, load_graph, load_power_grid


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def check_structure(g: Graph):
    ei = g.edge_index
    assert ei.dtype == np.int64 and ei.shape == (2, 2 * g.num_edges)
    assert ei.min() >= 0 and ei.max() < g.num_nodes
    assert len(g.node_names) == g.num_nodes
    pairs = set(zip(ei[0].tolist(), ei[1].tolist(), strict=True))
    assert len(pairs) == ei.shape[1], "duplicate edges"
    assert all((v, u) in pairs for u, v in pairs), "undirected graph must list both directions"
    assert all(u != v for u, v in pairs), "self loops"
    A = g.adjacency()
    assert A.shape == (g.num_nodes, g.num_nodes) and abs(A - A.T).sum() == 0
    if g.y is not None:
        assert g.y.dtype == np.int64 and g.y.shape == (g.num_nodes,)
        assert set(np.unique(g.y)) == set(range(len(g.label_names)))
    if g.x is not None:
        assert g.x.dtype == np.float32 and g.x.shape[0] == g.num_nodes
        assert len(g.feature_names) == g.x.shape[1]
    assert g.meta["license"] and g.meta["source"]


NETWORKX = {
    "karate": (34, 78),
    "les_miserables": (77, 254),
    "davis": (32, 89),
    "florentine": (15, 20),
}


@pytest.mark.parametrize("name", sorted(NETWORKX))
def test_networkx_classics_match_networkx(name):
    import networkx as nx

    g = load_graph(name)
    assert (g.num_nodes, g.num_edges) == NETWORKX[name]
    check_structure(g)
    ref = {
        "karate": nx.karate_club_graph,
        "les_miserables": nx.les_miserables_graph,
        "davis": nx.davis_southern_women_graph,
        "florentine": nx.florentine_families_graph,
    }[name]()
    back = g.to_networkx()
    relabelled = nx.relabel_nodes(back, {i: back.nodes[i]["name"] for i in back.nodes})
    assert {frozenset(e) for e in relabelled.edges} == {
        frozenset((str(u), str(v))) for u, v in ref.edges
    }
    if name == "les_miserables":
        assert (
            back.edges[g.node_names.index("Valjean"), g.node_names.index("Javert")]["weight"]
            == ref.edges["Valjean", "Javert"]["weight"]
        )


def test_karate_and_davis_labels():
    g = load_graph("karate")
    assert np.bincount(g.y).tolist() == [17, 17]
    assert g.label_names[g.y[0]] == "Mr. Hi" and g.label_names[g.y[33]] == "Officer"
    d = load_graph("davis")
    assert np.bincount(d.y).tolist() == [18, 14]
    src, dst = d.edge_index
    assert (d.y[src] != d.y[dst]).all()  # bipartite: women attend events


def test_minnesota_road_network():
    import networkx as nx

    g = load_graph("minnesota")
    assert (g.num_nodes, g.num_edges) == (2642, 3304)
    check_structure(g)
    lon, lat = g.x[:, 0], g.x[:, 1]
    assert -98 < lon.min() and lon.max() < -89 and 43 < lat.min() and lat.max() < 50
    assert nx.is_connected(g.to_networkx())


@pytest.fixture(scope="module")
def stdlib():
    return load_graph("stdlib_imports")


def test_stdlib_import_graph_is_cora_like(stdlib):
    check_structure(stdlib)
    names = stdlib.node_names
    assert 500 < stdlib.num_nodes < 1200 and stdlib.num_edges > 1500
    assert "json.decoder" in names and "asyncio.events" in names
    assert not any(n.startswith("test.") or ".tests" in n for n in names)
    x = stdlib.x
    assert x.shape[1] == 1000 and set(np.unique(x)) == {0.0, 1.0}
    assert (x.sum(axis=0) >= 2).all()  # every kept identifier is in >= 2 modules
    assert (x.mean(axis=0) <= 0.5).all()
    label = dict(zip(names, (stdlib.label_names[i] for i in stdlib.y), strict=True))
    assert label["asyncio.events"] == "asyncio" and label["email.utils"] == "email"
    assert label["os"] == "other" and label["json.decoder"] == "other"  # json: < 10 modules
    assert min(np.bincount(stdlib.y)) >= 10


def test_stdlib_edges_are_real_imports(stdlib):
    idx = {n: i for i, n in enumerate(stdlib.node_names)}
    pairs = set(zip(stdlib.edge_index[0].tolist(), stdlib.edge_index[1].tolist(), strict=True))
    # json/__init__.py: `from .decoder import JSONDecoder, JSONDecodeError`
    assert (idx["json"], idx["json.decoder"]) in pairs
    # email/message.py: `from email import utils`
    assert (idx["email.message"], idx["email.utils"]) in pairs
    # `import os` in shutil.py
    assert (idx["shutil"], idx["os"]) in pairs
    # Features are identifiers the module's own source uses.
    import sysconfig
    import tokenize
    from pathlib import Path

    path = Path(sysconfig.get_paths()["stdlib"]) / "json" / "decoder.py"
    with path.open("rb") as fh:
        words = {t.string for t in tokenize.tokenize(fh.readline) if t.type == tokenize.NAME}
    on = {w for w, v in zip(stdlib.feature_names, stdlib.x[idx["json.decoder"]], strict=True) if v}
    assert len(on) > 20 and on <= words


@pytest.mark.slow  # importing torch takes seconds
def test_to_torch_geometric(stdlib):
    pytest.importorskip("torch_geometric")
    import torch

    data = stdlib.to_torch_geometric()
    assert data.num_nodes == stdlib.num_nodes
    assert data.edge_index.dtype == torch.long and data.y.dtype == torch.long
    assert torch.equal(data.edge_index, torch.from_numpy(stdlib.edge_index))
    assert data.x.shape == (stdlib.num_nodes, 1000) and data.is_undirected()
    w = load_graph("les_miserables").to_torch_geometric()
    assert w.edge_weight.shape == (2 * 254,) and w.x is None


def test_unknown_graph():
    with pytest.raises(ValueError, match=r"known: .*karate.*stdlib_imports"):
        load_graph("cora")


# ---- power grids --------------------------------------------------------------------


@pytest.mark.slow  # importing pandapower takes seconds
@pytest.mark.parametrize("name,counts", [("case9", (9, 9, 3)), ("case14", (14, 15, 11))])
def test_small_power_grids(name, counts):
    net = load_power_grid(name)
    assert (len(net.bus), len(net.line), len(net.load)) == counts
    assert len(net.ext_grid) == 1
    net.load["p_mw"] = 0.0  # a fresh copy each call: changing one leaves the next alone
    assert load_power_grid(name).load["p_mw"].sum() > 0


@pytest.mark.slow
def test_power_flow_matches_the_ieee14_solution():
    import pandapower

    net = load_power_grid("case14")
    pandapower.runpp(net)
    # Published IEEE 14-bus solution: bus 14 at 1.036 p.u., -16.03 degrees.
    assert net.res_bus.vm_pu.iloc[13] == pytest.approx(1.036, abs=2e-3)
    assert net.res_bus.va_degree.iloc[13] == pytest.approx(-16.03, abs=0.05)


@pytest.mark.slow
def test_every_power_grid_loads():
    from icml26_core.datasets import list_datasets

    for info in list_datasets("power_grid"):
        net = load_power_grid(info.name)
        assert f"{len(net.bus)} buses" in info.shape


def test_unknown_power_grid():
    with pytest.raises(ValueError, match=r"known: .*case14.*case9241pegase"):
        load_power_grid("case15")
