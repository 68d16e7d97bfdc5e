import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    """One thread: on the shared 2-core machine two threads are many times slower."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
