import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread(torch_one_thread):
    # Tiny tensors: a second intra-op thread only adds synchronization on a busy 2-core
    # machine. Restored after each test.
    yield
