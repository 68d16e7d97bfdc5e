"""The benchmark scripts run on the CPU (the GPU script in its ``--dry-run`` mode)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
# the benchmark scripts live in the repository, not in the wheel whose tests run alone
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="benchmarks/ not beside the tests")


def test_many_layers_benchmark_times_foreach_against_the_loop(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    from bench_many_layers import compare, markdown

    rows = compare(4, 8, "cpu", repeats=2)
    loop = next(r for r in rows if "foreach=False" in r["method"])
    assert loop["ms_per_step"] > 0 and loop["foreach_ms_per_step"] > 0
    assert "4 x 8x8" in markdown(rows)


@pytest.mark.slow  # about 20 s of CPU: every method of the GPU script at tiny sizes
def test_gpu_script_dry_run_writes_its_table(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "gpu_check.py"),
            "--dry-run",
            "--repeats",
            "2",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    methods = {r["method"] for r in report["scale"]}
    assert any(m.startswith("geoopt") for m in methods)
    assert report["many_layers"]
    assert "Procrustes ms per iteration" in (tmp_path / "gpu_check.md").read_text()
