"""Graphs from registry packages and from the Python standard library, in one structure.

``load_graph(name)`` returns a :class:`Graph`: ``edge_index`` int64 (2, n_edge_entries)
(an undirected graph stores each edge in both directions, like torch_geometric),
optional node features ``x`` float32 (num_nodes, num_features), optional node labels
``y`` int64 (num_nodes,), node names, and optional edge weights. ``graph.to_networkx()``
and ``graph.to_torch_geometric()`` convert it (both libraries imported lazily).

| name | nodes | edges | labels | features | carrier (extra) |
| --- | --- | --- | --- | --- | --- |
| karate | 34 | 78 | 2 (club after the split) | none | networkx (data-graphs) |
| les_miserables | 77 | 254, weighted | none | none | networkx (data-graphs) |
| davis | 32 | 89 | 2 (woman / event) | none | networkx (data-graphs) |
| florentine | 15 | 20 | none | none | networkx (data-graphs) |
| minnesota | 2642 | 3304 | none | (2642, 2) longitude, latitude | pygsp (data-graphs) |
| stdlib_imports | 732 (3.11) | 2952 | 13 (package) | 1000 binary | Python's stdlib (none) |
| imports:scipy | 555 | 1632 | 13 + other (subpackage) | 1000 binary | scipy (data-graphs) |
| imports:sympy | 801 | 6545 | 25 + other | 1000 binary | sympy (torch) |
| imports:statsmodels | 453 | 1567 | 13 + other | 1000 binary | statsmodels (data-tabular) |
| imports:sklearn | 278 | 1581 | 8 + other | 1000 binary | scikit-learn (data) |
| imports:torch | 2270 | 11488 | 27 + other | 1000 binary | torch (torch) |

``stdlib_imports`` is a Cora-like citation-style graph built from files every Python
ships: each module of the standard library (tests excluded) is a node, an edge joins
two modules when one imports the other, the label is the top-level package (packages
with fewer than 10 modules, and top-level modules, form the class ``"other"``), and the
features say which of the 1000 most common identifiers (names, attributes, functions,
classes, arguments; those in more than half of the modules are dropped) the module
uses. Its size depends on the Python version; it is cached per version.

``imports:<package>`` generalizes it to any package installed in the environment
(the sizes above are for the versions in the workspace's ``uv.lock``; they change
with the version). These are **code graphs, not citation graphs**: no labelled
citation graph ships offline (Planetoid and the graph-dataset packages on PyPI
download at run time). Nodes are the package's modules, with folders named
``tests``, ``test``, ``testing``, ``_testing``, ``benchmarks`` and vendored code
(``_vendor``, ``vendor``, ``externals``, ``extern``, ``array_api_compat``,
``array_api_extra``, ...) left out; an edge joins two modules when one imports the
other (imports resolved inside the package, relative ones included); the label is
the second-level subpackage (``scipy.linalg._basic`` -> ``linalg``; subpackages of
fewer than 10 modules and modules directly under the package form ``"other"``); the
features follow the stdlib recipe. The graph is built on first use (8 s for sklearn,
78 s for torch on 2 busy cores) and cached per package version, which
``graph.meta["package_version"]`` records.

graspologic's connectomes are not offered: graspologic 3.4 requires numpy < 2, which
would downgrade the whole workspace.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
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

__all__ = ["Graph", "load_graph"]


@dataclass(frozen=True, eq=False)
class Graph:
    """A graph with optional node features, node labels and edge weights.

    Attributes:
        name: Dataset name.
        edge_index: int64 (2, n_entries); column ``k`` is the edge ``edge_index[0, k] ->
            edge_index[1, k]``. An undirected graph lists both directions, so
            ``n_entries == 2 * num_edges``.
        num_nodes: Number of nodes; node ids are 0..num_nodes-1.
        node_names: Name of each node (length num_nodes).
        directed: Whether edges are directed.
        x: float32 (num_nodes, num_features) node features, or None.
        y: int64 (num_nodes,) node labels in 0..len(label_names)-1, or None.
        label_names: Name of each label value, or None.
        feature_names: Name of each feature column, or None.
        edge_weight: float64 (n_entries,), aligned with ``edge_index``, or None.
        meta: ``source``, ``license``, ``description`` and dataset-specific entries.
    """

    name: str
    edge_index: np.ndarray
    num_nodes: int
    node_names: tuple[str, ...]
    directed: bool = False
    x: np.ndarray | None = None
    y: np.ndarray | None = None
    label_names: tuple[str, ...] | None = None
    feature_names: tuple[str, ...] | None = None
    edge_weight: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def num_edges(self) -> int:
        """Number of edges (each undirected edge counted once)."""
        n = self.edge_index.shape[1]
        return n if self.directed else n // 2

    def adjacency(self) -> Any:
        """Adjacency matrix as ``scipy.sparse.csr_array`` (num_nodes, num_nodes), float64.

        Entry (i, j) is the edge weight (1.0 when unweighted); symmetric when undirected.
        """
        sparse = require("scipy.sparse", "data-graphs")
        w = self.edge_weight if self.edge_weight is not None else np.ones(self.edge_index.shape[1])
        n = self.num_nodes
        return sparse.csr_array((w, (self.edge_index[0], self.edge_index[1])), shape=(n, n))

    def to_networkx(self) -> Any:
        """A ``networkx.Graph`` (``DiGraph`` when directed).

        Nodes are 0..num_nodes-1 with attributes ``name`` and, when present, ``y`` (int)
        and ``label`` (str); edges carry ``weight`` when the graph is weighted.
        """
        nx = require("networkx", "data-graphs")
        g = nx.DiGraph() if self.directed else nx.Graph()
        for i, name in enumerate(self.node_names):
            attrs: dict[str, Any] = {"name": name}
            if self.y is not None:
                attrs["y"] = int(self.y[i])
                if self.label_names is not None:
                    attrs["label"] = self.label_names[int(self.y[i])]
            g.add_node(i, **attrs)
        src, dst = self.edge_index
        if self.edge_weight is None:
            g.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
        else:
            g.add_weighted_edges_from(
                zip(src.tolist(), dst.tolist(), self.edge_weight.tolist(), strict=True)
            )
        return g

    def to_torch_geometric(self) -> Any:
        """A ``torch_geometric.data.Data`` on the CPU.

        Fields: ``edge_index`` (long), ``num_nodes``, and when present ``x`` (float32),
        ``y`` (long) and ``edge_weight`` (float32). Move it with ``data.to(device)``.

        Raises:
            icml26_core._lazy.MissingExtraError: If torch / torch_geometric is missing
                (``pip install 'icml26-core[graphs-torch]'``).
        """
        torch = require("torch", "graphs-torch")
        data_mod = require("torch_geometric.data", "graphs-torch")
        kwargs: dict[str, Any] = {
            "edge_index": torch.from_numpy(self.edge_index.astype(np.int64)),
            "num_nodes": self.num_nodes,
        }
        if self.x is not None:
            kwargs["x"] = torch.from_numpy(self.x.astype(np.float32))
        if self.y is not None:
            kwargs["y"] = torch.from_numpy(self.y.astype(np.int64))
        if self.edge_weight is not None:
            kwargs["edge_weight"] = torch.from_numpy(self.edge_weight.astype(np.float32))
        return data_mod.Data(**kwargs)


def _from_edges(
    name: str,
    edges: list[tuple[int, int]],
    num_nodes: int,
    node_names: list[str],
    *,
    weights: list[float] | None = None,
    **kwargs: Any,
) -> Graph:
    """An undirected Graph from a list of undirected edges (each listed once)."""
    src = np.array([u for u, _ in edges], dtype=np.int64)
    dst = np.array([v for _, v in edges], dtype=np.int64)
    edge_index = np.stack([np.concatenate([src, dst]), np.concatenate([dst, src])])
    order = np.lexsort((edge_index[1], edge_index[0]))
    weight = None
    if weights is not None:
        weight = np.concatenate([weights, weights]).astype(np.float64)[order]
    return Graph(
        name=name,
        edge_index=edge_index[:, order],
        num_nodes=num_nodes,
        node_names=tuple(node_names),
        edge_weight=weight,
        **kwargs,
    )


def _networkx_graph(name: str) -> Graph:
    nx = require("networkx", "data-graphs")
    factory = {
        "karate": nx.karate_club_graph,
        "les_miserables": nx.les_miserables_graph,
        "davis": nx.davis_southern_women_graph,
        "florentine": nx.florentine_families_graph,
    }[name]
    g = factory()
    nodes = list(g.nodes)
    index = {v: i for i, v in enumerate(nodes)}
    edges = [(index[u], index[v]) for u, v in g.edges]
    weighted = name in ("karate", "les_miserables")
    weights = [float(d["weight"]) for _, _, d in g.edges(data=True)] if weighted else None
    y = label_names = None
    if name == "karate":
        label_names = ("Mr. Hi", "Officer")
        y = np.array([label_names.index(g.nodes[v]["club"]) for v in nodes], dtype=np.int64)
    elif name == "davis":
        label_names = ("woman", "event")
        y = np.array([g.nodes[v]["bipartite"] for v in nodes], dtype=np.int64)
    return _from_edges(
        name,
        edges,
        len(nodes),
        [str(v) for v in nodes],
        weights=weights,
        y=y,
        label_names=label_names,
    )


def _minnesota(name: str) -> Graph:
    graphs = require("pygsp.graphs", "data-graphs")
    sparse = require("scipy.sparse", "data-graphs")
    import warnings

    with warnings.catch_warnings():
        # pygsp 0.6 builds its Laplacian helpers with an int dtype scipy now warns about.
        warnings.simplefilter("ignore", FutureWarning)
        g = graphs.Minnesota(connected=True)
    upper = sparse.triu(sparse.csr_array(g.W), k=1).tocoo()
    edges = list(zip(upper.row.tolist(), upper.col.tolist(), strict=True))
    names = []
    for i, label in enumerate(np.asarray(g.labels, dtype=object).ravel()):
        arr = np.asarray(label).ravel()
        names.append(str(arr[0]) if arr.size and str(arr[0]) else f"node{i}")
    return _from_edges(
        name,
        edges,
        int(g.N),
        names,
        x=np.asarray(g.coords, dtype=np.float32),
        feature_names=("longitude", "latitude"),
    )


# ---- the standard-library import graph ------------------------------------------------

_SKIP_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}
_N_FEATURES = 1000
_MIN_CLASS_SIZE = 10
_STDLIB_VERSION = 1  # bump when the construction changes


def _stdlib_root() -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["stdlib"])


def _stdlib_modules(root: Path) -> dict[str, Path]:
    return _walk_modules(root, (), _SKIP_DIRS)


def _walk_modules(root: Path, prefix: tuple[str, ...], skip: set[str]) -> dict[str, Path]:
    """Dotted module name -> file, for the ``.py`` files of the packages under ``root``.

    Folders without ``__init__.py`` (data, namespace leftovers) and folders named in
    ``skip`` are not entered; ``prefix`` is prepended to every name.
    """
    mods: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel = here.relative_to(root)
        dirnames[:] = sorted(
            d for d in dirnames if d not in skip and (here / d / "__init__.py").is_file()
        )
        for f in sorted(filenames):
            if not f.endswith(".py"):
                continue
            parts = [*prefix, *rel.parts, *([] if f == "__init__.py" else [f[:-3]])]
            name = ".".join(parts)
            if parts and all(p.isidentifier() for p in parts):
                mods[name] = here / f
    return mods


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``target`` that is a stdlib module."""
    parts = target.split(".")
    for k in range(len(parts), 0, -1):
        cand = ".".join(parts[:k])
        if cand in modules:
            return cand
    return None


