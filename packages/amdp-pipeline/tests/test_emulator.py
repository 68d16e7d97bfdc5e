"""The Emulator against plain single-process training, Llama stages, bad input."""

import pytest
import torch
import torch.nn.functional as F
from amdp_pipeline import Emulator, check_chain, make_schedule, split_llama

S, M, STEPS = 4, 4, 3


def _stages(seed=0):
    torch.manual_seed(seed)
    mods = [torch.nn.Sequential(torch.nn.Linear(5, 5), torch.nn.Tanh()) for _ in range(S - 1)]
    return [*mods, torch.nn.Linear(5, 1)]


def _data(n):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(8, 5, generator=g), torch.randn(8, 1, generator=g)) for _ in range(n)]


def _flat(stages):
    return torch.cat([p.detach().flatten() for s in stages for p in s.parameters()])


def _opt(p):
    return torch.optim.Adam(p, lr=0.05)


def _reference(data, steps=STEPS, m=M):
    """Plain training: gradient accumulation over the m minibatches of each step."""
    stages = _stages()
    model = torch.nn.Sequential(*stages)
    opt = _opt(model.parameters())
    for t in range(steps):
        opt.zero_grad()
        for x, y in data[t * m : (t + 1) * m]:
            (F.mse_loss(model(x), y) / m).backward()
        opt.step()
    return _flat(stages)


@pytest.mark.parametrize("method", ["gpipe", "1f1b"])
def test_sync_schedules_equal_gradient_accumulation(method):
    data = _data(STEPS * M)
    stages = _stages()
    sched = make_schedule(S, 1, M, method=method, n_steps=STEPS)
    out = Emulator(stages, sched, _opt, F.mse_loss, example_input=data[0][0]).run(data)
    torch.testing.assert_close(_flat(stages), _reference(data), atol=1e-6, rtol=1e-6)
    assert out.updates == [STEPS] * S and out.recomputed == 0


@pytest.mark.parametrize("method", ["amdp", "2bw"])
def test_one_step_has_no_mismatch(method):
    """Within one step nothing is updated, so AMDP and 2BW equal the sync update."""
    data = _data(M)
    stages = _stages()
    Emulator(stages, make_schedule(S, None, M, method=method, n_steps=1), _opt, F.mse_loss).run(
        data
    )
    torch.testing.assert_close(_flat(stages), _reference(data, steps=1), atol=1e-6, rtol=1e-6)


def test_amdp_differs_from_sync_only_through_bounded_staleness():
    data = _data(STEPS * M)
    stages = _stages()
    sched = make_schedule(S, None, M, method="amdp", n_steps=STEPS)
    out = Emulator(stages, sched, _opt, F.mse_loss).run(data)
    diff = (_flat(stages) - _reference(data)).abs().max()
    assert 0 < diff < 0.05  # close to sync, not identical (some backward passes are stale)
    assert out.recomputed > 0


def test_stashed_pipedream_with_zero_lr_keeps_weights():
    data = _data(2 * M)
    stages = _stages()
    before = _flat(stages)
    sched = make_schedule(S, 1, M, method="pipedream", n_steps=2)
    out = Emulator(stages, sched, lambda p: torch.optim.SGD(p, lr=0.0), F.mse_loss).run(data)
    torch.testing.assert_close(_flat(stages), before)
    assert out.updates == [2 * M] * S


@pytest.mark.parametrize(("method", "stash"), [("pipedream", True), ("amdp", False), ("2bw", True)])
def test_versions_match_a_scalar_replay(method, stash):
    """Two scalar stages, y_hat = b * (a * x), SGD: replay the schedule by hand.

    Each B's gradient is taken at the weights the schedule says it used (the F's under
    stashing, the current ones otherwise); the update sums the step's gradients.
    """
    m = 2 if method != "pipedream" else 1
    sched = make_schedule(
        2, None if method == "amdp" else 1, m, method=method, n_steps=4, stash=stash
    )
    g = torch.Generator().manual_seed(3)
    data = [
        (torch.randn(1, 1, generator=g), torch.randn(1, 1, generator=g))
        for _ in range(sched.n_minibatches)
    ]
    lr = 0.1
    stages = [torch.nn.Linear(1, 1, bias=False), torch.nn.Linear(1, 1, bias=False)]
    with torch.no_grad():
        stages[0].weight.fill_(0.7)
        stages[1].weight.fill_(-1.3)
    Emulator(
        stages, sched, lambda p: torch.optim.SGD(p, lr=lr), lambda o, y: 0.5 * ((o - y) ** 2).sum()
    ).run(data)
    hist = {0: [0.7], 1: [-1.3]}  # weights per version
    acc = {0: {}, 1: {}}
    h, dh = {}, {}
    scale = 1.0 if sched.update == "every" else 1.0 / m
    for a in sorted(sched.actions, key=lambda a: a.seq):
        i, j = a.minibatch, a.stage
        key = i if sched.update == "every" else sched.step_of(i)
        x, y = float(data[i][0]), float(data[i][1])
        if a.kind == "F" and j == 0:
            h[i] = hist[0][a.weights] * x
        elif a.kind == "B" and j == 1:
            b = hist[1][a.weights]
            r = (b * h[i] - y) * scale
            acc[1][key] = acc[1].get(key, 0.0) + r * h[i]
            dh[i] = r * b
        elif a.kind == "B" and j == 0:
            acc[0][key] = acc[0].get(key, 0.0) + dh[i] * x
        elif a.kind == "U":
            hist[j].append(hist[j][-1] - lr * acc[j].pop(key))
    assert stages[0].weight.item() == pytest.approx(hist[0][-1], rel=1e-5, abs=1e-6)
    assert stages[1].weight.item() == pytest.approx(hist[1][-1], rel=1e-5, abs=1e-6)


