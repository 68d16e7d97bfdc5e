import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    # The tests use tiny matrices: threads only add contention on a shared machine.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
