import io

import numpy as np
import pytest
import torch
from icml26_core.testing import check_optimizer
from mplus_adam import (
    MODES,
    LowPrecisionAdam,
    Madam,
    MPlusAdam,
    binned_stuck,
    state_bytes,
    stuck_fraction,
)


def _override(mode):
    return {"lr_mult": 5e-3} if mode == "multiplicative" else {"lr": 5e-3}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ["fp32", "bf16"])
def test_conformance_float64_params(mode, fmt):
    check_optimizer(
        lambda g: MPlusAdam(g, lr=1e-2, lr_mult=1e-2, mode=mode, master_format=fmt, seed=0),
        atol=0.0,
        group_overrides=_override(mode),
    )


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp4_e2m1"])
def test_conformance_scaled_formats(fmt):
    # FP8/FP4 need relative steps above half an ulp (6% in e4m3) to move at all
    check_optimizer(
        lambda g: MPlusAdam(g, lr=0.3, lr_mult=0.3, master_format=fmt, block_size=2, seed=0),
        atol=0.0,
    )


@pytest.mark.parametrize("moment_dtype", [None, torch.float32])
def test_conformance_bfloat16_params(moment_dtype):
    def params(gen):
        return [
            {
                "params": [
                    torch.randn(3, 4, generator=gen).bfloat16(),
                    torch.randn(5, generator=gen).bfloat16(),
                ]
            }
        ]

    make = lambda g: MPlusAdam(g, lr=1e-2, master_format="bf16", moment_dtype=moment_dtype)  # noqa: E731
    if moment_dtype is None:
        check_optimizer(make, params, atol=0.0)
    else:  # fp32 moments on bf16 params: everything but the dtype check must pass
        with pytest.raises(AssertionError, match=r"state 'exp_avg' is torch\.float32"):
            check_optimizer(make, params, atol=0.0)


def test_lr_mult_zero_is_adam_and_adamw():
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(6, 5, generator=g, dtype=torch.float64)
    target = torch.randn(6, 5, generator=g, dtype=torch.float64)
    for wd in (0.0, 0.1):
        a = w0.clone().requires_grad_(True)
        b = w0.clone().requires_grad_(True)
        ours = MPlusAdam([a], lr=1e-2, lr_mult=0.0, weight_decay=wd, master_format="fp32")
        ref = torch.optim.AdamW([b], lr=1e-2, weight_decay=wd)
        for _ in range(50):
            for p, opt in ((a, ours), (b, ref)):
                opt.zero_grad()
                ((p - target) ** 2 * torch.arange(1.0, 6.0, dtype=torch.float64)).sum().backward()
                opt.step()
        assert torch.allclose(a, b, atol=1e-7, rtol=0.0)
        assert not torch.allclose(a, w0)


def _quadratic(dim=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(dim, dim, generator=g, dtype=torch.float64))
    A = q @ torch.diag(torch.linspace(1.0, 10.0, dim, dtype=torch.float64)) @ q.T
    c = torch.randn(dim, generator=g, dtype=torch.float64)
    return lambda w: 0.5 * (w - c) @ A @ (w - c)


def _logistic():
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    X, y = sklearn_datasets.load_breast_cancer(return_X_y=True)
    X = torch.tensor((X - X.mean(0)) / X.std(0))
    y = torch.tensor(y, dtype=torch.float64)
    return lambda w: torch.nn.functional.binary_cross_entropy_with_logits(X @ w, y) + 1e-3 * w @ w


@pytest.mark.parametrize("problem", ["quadratic", "logistic"])
@pytest.mark.parametrize("mode", ["combined", "fallback", "multiplicative"])
def test_monotone_descent_fp64(problem, mode):
    """Full batch, beta1 = 0, small steps: f(w_{t+1}) <= f(w_t) at every step."""
    f = _quadratic() if problem == "quadratic" else _logistic()
    dim = 8 if problem == "quadratic" else 30
    w = torch.linspace(-1.0, 1.0, dim, dtype=torch.float64).requires_grad_(True)
    opt = MPlusAdam([w], lr=1e-3, lr_mult=1e-3, betas=(0.0, 0.999), mode=mode, master_format="fp32")
    values = []
    for _ in range(100):
        opt.zero_grad()
        loss = f(w)
        loss.backward()
        values.append(loss.item())
        opt.step()
    values.append(f(w).item())
    diffs = np.diff(values)
    assert (diffs <= 1e-12).all(), f"ascent at step {int(np.argmax(diffs))}: {diffs.max():.3g}"
    assert values[-1] < values[0] - 1e-4


