import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # The tests use small matrices: several BLAS threads on a busy 2-core machine only
    # fight each other (a 100x slowdown was measured), one is fastest and deterministic.
    with threadpool_limits(1):
        yield
