import doctest

import opic_merging.vectors
import pytest


@pytest.mark.parametrize("module", [opic_merging.vectors])
def test_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module)
    assert attempted > 0 and failed == 0
