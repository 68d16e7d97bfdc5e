"""Terminal tables, markdown and the project report for experiment results."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table as RichTable

from icml26_core.experiment import Claim, Result, Table, format_value
from icml26_core.stats import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, count_verdicts

README_START = "<!-- icml26:results:start -->"
README_END = "<!-- icml26:results:end -->"


def _cell(text: str) -> str:
    # a "|" inside a cell (e.g. a column named "|w| decile") would split the markdown row
    return str(text).replace("|", "\\|")


def table_markdown(table: Table) -> str:
    """Render a :class:`Table` as a GitHub markdown table with its title."""
    lines = [f"**{table.title}**", ""]
    lines.append("| " + " | ".join(_cell(c) for c in table.columns) + " |")
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    for row in table.rows:
        cells = (_cell(format_value(row.get(c))) for c in table.columns)
        lines.append("| " + " | ".join(cells) + " |")
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines) + "\n"


_MARKS = {HOLDS: "HOLDS", DOES_NOT_HOLD: "DOES NOT HOLD", INCONCLUSIVE: "INCONCLUSIVE"}
_STYLES = {HOLDS: "bold green", DOES_NOT_HOLD: "bold red", INCONCLUSIVE: "bold yellow"}


def measured_line(c: Claim, max_items: int = 8) -> str | None:
    """The measured values of a :meth:`Claim.check` in one line, or None for other claims.

    Scalars are shown as they are (floats with 4 significant digits); a sequence as its
    length and mean; at most ``max_items`` entries, then a count of the rest (all of
    them stay in ``result.json``).
    """
    if c.evidence is not None or c.parts or not c.values:
        return None
    items = []
    for k, v in c.values.items():
        if isinstance(v, list | tuple | np.ndarray):
            a = np.asarray(v, dtype=object).ravel()
            nums = [float(x) for x in a if isinstance(x, int | float | np.number)]
            mean = f", mean {format_value(float(np.mean(nums)))}" if len(nums) == len(a) else ""
            items.append(f"{k}: {len(a)} values{mean}")
        elif isinstance(v, Mapping):
            items.append(f"{k}: {len(v)} entries")
        else:
            items.append(f"{k} = {format_value(v)}")
    rest = len(items) - max_items
    return "; ".join(items[:max_items]) + (f"; and {rest} more" if rest > 0 else "")


def _claim_lines(c: Claim, indent: str = "") -> list[str]:
    lines = [f"{indent}- **{_MARKS[c.verdict]}**: {c.statement}  "]
    if c.evidence is not None:
        lines.append(f"{indent}  Evidence: {c.evidence.summary()}; {c.evidence.reason}.  ")
    measured = measured_line(c)
    if measured:
        lines.append(f"{indent}  Measured: {measured}.  ")
    lines.append(f"{indent}  Rule: {c.rule}")
    for part in c.parts:
        lines += _claim_lines(part, indent + "  ")
    return lines


def claims_markdown(result: Result) -> str:
    """Render the claims, their verdicts and evidence (effect, CI, p, n) as a list."""
    lines: list[str] = []
    for c in result.claims:
        lines += _claim_lines(c)
    return "\n".join(lines) + ("\n" if lines else "")


def verdict_counts(result: Result) -> dict[str, int]:
    """How many of a result's claims hold, do not hold, and are inconclusive."""
    return count_verdicts([c.verdict for c in result.claims])


def counts_text(counts: dict[str, int]) -> str:
    """``"2 hold, 1 does not, 0 inconclusive"`` for a :func:`verdict_counts` dict."""
    return (
        f"{counts[HOLDS]} hold, {counts[DOES_NOT_HOLD]} do not, {counts[INCONCLUSIVE]} inconclusive"
    )


def result_body_markdown(result: Result, *, heading_level: int = 2) -> str:
    """Claims, tables, figures and notes of a result, without the page title."""
    h = "#" * heading_level
    parts = [
        f"Scale `{result.scale}`, seed {result.seed}, device `{result.device}`, "
        f"{result.elapsed_s:.0f} s, {result.environment.get('cpu_count', '?')} CPU cores, "
        f"run {result.started}.\n"
    ]
    if result.claims:
        parts += [f"{h} Claims\n", claims_markdown(result)]
    if result.tables:
        parts.append(f"{h} Tables\n")
        parts += [table_markdown(t) for t in result.tables]
    if result.figures:
        parts.append(f"{h} Figures\n")
        parts += [f"![{f}]({f})\n" for f in result.figures]
    if result.notes:
        parts.append(f"{h} Notes\n")
        parts += [f"- {n}" for n in result.notes]
        parts.append("")
    return "\n".join(parts)