def test_llama_stages_chain_to_the_full_model():
    from icml26_core.lm import tiny_llama

    model = tiny_llama("1M", vocab_size=256, tie_word_embeddings=False, seed=0)
    stages = split_llama(model, 4)
    x = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(check_chain(stages, x), model(x).logits)
    assert len(stages[1].layers) == 1 and stages[0].embed_tokens is not None


def test_split_llama_rejects_tied_and_bad_counts():
    from icml26_core.lm import tiny_llama

    with pytest.raises(ValueError, match="tied"):
        split_llama(tiny_llama("1M", vocab_size=256), 2)
    with pytest.raises(ValueError, match="n_stages"):
        split_llama(tiny_llama("1M", vocab_size=256, tie_word_embeddings=False), 5)


def test_bad_input():
    sched = make_schedule(S, 1, M, method="1f1b", n_steps=1)
    with pytest.raises(ValueError, match="n_stages=4"):
        Emulator(_stages()[:3], sched, _opt, F.mse_loss)
    bad = _stages()
    bad[2] = torch.nn.Linear(7, 5)
    with pytest.raises(ValueError, match=r"stages\[2\]"):
        Emulator(bad, sched, _opt, F.mse_loss, example_input=torch.zeros(8, 5))
    emu = Emulator(_stages(), sched, _opt, F.mse_loss)
    with pytest.raises(ValueError, match="minibatches"):
        emu.run(_data(3))
    with pytest.raises(TypeError, match="schedule"):
        Emulator(_stages(), "1f1b", _opt, F.mse_loss)
    with pytest.raises(TypeError, match="optimizer_factory"):
        Emulator(_stages(), sched, None, F.mse_loss)


def test_run_bad_minibatches_name_the_item():
    sched = make_schedule(S, 1, M, method="1f1b", n_steps=1)
    good = _data(M)
    # a list of bare tensors used to run silently (rows taken as input and target)
    with pytest.raises(TypeError, match=r"minibatches\[0\] must be an \(input, target\)"):
        Emulator(_stages(), sched, _opt, F.mse_loss).run([x for x, _ in good])
    with pytest.raises(TypeError, match=r"minibatches\[0\]\[0\]"):
        Emulator(_stages(), sched, _opt, F.mse_loss).run([(x.numpy(), y) for x, y in good])
    # errors from inside torch now name the stage, the minibatch and the argument
    wrong = [*good[:2], (torch.zeros(8, 3), good[2][1]), good[3]]
    with pytest.raises(ValueError, match=r"stages\[0\] fails on minibatch 2"):
        Emulator(_stages(), sched, _opt, F.mse_loss).run(wrong)
    dtype = [(x.double(), y) for x, y in good]
    with pytest.raises(ValueError, match=r"stages\[0\] fails on minibatch 0.*float64"):
        Emulator(_stages(), sched, _opt, F.mse_loss).run(dtype)
    target = [(x, torch.zeros(3, 1)) for x, _ in good]
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=r"minibatches\[0\]\[1\]"):
        Emulator(_stages(), sched, _opt, F.mse_loss).run(target)
    with pytest.raises(ValueError, match="loss_fn must return a scalar"):
        Emulator(_stages(), sched, _opt, lambda o, y: (o - y) ** 2).run(good)


def test_run_does_not_touch_the_callers_tensors():
    sched = make_schedule(S, minibatches_per_step=M, n_steps=1)
    data = [(x.requires_grad_(), y) for x, y in _data(M)]
    before = [(x.detach().clone(), y.clone()) for x, y in data]
    Emulator(_stages(), sched, _opt, F.mse_loss).run(data)
    for (x, y), (x0, y0) in zip(data, before, strict=True):
        assert torch.equal(x.detach(), x0) and torch.equal(y, y0) and x.grad is None


def test_split_llama_rejects_other_models():
    with pytest.raises(TypeError, match="LlamaForCausalLM"):
        split_llama(torch.nn.Linear(2, 2), 2)
