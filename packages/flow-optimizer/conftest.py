"""One torch thread for this package's tests and its README doctest.

The problems here are tiny (populations of 8-32 points in a few dimensions), where
torch's thread pool only adds overhead; on a loaded 2-core machine 2 threads are many
times slower than 1. tests/conftest.py repeats the fixture for the wheel test, which
copies only tests/.
"""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
