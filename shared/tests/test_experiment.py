import json
import math

import numpy as np
import pytest
from icml26_core import Claim, Experiment, Result, RunContext, Table
from icml26_core.experiment import execute, format_value
from icml26_core.report import README_END, README_START, update_readme, write_report


def _toy_run(ctx: RunContext) -> Result:
    n = ctx.pick(smoke=3, default=30)
    rng = ctx.rng()
    values = {"a": float(rng.normal()), "b": float(rng.normal())}
    t = Table("toy", ["method", "value"])
    for k in ctx.progress(sorted(values), "methods"):
        t.add_row(method=k, value=values[k])
    claim = Claim.check("a beats b", "a < b", values, lambda v: v["a"] < v["b"])
    return Result(tables=[t], claims=[claim], data={"n": n, "arr": np.arange(3)})


TOY = Experiment("toy", "A toy paper", "a beats b", _toy_run)


def test_claim_verdict_is_computed_from_values():
    c = Claim.check("x", "a < b", {"a": 1.0, "b": 2.0}, lambda v: v["a"] < v["b"])
    assert c.holds and c.verdict == "holds"
    c = Claim.check("x", "a < b", {"a": 3.0, "b": 2.0}, lambda v: v["a"] < v["b"])
    assert not c.holds and c.verdict == "does not hold"


def test_claim_with_missing_measurement_does_not_hold():
    c = Claim.check("x", "a < b", {"a": None, "b": 2.0}, lambda v: v["a"] < v["b"])
    assert not c.holds


def test_claim_with_nan_does_not_hold():
    c = Claim.check("x", "a < b", {"a": math.nan, "b": 2.0}, lambda v: v["a"] < v["b"])
    assert not c.holds


def test_table_rejects_unknown_columns():
    t = Table("t", ["a", "b"])
    t.add_row(a=1)
    with pytest.raises(ValueError, match="unknown columns"):
        t.add_row(c=1)
    assert t.column("b") == [None]


def test_run_context_validates_scale():
    with pytest.raises(ValueError, match="scale"):
        RunContext(scale="huge")


def test_pick_by_scale():
    assert RunContext("smoke").pick(1, 2, 3) == 1
    assert RunContext("default").pick(1, 2, 3) == 2
    assert RunContext("full").pick(1, 2, 3) == 3
    assert RunContext("full").pick(1, 2) == 2


def test_execute_writes_json_and_markdown(tmp_path):
    ctx = RunContext(scale="smoke", seed=3, out_dir=tmp_path)
    result = execute(TOY, ctx, version="9.9")
    raw = json.loads((tmp_path / "result.json").read_text())
    assert raw["name"] == "toy" and raw["version"] == "9.9" and raw["seed"] == 3
    assert raw["data"] == {"n": 3, "arr": [0, 1, 2]}
    assert raw["claims"][0]["verdict"] == result.claims[0].verdict
    assert "python" in raw["environment"]
    md = (tmp_path / "result.md").read_text()
    assert "a beats b" in md and "| method | value |" in md
    again = Result.read(tmp_path / "result.json")
    assert again.claims[0].holds == result.claims[0].holds
    assert again.tables[0].rows == [
        {"method": r["method"], "value": r["value"]} for r in result.tables[0].rows
    ]


def test_execute_is_reproducible_for_a_seed(tmp_path):
    r1 = execute(TOY, RunContext("smoke", seed=5, out_dir=tmp_path / "1"))
    r2 = execute(TOY, RunContext("smoke", seed=5, out_dir=tmp_path / "2"))
    assert r1.tables[0].rows == r2.tables[0].rows


def test_nan_becomes_null_in_json(tmp_path):
    def run(ctx):
        t = Table("t", ["m", "v"], [{"m": "x", "v": float("nan")}])
        return Result(tables=[t], claims=[Claim.check("s", "r", {"v": 1.0}, lambda v: True)])

    execute(Experiment("nan", "t", "c", run), RunContext("smoke", out_dir=tmp_path))
    raw = json.loads((tmp_path / "result.json").read_text())
    assert raw["tables"][0]["rows"][0]["v"] is None


def test_execute_rejects_wrong_return_type(tmp_path):
    bad = Experiment("bad", "t", "c", lambda ctx: {"not": "a result"})
    with pytest.raises(TypeError, match="expected Result"):
        execute(bad, RunContext("smoke", out_dir=tmp_path))


def test_report_and_readme_update(tmp_path):
    execute(TOY, RunContext("smoke", out_dir=tmp_path / "results" / "toy"))
    report = write_report(tmp_path / "results")
    text = report.read_text()
    assert "## toy" in text and "claims holding" in text
    readme = tmp_path / "README.md"
    readme.write_text(f"# toy\n\n## Results\n{README_START}\nold\n{README_END}\nafter\n")
    result = Result.read(tmp_path / "results" / "toy" / "result.json")
    assert update_readme(readme, result)
    new = readme.read_text()
    assert "old" not in new and "a beats b" in new and new.endswith("after\n")
    assert not update_readme(readme, result)  # idempotent


def test_update_readme_needs_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    with pytest.raises(ValueError, match="markers"):
        update_readme(readme, Result())


def test_write_report_without_results(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_report(tmp_path)


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), (0.5, "0.5"), (1.23456e-5, "1.235e-05"), (float("inf"), "-"), (True, "yes"),
     (3, "3"), ("x", "x")],
)
def test_format_value(value, text):
    assert format_value(value) == text
