import math
import warnings

import numpy as np
import pytest
import torch
from l0l1_warmup import L0L1Warmup


def _opt(lrs=(0.1,)):
    params = [torch.nn.Parameter(torch.zeros(2)) for _ in lrs]
    return torch.optim.SGD(
        [{"params": [p], "lr": lr} for p, lr in zip(params, lrs, strict=True)], lr=lrs[0]
    )


def _drive(opt, sched, losses):
    rates = []
    for loss in losses:
        opt.step()
        sched.step(loss)
        rates.append(sched.get_last_lr())
    return np.array(rates)


def _cosine(opt, total=20):
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda t: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(t, total) / total))
    )


def test_alpha_zero_is_the_base_schedule_exactly():
    losses = np.linspace(5.0, 1.0, 15)
    opt_a, opt_b = _opt((0.1, 0.02)), _opt((0.1, 0.02))
    base_b = _cosine(opt_b)
    ours = L0L1Warmup(opt_a, alpha=0.0, base_scheduler=_cosine(opt_a))
    assert ours.get_last_lr() == pytest.approx(base_b.get_last_lr(), rel=0, abs=0)
    for loss in losses:
        opt_a.step()
        opt_b.step()
        ours.step(float(loss))
        base_b.step()
        assert ours.get_last_lr() == pytest.approx(base_b.get_last_lr(), rel=1e-15, abs=0)


def test_closed_form_for_a_loss_sequence_and_per_group_rates():
    alpha, f_star, ema, init = 0.5, 0.25, 0.8, 4.0
    losses = [3.0, 2.5, 4.0, 1.0, 0.5]
    opt = _opt((0.1, 0.03))
    sched = L0L1Warmup(opt, alpha, f_star=f_star, ema=ema, initial_loss=init)
    fbar = init
    assert sched.get_last_lr()[0] == pytest.approx(0.1 / (1 + alpha * (init - f_star)))
    got = _drive(opt, sched, losses)
    for t, loss in enumerate(losses):
        fbar = ema * fbar + (1 - ema) * loss
        d = 1 / (1 + alpha * max(fbar - f_star, 0))
        np.testing.assert_allclose(got[t], [0.1 * d, 0.03 * d], rtol=1e-12)
    assert sched.loss_ema == pytest.approx(fbar)


def test_rate_falls_when_the_loss_rises_and_never_exceeds_the_base():
    opt = _opt()
    sched = L0L1Warmup(opt, alpha=1.0, ema=0.5, initial_loss=3.0)
    up = _drive(opt, sched, [4.0, 5.0, 6.0])[:, 0]
    assert np.all(np.diff(up) < 0)
    rng = np.random.default_rng(0)
    opt = _opt()
    base = _cosine(opt, 30)
    sched = L0L1Warmup(opt, alpha=0.3, base_scheduler=base)
    for loss in rng.uniform(0.0, 6.0, 30):
        opt.step()
        sched.step(float(loss))
        assert sched.get_last_lr()[0] <= sched.undamped_lrs[0] * (1 + 1e-12)
        assert sched.undamped_lrs[0] <= 0.1 * (1 + 1e-12)


def test_no_initial_loss_means_rate_zero_first_then_ema_starts_at_the_first_loss():
    opt = _opt()
    sched = L0L1Warmup(opt, alpha=1.0)
    assert sched.get_last_lr() == [0.0]
    opt.step()
    sched.step(2.0)
    assert sched.loss_ema == pytest.approx(2.0)
    assert sched.get_last_lr()[0] == pytest.approx(0.1 / 3)


