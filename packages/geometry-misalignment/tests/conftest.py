import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: the shared 2-core machine is 8-20x slower with two."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
