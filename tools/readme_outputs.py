"""Record what every README example printed, pass or fail, and compare records.

``python tools/readme_outputs.py record OUT.json [README ...]`` runs the ```pycon blocks
of the package READMEs (all by default) with plain doctest and writes each example's
output; ``python tools/readme_outputs.py compare A.json B.json ...`` prints the examples
whose output differs between the records. ``tools/other_cpu.sh --compare-readmes`` records
natively and under each emulation, then compares: an output that moves at all with the CPU
is one step from failing in CI, even when the doctest's ``NUMBER`` slack still passes it.
"""

from __future__ import annotations

import doctest
import glob
import json
import os
import sys
import warnings


class _AlwaysMatch(doctest.OutputChecker):
    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        return True


class _Recorder(doctest.DocTestRunner):
    def __init__(self) -> None:
        super().__init__(checker=_AlwaysMatch(), optionflags=doctest.ELLIPSIS)
        self.rows: list[list[str]] = []

    def report_success(self, out, test, example, got):  # type: ignore[no-untyped-def]
        self.rows.append([example.source.strip(), example.want, got])

    def report_unexpected_exception(self, out, test, example, exc_info):  # type: ignore[no-untyped-def]
        self.rows.append([example.source.strip(), example.want, f"raised {exc_info[1]!r}"])


def record(out: str, files: list[str]) -> None:
    """Run the examples of ``files`` and write ``{package: [[source, want, got], ...]}``."""
    warnings.filterwarnings("ignore")
    result = {}
    for path in files or sorted(glob.glob("packages/*/README.md")):
        with open(path) as f:
            text = f.read()
        test = doctest.DocTestParser().get_doctest(text, {"__name__": "__main__"}, path, path, 0)
        runner = _Recorder()
        cwd = os.getcwd()
        try:
            runner.run(test, out=lambda s: None)
        finally:
            os.chdir(cwd)
        result[path] = runner.rows
    with open(out, "w") as f:
        json.dump(result, f, indent=0)


def compare(records: list[str]) -> int:
    """Print the examples whose output differs between ``records``; return how many."""
    runs = {}
    for path in records:
        with open(path) as f:
            runs[path] = json.load(f)
    first = runs[records[0]]
    moved = 0
    for readme, rows in first.items():
        for i, (source, want, _) in enumerate(rows):
            gots = {name: run.get(readme, [])[i][2] for name, run in runs.items()}
            if len(set(gots.values())) > 1:
                moved += 1
                print(f"{readme}: {source[:100]!r}\n  README: {want!r}")
                for name, got in gots.items():
                    print(f"  {os.path.basename(name)}: {got!r}")
    print(f"{moved} example output(s) differ between {len(records)} records")
    return moved


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        sys.exit(1 if compare(sys.argv[2:]) else 0)
    else:
        sys.exit(__doc__)