def _imports_and_identifiers(
    name: str, path: Path, modules: dict[str, Path]
) -> tuple[set[str], set[str]]:
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return set(), set()
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    targets: set[str] = set()
    idents: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".") if package else []
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for a in node.names:
                targets.add(f"{base}.{a.name}" if base else a.name)
        elif isinstance(node, ast.Name):
            idents.add(node.id)
        elif isinstance(node, ast.Attribute):
            idents.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            idents.add(node.name)
        elif isinstance(node, ast.arg):
            idents.add(node.arg)
    resolved = {r for t in targets if (r := _resolve(t, modules)) and r != name}
    return resolved, idents


def _build_import_graph(
    modules: dict[str, Path], group: Callable[[str], str | None]
) -> dict[str, np.ndarray]:
    """Nodes, import edges, identifier features and labels of a set of modules.

    ``group(name)`` proposes a label (None for "other"); labels with fewer than
    ``_MIN_CLASS_SIZE`` modules join "other".
    """
    names = sorted(modules)
    index = {n: i for i, n in enumerate(names)}
    edges: set[tuple[int, int]] = set()
    bags: list[set[str]] = []
    for n in names:
        targets, idents = _imports_and_identifiers(n, modules[n], modules)
        for t in targets:
            a, b = index[n], index[t]
            edges.add((min(a, b), max(a, b)))
        bags.append(idents)
    df = Counter(w for bag in bags for w in bag)
    keep = [w for w, c in df.items() if c <= len(names) / 2 and c >= 2]
    vocab = sorted(keep, key=lambda w: (-df[w], w))[:_N_FEATURES]
    vocab.sort()
    col = {w: j for j, w in enumerate(vocab)}
    x = np.zeros((len(names), len(vocab)), dtype=np.float32)
    for i, bag in enumerate(bags):
        for w in bag:
            if w in col:
                x[i, col[w]] = 1.0
    groups = [group(n) for n in names]
    top = Counter(g for g in groups if g is not None)
    classes = [*sorted(p for p, c in top.items() if c >= _MIN_CLASS_SIZE), "other"]
    position = {c: k for k, c in enumerate(classes[:-1])}
    other = len(classes) - 1
    y = np.array([other if g is None else position.get(g, other) for g in groups], dtype=np.int64)
    e = np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)
    return {
        "edges": e,
        "x": x,
        "y": y,
        "names": np.array(names, dtype=str),
        "label_names": np.array(classes, dtype=str),
        "feature_names": np.array(vocab, dtype=str),
    }


