import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    # Tiny tensors: a second intra-op thread on a busy 2-core machine only adds
    # synchronisation (a 50x slowdown per forward pass was measured).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