def test_monotone_descent_bf16_master():
    """bf16 master weights, steps well above bf16 rounding: still monotone."""
    f = _quadratic()
    w = (3.0 + torch.linspace(0.0, 1.0, 8)).bfloat16().requires_grad_(True)
    opt = MPlusAdam([w], lr=2e-2, lr_mult=1e-2, betas=(0.0, 0.999), master_format="bf16")
    values = []
    for _ in range(40):
        opt.zero_grad()
        loss = f(w.double())
        loss.backward()
        values.append(loss.item())
        opt.step()
    values.append(f(w.double()).item())
    assert (np.diff(values) <= 0).all()
    assert values[-1] < 0.5 * values[0]


def test_sign_change_additive_crosses_zero_multiplicative_does_not():
    def run(opt_cls, **kw):
        w = torch.tensor([1.0, 0.5], requires_grad=True)
        opt = opt_cls([w], **kw)
        signs = []
        for _ in range(400):
            opt.zero_grad()
            ((w + torch.tensor([1.0, 0.5])) ** 2).sum().backward()  # optimum at -w0
            opt.step()
            signs.append(bool((w > 0).all()))
        return w.detach(), signs

    w, _ = run(MPlusAdam, lr=3e-2, lr_mult=1e-2, master_format="bf16")
    assert torch.allclose(w, torch.tensor([-1.0, -0.5]), atol=0.03)
    w, signs = run(Madam, lr_mult=3e-2, master_format="bf16")
    assert all(signs) and (w > 0).all()  # never crosses zero


def test_stall_at_large_magnitude_and_the_remedies():
    def run(opt_cls, **kw):
        w = torch.full((1000,), 2.0, dtype=torch.bfloat16, requires_grad=True)
        opt = opt_cls([w], lr=1e-4, master_format="bf16", seed=0, **kw)
        for _ in range(10):
            opt.zero_grad()
            w.float().sum().backward()
            opt.step()
        return w.float().mean().item()

    assert run(LowPrecisionAdam) == pytest.approx(2.0, abs=0.0)  # every update rounded away
    assert run(MPlusAdam, lr_mult=1e-2) < 1.9
    assert run(MPlusAdam, lr_mult=1e-2, mode="fallback") < 1.9
    # stochastic rounding: right in expectation, 10 steps of 1e-4 = 1e-3 below 2
    assert run(LowPrecisionAdam, rounding="stochastic") == pytest.approx(2.0 - 1e-3, abs=3e-4)


def test_stochastic_rounding_is_reproducible_through_state_dict():
    def make(seed):
        w = torch.linspace(1.0, 3.0, 50).bfloat16().requires_grad_(True)
        return w, LowPrecisionAdam([w], lr=1e-3, rounding="stochastic", seed=seed)

    def steps(w, opt, n):
        for _ in range(n):
            opt.zero_grad()
            w.float().square().sum().backward()
            opt.step()

    w1, o1 = make(3)
    w2, o2 = make(3)
    steps(w1, o1, 5)
    buf = io.BytesIO()
    torch.save(o1.state_dict(), buf)
    buf.seek(0)
    w2.data.copy_(w1.data)
    o2.load_state_dict(torch.load(buf, weights_only=True))
    steps(w1, o1, 5)
    steps(w2, o2, 5)
    assert torch.equal(w1, w2)
    w3, o3 = make(4)
    steps(w3, o3, 10)
    assert not torch.equal(w1, w3)