def _build_stdlib_graph() -> dict[str, np.ndarray]:
    modules = _stdlib_modules(_stdlib_root())

    def top_package(n: str) -> str | None:
        return n.split(".")[0] if "." in n or modules[n].name == "__init__.py" else None

    return _build_import_graph(modules, top_package)


def _graph_from_arrays(name: str, arrays: dict[str, np.ndarray]) -> Graph:
    edges = [(int(a), int(b)) for a, b in arrays["edges"]]
    return _from_edges(
        name,
        edges,
        len(arrays["names"]),
        [str(n) for n in arrays["names"]],
        x=arrays["x"],
        y=arrays["y"],
        label_names=tuple(str(c) for c in arrays["label_names"]),
        feature_names=tuple(str(f) for f in arrays["feature_names"]),
    )


def _stdlib_imports(name: str) -> Graph:
    root = _stdlib_root()
    key = (
        f"graph-stdlib-{sys.implementation.name}-{sys.version.split()[0]}-{root}-v{_STDLIB_VERSION}"
    )
    return _graph_from_arrays(name, cached_arrays(key, _build_stdlib_graph))


# ---- import graphs of installed packages ------------------------------------------------

# Folders left out of a package's import graph: tests, test frameworks, vendored code.
_PACKAGE_SKIP = _SKIP_DIRS | {
    "testing",
    "_testing",
    "conftest",
    "benchmarks",
    "_vendor",
    "vendor",
    "vendored",
    "_vendored",
    "externals",
    "_externals",
    "extern",
    "_extern",
    "array_api_compat",
    "array_api_extra",
}
_IMPORTS_VERSION = 1  # bump when the construction changes
# import name -> (extra that installs it, shape measured with the versions of uv.lock,
# licence of its source files)
_IMPORT_PACKAGES = {
    "scipy": (
        "data-graphs",
        "555 nodes, 1632 edges, 13 classes + other (scipy 1.17.1)",
        "BSD-3-Clause (SciPy)",
    ),
    "sympy": (
        "torch",
        "801 nodes, 6545 edges, 25 classes + other (sympy 1.14.0)",
        "BSD-3-Clause (SymPy)",
    ),
    "statsmodels": (
        "data-tabular",
        "453 nodes, 1567 edges, 13 classes + other (statsmodels 0.15.0)",
        "BSD-3-Clause (statsmodels)",
    ),
    "sklearn": (
        "data",
        "278 nodes, 1581 edges, 8 classes + other (scikit-learn 1.9.1)",
        "BSD-3-Clause (scikit-learn)",
    ),
    "torch": (
        "torch",
        "2270 nodes, 11488 edges, 27 classes + other (torch 2.15.0)",
        "BSD-3-Clause (PyTorch)",
    ),
}


