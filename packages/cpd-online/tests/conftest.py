import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """One torch thread: on a loaded 2-core machine two threads run 8-20x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
