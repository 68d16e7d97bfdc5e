#!/usr/bin/env python3
"""Give a package the metadata of a well-kept PyPI distribution: ``--write NAME...``.

Adds, where missing, to ``packages/NAME/pyproject.toml``: ``license-files``, ``authors``,
``keywords``, ``classifiers`` (licence, Python versions, ``Typing :: Typed``) and a
``[tool.icml26] summary`` for the root README's table; and to the package folder: a
copy of the licence, ``py.typed`` and a ``CHANGELOG.md``. ``--check`` lists what is
missing (the tests run it). It never rewrites what is there.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLASSIFIERS = [
    "Development Status :: 3 - Alpha",
    "Intended Audience :: Science/Research",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
    "Typing :: Typed",
]
AUTHORS = 'authors = [{ name = "icml26-optim contributors" }]'


def problems(pkg: Path) -> list[str]:
    """What ``pkg`` lacks, one line each (empty when complete)."""
    data = tomllib.loads((pkg / "pyproject.toml").read_text())
    proj = data["project"]
    imp = proj["name"].replace("-", "_")
    out = []
    for key in ("license-files", "authors", "classifiers", "keywords"):
        if key not in proj:
            out.append(f"{pkg.name}: pyproject [project] has no {key}")
    if "Typing :: Typed" not in proj.get("classifiers", []):
        out.append(f"{pkg.name}: classifiers lack 'Typing :: Typed'")
    if not data.get("tool", {}).get("icml26", {}).get("summary"):
        out.append(f"{pkg.name}: pyproject has no [tool.icml26] summary (the root table's line)")
    for f in ("LICENSE", "CHANGELOG.md", f"src/{imp}/py.typed"):
        if not (pkg / f).is_file():
            out.append(f"{pkg.name}: no {f}")
    return out


def write(pkg: Path, summary: str | None) -> None:
    """Add what is missing to ``pkg`` (see the module docstring)."""
    path = pkg / "pyproject.toml"
    text = path.read_text()
    proj = tomllib.loads(text)["project"]
    imp = proj["name"].replace("-", "_")
    extra = []
    if "license-files" not in proj:
        extra.append('license-files = ["LICENSE"]')
    if "authors" not in proj:
        extra.append(AUTHORS)
    if "keywords" not in proj:
        extra.append('keywords = ["optimization", "icml-2026"]')
    if "classifiers" not in proj:
        extra.append("classifiers = [\n" + "".join(f'    "{c}",\n' for c in CLASSIFIERS) + "]")
    if extra:
        anchor = 'license = "MIT"\n'
        if anchor not in text:
            raise RuntimeError(f"{path}: no `license = \"MIT\"` line to anchor the metadata")
        text = text.replace(anchor, anchor + "\n".join(extra) + "\n", 1)
    if "[tool.icml26]" not in text:
        if not summary:
            raise RuntimeError(f"{pkg.name}: give --summary for [tool.icml26]")
        text = text.rstrip("\n") + f'\n\n[tool.icml26]\n# one line for the root README table\nsummary = "{summary}"\n'
    tomllib.loads(text)  # still valid
    path.write_text(text)
    if not (pkg / "LICENSE").is_file():
        shutil.copy2(ROOT / "LICENSE", pkg / "LICENSE")
    (pkg / "src" / imp / "py.typed").touch()
    if not (pkg / "CHANGELOG.md").is_file():
        (pkg / "CHANGELOG.md").write_text(
            f"# Changelog of {proj['name']}\n\nThe format follows [Keep a Changelog]"
            "(https://keepachangelog.com/en/1.1.0/); versions follow [Semantic Versioning]"
            "(https://semver.org/).\n\n## [0.1.0] - unreleased\n\n### Added\n"
            "- The method, its experiment, tests and a benchmark.\n"
        )


def main(argv: list[str] | None = None) -> int:
    """Check or write; return the exit status."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", nargs="+", metavar="NAME", help="packages to complete")
    p.add_argument("--summary", help="[tool.icml26] summary (with one NAME)")
    p.add_argument("--check", action="store_true", help="list what every package lacks")
    args = p.parse_args(argv)
    if args.write:
        for name in args.write:
            write(ROOT / "packages" / name, args.summary)
    if args.check:
        found = [m for d in sorted((ROOT / "packages").glob("*/pyproject.toml"))
                 for m in problems(d.parent)]
        for m in found:
            print(m)
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
