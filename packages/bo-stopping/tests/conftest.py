import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    # GP fits on a dozen points thrash with several intra-op threads on a shared 2-core machine.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
