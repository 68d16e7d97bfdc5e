#!/usr/bin/env python3
"""Start a new package from the template: ``python tools/new_package.py NAME "summary"``.

Copies ``tools/package-template`` to ``packages/NAME`` with the names filled in (the
import name swaps ``-`` for ``_``), copies the licence, and adds the package to the
workspace root (``NAME[repro]`` to the root's dependencies and ``NAME = { workspace =
true }`` to ``[tool.uv.sources]``, the two places uv needs), then regenerates the
root README's package table. Run ``uv lock`` afterwards.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tools" / "package-template"
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def add_to_root(pyproject: Path, name: str) -> str:
    """Return the root pyproject text with ``name`` added in both places (idempotent)."""
    text = pyproject.read_text()
    data = tomllib.loads(text)
    deps = data["project"]["dependencies"]
    if not any(re.match(rf"^{re.escape(name)}\[", d) for d in deps):
        last = deps[-1]
        text = text.replace(f'    "{last}",\n]', f'    "{last}",\n    "{name}[repro]",\n]', 1)
    if name not in data["tool"]["uv"]["sources"]:
        text = text.replace(
            "[tool.uv.sources]\n", f"[tool.uv.sources]\n{name} = {{ workspace = true }}\n", 1
        )
    new = tomllib.loads(text)
    if not any(d.startswith(f"{name}[") for d in new["project"]["dependencies"]):
        raise RuntimeError("could not add the dependency; edit the root pyproject.toml by hand")
    if name not in new["tool"]["uv"]["sources"]:
        raise RuntimeError("could not add the source; edit the root pyproject.toml by hand")
    return text


def main(argv: list[str] | None = None) -> int:
    """Create ``packages/NAME``; return the exit status."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", help="distribution name, e.g. foam-shampoo")
    p.add_argument("summary", help="one line: what the package gives")
    args = p.parse_args(argv)
    if not NAME_RE.match(args.name):
        p.error(f"name must be lower-case words joined by '-', got {args.name!r}")
    dest = ROOT / "packages" / args.name
    if dest.exists():
        p.error(f"{dest} exists already")
    imp = args.name.replace("-", "_")
    shutil.copytree(TEMPLATE, dest)
    (dest / "src" / "__PKG_IMPORT__").rename(dest / "src" / imp)
    for f in dest.rglob("*"):
        if f.is_file() and f.suffix in {".py", ".md", ".toml"}:
            text = f.read_text()
            text = text.replace("__PKG_IMPORT__", imp).replace("__PKG_NAME__", args.name)
            f.write_text(text.replace("__PKG_SUMMARY__", args.summary))
    shutil.copy2(ROOT / "LICENSE", dest / "LICENSE")
    root = ROOT / "pyproject.toml"
    root.write_text(add_to_root(root, args.name))
    sys.path.insert(0, str(ROOT / "tools"))
    import readme_table

    readme_table.main(["--write"])
    print(f"created {dest.relative_to(ROOT)}; next: uv lock && uv run pytest packages/{args.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
