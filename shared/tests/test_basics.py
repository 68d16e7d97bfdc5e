import random
import subprocess
import sys

import numpy as np
import pytest
from icml26_core import seed_everything
from icml26_core._lazy import MissingExtraError, require
from icml26_core.device import resolve_device
from icml26_core.timing import Timer


def test_seed_everything_reproduces_all_streams():
    g1 = seed_everything(7)
    a = (random.random(), np.random.random(), g1.random())  # noqa: NPY002
    g2 = seed_everything(7)
    b = (random.random(), np.random.random(), g2.random())  # noqa: NPY002
    assert a == b


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_seed_everything_rejects_bad_seed(bad):
    with pytest.raises(ValueError, match="seed"):
        seed_everything(bad)


def test_resolve_device():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in {"cpu", "cuda"}
    with pytest.raises(ValueError, match="device must be"):
        resolve_device("tpu")


def test_timer_measures_elapsed_time():
    with Timer() as t:
        sum(range(10000))
    assert t.elapsed > 0


def test_missing_extra_names_the_extra():
    with pytest.raises(MissingExtraError, match=r"icml26-core\[imaginary\]"):
        require("no_such_module_abc", "imaginary")


def test_import_core_does_not_import_torch_or_matplotlib():
    code = (
        "import sys, icml26_core, icml26_core.cli, icml26_core.report, icml26_core.device;"
        "bad = {'torch', 'matplotlib', 'sklearn'} & set(sys.modules); print(sorted(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_torch_threads_sets_and_restores():
    torch = pytest.importorskip("torch")
    from icml26_core.device import torch_threads

    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="positive integer"):
        with torch_threads(0):
            pass
