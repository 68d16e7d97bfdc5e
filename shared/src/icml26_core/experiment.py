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

from icml26_core import stats
from icml26_core.stats import (
    DEFAULT_ALPHA,
    DOES_NOT_HOLD,
    HOLDS,
    INCONCLUSIVE,
    VERDICTS,
    Evidence,
    count_verdicts,
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
        x = float(value)
        if not math.isfinite(x):
            return "-"
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
            return f"{x:.3e}"
        return f"{x:.4g}"
    return str(value)


def _has_missing(value: Any) -> bool:
    """True if a measured value (or one nested in a list/dict) is None, NaN or inf."""
    if value is None:
        return True
    if isinstance(value, Mapping):
        return any(_has_missing(v) for v in value.values())
    if isinstance(value, list | tuple | np.ndarray):
        return any(_has_missing(v) for v in np.asarray(value, dtype=object).ravel())
    if isinstance(value, bool | np.bool_):
        return False
    if isinstance(value, float | np.floating | int | np.integer):
        return not math.isfinite(float(value))
    return False


def _samples(x: Any) -> list[float]:
    return [float(v) for v in np.asarray(x, dtype=float).ravel()]


@dataclass(frozen=True)
class Claim:
    """A claim of the paper, decided from measured numbers.

    Its verdict is one of holds, does not hold, or inconclusive. Build it with one
    of the builders, which read like the claim and compute the verdict with
    :mod:`icml26_core.stats`, so a verdict is never written by hand:

    - :meth:`superior`: A beats B, paired over seeds or items (or unpaired, Welch);
    - :meth:`non_inferior`: A matches B within a stated margin;
    - :meth:`slope`: a rate, ``y ~ x^slope``, with its interval;
    - :meth:`faster`: A is at least k times faster (ratio of medians);
    - :meth:`win_rate`: A's score in games against B (Wilson interval);
    - :meth:`all_of`: every part holds;
    - :meth:`check`: any other rule, as a predicate of the measured values.

    Attributes:
        statement: The claim in words, as the paper makes it.
        rule: The rule that decides it at our scale, in words.
        values: The measured numbers the rule reads (samples for the builders).
        verdict: ``"holds"``, ``"does not hold"`` or ``"inconclusive"``.
        evidence: Effect, CI, p-value and n where a statistical builder made the claim.
        parts: The sub-claims of :meth:`all_of`.
    """

    statement: str
    rule: str
    values: dict[str, Any]
    verdict: str
    evidence: Evidence | None = None
    parts: tuple[Claim, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def holds(self) -> bool:
        """Whether the verdict is ``"holds"``."""
        return self.verdict == HOLDS

    def summary(self) -> str:
        """The evidence in one line (effect, CI, p, n), or the values for :meth:`check`."""
        if self.evidence is not None:
            return self.evidence.summary()
        if self.parts:
            counts = count_verdicts([p.verdict for p in self.parts])
            return ", ".join(f"{n} {v}" for v, n in counts.items() if n) + " (parts)"
        return ", ".join(f"{k} = {format_value(v)}" for k, v in self.values.items())

    @classmethod
    def check(
        cls,
        statement: str,
        rule: str,
        values: Mapping[str, Any],
        predicate: Callable[[Mapping[str, Any]], bool | str | None],
    ) -> Claim:
        """Decide a claim by applying ``predicate`` to the measured ``values``.

        For rules that are not a statistical comparison (a bound the method
        guarantees, a count of bytes). The predicate may return a bool, a verdict
        string, or None for "the data cannot tell".

        Args:
            statement: The claim in words.
            rule: The decision rule in words (what ``predicate`` computes).
            values: Measured numbers; a None, NaN or inf among them (nested ones
                included) makes the claim inconclusive.
            predicate: Function of ``values`` returning the verdict.

        Returns:
            The claim with its verdict.
        """
        vals = dict(values)
        if _has_missing(vals):
            verdict = INCONCLUSIVE  # a missing measurement cannot decide a claim either way
        else:
            try:
                out = predicate(vals)
            except (TypeError, ValueError, KeyError, ZeroDivisionError):
                out = None
            if out is None:
                verdict = INCONCLUSIVE
            elif isinstance(out, str):
                if out not in VERDICTS:
                    raise ValueError(f"predicate returned {out!r}; expected one of {VERDICTS}")
                verdict = out
            else:
                verdict = HOLDS if bool(out) else DOES_NOT_HOLD
        return cls(statement=statement, rule=rule, values=vals, verdict=verdict)

    @classmethod
    def from_evidence(
        cls, statement: str, rule: str, evidence: Evidence, values: Mapping[str, Any]
    ) -> Claim:
        """A claim decided by an :class:`~icml26_core.stats.Evidence` computed elsewhere."""
        return cls(statement, rule, dict(values), evidence.verdict, evidence)

    @classmethod
    def superior(
        cls,
        statement: str,
        a: Any,
        b: Any,
        *,
        names: tuple[str, str] = ("A", "B"),
        metric: str = "metric",
        higher_is_better: bool = True,
        paired: bool = True,
        test: str = "wilcoxon",
        min_effect: float = 0.0,
        log_ratio: bool = False,
        alpha: float = DEFAULT_ALPHA,
    ) -> Claim:
        """A beats B on ``metric``, over seeds or items.

        Paired (``a[i]``, ``b[i]`` on the same seed or item): the mean difference with
        a bootstrap CI and a one-sided ``test`` (:func:`~icml26_core.stats.paired_comparison`).
        Unpaired: Welch's t (:func:`~icml26_core.stats.welch`). Holds when the test
        rejects at ``alpha`` and the CI lies above ``min_effect``; does not hold when
        the CI lies below it; inconclusive otherwise (a tie stays inconclusive unless a
        ``min_effect`` > 0 says how small a win is no win).

        Args:
            statement: The claim in words.
            a: Measurements of A, shape ``(n,)``.
            b: Measurements of B, shape ``(n,)`` (any length when unpaired).
            names: Labels of A and B.
            metric: Name of the metric (with its unit) for the rule line.
            higher_is_better: Orientation of the metric.
            paired: Pair ``a[i]`` with ``b[i]``.
            test: Paired test: ``"wilcoxon"``, ``"sign"`` or ``"t"``.
            min_effect: Smallest improvement that counts (a ratio > 1 with ``log_ratio``;
                then 0 means 1).
            log_ratio: Compare ratios (``log a - log b``) instead of differences.
            alpha: Significance level.

        Returns:
            The claim; ``values`` holds both samples under ``names``.
        """
        if log_ratio and 0 < min_effect < 1:
            raise ValueError(
                f"with log_ratio, min_effect is a ratio >= 1 (e.g. 1.05 for 5%), got {min_effect}"
            )
        threshold = (min_effect if min_effect > 0 else 1.0) if log_ratio else min_effect
        if paired:
            ev = stats.paired_comparison(
                a,
                b,
                threshold=threshold,
                higher_is_better=higher_is_better,
                test=test,  # type: ignore[arg-type]
                log_ratio=log_ratio,
                alpha=alpha,
                names=names,
            )
        else:
            if log_ratio:
                raise ValueError("log_ratio needs paired samples")
            ev = stats.welch(
                a,
                b,
                threshold=threshold,
                higher_is_better=higher_is_better,
                alpha=alpha,
                names=names,
            )
        better = "higher" if higher_is_better else "lower"
        by = f" by more than {format_value(threshold)}" if threshold not in (0.0, 1.0) else ""
        rule = (
            f"{metric} ({better} is better): {names[0]} beats {names[1]}{by}; "
            f"{ev.test}; holds if p < {alpha} and the CI lies above "
            f"{format_value(threshold)}, does not hold if it lies below"
        )
        return cls(statement, rule, {names[0]: _samples(a), names[1]: _samples(b)}, ev.verdict, ev)

    @classmethod
    def non_inferior(
        cls,
        statement: str,
        a: Any,
        b: Any,
        *,
        margin: float,
        names: tuple[str, str] = ("A", "B"),
        metric: str = "metric",
        higher_is_better: bool = True,
        paired: bool = True,
        test: str = "wilcoxon",
        log_ratio: bool = False,
        alpha: float = DEFAULT_ALPHA,
    ) -> Claim:
        """A matches B on ``metric``: A is worse by less than ``margin`` (non-inferiority).

        Holds when the CI of the difference (A minus B, oriented so positive favours
        A) lies above ``-margin``; does not hold when it lies below; inconclusive
        otherwise. With ``log_ratio`` the margin is relative: A may be at most
        ``(1 + margin)`` times worse.

        Args:
            statement: The claim in words.
            a: Measurements of A, shape ``(n,)``.
            b: Measurements of B, shape ``(n,)``.
            margin: The largest loss that still "matches", > 0, in the metric's units
                (relative with ``log_ratio``). State it in the README.
            names: Labels of A and B.
            metric: Name of the metric for the rule line.
            higher_is_better: Orientation of the metric.
            paired: Pair ``a[i]`` with ``b[i]`` (else Welch's t).
            test: Paired test.
            log_ratio: Relative margin on ratios.
            alpha: Significance level.

        Returns:
            The claim.

        Raises:
            ValueError: If ``margin`` is not positive.
        """
        if not margin > 0:
            raise ValueError(f"margin must be > 0, got {margin}")
        if log_ratio:
            if not paired:
                raise ValueError("log_ratio needs paired samples")
            ev = stats.paired_comparison(
                a,
                b,
                threshold=1.0 / (1.0 + margin),
                higher_is_better=higher_is_better,
                test=test,  # type: ignore[arg-type]
                log_ratio=True,
                alpha=alpha,
                names=names,
            )
            bound = f"the ratio's CI lies above 1/(1 + {format_value(margin)})"
        elif paired:
            ev = stats.paired_comparison(
                a,
                b,
                threshold=-margin,
                higher_is_better=higher_is_better,
                test=test,  # type: ignore[arg-type]
                alpha=alpha,
                names=names,
            )
            bound = f"the CI lies above -{format_value(margin)}"
        else:
            ev = stats.welch(
                a, b, threshold=-margin, higher_is_better=higher_is_better, alpha=alpha, names=names
            )
            bound = f"the CI lies above -{format_value(margin)}"
        better = "higher" if higher_is_better else "lower"
        rule = (
            f"{metric} ({better} is better): {names[0]} is worse than {names[1]} by less "
            f"than the margin {format_value(margin)}{' (relative)' if log_ratio else ''}; "
            f"{ev.test}; holds if p < {alpha} and {bound}, does not hold if it lies below"
        )
        return cls(
            statement,
            rule,
            {names[0]: _samples(a), names[1]: _samples(b), "margin": float(margin)},
            ev.verdict,
            ev,
        )

    @classmethod
    def slope(
        cls,
        statement: str,
        x: Any,
        y: Any,
        *,
        expected: float,
        tol: float,
        alternative: str = "two-sided",
        scale: str = "loglog",
        metric: str = "y",
        alpha: float = DEFAULT_ALPHA,
    ) -> Claim:
        """A rate: the slope of ``log y`` on ``log x`` is ``expected`` within ``tol``.

        See :func:`~icml26_core.stats.loglog_slope` for ``alternative`` ("two-sided":
        inside the band; "less": at most ``expected + tol``, i.e. at least as fast a
        decay; "greater") and ``scale``.

        Returns:
            The claim; ``values`` holds x and y.
        """
        ev = stats.loglog_slope(
            x,
            y,
            expected=expected,
            tol=tol,
            alternative=alternative,  # type: ignore[arg-type]
            scale=scale,  # type: ignore[arg-type]
            alpha=alpha,
        )
        what = {
            "two-sided": f"within {format_value(tol)} of {format_value(expected)}",
            "less": f"at most {format_value(expected + tol)}",
            "greater": f"at least {format_value(expected - tol)}",
        }[alternative]
        rule = (
            f"{metric}: fitted slope ({scale}) {what}; {ev.test}; decided by whether "
            f"its CI lies inside or outside that range"
        )
        return cls(statement, rule, {"x": _samples(x), "y": _samples(y)}, ev.verdict, ev)

    @classmethod
    def faster(
        cls,
        statement: str,
        times_a: Any,
        times_b: Any,
        *,
        at_least: float = 1.0,
        names: tuple[str, str] = ("A", "B"),
        paired: bool = False,
        alpha: float = DEFAULT_ALPHA,
    ) -> Claim:
        """A is at least ``at_least`` times faster than B: ratio of median times.

        Measure the times with :func:`icml26_core.timing.compare_times` (interleaved,
        same threads, after a warm-up) and pass ``paired=True`` for its rounds.

        Returns:
            The claim; ``values`` holds both samples of times.
        """
        ev = stats.ratio_of_medians(
            times_a, times_b, at_least=at_least, paired=paired, alpha=alpha, names=names
        )
        rule = (
            f"time: median({names[1]}) / median({names[0]}) >= {format_value(at_least)}; "
            f"{ev.test}; holds if p < {alpha} and the CI lies above "
            f"{format_value(at_least)}, does not hold if it lies below"
        )
        return cls(
            statement,
            rule,
            {names[0]: _samples(times_a), names[1]: _samples(times_b)},
            ev.verdict,
            ev,
        )

    @classmethod
    def win_rate(
        cls,
        statement: str,
        wins: int,
        draws: int,
        losses: int,
        *,
        threshold: float = 0.5,
        names: tuple[str, str] = ("A", "B"),
        alpha: float = DEFAULT_ALPHA,
    ) -> Claim:
        """A's score against B in a match (draws as half) exceeds ``threshold``.

        ``threshold=0.5`` for "stronger"; ``0.5 - margin`` for "at least as strong,
        within a margin" (non-inferiority). The interval is Wilson's.

        Returns:
            The claim; ``values`` holds the counts.
        """
        ev = stats.win_rate(wins, draws, losses, threshold=threshold, alpha=alpha)
        rule = (
            f"{names[0]}'s score against {names[1]} (wins + draws/2 per game) > "
            f"{format_value(threshold)}; {ev.test}; holds if p < {alpha} and the CI "
            f"lies above {format_value(threshold)}, does not hold if it lies below"
        )
        return cls(
            statement,
            rule,
            {"wins": int(wins), "draws": int(draws), "losses": int(losses)},
            ev.verdict,
            ev,
        )

    @classmethod
    def rank_correlation(
        cls,
        statement: str,
        x: Any,
        y: Any,
        *,
        threshold: float = 0.0,
        names: tuple[str, str] = ("x", "y"),
        alpha: float = DEFAULT_ALPHA,
        min_n: int = 5,
    ) -> Claim:
        """Spearman's rank correlation of ``x`` and ``y`` exceeds ``threshold``.

        One value per item in each; the statistics are
        :func:`icml26_core.stats.rank_correlation`'s (Fisher z interval).

        Returns:
            The claim; ``values`` holds rho and the number of pairs.
        """
        ev = stats.rank_correlation(x, y, threshold=threshold, alpha=alpha, min_n=min_n)
        rule = (
            f"Spearman({names[0]}, {names[1]}) > {format_value(threshold)}; {ev.test}; "
            f"holds if p < {alpha} and the CI lies above {format_value(threshold)}, does "
            f"not hold if it lies below; inconclusive with fewer than {min_n} pairs"
        )
        return cls(statement, rule, {"spearman": ev.effect, "pairs": ev.n}, ev.verdict, ev)

    @classmethod
    def all_of(cls, statement: str, parts: Iterable[Claim], rule: str = "") -> Claim:
        """Every part holds: holds if all do, does not hold if one does not.

        Args:
            statement: The whole claim in words.
            parts: The sub-claims (e.g. one per dataset, or "as strong" and "faster").
            rule: The rule in words; by default "every part holds".

        Returns:
            The claim with ``parts`` kept (reports show each one).

        Raises:
            ValueError: If ``parts`` is empty.
        """
        parts = tuple(parts)
        if not parts:
            raise ValueError("all_of needs at least one part")
        verdict = stats.combine([p.verdict for p in parts])
        values = {f"part {i + 1}": p.verdict for i, p in enumerate(parts)}
        return cls(
            statement,
            rule or f"every one of the {len(parts)} parts holds",
            values,
            verdict,
            None,
            parts,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (``holds`` kept beside ``verdict`` for old readers)."""
        return {
            "statement": self.statement,
            "rule": self.rule,
            "values": _jsonable(self.values),
            "verdict": self.verdict,
            "holds": self.holds,
            "evidence": None if self.evidence is None else _jsonable(self.evidence.to_dict()),
            "parts": [p.to_dict() for p in self.parts],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Claim:
        """Rebuild from :meth:`to_dict` output, or from an older core's result.json.

        Older result files stored only ``holds``; they read as holds / does not hold.
        """
        verdict = d.get("verdict") or (HOLDS if d.get("holds") else DOES_NOT_HOLD)
        ev = d.get("evidence")
        return cls(
            statement=d["statement"],
            rule=d["rule"],
            values=dict(d.get("values") or {}),
            verdict=verdict,
            evidence=None if ev is None else Evidence.from_dict(ev),
            parts=tuple(cls.from_dict(p) for p in d.get("parts") or ()),
        )


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
        d["claims"] = [c.to_dict() for c in self.claims]
        return _jsonable(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Result:
        """Rebuild a Result from :meth:`to_dict` output."""
        d = dict(d)
        d["tables"] = [Table(**t) for t in d.get("tables", [])]
        d["claims"] = [Claim.from_dict(c) for c in d.get("claims", [])]
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
