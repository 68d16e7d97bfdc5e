import doctest

import foam_shampoo.optim
import pytest


@pytest.mark.parametrize("module", [foam_shampoo.optim])
def test_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0 and failed == 0
