"""Terminal tables, markdown and the project report for experiment results."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console
from rich.table import Table as RichTable

from icml26_core.experiment import Result, Table, format_value

README_START = "<!-- icml26:results:start -->"
README_END = "<!-- icml26:results:end -->"


def table_markdown(table: Table) -> str:
    """Render a :class:`Table` as a GitHub markdown table with its title."""
    lines = [f"**{table.title}**", ""]
    lines.append("| " + " | ".join(table.columns) + " |")
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    for row in table.rows:
        lines.append("| " + " | ".join(format_value(row.get(c)) for c in table.columns) + " |")
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines) + "\n"


def claims_markdown(result: Result) -> str:
    """Render the claims and their verdicts as a markdown list."""
    lines = []
    for c in result.claims:
        mark = "HOLDS" if c.holds else "DOES NOT HOLD"
        lines.append(f"- **{mark}**: {c.statement}  \n  Rule: {c.rule}")
    return "\n".join(lines) + ("\n" if lines else "")


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
    for c in result.claims:
        style = "bold green" if c.holds else "bold red"
        console.print(f"[{style}]{c.verdict.upper()}[/{style}]: {c.statement}")
        console.print(f"  [dim]rule: {c.rule}[/dim]")
    for n in result.notes:
        console.print(f"[dim]note: {n}[/dim]")


def find_results(results_dir: str | Path) -> list[Path]:
    """All ``result.json`` files directly under ``results_dir/<name>/``."""
    return sorted(Path(results_dir).glob("*/result.json"))


def write_report(results_dir: str | Path = "results") -> Path:
    """Gather every ``results/<name>/result.json`` into ``results/REPORT.md``.

    Raises:
        FileNotFoundError: If no result file is found.
    """
    root = Path(results_dir)
    paths = find_results(root)
    if not paths:
        raise FileNotFoundError(f"no result.json under {root}/*/; run `icml26 run NAME` first")
    results = [Result.read(p) for p in paths]
    lines = ["# icml26-optim: measured results\n", "| experiment | scale | claims holding |"]
    lines.append("|---|---|---|")
    for r in results:
        held = sum(c.holds for c in r.claims)
        lines.append(f"| [{r.name}](#{r.name}) | {r.scale} | {held}/{len(r.claims)} |")
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
