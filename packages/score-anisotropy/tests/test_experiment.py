import numpy as np
import pytest
from icml26_core.testing import check_experiment
from score_anisotropy import experiment
from score_anisotropy.sad import dct_frequency


@pytest.mark.slow  # about 20 s of CPU (the first torch.func call alone is ~7 s)
def test_experiment_smoke(tmp_path):
    result = check_experiment("score-anisotropy", tmp_path)
    assert len(result.claims) == 4
    models = {row["model"] for row in result.tables[0].rows}
    assert {"MLP", "CNN", "ViT", "isotropic kernel (floor)"} <= models


def test_synthetic_sets_have_equal_spectra_on_low_and_high_modes():
    rng = np.random.default_rng(0)
    low = experiment.synthetic("low", 4000, rng)
    high = experiment.synthetic("high", 4000, rng)
    ev_low = np.sort(np.linalg.eigvalsh(np.cov(low, rowvar=False)))[::-1][: experiment.K_MODES]
    ev_high = np.sort(np.linalg.eigvalsh(np.cov(high, rowvar=False)))[::-1][: experiment.K_MODES]
    np.testing.assert_allclose(ev_low, ev_high, rtol=0.15)
    _, U_low = np.linalg.eigh(np.cov(low, rowvar=False))
    _, U_high = np.linalg.eigh(np.cov(high, rowvar=False))
    assert dct_frequency(U_low[:, -8:]).mean() < 2.5
    assert dct_frequency(U_high[:, -8:]).mean() > 11.5


def test_gaussian_mixture_lies_near_one_fixed_plane():
    A = experiment.gaussian_mixture(4000, np.random.default_rng(0))
    B = experiment.gaussian_mixture(4000, np.random.default_rng(1))
    assert A.shape == (4000, 64)
    ev, U = np.linalg.eigh(np.cov(A, rowvar=False))
    # 8 components on a circle of radius 2 (variance 2 per axis) + std 0.3, noise 0.1
    np.testing.assert_allclose(ev[-2:], 2.0 + 0.09 + 0.01, rtol=0.1)
    assert ev[:-2].mean() == pytest.approx(0.01, rel=0.05)  # noise; spread by sampling
    assert ev[:-2].max() < 0.02
    _, V = np.linalg.eigh(np.cov(B, rowvar=False))
    # the same plane for every seed: principal angles near 0
    s = np.linalg.svd(U[:, -2:].T @ V[:, -2:], compute_uv=False)
    np.testing.assert_allclose(s, 1.0, atol=1e-2)


def test_default_plan_has_every_dataset_and_ten_pairs():
    plan = experiment._plan("default")
    assert {d for _, d in plan} == {"digits", "MNIST", "DCT-low", "DCT-high", "GMM"}
    assert len(plan) >= experiment.RANK_MIN_PAIRS  # claim 4 is decided at default


def test_full_scale_has_the_issues_nine_architectures_on_six_datasets():
    archs = experiment._archs("full")
    assert len(archs) == 9 and "UNet" in archs
    plan = experiment._plan("full")
    assert len(plan) == 9 * len(experiment.FULL_DATASETS)
    for name, make in archs.items():  # every one builds on every full-scale D
        if name == "UNet":
            continue  # importing diffusers is slow: built in the slow test below
        for dim in (64, 256, 784):
            assert make(dim).dim == dim


@pytest.mark.slow  # about 15 s of CPU: 9 architectures, full-scale data, Lanczos at D = 784
def test_full_scale_path_runs_at_a_tiny_size():
    pytest.importorskip("diffusers")
    cfg = experiment._config("full") | {
        "seeds": 1,
        "seeds_mnist": 1,
        "T": 10,
        "steps": 2,
        "n_inputs": 1,
        "n_test": 20,
        "lanczos_k": 8,  # alignment reads the top K_MODES = 8
    }
    archs = experiment._archs("full")
    plan = [(a, "digits") for a in archs] + [("CNN", "MNIST"), ("CNN", "patches")]
    out = experiment.measure("full", cfg, plan=plan)
    dims = {(r["arch"], r["data"]): r["dim"] for r in out["rows"]}
    assert dims[("CNN", "MNIST")] == 784 and dims[("CNN", "patches")] == 256
    assert set(out["sads"]) == set(archs)
    assert all(np.isfinite(r["anisotropy"]) and r["anisotropy"] >= 1 for r in out["rows"])
    claims = experiment._claims(out["rows"], out["floors"], cfg)
    assert len(claims) == 4


def test_w2_table_reports_the_sliced_w2_with_its_floor_on_the_same_sads():
    cfg = experiment._config("smoke")
    rows = []
    for seed in range(2):
        for arch, sw2, floor in (("MLP", 3.0, 2.0), ("CNN", 1.0, 2.0)):
            rows.append(
                {
                    "arch": arch,
                    "data": "digits",
                    "seed": seed,
                    "params": 1,
                    "w2": 5.0,
                    "final_loss": 0.1,
                    "sw2": sw2 + seed,
                    "sw2_floor": floor,
                    "sw2_reference": 0.5 * floor,
                }
            )
    floors = {"digits": {"reference": 2.5, "isotropic Gaussian": 4.0}}
    w2 = experiment._tables(rows, floors, cfg, 2)[1]
    by = {r["model"]: r for r in w2.rows}
    assert by["MLP"][experiment.SW2] == pytest.approx(3.5)
    assert by["MLP"][experiment.SW2_FLOOR] == pytest.approx(np.mean([3.0 / 2.0, 4.0 / 2.0]))
    assert by["CNN"][experiment.SW2_FLOOR] == pytest.approx(np.mean([1.0 / 2.0, 2.0 / 2.0]))
    floor = by["isotropic Gaussian (floor)"]
    assert floor[experiment.SW2] == pytest.approx(2.0)
    assert floor[experiment.SW2_FLOOR] == pytest.approx(1.0)
    ref = by["reference (held-out train rows)"]
    assert ref[experiment.SW2] == pytest.approx(1.0)
    assert ref[experiment.SW2_FLOOR] == pytest.approx(0.5)