def _package_dir(package: str) -> Path:
    """Folder of an installed (regular) package, found without importing it."""
    if not package.isidentifier():
        raise ValueError(f"imports:<package> needs a top-level package name, got {package!r}")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise ValueError(f"package {package!r} is not installed; imports:{package} needs it")
    if not spec.submodule_search_locations or spec.origin is None:
        raise ValueError(
            f"{package!r} is a single module or a namespace package, not a regular "
            "package: it has no import graph here"
        )
    return Path(spec.origin).parent


@functools.lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    import importlib.metadata

    return dict(importlib.metadata.packages_distributions())


def _package_version(package: str) -> tuple[str, str]:
    """(distribution name, version) of an installed import package."""
    import importlib.metadata

    dists = _distributions().get(package, [])
    for dist in dists:
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return package, "unknown"


def _build_package_graph(package: str) -> dict[str, np.ndarray]:
    root = _package_dir(package)
    modules = _walk_modules(root, (package,), _PACKAGE_SKIP)
    subpackages = {n for n, path in modules.items() if path.name == "__init__.py"}

    def subpackage(n: str) -> str | None:
        parts = n.split(".")
        if len(parts) >= 2 and f"{parts[0]}.{parts[1]}" in subpackages:
            return parts[1]
        return None

    return _build_import_graph(modules, subpackage)


