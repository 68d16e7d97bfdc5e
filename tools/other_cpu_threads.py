"""pytest plugin of tools/other_cpu.sh: torch intra-op threads from ``ICML26_TORCH_THREADS``.

torch clamps ``OMP_NUM_THREADS`` to the cores it sees, so a 2-core machine cannot
emulate a CI runner with more cores through the environment alone; this sets the count
after torch is imported. Loaded with ``-p other_cpu_threads`` (``tools/`` on PYTHONPATH).
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Set torch's thread count before any test runs."""
    threads = os.environ.get("ICML26_TORCH_THREADS")
    if not threads:
        return
    import torch

    torch.set_num_threads(int(threads))
