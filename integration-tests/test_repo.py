"""What keeps the repository easy to live in: generated tables current, the template works."""

import shutil
import subprocess
import sys
import tomllib

import pytest


def test_root_readme_package_table_is_current(root):
    proc = subprocess.run(
        [sys.executable, str(root / "tools/readme_table.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_every_package_folder_is_in_the_workspace_root(root):
    data = tomllib.loads((root / "pyproject.toml").read_text())
    deps = data["project"]["dependencies"]
    sources = data["tool"]["uv"]["sources"]
    for pyproject in (root / "packages").glob("*/pyproject.toml"):
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        assert f"{name}[repro]" in deps, (
            f"root pyproject lacks {name}[repro]: use tools/new_package.py"
        )
        assert sources.get(name) == {"workspace": True}, f"root [tool.uv.sources] lacks {name}"


def test_new_package_from_the_template(root, tmp_path):
    for part in ("tools", "LICENSE", "pyproject.toml", "README.md"):
        src = root / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp_path / part)
    (tmp_path / "packages").mkdir()
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "tools/new_package.py"), "my-paper", "a one-line summary"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    pkg = tmp_path / "packages/my-paper"
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    assert meta["name"] == "my-paper" and meta["description"] == "a one-line summary"
    assert (pkg / "src/my_paper/__init__.py").is_file() and (
        pkg / "src/my_paper/py.typed"
    ).is_file()
    assert (pkg / "LICENSE").is_file() and (pkg / "CHANGELOG.md").is_file()
    assert "__PKG" not in "".join(f.read_text() for f in pkg.rglob("*") if f.is_file())
    root_meta = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert "my-paper[repro]" in root_meta["project"]["dependencies"]
    assert root_meta["tool"]["uv"]["sources"]["my-paper"] == {"workspace": True}
    assert "[my-paper](packages/my-paper)" in (tmp_path / "README.md").read_text()
    compile((pkg / "src/my_paper/experiment.py").read_text(), "experiment.py", "exec")
    with pytest.raises(SystemExit):  # a second time refuses to overwrite
        import runpy

        sys.argv = ["new_package.py", "my-paper", "again"]
        runpy.run_path(str(tmp_path / "tools/new_package.py"), run_name="__main__")
