"""Tests of cocd (README included) run torch on one thread.

Their models are tiny: a second thread only adds synchronisation, and on a loaded
machine torch's spinning worker threads make them many times slower (the README's
usage block took 59 s of wall time with two threads under load).
"""

import pytest


@pytest.fixture(autouse=True)
def _one_thread(torch_one_thread): ...
