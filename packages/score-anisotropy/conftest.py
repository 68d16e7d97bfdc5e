"""Tests of score-anisotropy (README included) run torch on one thread.

Their models are tiny: on the shared 2-core machine two threads only add
synchronisation and are many times slower. Restored after each test.
"""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
