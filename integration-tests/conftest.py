import os
import shutil
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))


def pytest_generate_tests(metafunc):
    """Parametrize every test that takes `pkg` over the workspace's packages."""
    if "pkg" in metafunc.fixturenames:
        metafunc.parametrize("pkg", PACKAGES, ids=[p.name for p in PACKAGES])


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture
def meta(pkg) -> dict:
    """The `[project]` table of the package's pyproject.toml."""
    return tomllib.loads((pkg / "pyproject.toml").read_text())["project"]


@pytest.fixture(scope="session")
def uv() -> str:
    exe = os.environ.get("UV") or shutil.which("uv")
    if not exe:
        pytest.fail("uv is needed for the integration tests (pip install uv)")
    return exe
