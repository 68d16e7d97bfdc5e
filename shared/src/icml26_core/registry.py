"""Discovery of experiments registered under the ``icml26.experiments`` entry-point group.

Like gymnasium's plugin loading, a plugin that fails to import is reported and
does not take the others down.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import Distribution, EntryPoint, PackageNotFoundError, distribution
from importlib.metadata import entry_points as _all_entry_points
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml26_core.experiment import Experiment

GROUP = "icml26.experiments"


@dataclass(frozen=True)
class ExperimentInfo:
    """One registered experiment, or the error that loading it raised."""

    name: str
    version: str
    experiment: Experiment | None
    error: str | None = None


@dataclass(frozen=True)
class ExperimentEntry:
    """What the metadata says of a registered experiment, read without importing it.

    Attributes:
        name: The experiment's (and distribution's) name.
        version: The distribution's version.
        summary: The distribution's one-line description.
        distribution: The distribution's name ("" if the entry point has none).
    """

    name: str
    version: str
    summary: str
    distribution: str


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in _all_entry_points(group=GROUP)}


def names() -> list[str]:
    """Names of all registered experiments (reads metadata only, imports nothing)."""
    return sorted(_entry_points())


def _version(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.version if dist is not None else ""


def entries() -> list[ExperimentEntry]:
    """Every registered experiment, from installed metadata only (nothing is imported)."""
    out = []
    for name, ep in sorted(_entry_points().items()):
        dist = getattr(ep, "dist", None)
        meta = dist.metadata if dist is not None else None
        out.append(
            ExperimentEntry(
                name=name,
                version=dist.version if dist is not None else "",
                summary=(meta.get("Summary") or "") if meta is not None else "",
                distribution=(meta.get("Name") or "") if meta is not None else "",
            )
        )
    return out


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?")


def _requirements(dist: Distribution, extra: str | None) -> list[str]:
    """Requirement strings of ``dist`` that apply here, for ``extra`` (None: the base)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover - packaging is nearly always present
        Requirement = None  # type: ignore[assignment,misc]
    out = []
    for raw in dist.requires or []:
        spec, _, marker = raw.partition(";")
        wants = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if (wants.group(1) if wants else None) != extra:
            continue
        if Requirement is not None and marker.strip():
            req = Requirement(raw)
            env = {"extra": extra or ""}
            if req.marker is not None and not req.marker.evaluate(env):
                continue
        out.append(spec.strip())
    return out


def missing_requirements(dist_name: str, extra: str = "repro") -> list[str]:
    """Requirements of ``dist_name[extra]`` (and of extras it names) not installed here.

    Reads installed metadata only, so the CLI can say what to install before it imports
    anything heavy. Versions are not compared (pip and uv enforce them at install).

    Args:
        dist_name: A distribution name, e.g. ``"enmf"``.
        extra: The extra whose requirements to check.

    Returns:
        The missing requirement strings (empty when everything is there).
    """
    seen: set[tuple[str, str | None]] = set()
    missing: list[str] = []

    def visit(name: str, want: str | None) -> None:
        key = (name.lower().replace("_", "-"), want)
        if key in seen:
            return
        seen.add(key)
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            missing.append(name + (f"[{want}]" if want else ""))
            return
        for req in _requirements(dist, want):
            m = _REQ_NAME.match(req)
            if m is None:
                continue
            dep, extras = m.group(1), m.group(2)
            try:
                distribution(dep)
            except PackageNotFoundError:
                missing.append(req)
                continue
            for e in (extras or "").strip("[]").split(","):
                if e.strip():
                    visit(dep, e.strip())

    visit(dist_name, extra)
    return missing


def load(name: str) -> ExperimentInfo:
    """Load one experiment by name.

    Raises:
        KeyError: If no experiment of that name is registered.
    """
    eps = _entry_points()
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none"
        raise KeyError(f"no experiment named {name!r}; registered: {known}")
    from icml26_core.experiment import Experiment

    ep = eps[name]
    try:
        exp = ep.load()
    except Exception as exc:  # a broken plugin must not break the command
        return ExperimentInfo(name, _version(ep), None, f"{type(exc).__name__}: {exc}")
    if not isinstance(exp, Experiment):
        return ExperimentInfo(
            name, _version(ep), None, f"entry point gives {type(exp).__name__}, not Experiment"
        )
    return ExperimentInfo(name, _version(ep), exp)


def load_all() -> list[ExperimentInfo]:
    """Load every registered experiment; failures are returned with their error."""
    return [load(n) for n in names()]
