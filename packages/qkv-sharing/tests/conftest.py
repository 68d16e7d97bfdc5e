import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    # Tiny tensors on a shared 2-core machine: more intra-op threads only fight (a 10x
    # slowdown with 2 threads was measured under load); one is fastest and deterministic.
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
