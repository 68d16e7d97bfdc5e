"""The full scale's code path (ResNet-18-like nets, GCN depth 64, a U-Net DDPM), at tiny size."""

import copy

import pytest
from icml26_core import RunContext

pytest.importorskip("sklearn")


def _tiny_full(monkeypatch, **graph):
    from dmol import experiment

    tiny = copy.deepcopy(experiment.CONFIG["full"])
    assert tiny["graph"]["depths"][-1] == 64  # the full scale
    assert tiny["image"]["arch"] == "resnet18" and tiny["diffusion"]["arch"] == "unet"
    # the same code path (architectures, depth 64), tiny sizes
    tiny["graph"].update(depths=(2, 64), epochs=1, splits=2, dim=8, **graph)
    tiny["image"].update(n=(64, 32), epochs=1, seeds=2, width=2)
    tiny["diffusion"].update(steps=2, seeds=2, width=2)
    monkeypatch.setitem(experiment.CONFIG, "full", tiny)
    return experiment


def test_full_scale_code_path_runs_at_tiny_size(monkeypatch, tmp_path):
    # BP and DMoL only: importing torch_geometric costs 20-90 s of CPU here (no .pyc cache)
    experiment = _tiny_full(monkeypatch, methods=("BP", "DMoL"))
    result = experiment.run(RunContext(scale="full", out_dir=tmp_path))
    assert len(result.claims) == 4
    assert {"BP@2", "DMoL@2", "BP@64", "DMoL@64"} == set(result.data["graph_acc"])
    assert "ResNet-18-like" in result.tables[2].title
    assert "depth 64" in result.claims[0].statement
    growth = result.claims[3].parts[1]
    assert growth.holds  # zero-initialised heads: growing a ResNet never moves the objective
    assert len(result.data["depth_changes"]) == 2 * 5  # 4 growths and 1 cut per seed


@pytest.mark.slow  # imports torch_geometric (tens of seconds without a bytecode cache)
def test_full_scale_with_the_torch_geometric_peers(monkeypatch, tmp_path):
    pytest.importorskip("torch_geometric")
    experiment = _tiny_full(monkeypatch)
    result = experiment.run(RunContext(scale="full", out_dir=tmp_path))
    acc = result.data["graph_acc"]
    assert {"BP + PairNorm (PyG)@64", "GCNII (PyG)@64"} <= set(acc)
    assert "BP + PairNorm (PyG)@2" not in acc  # the peers run at the deep depths only