def test_documented_use_raises_no_warning_and_first_rate_is_damped():
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched = L0L1Warmup(opt, 1.0, base_scheduler=_cosine(opt), initial_loss=2.0)
        assert opt.param_groups[0]["lr"] == pytest.approx(1e-2 / 3)  # damped before step 1
        for _ in range(3):
            opt.zero_grad()
            loss = model(torch.ones(4, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            sched.step(loss)  # a 0-d tensor is accepted
    assert sched.last_epoch == 3


def test_step_before_optimizer_step_warns_like_torch():
    opt = _opt()
    sched = L0L1Warmup(opt, 1.0, initial_loss=1.0)
    with pytest.warns(UserWarning, match="before `optimizer.step"):
        sched.step(1.0)


def test_chained_base_scheduler_sees_the_undamped_rate():
    # pytorch_warmup#26: dampening must not rescale what the next scheduler reads.
    opt = _opt()
    base = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)  # reads group["lr"]
    sched = L0L1Warmup(opt, alpha=2.0, ema=0.0, base_scheduler=base, initial_loss=5.0)
    losses = [4.0, 3.0, 2.0, 1.0]
    for k, loss in enumerate(losses, start=1):
        opt.step()
        sched.step(loss)
        assert sched.undamped_lrs[0] == pytest.approx(0.1 * 0.9**k, rel=1e-12)
        assert sched.get_last_lr()[0] == pytest.approx(0.1 * 0.9**k / (1 + 2.0 * loss), rel=1e-12)


def test_warm_up_ends_when_the_loss_reaches_f_star():
    # ParlAI#4243/#4384: a warm-up that never ends. At fbar = f_star the rate is the base.
    opt = _opt()
    sched = L0L1Warmup(opt, alpha=1.0, f_star=1.0, ema=0.0, initial_loss=4.0)
    _drive(opt, sched, [2.0, 1.0])
    assert sched.get_last_lr()[0] == pytest.approx(0.1)


def test_state_dict_round_trip_resumes_identically():
    losses = list(np.linspace(5, 1, 12))
    opt_a = _opt((0.1, 0.05))
    a = L0L1Warmup(opt_a, 0.7, ema=0.9, base_scheduler=_cosine(opt_a), initial_loss=5.5)
    full = _drive(opt_a, a, losses)
    opt_b = _opt((0.1, 0.05))
    b = L0L1Warmup(opt_b, 0.7, ema=0.9, base_scheduler=_cosine(opt_b), initial_loss=5.5)
    _drive(opt_b, b, losses[:5])
    state = b.state_dict()
    opt_state = opt_b.state_dict()
    opt_c = _opt((0.1, 0.05))
    opt_c.load_state_dict(opt_state)
    c = L0L1Warmup(opt_c, 0.7, ema=0.9, base_scheduler=_cosine(opt_c), initial_loss=5.5)
    c.load_state_dict(state)
    assert c.loss_ema == pytest.approx(b.loss_ema)
    rest = _drive(opt_c, c, losses[5:])
    np.testing.assert_allclose(rest, full[5:], rtol=1e-12)


def test_state_dict_without_base_into_one_with_base_raises():
    opt = _opt()
    state = L0L1Warmup(opt, 0.5).state_dict()
    opt2 = _opt()
    with pytest.raises(ValueError, match="base_scheduler"):
        L0L1Warmup(opt2, 0.5, base_scheduler=_cosine(opt2)).load_state_dict(state)


def test_train_lm_steps_it_with_the_loss_and_resumes(tmp_path):
    from icml26_core.lm import train_lm

    class TinyLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(16, 8)
            self.out = torch.nn.Linear(8, 16)

        def forward(self, x):
            return self.out(self.emb(x))

    tokens = np.random.default_rng(0).integers(0, 16, 2000)

    def run(steps, resume, ckpt):
        torch.manual_seed(0)
        model = TinyLM()
        opt = torch.optim.AdamW(model.parameters(), lr=0.05)
        sched = L0L1Warmup(opt, 0.5, initial_loss=math.log(16))
        hist = train_lm(
            model,
            tokens,
            steps=steps,
            batch_size=4,
            seq_len=8,
            optimizer=opt,
            scheduler=sched,
            eval_every=5,
            checkpoint_dir=ckpt,
            resume=resume,
        )
        return hist, sched, model

    full, s_full, m_full = run(10, False, None)
    run(5, False, tmp_path)
    res, s_res, m_res = run(10, True, tmp_path)
    assert s_full.n_losses == 10 and s_res.n_losses == 10
    assert s_res.loss_ema == pytest.approx(s_full.loss_ema, rel=1e-6)
    np.testing.assert_allclose(res.step_losses, full.step_losses, rtol=1e-5)
    for p, q in zip(m_full.parameters(), m_res.parameters(), strict=True):
        torch.testing.assert_close(p, q)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"alpha": -0.1}, ValueError, "alpha"),
        ({"alpha": 1.0, "ema": 1.0}, ValueError, "ema"),
        ({"alpha": 1.0, "ema": -0.1}, ValueError, "ema"),
        ({"alpha": float("nan")}, ValueError, "alpha"),
        ({"alpha": 1.0, "f_star": float("inf")}, ValueError, "f_star"),
        ({"alpha": 1.0, "initial_loss": float("nan")}, ValueError, "initial_loss"),
        ({"alpha": 1.0, "base_scheduler": object()}, TypeError, "base_scheduler"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        L0L1Warmup(_opt(), **kwargs)


def test_base_scheduler_on_another_optimizer_raises():
    other = _opt()
    with pytest.raises(ValueError, match="same optimizer"):
        L0L1Warmup(_opt(), 1.0, base_scheduler=_cosine(other))


def test_bad_losses():
    opt = _opt()
    sched = L0L1Warmup(opt, 1.0, f_star=1.0, ema=0.0, initial_loss=2.0)
    opt.step()
    with pytest.raises(TypeError, match="needs the training loss"):
        sched.step()
    for bad in (float("nan"), float("inf"), torch.tensor(float("nan"))):
        with pytest.raises(ValueError, match="loss"):
            sched.step(bad)
    with pytest.raises(TypeError, match="loss"):
        sched.step(torch.ones(2))
    with pytest.warns(UserWarning, match="below f_star"):
        sched.step(0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step(0.2)  # warned once only
    assert sched.gap == pytest.approx(0.0)
    assert sched.get_last_lr()[0] == pytest.approx(0.1)
