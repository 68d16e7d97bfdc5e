import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # Small BLAS/OpenMP calls thrash with several threads on a shared 2-core machine.
    with threadpool_limits(limits=1):
        yield
