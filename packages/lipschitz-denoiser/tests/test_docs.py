import doctest

import pytest
from lipschitz_denoiser import certify, layers, models, operators, pnp


@pytest.mark.parametrize("module", [layers, models, operators, pnp, certify])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
