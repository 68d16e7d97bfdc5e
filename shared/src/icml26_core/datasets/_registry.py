"""The registry of datasets: name, kind, loader, extra, shape, source and license.

It powers ``icml26 data list`` and the errors for unknown names. Availability is
checked without importing the carriers (``importlib.util.find_spec``), so listing is
fast and never loads data.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DatasetInfo", "dataset_info", "ensure_installed", "list_datasets", "register"]

KINDS = ("tabular", "series", "image", "text", "graph", "power_grid", "game", "prompts", "model")


@dataclass(frozen=True)
class DatasetInfo:
    """What the registry knows about one dataset.

    Attributes:
        name: Name passed to the loader, lower case (e.g. ``"diabetes"``).
        kind: One of ``"tabular"``, ``"series"``, ``"image"``, ``"text"``, ``"graph"``,
            ``"power_grid"``, ``"game"``, ``"prompts"``, ``"model"``.
        loader: Dotted path of the loader function, called as ``loader(name)``, or as
            ``loader()`` when ``takes_name`` is False (e.g. ``load_mnist``).
        extra: Extra of ``icml26-core`` that installs the carrier package.
        modules: Modules that must be importable for the dataset to be available.
        shape: Shape of what the loader returns, in words (e.g. ``"X (442, 10), y (442,)"``).
        source: Where the data comes from (the carrier package and the original source).
        license: License of the data.
        description: One line on what it is.
        files: Callable returning a list of files that must exist (checked lazily),
            for data that a carrier may or may not ship.
        takes_name: Whether the loader takes the dataset's name as first argument.
        usage: How a user loads it, when not ``loader(name)`` (e.g.
            ``"tiny_llama('1M')"``); shown by ``icml26 data list``.
        detail: Callable returning a short status shown beside "yes" when available
            (e.g. whether a model is converted in the cache, and its size on disk).
    """

    name: str
    kind: str
    loader: str
    extra: str
    modules: tuple[str, ...]
    shape: str
    source: str
    license: str
    description: str = ""
    files: Callable[[], list[str]] | None = field(default=None, compare=False, repr=False)
    takes_name: bool = True
    usage: str | None = None
    detail: Callable[[], str] | None = field(default=None, compare=False, repr=False)
    install: str | None = None

    @property
    def install_hint(self) -> str:
        """The command that makes this dataset available."""
        return self.install or f"pip install 'icml26-core[{self.extra}]'"

    def available(self) -> bool:
        """True when the carrier modules are installed (nothing is imported or loaded)."""
        try:
            if not all(importlib.util.find_spec(m) is not None for m in self.modules):
                return False
        except (ImportError, ValueError):
            return False
        if self.files is not None:
            from pathlib import Path

            try:
                return all(Path(f).is_file() for f in self.files())
            except Exception:
                return False
        return True

    def load(self, **kwargs: Any) -> Any:
        """Call the loader (on this dataset's name when it takes one)."""
        module, _, func = self.loader.rpartition(".")
        loader = getattr(importlib.import_module(module), func)
        return loader(self.name, **kwargs) if self.takes_name else loader(**kwargs)

    @property
    def call(self) -> str:
        """How a user loads it, e.g. ``load_tabular('wine')``."""
        if self.usage is not None:
            return self.usage
        func = self.loader.rpartition(".")[2]
        return f"{func}({self.name!r})" if self.takes_name else f"{func}()"


def ensure_installed(modules: tuple[str, ...], extra: str, install: str | None = None) -> None:
    """Raise the missing-extra error if a module is not installed, without importing it.

    Used before reading a cache entry, so that a cached dataset still reports a
    carrier that has been uninstalled (and so that cached loads stay fast).

    Raises:
        icml26_core._lazy.MissingExtraError: Naming ``extra`` (or the ``install`` command).
    """
    from icml26_core._lazy import require

    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            require(module, extra, install=install)  # raises MissingExtraError naming it
            raise ImportError(module)  # pragma: no cover (require found it after all)


_LOADER_MODULES = (
    "tabular",
    "images",
    "text",
    "graphs",
    "grids",
    "games",
    "series",
    "prompts",
    "models",
)
_REGISTRY: dict[tuple[str, str], DatasetInfo] = {}


def register(info: DatasetInfo) -> DatasetInfo:
    """Add a dataset to the registry (idempotent for an identical entry).

    Raises:
        ValueError: If ``info.kind`` is unknown or another entry has the same kind and name.
    """
    if info.kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {info.kind!r}")
    key = (info.kind, info.name)
    if key in _REGISTRY and _REGISTRY[key] != info:
        raise ValueError(f"a {info.kind} dataset named {info.name!r} is already registered")
    _REGISTRY[key] = info
    return info


def _ensure_loaded() -> None:
    # Each loader module registers its datasets on import; importing them is cheap
    # because the carriers themselves are imported lazily inside the loaders.
    for module in _LOADER_MODULES:
        importlib.import_module(f"icml26_core.datasets.{module}")


def list_datasets(kind: str | None = None) -> list[DatasetInfo]:
    """Every registered dataset, optionally of one kind, in registration order.

    Args:
        kind: Restrict to this kind (see ``DatasetInfo.kind``), or None for all.

    Raises:
        ValueError: If ``kind`` is not a known kind.
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} or None, got {kind!r}")
    _ensure_loaded()
    infos = [i for i in _REGISTRY.values() if kind is None or i.kind == kind]
    return sorted(infos, key=lambda i: KINDS.index(i.kind))  # stable: keeps name order


def dataset_info(kind: str, name: str) -> DatasetInfo:
    """Look up one dataset; the error for an unknown name lists the known ones.

    Args:
        kind: Kind of dataset (e.g. ``"tabular"``).
        name: Its name, case-insensitive.

    Raises:
        TypeError: If ``name`` is not a string.
        ValueError: If no dataset of that kind has that name.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    _ensure_loaded()
    key = (kind, name.strip().lower())
    if key not in _REGISTRY:
        known = ", ".join(i.name for i in list_datasets(kind))
        raise ValueError(f"unknown {kind} dataset {name!r}; known: {known}")
    return _REGISTRY[key]