def test_stuck_fraction_rises_with_magnitude_for_adam():
    w = torch.logspace(-3, 1, 2000).bfloat16().requires_grad_(True)
    adam = LowPrecisionAdam([w], lr=1e-3, track_stuck=True)
    adam.zero_grad()
    w.float().sum().backward()
    adam.step()
    edges, frac = stuck_fraction(adam, bins=10)
    assert edges.shape == (11,) and frac.shape == (10,)
    assert frac[0] == pytest.approx(0.0) and frac[-1] == pytest.approx(1.0)
    w2 = torch.logspace(-3, 1, 2000).bfloat16().requires_grad_(True)
    mp = MPlusAdam([w2], lr=1e-3, lr_mult=1e-2, track_stuck=True)
    w2.float().sum().backward()
    mp.step()
    assert stuck_fraction(mp)[1][-1] == pytest.approx(0.0)


def test_binned_stuck_by_rank():
    edges, frac = binned_stuck(torch.arange(10.0), torch.arange(10) >= 5, bins=2)
    assert frac.tolist() == [0.0, 1.0]
    assert edges.tolist() == [0.0, 5.0, 9.0]


def test_state_bytes():
    w = torch.zeros(64, 64, requires_grad=True)
    opt = MPlusAdam([w], master_format="fp8_e4m3", moment_dtype=torch.float32)
    w.sum().backward()
    opt.step()
    b = state_bytes(opt)
    assert b["master"] == 64 * (64 + 2)  # one byte per entry + one scale per 32
    assert b["state"] == 2 * 4 * 64 * 64 + 64 * 2  # fp32 moments + scale exponents
    ref = torch.optim.AdamW([torch.zeros(64, 64, requires_grad=True)])
    ref.param_groups[0]["params"][0].grad = torch.ones(64, 64)
    ref.step()
    assert state_bytes(ref)["master"] == 4 * 64 * 64


def test_constructor_rounds_params_onto_the_grid():
    w = torch.tensor([0.3, 1.1, 2.6, 7.0], requires_grad=True)
    MPlusAdam([w], master_format="fp4_e2m1", block_size=None)
    assert w.tolist() == [0.0, 1.0, 3.0, 8.0]


def test_bad_input():
    w = torch.zeros(3, requires_grad=True)
    with pytest.raises(ValueError, match="lr_mult"):
        MPlusAdam([w], lr_mult=-1e-3)
    with pytest.raises(ValueError, match="master_format"):
        MPlusAdam([w], master_format="fp6")
    with pytest.raises(ValueError, match="mode"):
        MPlusAdam([w], mode="both")
    with pytest.raises(ValueError, match="block_size"):
        MPlusAdam([w], master_format="fp4_e2m1", block_size=0)
    with pytest.raises(ValueError, match=r"betas\[1\]"):
        MPlusAdam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="lr_mult"):
        MPlusAdam([{"params": [w], "lr_mult": -1.0}])
    with pytest.raises(TypeError, match="floating"):
        MPlusAdam([torch.zeros(3, dtype=torch.int64)])
    with pytest.raises(TypeError, match="lr_mult"):
        LowPrecisionAdam([w], lr_mult=1e-2)
    with pytest.raises(TypeError, match="lr"):
        Madam([w], lr=1e-2)
    with pytest.raises(ValueError, match="track_stuck"):
        stuck_fraction(MPlusAdam([w]))


def test_add_param_group_validates_and_rounds():
    opt = MPlusAdam([torch.ones(4, requires_grad=True)])
    with pytest.raises(ValueError, match="lr"):
        opt.add_param_group({"params": [torch.ones(4, requires_grad=True)], "lr": -5.0})
    assert len(opt.param_groups) == 1  # the rejected group is not kept
    x = torch.full((4,), 1.001, requires_grad=True)
    opt.add_param_group({"params": [x], "master_format": "fp4_e2m1"})
    assert x.tolist() == [1.0] * 4  # rounded onto the grid, as the constructor does


def test_scalar_param_scaled_format():
    s = torch.tensor(3.3, requires_grad=True)
    opt = MPlusAdam([s], lr=1e-2, master_format="fp8_e4m3")
    (s**2).backward()
    opt.step()
    assert s.shape == () and torch.isfinite(s)


def test_bad_arguments_name_themselves():
    with pytest.raises(TypeError, match="track_stuck"):
        MPlusAdam([torch.ones(2, requires_grad=True)], track_stuck="no")
    with pytest.raises(TypeError, match="optimizer"):
        stuck_fraction("adam")
    with pytest.raises(TypeError, match="optimizer"):
        state_bytes(None)