def result_markdown(result: Result) -> str:
    """The full ``result.md`` page of one run."""
    return f"# {result.name} {result.version}: {result.title}\n\n" + result_body_markdown(result)


def print_result(result: Result, console: Console) -> None:
    """Print tables and verdicts of a result on a rich console."""
    for t in result.tables:
        rt = RichTable(title=t.title, title_justify="left")
        for c in t.columns:
            rt.add_column(c, justify="left" if c == t.columns[0] else "right")
        for row in t.rows:
            rt.add_row(*(format_value(row.get(c)) for c in t.columns))
        console.print(rt)
        if t.note:
            console.print(f"[dim]{t.note}[/dim]")
    for claim in result.claims:
        _print_claim(claim, console)
    for n in result.notes:
        console.print(f"[dim]note: {n}[/dim]")


def _print_claim(c: Claim, console: Console, indent: str = "") -> None:
    style = _STYLES[c.verdict]
    console.print(f"{indent}[{style}]{c.verdict.upper()}[/{style}]: {c.statement}", highlight=False)
    if c.evidence is not None:
        console.print(f"{indent}  {c.evidence.summary()}; {c.evidence.reason}", highlight=False)
    measured = measured_line(c)
    if measured:
        console.print(f"{indent}  measured: {measured}", highlight=False)
    console.print(f"{indent}  [dim]rule: {c.rule}[/dim]", highlight=False)
    for part in c.parts:
        _print_claim(part, console, indent + "  ")


def find_results(results_dir: str | Path) -> list[Path]:
    """All ``result.json`` files under ``results_dir/<name>/``, and ``results_dir``'s own.

    ``icml26 run NAME`` writes ``results/NAME/``; ``--out DIR`` writes into ``DIR``
    itself, so a folder holding a ``result.json`` counts too.
    """
    root = Path(results_dir)
    own = [root / "result.json"] if (root / "result.json").is_file() else []
    return own + sorted(root.glob("*/result.json"))


def write_report(results_dir: str | Path = "results") -> Path:
    """Gather every ``results/<name>/result.json`` into ``results/REPORT.md``.

    Raises:
        FileNotFoundError: If no result file is found.
    """
    root = Path(results_dir)
    paths = find_results(root)
    if not paths:
        raise FileNotFoundError(
            f"no result.json in {root}/ or {root}/*/; run `icml26 run NAME` first "
            f"(smoke runs write results/smoke/NAME: pass --results results/smoke)"
        )
    results = [Result.read(p) for p in paths]
    lines = [
        "# icml26-optim: measured results\n",
        "| experiment | scale | claims | holds | does not hold | inconclusive |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        k = verdict_counts(r)
        lines.append(
            f"| [{r.name}](#{r.name}) | {r.scale} | {len(r.claims)} | {k[HOLDS]} | "
            f"{k[DOES_NOT_HOLD]} | {k[INCONCLUSIVE]} |"
        )
    lines.append("")
    for r, p in zip(results, paths, strict=True):
        body = result_body_markdown(r, heading_level=3)
        # figures live beside each result.json: make their links relative to REPORT.md
        body = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", rf"![\1]({p.parent.name}/\2)", body)
        lines += [f"## {r.name}\n", f"{r.title}\n", body]
    out = root / "REPORT.md"
    out.write_text("\n".join(lines))
    return out


def update_readme(readme: str | Path, result: Result, figure_prefix: str = "") -> bool:
    """Rewrite the results section of a README between the result markers.

    The section between ``<!-- icml26:results:start -->`` and
    ``<!-- icml26:results:end -->`` is replaced with the measured result, so the
    numbers in a README are always the ones the code printed.

    Args:
        readme: Path of the README.
        result: The result to show.
        figure_prefix: Path prepended to figure links (where figures are copied).

    Returns:
        True if the file changed.

    Raises:
        ValueError: If the README lacks the markers.
    """
    path = Path(readme)
    text = path.read_text()
    if README_START not in text or README_END not in text:
        raise ValueError(f"{path} has no {README_START} ... {README_END} markers")
    body = result_body_markdown(result, heading_level=3)
    if figure_prefix:
        body = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", rf"![\1]({figure_prefix}\2)", body)
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    new = f"{head}{README_START}\n{body}\n{README_END}{tail}"
    if new == text:
        return False
    path.write_text(new)
    return True
