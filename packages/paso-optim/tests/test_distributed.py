"""backend="distributed": 2 gloo ranks started by torchrun on loopback equal "serial"."""

import subprocess
import sys
import textwrap

import pytest
import torch
import torch.distributed as dist
from paso_optim import PASO

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed missing")

SETUP = textwrap.dedent(
    """
    import torch

    def setup():
        X = torch.randn(96, 5, generator=torch.Generator().manual_seed(1))
        Y = (X.sum(1) > 0).long()

        def batch_fn(t):
            idx = torch.randint(0, 96, (12,), generator=torch.Generator().manual_seed(t))
            return X[idx], Y[idx]

        def loss_fn(model, batch):
            return torch.nn.functional.cross_entropy(model(batch[0]), batch[1])

        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)
        )
        return model, loss_fn, batch_fn
    """
)

WORKER = SETUP + textwrap.dedent(
    """
    import os
    import sys

    import torch.distributed as dist
    from paso_optim import PASO

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    model, loss_fn, batch_fn = setup()
    res = PASO(model, loss_fn, batch_fn, "adam", lr=1e-2, window=5, tol=1e-9,
               backend="distributed").run(30)
    torch.save({"params": res.params, "rounds": res.rounds},
               os.path.join(sys.argv[1], f"rank{dist.get_rank()}.pt"))
    dist.destroy_process_group()
    """
)


def _setup():
    ns: dict = {}
    exec(SETUP, ns)  # the same model and data as the workers
    return ns["setup"]()


@pytest.mark.slow
def test_two_gloo_ranks_equal_serial(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        str(script),
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    model, loss_fn, batch_fn = _setup()
    ref = PASO(model, loss_fn, batch_fn, "adam", lr=1e-2, window=5, tol=1e-9, backend="serial").run(
        30
    )
    for rank in range(2):
        got = torch.load(tmp_path / f"rank{rank}.pt")
        assert got["rounds"] == ref.rounds
        assert (got["params"] - ref.params).abs().max() < 1e-6


def test_distributed_without_a_process_group_is_refused():
    model, loss_fn, batch_fn = _setup()
    with pytest.raises(ValueError, match="init_process_group"):
        PASO(model, loss_fn, batch_fn, backend="distributed")
