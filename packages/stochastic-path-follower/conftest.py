"""Tests of stochastic-path-follower (README included) run torch on one thread.

The tensors are tiny: a second intra-op thread only adds synchronisation, and on a busy
2-core machine makes them many times slower. Restored after each test.
"""

import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread(torch_one_thread):
    yield
