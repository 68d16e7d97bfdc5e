import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest
from icml26_core import Experiment, Result, registry
from icml26_core.cli import main
from icml26_core.experiment import Claim, Table


def _run(ctx):
    t = Table("t", ["m"], [{"m": ctx.scale}])
    return Result(tables=[t], claims=[Claim.check("s", "r", {"x": 1}, lambda v: v["x"] == 1)])


GOOD = Experiment("good", "A good paper", "it works", _run)


@pytest.fixture
def fake_registry(monkeypatch):
    eps = {
        "good": EntryPoint("good", "test_cli_helpers:GOOD", registry.GROUP),
        "broken": EntryPoint("broken", "no_such_module_xyz:EXP", registry.GROUP),
    }
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    # make `test_cli_helpers:GOOD` importable
    mod = type(sys)("test_cli_helpers")
    mod.GOOD = GOOD
    monkeypatch.setitem(sys.modules, "test_cli_helpers", mod)
    return eps


def test_list_survives_a_broken_plugin(fake_registry, capsys):
    assert main(["list", "--load"]) == 0
    out = capsys.readouterr().out
    assert "good" in out and "broken" in out and "failed to load" in out


def test_list_reads_metadata_without_importing(fake_registry, capsys, monkeypatch):
    def boom(name):
        raise AssertionError("plain `icml26 list` must not import experiments")

    monkeypatch.setattr(registry, "load", boom)
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "good" in out and "broken" in out


def test_run_names_a_missing_extra_before_any_work(fake_registry, monkeypatch, capsys):
    entry = registry.ExperimentEntry("good", "1.0", "s", "good-dist")
    monkeypatch.setattr(registry, "entries", lambda: [entry])
    monkeypatch.setattr(
        registry,
        "missing_requirements",
        lambda dist, extra: ["matplotlib>=3.8"] if dist == "good-dist" else [],
    )

    def boom(name):
        raise AssertionError("must not load the experiment when its extra is missing")

    monkeypatch.setattr(registry, "load", boom)
    assert main(["run", "good", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "matplotlib>=3.8" in err and 'pip install "good-dist[repro]"' in err


def test_missing_requirements_reads_installed_metadata():
    assert registry.missing_requirements("icml26-core", "stats") == []
    assert registry.missing_requirements("no-such-dist-xyz") == ["no-such-dist-xyz[repro]"]


def test_run_writes_results(fake_registry, tmp_path, capsys):
    assert main(["run", "good", "--scale", "smoke", "--device", "cpu", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "result.json").is_file()
    assert "HOLDS" in capsys.readouterr().out


def test_run_unknown_name_is_one_line_error(fake_registry, capsys):
    assert main(["run", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no experiment named 'nope'" in err


def test_run_broken_plugin_fails(fake_registry, tmp_path):
    assert main(["run", "broken", "--device", "cpu", "--out", str(tmp_path)]) == 1


def test_run_bad_device(fake_registry, capsys):
    assert main(["run", "good", "--device", "tpu"]) == 2
    assert "device must be one of" in capsys.readouterr().err


def test_run_needs_name_or_all(fake_registry, capsys):
    assert main(["run"]) == 2
    assert main(["run", "good", "--all"]) == 2


def test_run_negative_seed(fake_registry, capsys):
    assert main(["run", "good", "--seed", "-1"]) == 2


def test_report_without_results(tmp_path, capsys):
    assert main(["report", "--results", str(tmp_path)]) == 2


def test_bad_scale_exits_2_with_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "icml26_core.cli", "run", "x", "--scale", "huge"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "invalid choice" in proc.stderr


def test_smoke_runs_do_not_replace_default_results(fake_registry, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "good", "--device", "cpu"]) == 0
    assert main(["run", "good", "--scale", "smoke", "--device", "cpu"]) == 0
    assert '"scale": "default"' in (tmp_path / "results/good/result.json").read_text()
    assert '"scale": "smoke"' in (tmp_path / "results/smoke/good/result.json").read_text()


def _readme_package(tmp_path, name="good"):
    from icml26_core.report import README_END, README_START

    pkg = tmp_path / "packages" / name
    pkg.mkdir(parents=True)
    readme = pkg / "README.md"
    readme.write_text(f"# {name}\n\n{README_START}\nold\n{README_END}\n")
    return readme


def test_report_readme_keeps_default_results_from_smoke_runs(tmp_path, capsys):
    readme = _readme_package(tmp_path)
    out = tmp_path / "results" / "smoke" / "good"
    Result(name="good", scale="smoke").write(out)
    args = ["report", "--results", str(out.parent), "--packages", str(tmp_path / "packages")]
    assert main([*args, "--readme"]) == 0
    assert "old" in readme.read_text()  # a smoke run never replaces the default results
    assert "smoke-scale" in capsys.readouterr().out
    assert main([*args, "--readme", "--any-scale"]) == 0
    assert "old" not in readme.read_text()


def test_report_reads_a_folder_written_by_out(tmp_path):
    readme = _readme_package(tmp_path)
    out = tmp_path / "anywhere"
    Result(name="good", scale="default").write(out)  # what `icml26 run good --out DIR` makes
    assert (
        main(
            ["report", "--results", str(out), "--readme", "--packages", str(tmp_path / "packages")]
        )
        == 0
    )
    assert (out / "REPORT.md").is_file() and "old" not in readme.read_text()
