import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: on a shared 2-core machine, 2 threads are many times slower."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
