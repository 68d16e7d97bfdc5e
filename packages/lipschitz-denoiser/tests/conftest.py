import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    # The test machine is shared: two threads that contend with other processes run
    # tiny convolutions tens of times slower than one. Restored after each test.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
