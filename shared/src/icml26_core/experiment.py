"""The experiment contract: what every package's headline experiment produces.

A package registers one :class:`Experiment` under the entry-point group
``icml26.experiments``. The ``icml26`` command runs it with a :class:`RunContext`
(scale, device, seed, output folder, progress bars); the experiment returns a
:class:`Result` holding tables of method x metric, :class:`Claim` verdicts
computed from the measured numbers, and figures. The runner adds the
environment and writes ``result.json`` and ``result.md``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

SCALES = ("smoke", "default", "full")
"""smoke: < 30 s on 2 CPU cores (tests); default: < 10 min on 2 CPU cores; full: paper scale."""

T = TypeVar("T")


def _jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays and paths into plain JSON values; NaN/inf become None."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


@dataclass
class Table:
    """A table of rows (usually one per method) and named columns (metrics).

    Args:
        title: One line saying what the table measures and on what data.
        columns: Column names in display order; rows may omit some (shown blank).
        rows: One mapping per row, from column name to value.
        note: Optional line under the table (units, what "-" means, ...).
    """

    title: str
    columns: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""

    def add_row(self, **values: Any) -> None:
        """Append a row; keys must be among ``columns``.

        Raises:
            ValueError: If a key is not a declared column.
        """
        unknown = set(values) - set(self.columns)
        if unknown:
            raise ValueError(f"unknown columns {sorted(unknown)}; table has {self.columns}")
        self.rows.append(dict(values))

    def column(self, name: str) -> list[Any]:
        """Return the values of one column, in row order."""
        return [row.get(name) for row in self.rows]


def format_value(value: Any) -> str:
    """Format a cell: floats with 4 significant digits, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            return "-"
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f"{value:.3e}"
        return f"{value:.4g}"
    return str(value)


@dataclass(frozen=True)
class Claim:
    """A claim of the paper, tested against measured numbers.

    Build it with :meth:`Claim.check`, which computes the verdict from ``values``
    with the rule, so a verdict is never written by hand.

    Attributes:
        statement: The claim in words, as the paper makes it.
        rule: The rule that decides it at our scale, in words.
        values: The measured numbers the rule reads.
        holds: Whether the rule is satisfied by ``values``.
    """

    statement: str
    rule: str
    values: dict[str, Any]
    holds: bool

    @classmethod
    def check(
        cls,
        statement: str,
        rule: str,
        values: Mapping[str, Any],
        predicate: Callable[[Mapping[str, Any]], bool],
    ) -> Claim:
        """Decide a claim by applying ``predicate`` to the measured ``values``.

        Args:
            statement: The claim in words.
            rule: The decision rule in words (what ``predicate`` computes).
            values: Measured numbers; NaN or None make a comparison fail.
            predicate: Function of ``values`` returning True when the claim holds.

        Returns:
            The claim with its verdict.
        """
        vals = dict(values)
        try:
            holds = bool(predicate(vals))
        except (TypeError, ValueError):
            holds = False  # a missing or non-numeric measurement cannot support a claim
        return cls(statement=statement, rule=rule, values=vals, holds=holds)

    @property
    def verdict(self) -> str:
        """``"holds"`` or ``"does not hold"``."""
        return "holds" if self.holds else "does not hold"


