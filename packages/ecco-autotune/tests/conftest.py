import pytest
from ecco_autotune import Evaluator, Toolchain, ToolchainError


@pytest.fixture(autouse=True)
def _one_thread():
    """2 threads are 8-20x slower than 1 on the shared 2-core machine."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        yield
        return
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def toolchain():
    try:
        return Toolchain.check()
    except ToolchainError as e:
        pytest.skip(f"LLVM 14 toolchain missing: {e}")


@pytest.fixture(scope="session")
def evaluator(toolchain, tmp_path_factory):
    return Evaluator(toolchain, workdir=tmp_path_factory.mktemp("ecco"))
