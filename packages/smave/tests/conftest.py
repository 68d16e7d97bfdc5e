import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # Small BLAS calls thrash with several threads on a shared 2-core machine.
    with threadpool_limits(limits=1, user_api="blas"):
        yield
