"""pytest plugin of the workspace: fixtures and the ``gpu`` marker.

Loaded by the root ``conftest.py`` with ``pytest_plugins``; a package tested
alone from its wheel loads it from its own ``conftest.py`` the same way.
"""

from __future__ import annotations

import numpy as np
import pytest

from icml26_core.device import cuda_available, torch_threads


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``gpu`` when no CUDA device is present."""
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng() -> np.random.Generator:
    """A numpy Generator with a fixed seed, fresh for each test."""
    return np.random.default_rng(12345)


def _devices() -> list[str]:
    return ["cpu", "cuda"] if cuda_available() else ["cpu"]


@pytest.fixture(params=_devices())
def device(request: pytest.FixtureRequest) -> str:
    """Each available device in turn: ``"cpu"``, plus ``"cuda"`` when present."""
    return request.param


@pytest.fixture
def torch_one_thread():
    """Run the test with one torch intra-op thread (restored after).

    Tiny tensors gain nothing from a second thread and, on a busy 2-core machine,
    lose much to synchronization. Use it from a package's ``conftest.py``::

        @pytest.fixture(autouse=True)
        def _one_thread(torch_one_thread): ...
    """
    with torch_threads(1):
        yield
