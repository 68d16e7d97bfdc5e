"""Test helpers shared by every package: conformance checks and fixtures.

The fixtures and the ``gpu`` marker live in :mod:`icml26_core.testing.plugin`,
which the workspace's root ``conftest.py`` loads explicitly (never through a
``pytest11`` entry point, which would change every user's test runs).
"""

from icml26_core.testing.experiments import check_experiment
from icml26_core.testing.optimizers import check_optimizer

__all__ = ["check_experiment", "check_optimizer"]
