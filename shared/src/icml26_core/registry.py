"""Discovery of experiments registered under the ``icml26.experiments`` entry-point group.

Like gymnasium's plugin loading, a plugin that fails to import is reported and
does not take the others down.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from icml26_core.experiment import Experiment

GROUP = "icml26.experiments"


@dataclass(frozen=True)
class ExperimentInfo:
    """One registered experiment, or the error that loading it raised."""

    name: str
    version: str
    experiment: Experiment | None
    error: str | None = None


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def names() -> list[str]:
    """Names of all registered experiments (reads metadata only, imports nothing)."""
    return sorted(_entry_points())


def _version(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.version if dist is not None else ""


def load(name: str) -> ExperimentInfo:
    """Load one experiment by name.

    Raises:
        KeyError: If no experiment of that name is registered.
    """
    eps = _entry_points()
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none"
        raise KeyError(f"no experiment named {name!r}; registered: {known}")
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
