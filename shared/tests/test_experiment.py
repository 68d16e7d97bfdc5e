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


def test_claim_with_missing_measurement_is_inconclusive():
    c = Claim.check("x", "a < b", {"a": None, "b": 2.0}, lambda v: v["a"] < v["b"])
    assert not c.holds and c.verdict == "inconclusive"


def test_claim_with_nan_is_inconclusive():
    c = Claim.check("x", "a < b", {"a": math.nan, "b": 2.0}, lambda v: v["a"] < v["b"])
    assert c.verdict == "inconclusive"
    nested = Claim.check("x", "r", {"a": [1.0, math.inf]}, lambda v: True)
    assert nested.verdict == "inconclusive"


def test_claim_check_predicate_may_return_a_verdict_or_none():
    assert Claim.check("x", "r", {"a": 1}, lambda v: "inconclusive").verdict == "inconclusive"
    assert Claim.check("x", "r", {"a": 1}, lambda v: None).verdict == "inconclusive"
    with pytest.raises(ValueError, match="expected one of"):
        Claim.check("x", "r", {"a": 1}, lambda v: "maybe")
    with pytest.raises(ValueError, match="verdict"):
        Claim("x", "r", {}, "probably")


def test_superior_builder_reads_like_the_claim():
    rng = np.random.default_rng(0)
    base = rng.uniform(1, 2, size=10)
    ours = base * 0.8
    c = Claim.superior(
        "ours has a lower error",
        ours,
        base,
        names=("ours", "sklearn"),
        metric="rel. error",
        higher_is_better=False,
    )
    assert c.verdict == "holds"
    assert c.evidence is not None and c.evidence.n == 10
    assert "ours" in c.rule and "lower is better" in c.rule
    assert c.values["ours"] == pytest.approx(list(ours))
    tie = Claim.superior("tie", base, base + rng.normal(scale=1e-3, size=10) - 0.0)
    assert tie.verdict in ("inconclusive", "holds", "does not hold")
    few = Claim.superior("few", [1.0, 2.0], [0.0, 1.0])
    assert few.verdict == "inconclusive"


def test_non_inferior_builder_needs_a_margin():
    with pytest.raises(ValueError, match="margin"):
        Claim.non_inferior("x", [1.0] * 5, [1.0] * 5, margin=0.0)
    a = np.linspace(1, 2, 12)
    c = Claim.non_inferior("matches", a - 0.01, a, margin=0.05)
    assert c.verdict == "holds" and c.values["margin"] == pytest.approx(0.05)
    rel = Claim.non_inferior(
        "matches", a * 1.02, a, margin=0.05, log_ratio=True, higher_is_better=False
    )
    assert rel.verdict == "holds"


def test_slope_faster_and_win_rate_builders():
    t = np.logspace(0, 3, 12)
    assert Claim.slope("err ~ 1/t", t, 2 / t, expected=-1, tol=0.05).verdict == "holds"
    fast = Claim.faster(
        "2x faster", [1.0, 1.1, 0.9, 1.0, 1.05], [3.0, 3.1, 2.9, 3.0, 3.2], at_least=2.0
    )
    assert fast.verdict == "holds"
    games = Claim.win_rate("as strong", 90, 20, 90, threshold=0.4)
    assert games.verdict == "holds" and games.values["draws"] == 20
    corr = Claim.rank_correlation("ranks", np.arange(12.0), -np.arange(12.0), threshold=0.5)
    assert corr.verdict == "does not hold" and corr.values["pairs"] == 12
    assert corr.evidence is not None and corr.evidence.ci_high < 0.5


def test_all_of_combines_verdicts():
    yes = Claim.check("y", "r", {"a": 1}, lambda v: True)
    no = Claim.check("n", "r", {"a": 1}, lambda v: False)
    maybe = Claim.check("m", "r", {"a": None}, lambda v: True)
    assert Claim.all_of("both", [yes, yes]).verdict == "holds"
    assert Claim.all_of("both", [yes, maybe]).verdict == "inconclusive"
    assert Claim.all_of("both", [maybe, no]).verdict == "does not hold"
    with pytest.raises(ValueError, match="at least one"):
        Claim.all_of("none", [])


def test_three_verdicts_round_trip_through_result_json_and_report(tmp_path):
    rng = np.random.default_rng(1)
    base = rng.normal(size=10)
    claims = [
        Claim.superior("holds", base + 1, base),
        Claim.superior("does not", base - 1, base),
        Claim.check("cannot tell", "r", {"a": math.nan}, lambda v: True),
        Claim.all_of("parts", [Claim.superior("p", base + 1, base)]),
    ]
    result = Result(
        tables=[Table("t", ["m"], [{"m": 1}])], claims=claims, name="three", scale="smoke"
    )
    result.write(tmp_path / "three")
    again = Result.read(tmp_path / "three" / "result.json")
    assert [c.verdict for c in again.claims] == ["holds", "does not hold", "inconclusive", "holds"]
    assert again.claims[0].evidence == claims[0].evidence
    assert again.claims[3].parts[0].evidence == claims[3].parts[0].evidence
    md = (tmp_path / "three" / "result.md").read_text()
    assert "**INCONCLUSIVE**" in md and "**DOES NOT HOLD**" in md and "95% CI" in md
    report = write_report(tmp_path).read_text()
    assert "| [three](#three) | smoke | 4 | 2 | 1 | 1 |" in report


def test_old_result_json_without_evidence_still_reads(tmp_path):
    old = {
        "claims": [
            {"statement": "s", "rule": "r", "values": {"a": 1}, "holds": True, "verdict": "holds"},
            {"statement": "s", "rule": "r", "values": {}, "holds": False},
        ]
    }
    r = Result.from_dict(old)
    assert [c.verdict for c in r.claims] == ["holds", "does not hold"]


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
    assert again.claims[0].verdict == result.claims[0].verdict
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
    assert "## toy" in text and "inconclusive" in text
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
    [
        (None, "-"),
        (0.5, "0.5"),
        (1.23456e-5, "1.235e-05"),
        (float("inf"), "-"),
        (True, "yes"),
        (3, "3"),
        ("x", "x"),
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


def test_check_claims_show_their_measured_values():
    from icml26_core.report import claims_markdown, measured_line

    c = Claim.check(
        "bound holds",
        "max ratio <= 1",
        {"max ratio": 0.8123456, "runs": 10, "per run": [1.0, 2.0, 3.0], "name": "ridge"},
        lambda v: v["max ratio"] <= 1,
    )
    line = measured_line(c)
    assert line == "max ratio = 0.8123; runs = 10; per run: 3 values, mean 2; name = ridge"
    assert "Measured: max ratio = 0.8123" in claims_markdown(Result(tables=[], claims=[c]))
    many = Claim.check("s", "r", {f"k{i}": i for i in range(10)}, lambda v: True)
    assert measured_line(many).endswith("; and 2 more")
    # claims decided by a statistical builder show their evidence instead
    sup = Claim.superior("a beats b", np.arange(8) + 1.0, np.zeros(8))
    assert measured_line(sup) is None


def test_table_markdown_escapes_pipes_in_cells():
    from icml26_core.report import table_markdown

    t = Table("t", ["|w| decile", "method"])
    t.add_row(**{"|w| decile": 1.0, "method": "a|b"})
    lines = table_markdown(t).splitlines()
    assert lines[2] == "| \\|w\\| decile | method |"
    assert lines[4] == "| 1 | a\\|b |"