def _package_imports(name: str) -> Graph:
    package = name.partition(":")[2]
    root = _package_dir(package)
    dist, version = _package_version(package)
    stamp = version
    if version == "unknown":  # no distribution metadata (a source checkout): key on the files
        import hashlib

        files = _walk_modules(root, (package,), _PACKAGE_SKIP)
        listing = "".join(
            f"{n}:{p.stat().st_size}:{p.stat().st_mtime_ns};" for n, p in sorted(files.items())
        )
        stamp = "files-" + hashlib.sha256(listing.encode()).hexdigest()[:12]
    key = (
        f"graph-imports-{package}-{dist}-{stamp}-{root}-py{sys.version.split()[0]}-"
        f"v{_IMPORTS_VERSION}"
    )
    graph = _graph_from_arrays(name, cached_arrays(key, lambda: _build_package_graph(package)))
    graph.meta.update(package=package, distribution=dist, package_version=version)
    return graph


_GRAPHS: dict[str, dict[str, Any]] = {
    "karate": {
        "build": _networkx_graph,
        "modules": ("networkx",),
        "extra": "data-graphs",
        "shape": "34 nodes, 78 edges (weighted), 2 classes",
        "source": "networkx (karate_club_graph); Zachary (1977)",
        "license": "data public (Zachary 1977); networkx BSD-3-Clause",
        "description": "Zachary's karate club; label = club after the split",
    },
    "les_miserables": {
        "build": _networkx_graph,
        "modules": ("networkx",),
        "extra": "data-graphs",
        "shape": "77 nodes, 254 edges (weighted)",
        "source": "networkx (les_miserables_graph); Knuth (1993), The Stanford GraphBase",
        "license": "data public (Knuth 1993); networkx BSD-3-Clause",
        "description": "Co-appearance of characters in Les Misérables; weight = co-appearances",
    },
    "davis": {
        "build": _networkx_graph,
        "modules": ("networkx",),
        "extra": "data-graphs",
        "shape": "32 nodes, 89 edges, 2 classes (bipartite)",
        "source": "networkx (davis_southern_women_graph); Davis, Gardner, Gardner (1941)",
        "license": "data public; networkx BSD-3-Clause",
        "description": "Davis' Southern women: 18 women attending 14 social events",
    },
    "florentine": {
        "build": _networkx_graph,
        "modules": ("networkx",),
        "extra": "data-graphs",
        "shape": "15 nodes, 20 edges",
        "source": "networkx (florentine_families_graph); Padgett and Ansell (1993)",
        "license": "data public; networkx BSD-3-Clause",
        "description": "Marriage ties among Renaissance Florentine families",
    },
    "minnesota": {
        "build": _minnesota,
        "modules": ("pygsp", "scipy"),
        "extra": "data-graphs",
        "shape": "2642 nodes, 3304 edges, x (2642, 2)",
        "source": "pygsp (pygsp/data/pointclouds/minnesota.mat, bundled); Gleich, MatlabBGL",
        "license": "BSD-3-Clause (pygsp); road data public (US Census TIGER)",
        "description": "Minnesota road network, connected; features = coordinates",
    },
    "stdlib_imports": {
        "build": _stdlib_imports,
        "modules": (),
        "extra": "data-graphs",
        "shape": "732 nodes, 2952 edges on Python 3.11.7, x (n, 1000), 13 classes",
        "source": "the Python standard library installed with this interpreter (ast-parsed)",
        "license": "PSF-2.0 (the Python source files)",
        "description": "Cora-like: modules, import edges, package labels, identifier features",
    },
}

