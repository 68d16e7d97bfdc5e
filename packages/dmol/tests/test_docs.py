import doctest

import dmol.net


def test_docstring_examples_run():
    failed, attempted = doctest.testmod(dmol.net)
    assert attempted > 0 and failed == 0
