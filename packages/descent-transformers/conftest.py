"""Tests of descent-transformers (README included) run torch on one thread.

Their models are tiny: two threads only add synchronisation, and on a loaded machine
torch's spinning worker threads make them many times slower. Restored after each test.
"""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