for _name, _spec in _GRAPHS.items():
    register(
        DatasetInfo(
            name=_name,
            kind="graph",
            loader="icml26_core.datasets.graphs.load_graph",
            extra=_spec["extra"],
            modules=_spec["modules"],
            shape=_spec["shape"],
            source=_spec["source"],
            license=_spec["license"],
            description=_spec["description"],
        )
    )


def _license_of(package: str) -> str:
    import importlib.metadata

    dist = _package_version(package)[0]
    try:
        md = importlib.metadata.metadata(dist)
    except importlib.metadata.PackageNotFoundError:
        return f"the licence of {package}'s source files"
    text = md.get("License-Expression") or md.get("License") or ""  # type: ignore[attr-defined]
    text = text.strip().splitlines()[0] if text.strip() else ""
    return f"{text} ({dist})" if text and len(text) < 60 else f"the licence of {dist}"


def _imports_info(package: str) -> DatasetInfo:
    if package in _IMPORT_PACKAGES:
        extra, shape, license_ = _IMPORT_PACKAGES[package]
    else:
        extra, shape, license_ = "data-graphs", "depends on the package", _license_of(package)
    return DatasetInfo(
        name=f"imports:{package}",
        kind="graph",
        loader="icml26_core.datasets.graphs.load_graph",
        extra=extra,
        modules=(package,),
        shape=shape,
        source=f"the installed package {package} (its .py files, ast-parsed)",
        license=license_,
        description=f"Import graph of {package}: modules, import edges, subpackage labels, "
        "identifier features (a code graph, not a citation graph)",
    )


for _package in _IMPORT_PACKAGES:
    register(_imports_info(_package))


def load_graph(name: str) -> Graph:
    """Load a graph as a :class:`Graph` (edge index, features, labels, names).

    Args:
        name: ``"karate"``, ``"les_miserables"``, ``"davis"``, ``"florentine"``,
            ``"minnesota"``, ``"stdlib_imports"``, or ``"imports:<package>"`` for any
            package installed in the environment (``imports:scipy``, ``imports:sympy``,
            ``imports:statsmodels``, ``imports:sklearn`` and ``imports:torch`` are
            listed by ``icml26 data list``); case-insensitive.

    Returns:
        A :class:`Graph`; undirected graphs list each edge in both directions. An
        import graph's ``meta`` also holds ``package``, ``distribution`` and
        ``package_version``.

    Raises:
        ValueError: If ``name`` is unknown (lists the known ones), or names a package
            that is not installed or is a single module.
        icml26_core._lazy.MissingExtraError: If the carrier is missing.

    Example:
        >>> g = load_graph("karate")
        >>> g.num_nodes, g.num_edges, g.edge_index.shape
        (34, 78, (2, 156))
    """
    if isinstance(name, str) and name.strip().lower().startswith("imports:"):
        package = name.strip().partition(":")[2].strip()
        if package not in _IMPORT_PACKAGES:
            _package_dir(package)  # a clear error for a bad or missing package, first
        info = _imports_info(package)
        if package in _IMPORT_PACKAGES:
            ensure_installed(info.modules, info.extra, info.install)
        graph = _package_imports(info.name)
    else:
        info = dataset_info("graph", name)
        ensure_installed(info.modules, info.extra, info.install)
        graph = _GRAPHS[info.name]["build"](info.name)
    graph.meta.update(source=info.source, license=info.license, description=info.description)
    return graph
