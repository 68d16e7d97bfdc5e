"""Conformance check of the experiment contract."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from icml26_core import registry
from icml26_core.experiment import Result, RunContext, execute
from icml26_core.stats import VERDICTS

SMOKE_BUDGET_S = 30.0


def check_experiment(name: str, out_dir: str | Path, *, seed: int = 0) -> Result:
    """Run experiment ``name`` at smoke scale and validate what it wrote.

    Checks that it is registered and loads, returns a :class:`Result` with at
    least one table and one claim, that every claim has one of the three verdicts
    computed from measured values, that ``result.json`` round-trips and that
    listed figures exist. The smoke budget (30 s on 2 CPU cores) is reported,
    not asserted, since wall time depends on the machine.

    Returns:
        The result, for further package-specific checks.

    Raises:
        AssertionError: If any check fails.
    """
    assert name in registry.names(), f"{name!r} is not registered under {registry.GROUP}"
    info = registry.load(name)
    assert info.experiment is not None, f"{name} failed to load: {info.error}"
    assert info.experiment.name == name, "entry-point name and Experiment.name differ"
    ctx = RunContext(scale="smoke", device="cpu", seed=seed, out_dir=out_dir)
    t0 = time.perf_counter()
    result = execute(info.experiment, ctx, version=info.version)
    elapsed = time.perf_counter() - t0
    assert result.tables, "an experiment must report at least one table"
    assert result.claims, "an experiment must state at least one claim"
    for t in result.tables:
        assert t.rows, f"table {t.title!r} is empty"
        for row in t.rows:
            assert set(row) <= set(t.columns), f"row keys {set(row)} not in columns {t.columns}"
    for c in result.claims:
        assert c.verdict in VERDICTS, f"claim verdict {c.verdict!r} not one of {VERDICTS}"
        assert c.statement and c.rule, "a claim needs a statement and a rule in words"
        assert c.values, f"claim {c.statement!r} records no measured values"
    path = Path(out_dir) / "result.json"
    assert path.is_file() and (Path(out_dir) / "result.md").is_file()
    raw = json.loads(path.read_text())
    assert raw["name"] == name and raw["scale"] == "smoke"
    assert all("verdict" in c for c in raw["claims"])
    again = Result.read(path)
    assert [c.verdict for c in again.claims] == [c.verdict for c in result.claims]
    for fig in result.figures:
        assert (Path(out_dir) / fig).is_file(), f"figure {fig} listed but not written"
    assert math.isfinite(elapsed)
    if elapsed > SMOKE_BUDGET_S:
        import warnings

        warnings.warn(f"{name} smoke run took {elapsed:.1f} s (> {SMOKE_BUDGET_S} s)", stacklevel=2)
    return result