@dataclass
class Result:
    """Everything an experiment run measured.

    The experiment fills ``tables``, ``claims``, ``figures``, ``notes`` and
    ``data``; the runner fills the metadata (name, version, scale, seed, device,
    environment, timing).
    """

    tables: list[Table] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    version: str = ""
    title: str = ""
    scale: str = ""
    seed: int = 0
    device: str = ""
    started: str = ""
    elapsed_s: float = 0.0
    environment: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dictionary (NaN and inf become null)."""
        d = asdict(self)
        for c, claim in zip(d["claims"], self.claims, strict=True):
            c["verdict"] = claim.verdict
        return _jsonable(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Result:
        """Rebuild a Result from :meth:`to_dict` output."""
        d = dict(d)
        d["tables"] = [Table(**t) for t in d.get("tables", [])]
        d["claims"] = [
            Claim(**{k: v for k, v in c.items() if k != "verdict"}) for c in d.get("claims", [])
        ]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})

    def write(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write ``result.json`` and ``result.md`` into ``out_dir``; return the JSON path."""
        from icml26_core.report import result_markdown

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "result.json"
        path.write_text(json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n")
        (out / "result.md").write_text(result_markdown(self))
        return path

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Result:
        """Read a ``result.json`` file."""
        return cls.from_dict(json.loads(Path(path).read_text()))


class RunContext:
    """What an experiment needs to run: scale, device, seed, output folder, progress.

    Args:
        scale: ``"smoke"``, ``"default"`` or ``"full"``.
        device: Resolved device string (``"cpu"``, ``"cuda"``, ...).
        seed: Base seed of the run.
        out_dir: Folder for ``result.json``, ``result.md`` and figures.
        console: rich console for progress and messages; a quiet one if None.

    Raises:
        ValueError: If ``scale`` is not one of :data:`SCALES`.
    """

    def __init__(
        self,
        scale: str = "default",
        device: str = "cpu",
        seed: int = 0,
        out_dir: str | os.PathLike[str] = "results",
        console: Console | None = None,
    ) -> None:
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
        self.scale = scale
        self.device = device
        self.seed = int(seed)
        self.out_dir = Path(out_dir)
        self.console = console if console is not None else Console(quiet=True)
        self.figures: list[str] = []

    def pick(self, smoke: T, default: T, full: T | None = None) -> T:
        """Return the value for the current scale (``full`` falls back to ``default``)."""
        if self.scale == "smoke":
            return smoke
        if self.scale == "full" and full is not None:
            return full
        return default

    def rng(self, offset: int = 0) -> np.random.Generator:
        """A numpy Generator seeded with ``seed + offset`` (one stream per sub-task)."""
        return np.random.default_rng(self.seed + offset)

    def progress(
        self, iterable: Iterable[T], description: str, total: int | None = None
    ) -> Iterator[T]:
        """Iterate over ``iterable`` while showing a progress bar on the console."""
        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=self.console, transient=True) as bar:
            task = bar.add_task(description, total=total)
            for item in iterable:
                yield item
                bar.advance(task)

    def log(self, message: str) -> None:
        """Print one line on the run's console."""
        self.console.print(message)

    def save_figure(self, fig: Any, name: str) -> str:
        """Save a matplotlib figure as ``<out_dir>/<name>.png``, close it, record it.

        Returns:
            The file name relative to ``out_dir``.
        """
        import matplotlib.pyplot as plt

        self.out_dir.mkdir(parents=True, exist_ok=True)
        fname = f"{name}.png"
        fig.savefig(self.out_dir / fname, dpi=120, bbox_inches="tight")
        plt.close(fig)
        self.figures.append(fname)
        return fname


@dataclass(frozen=True)
class Experiment:
    """A package's headline experiment, registered under ``icml26.experiments``.

    Attributes:
        name: The package's distribution name (also the entry-point name).
        title: The paper's title or a one-line description of the paper.
        claim: The headline claim in one line.
        run: ``run(ctx) -> Result``; must honour ``ctx.scale`` budgets (smoke < 30 s,
            default < 10 min on 2 CPU cores), use only data that ships in registry
            packages, and compute every verdict from measured numbers.
    """

    name: str
    title: str
    claim: str
    run: Callable[[RunContext], Result]


def environment() -> dict[str, Any]:
    """Describe the machine and the versions of the main libraries."""
    from importlib.metadata import PackageNotFoundError, version

    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    for dist in ("numpy", "scipy", "scikit-learn", "torch", "icml26-core"):
        try:
            env[dist] = version(dist)
        except PackageNotFoundError:
            pass
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        env["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            env["cuda_device"] = torch.cuda.get_device_name(0)
    return env


def execute(
    experiment: Experiment,
    ctx: RunContext,
    *,
    version: str = "",
    write: bool = True,
) -> Result:
    """Run ``experiment`` under ``ctx``, fill the metadata and write the result files."""
    from icml26_core.seeding import seed_everything

    seed_everything(ctx.seed)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    result = experiment.run(ctx)
    if not isinstance(result, Result):
        raise TypeError(
            f"experiment {experiment.name!r} returned {type(result).__name__}, expected Result"
        )
    result.elapsed_s = time.perf_counter() - t0
    result.name = experiment.name
    result.title = experiment.title
    result.version = version
    result.scale = ctx.scale
    result.seed = ctx.seed
    result.device = ctx.device
    result.started = started
    result.environment = environment()
    for fig in ctx.figures:
        if fig not in result.figures:
            result.figures.append(fig)
    if write:
        result.write(ctx.out_dir)
    return result
