#!/usr/bin/env python3
"""Regenerate the package table of the root README: ``python tools/readme_table.py --write``.

One row per paper: a package under ``packages/`` gives its own row (the one-line summary
in its ``pyproject.toml`` under ``[tool.icml26] summary``, else its description) with
the verdict counts of the claims in its README's results section; papers without a
package yet come from ``tools/planned.toml``. ``--check`` exits 1 when the README's
table is stale (the tests run it), so the table never drifts from the packages.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- icml26:packages:start -->", "<!-- icml26:packages:end -->"
RESULTS = re.compile(r"<!-- icml26:results:start -->(.*?)<!-- icml26:results:end -->", re.S)
MARKS = {"HOLDS": "holds", "DOES NOT HOLD": "does not hold", "INCONCLUSIVE": "inconclusive"}


def verdict_counts(readme: str) -> dict[str, int] | None:
    """Counts of the top-level claims in a README's results section, None if empty."""
    m = RESULTS.search(readme)
    if not m or not m.group(1).strip():
        return None
    counts = dict.fromkeys(MARKS.values(), 0)
    for mark in re.findall(r"^- \*\*(HOLDS|DOES NOT HOLD|INCONCLUSIVE)\*\*", m.group(1), re.M):
        counts[MARKS[mark]] += 1
    return counts


def rows(root: Path = ROOT) -> list[str]:
    """The table's markdown rows, sorted by name."""
    out: dict[str, str] = {}
    for pyproject in sorted((root / "packages").glob("*/pyproject.toml")):
        data = tomllib.loads(pyproject.read_text())
        name = data["project"]["name"]
        summary = data.get("tool", {}).get("icml26", {}).get("summary")
        summary = summary or data["project"].get("description", "")
        readme = pyproject.parent / "README.md"
        counts = verdict_counts(readme.read_text()) if readme.is_file() else None
        if counts is None:
            status, claims = "in progress", "-"
        else:
            status = "landed"
            claims = " / ".join(str(counts[v]) for v in MARKS.values())
        out[name] = f"| [{name}](packages/{name}) | {summary} | {status} | {claims} |"
    planned = tomllib.loads((root / "tools" / "planned.toml").read_text())
    for name, summary in planned.items():
        out.setdefault(name, f"| {name} | {summary} | open | - |")
    return [out[k] for k in sorted(out)]


def table(root: Path = ROOT) -> str:
    """The whole table between the markers."""
    head = [
        "| package | paper (our one-line summary) | status "
        "| claims: holds / does not hold / inconclusive |",
        "|---|---|---|---|",
    ]
    return "\n".join([START, *head, *rows(root), END])


def main(argv: list[str] | None = None) -> int:
    """Write or check the table; return the exit status."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help="rewrite README.md's table")
    g.add_argument("--check", action="store_true", help="exit 1 if README.md's table is stale")
    args = p.parse_args(argv)
    readme = ROOT / "README.md"
    text = readme.read_text()
    if START not in text or END not in text:
        print(f"{readme} lacks the {START} ... {END} markers", file=sys.stderr)
        return 1
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = head + table() + tail
    if args.check:
        if new != text:
            print(
                "README.md's package table is stale: run python tools/readme_table.py --write",
                file=sys.stderr,
            )
            return 1
        return 0
    if new != text:
        readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
