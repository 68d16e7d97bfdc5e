"""Tests of submodular-augment (README included) run torch on one thread.

The models are tiny: a second thread only adds synchronisation, and on a loaded machine
torch's spinning worker threads make them many times slower. Restored after each test.
"""

import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread():
    try:
        import torch
    except ImportError:  # the actions and set functions need no torch
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
