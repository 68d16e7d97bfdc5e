import doctest

import pytest

import opic_merging.vectors


@pytest.mark.parametrize("module", [opic_merging.vectors])
def test_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module)
    assert attempted > 0 and failed == 0
