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


# ---- import graphs of installed packages: load_graph("imports:<package>") ----------------

import sys  # noqa: E402
import textwrap  # noqa: E402


def _write(root, rel, text=""):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture
def fakepkg(tmp_path, monkeypatch):
    """A package with two labelled subpackages, tests and vendored code to leave out."""
    root = tmp_path / "fakepkg_icml26"
    _write(root, "__init__.py", "from . import alpha\n")
    _write(root, "util.py", "import os\ndef helper(x): return x\n")
    for sub, n in (("alpha", 10), ("beta", 10), ("tiny", 2)):
        _write(root, f"{sub}/__init__.py", "")
        for i in range(n):
            body = "from fakepkg_icml26 import util\n" if i == 0 else f"from .m{i - 1} import f\n"
            _write(root, f"{sub}/m{i}.py", body + f"def f(value_{sub}): return {i}\n")
    _write(root, "beta/m0.py", "from ..alpha import m3\nimport fakepkg_icml26.tiny.m1\n")
    _write(root, "tests/__init__.py", "")
    _write(root, "tests/test_a.py", "from fakepkg_icml26 import alpha\n")
    _write(root, "externals/__init__.py", "")
    _write(root, "externals/six.py", "import fakepkg_icml26\n")
    _write(root, "data/notapackage.py", "import fakepkg_icml26\n")  # no __init__.py
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "cache"))
    yield "fakepkg_icml26"
    sys.modules.pop("fakepkg_icml26", None)


def test_nodes_edges_labels_of_a_package(fakepkg):
    g = load_graph(f"imports:{fakepkg}")
    check_structure(g)
    names = set(g.node_names)
    assert len(names) == 2 + 3 + 22  # root, util, 3 subpackage inits, 22 modules
    assert not any(".tests" in n or ".externals" in n or ".data" in n for n in names)
    assert g.label_names == ("alpha", "beta", "other")  # 'tiny' has < 10 modules
    label = {n: g.label_names[y] for n, y in zip(g.node_names, g.y, strict=True)}
    assert label["fakepkg_icml26.alpha.m3"] == "alpha" and label["fakepkg_icml26.util"] == "other"
    assert label["fakepkg_icml26.tiny.m0"] == "other" and label["fakepkg_icml26"] == "other"
    idx = {n: i for i, n in enumerate(g.node_names)}
    pairs = set(zip(g.edge_index[0].tolist(), g.edge_index[1].tolist(), strict=True))

    def edge(a, b):
        return (idx[f"fakepkg_icml26.{a}"], idx[f"fakepkg_icml26.{b}"]) in pairs

    assert edge("beta.m0", "alpha.m3")  # relative import across subpackages
    assert edge("beta.m0", "tiny.m1")  # absolute dotted import
    assert edge("alpha.m0", "util") and edge("alpha.m2", "alpha.m1")
    util = idx["fakepkg_icml26.util"]
    neighbours = {g.node_names[b] for a, b in pairs if a == util}
    assert neighbours == {"fakepkg_icml26.alpha.m0", "fakepkg_icml26.tiny.m0"}  # not os
    assert g.meta["package"] == fakepkg and "not a citation graph" in g.meta["description"]
    col = g.feature_names.index("helper") if "helper" in g.feature_names else None
    assert col is None or g.x[idx["fakepkg_icml26.util"], col] == 1.0  # exact: 0/1 indicator


def test_import_graph_is_cached_per_version(fakepkg, tmp_path, monkeypatch):
    first = load_graph(f"imports:{fakepkg}")
    files = list((tmp_path / "cache").rglob("graph-imports-*"))
    assert len(files) == 1
    from icml26_core.datasets import graphs

    with monkeypatch.context() as m:
        m.setattr(graphs, "_build_package_graph", lambda p: pytest.fail("rebuilt"))
        again = load_graph(f"imports:{fakepkg}")
    np.testing.assert_array_equal(again.edge_index, first.edge_index)
    # no distribution metadata: the key follows the files, so an edited module rebuilds
    _write(tmp_path / fakepkg, "util.py", "import os\nfrom .alpha import m5\n")
    changed = load_graph(f"imports:{fakepkg}")
    assert changed.num_edges == first.num_edges + 1  # the new edge util -- alpha.m5
    assert len(list((tmp_path / "cache").rglob("graph-imports-*"))) == 2


def test_a_real_installed_package():
    g = load_graph("imports:rich")
    check_structure(g)
    assert g.num_nodes > 50 and g.meta["distribution"] == "rich" and g.meta["package_version"]


def test_bad_packages():
    with pytest.raises(ValueError, match="not installed"):
        load_graph("imports:no_such_package_here")
    with pytest.raises(ValueError, match="single module or a namespace package"):
        load_graph("imports:typing_extensions")
    with pytest.raises(ValueError, match="top-level package name"):
        load_graph("imports:scipy.linalg")
