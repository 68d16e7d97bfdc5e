"""PASO on modules: vmap = serial = torch.optim at tol 0; bad input is refused."""

import pytest
import torch
import torch.nn.functional as F
from paso_optim import PASO
from torch import nn

X = torch.randn(128, 6, generator=torch.Generator().manual_seed(0))
Y = (X[:, 0] > 0).long() + (X[:, 1] > 0).long()


def batch_fn(t: int):
    idx = torch.randint(0, 128, (16,), generator=torch.Generator().manual_seed(t))
    return X[idx], Y[idx]


def loss_fn(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def make(dtype=torch.float32):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).to(dtype)


def torch_reference(name, T, dtype=torch.float32, **kw):
    m = make(dtype)
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name]
    opt = cls(m.parameters(), **kw)
    for t in range(T):
        opt.zero_grad()
        x, y = batch_fn(t)
        loss_fn(m, (x.to(dtype), y)).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in m.parameters()])


@pytest.mark.parametrize(
    "name,kw",
    [("adamw", {"lr": 1e-2, "weight_decay": 0.01}), ("sgd", {"lr": 0.1, "momentum": 0.9})],
)
def test_tol_zero_equals_torch_optim(name, kw):
    T = 40
    ref = torch_reference(name, T, **kw)
    for backend in ("vmap", "serial"):
        m = make()
        res = PASO(
            m, loss_fn, batch_fn, optimizer=name, window=8, tol=0.0, backend=backend, **kw
        ).run(T)
        assert res.rounds <= T and res.grad_evals >= T
        assert (res.params - ref).abs().max() < 1e-6
        loaded = torch.cat([p.detach().reshape(-1) for p in m.parameters()])
        assert torch.equal(loaded, res.params)


def test_vmap_equals_serial_and_saves_rounds():
    T = 60
    out = {}
    for backend in ("vmap", "serial"):
        m = make()
        out[backend] = PASO(
            m, loss_fn, batch_fn, "adam", lr=1e-2, window=8, tol=1e-9, backend=backend
        ).run(T)
    assert (out["vmap"].params - out["serial"].params).abs().max() < 1e-6
    assert out["vmap"].rounds < T


def test_window_one_takes_T_rounds():
    res = PASO(make(), loss_fn, batch_fn, "sgd", lr=0.1, window=1).run(12)
    assert res.rounds == 12 and res.grad_evals == 12
    assert res.step_reduction == pytest.approx(1.0)


def test_scheduler_at_true_step_index():
    T = 30
    sched = lambda t: 1.0 - t / T  # noqa: E731
    m = make()
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    lr_s = torch.optim.lr_scheduler.LambdaLR(opt, sched)
    for t in range(T):
        opt.zero_grad()
        loss_fn(m, batch_fn(t)).backward()
        opt.step()
        lr_s.step()
    ref = torch.cat([p.detach().reshape(-1) for p in m.parameters()])
    res = PASO(make(), loss_fn, batch_fn, "adam", lr=1e-2, window=6, tol=0.0, scheduler=sched).run(
        T
    )
    assert (res.params - ref).abs().max() < 1e-6


def test_non_deterministic_batch_fn_is_refused():
    def noisy(t):
        return torch.randn(16, 6), torch.zeros(16, dtype=torch.long)

    with pytest.raises(ValueError, match="batch_fn is not deterministic"):
        PASO(make(), loss_fn, noisy)


def test_batchnorm_in_train_mode_is_refused_and_eval_mode_works():
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    with pytest.raises(ValueError, match="BatchNorm1d in train mode"):
        PASO(model, loss_fn, batch_fn)
    model.eval()
    res = PASO(model, loss_fn, batch_fn, "adam", lr=1e-2, window=4).run(5)
    assert res.rounds <= 5


def test_buffer_changed_in_forward_is_refused():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 3)
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x):
            self.calls += 1
            return self.lin(x)

    with pytest.raises(ValueError, match="buffer 'calls' changed"):
        PASO(Counter(), loss_fn, batch_fn)


def test_non_finite_gradient_raises():
    def bad_loss(model, batch):
        return loss_fn(model, batch) * float("inf")

    with pytest.raises(FloatingPointError, match="non-finite gradient at step 0"):
        PASO(make(), bad_loss, batch_fn, "sgd", lr=0.1).run(3)


@pytest.mark.parametrize(
    "kw,exc,match",
    [
        ({"window": 0}, ValueError, "window"),
        ({"tol": -1.0}, ValueError, "tol"),
        ({"backend": "mpi"}, ValueError, "backend"),
        ({"optimizer": "lion"}, ValueError, "optimizer"),
        ({"optimizer": 3}, TypeError, "optimizer"),
        ({"ema_decay": 2.0}, ValueError, "ema_decay"),
        ({"lr": -1.0}, ValueError, "lr"),
    ],
)
def test_bad_arguments(kw, exc, match):
    with pytest.raises(exc, match=match):
        PASO(make(), loss_fn, batch_fn, **kw)


def test_bad_steps_and_model():
    with pytest.raises(ValueError, match="steps"):
        PASO(make(), loss_fn, batch_fn).run(-1)
    with pytest.raises(TypeError, match="model"):
        PASO(lambda x: x, loss_fn, batch_fn)


def test_dropout_in_train_mode_is_refused_and_eval_mode_works():
    model = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.5), nn.Linear(8, 3))
    for backend in ("vmap", "serial"):
        with pytest.raises(ValueError, match=r"Dropout\(p=0.5\) in train mode"):
            PASO(model, loss_fn, batch_fn, backend=backend)
    model.eval()
    assert PASO(model, loss_fn, batch_fn, "adam", lr=1e-2, window=4).run(5).rounds <= 5


def test_non_scalar_loss_is_refused_at_construction():
    def per_sample(model, batch):
        return F.cross_entropy(model(batch[0]), batch[1], reduction="none")

    with pytest.raises(ValueError, match=r"loss_fn.*scalar floating tensor.*shape \(16,\)"):
        PASO(make(), per_sample, batch_fn)
    with pytest.raises(ValueError, match=r"loss_fn.*got float"):
        PASO(make(), lambda m, b: 1.0, batch_fn)


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"scheduler": lambda t: 0.5}, "scheduler"),
        ({"weight_decay": 0.1}, "weight_decay"),
        ({"lr": 0.5}, "lr"),
    ],
)
def test_functional_optimizer_object_refuses_ignored_arguments(kw, match):
    from paso_optim import adam

    with pytest.raises(ValueError, match=f"{match} given with a FunctionalOptimizer"):
        PASO(make(), loss_fn, batch_fn, optimizer=adam(1e-2), **kw)
    assert PASO(make(), loss_fn, batch_fn, optimizer=adam(1e-2)).run(3).rounds <= 3


def test_unknown_optimizer_argument_names_it():
    with pytest.raises(TypeError, match="'adam' does not take momentum"):
        PASO(make(), loss_fn, batch_fn, optimizer="adam", momentum=0.9)


def test_repr_leaves_out_the_tensors():
    res = PASO(make(), loss_fn, batch_fn, "sgd", lr=0.1, window=4).run(4)
    assert "params=" not in repr(res) and "state=" not in repr(res)
    assert res.params is not None
