import itertools
import math

import pytest
import torch
from lk_losses import LK_KINDS, LKLoss, acceptance_rate, kl_weight_schedule, lk_loss


def _pair(vocab=7, seed=0, shape=(2, 3)):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, vocab, generator=g), torch.randn(*shape, vocab, generator=g)


def test_alpha_is_one_minus_total_variation():
    d, t = _pair(vocab=11)
    p, q = t.softmax(-1), d.softmax(-1)
    tv = 0.5 * (p - q).abs().sum(-1)
    alpha = acceptance_rate(d, t)
    torch.testing.assert_close(alpha, 1 - tv, atol=1e-6, rtol=0)
    torch.testing.assert_close(alpha, torch.minimum(p, q).sum(-1), atol=1e-6, rtol=0)
    torch.testing.assert_close(lk_loss(d, t, kind="tv", reduction="none"), tv, atol=1e-6, rtol=0)


def test_alpha_is_exactly_one_when_draft_equals_target():
    d, _ = _pair()
    assert torch.equal(acceptance_rate(d, d.clone()), torch.ones(2, 3))
    for kind in LK_KINDS:
        assert float(lk_loss(d, d.clone(), kind=kind)) == pytest.approx(0.0, abs=1e-6)


def test_loss_values_match_definitions():
    d, t = _pair(vocab=5, seed=3)
    p, q = t.softmax(-1), d.softmax(-1)
    alpha = torch.minimum(p, q).sum(-1)
    kl = (p * (p.log() - q.log())).sum(-1)
    out = {k: lk_loss(d, t, kind=k, reduction="none", kl_weight=0.3) for k in LK_KINDS}
    torch.testing.assert_close(out["log_alpha"], -alpha.log(), atol=1e-5, rtol=0)
    torch.testing.assert_close(out["kl"], kl, atol=1e-5, rtol=0)
    torch.testing.assert_close(out["hybrid"], 0.3 * kl - 0.7 * alpha.log(), atol=1e-5, rtol=0)


def test_gradient_of_alpha_matches_closed_form():
    # d alpha / d z_j = q_j [q_j < p_j] - q_j * sum_{x: q_x < p_x} q_x  (away from ties)
    d, t = _pair(vocab=9, seed=1)
    d = d.double().requires_grad_()
    loss = lk_loss(d, t.double(), kind="tv", reduction="sum")
    (grad,) = torch.autograd.grad(loss, d)
    p, q = t.double().softmax(-1), d.detach().softmax(-1)
    low = (q < p).double()
    closed = q * low - q * (q * low).sum(-1, keepdim=True)
    torch.testing.assert_close(grad, -closed)
    # -log alpha: gradient is grad(1 - alpha) / alpha
    (grad_log,) = torch.autograd.grad(lk_loss(d, t.double(), kind="log_alpha", reduction="sum"), d)
    alpha = torch.minimum(p, q).sum(-1, keepdim=True)
    torch.testing.assert_close(grad_log, -closed / alpha)


@pytest.mark.parametrize("kind", LK_KINDS)
def test_gradcheck(kind):
    d, t = _pair(vocab=6, seed=2, shape=(1, 2))
    d = d.double().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda x: lk_loss(x, t.double(), kind=kind, kl_weight=0.4, temperature=0.7), (d,)
    )


@pytest.mark.parametrize("kind", LK_KINDS)
def test_minimizer_is_the_target(kind):
    _, t = _pair(vocab=6, seed=4, shape=(1, 1))
    z = torch.zeros_like(t, requires_grad=True)
    opt = torch.optim.Adam([z], lr=0.05)
    # the LK losses are not smooth at q = p (like |x|): decay the step to settle
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=300, gamma=0.1)
    for _ in range(900):
        opt.zero_grad()
        lk_loss(z, t, kind=kind, kl_weight=0.5).backward()
        opt.step()
        sched.step()
    torch.testing.assert_close(z.detach().softmax(-1), t.softmax(-1), atol=2e-3, rtol=0)


def test_topk_target_equals_full_target_when_k_is_vocab():
    d, t = _pair(vocab=13, seed=5)
    vals, idx = t.log_softmax(-1).topk(13, dim=-1)
    for kind in LK_KINDS:
        full = lk_loss(d, t, kind=kind, reduction="none", kl_weight=0.5)
        topk = lk_loss(d, (idx, vals), kind=kind, reduction="none", kl_weight=0.5)
        torch.testing.assert_close(full, topk, atol=1e-5, rtol=0)
    torch.testing.assert_close(acceptance_rate(d, t), acceptance_rate(d, (idx, vals)))
    assert torch.equal(
        acceptance_rate(d, t, temperature=0),
        acceptance_rate(d, (idx[..., :1], vals[..., :1]), temperature=0),
    )


def test_topk_alpha_is_a_lower_bound_of_full_alpha():
    d, t = _pair(vocab=20, seed=6)
    vals, idx = t.topk(5, dim=-1)
    # the truncated target is renormalised; its mass on the top-k only grows
    assert torch.all(acceptance_rate(d, (idx, vals)) <= 1.0)
    assert torch.all(acceptance_rate(d, (idx, vals)) >= 0.0)


def test_log_probs_and_logits_give_the_same_loss():
    d, t = _pair(vocab=8, seed=7)
    for kind in LK_KINDS:
        a = lk_loss(d, t, kind=kind, temperature=1.5)
        b = lk_loss(d, t.log_softmax(-1), kind=kind, temperature=1.5)
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kind", LK_KINDS)
def test_stable_at_alpha_zero_and_one(dtype, kind):
    v = 50
    # alpha -> 0: disjoint peaks 1e4 apart; alpha -> 1: identical huge logits
    far_d = torch.full((1, 2, v), -1e4, dtype=dtype)
    far_d[..., 0] = 1e4
    far_t = torch.full((1, 2, v), -1e4, dtype=dtype)
    far_t[..., 1] = 1e4
    same = (torch.randn(1, 2, v) * 300).to(dtype)
    masked_target = torch.randn(1, 2, v).to(dtype)
    masked_target[..., 10:] = -math.inf  # log-probs with zeros
    for d, t in (
        (far_d, far_t),
        (same, same.clone()),
        (torch.randn(1, 2, v).to(dtype), masked_target),
    ):
        d = d.clone().requires_grad_()
        loss = lk_loss(d, t, kind=kind)
        loss.backward()
        assert torch.isfinite(loss), (kind, dtype)
        assert torch.isfinite(d.grad).all(), (kind, dtype)
    assert float(acceptance_rate(far_d, far_t).max()) < 1e-6
    assert float(lk_loss(same, same.clone(), kind=kind)) == pytest.approx(0.0, abs=1e-5)


def test_bfloat16_matches_float32():
    d, t = _pair(vocab=64, seed=8, shape=(4, 8))
    for kind in LK_KINDS:
        a = lk_loss(d, t, kind=kind)
        b = lk_loss(d.bfloat16(), t.bfloat16(), kind=kind)
        assert b.dtype == torch.float32
        assert float(b) == pytest.approx(float(a), rel=0.03, abs=0.01)


def test_mask_and_reductions():
    d, t = _pair(vocab=5, seed=9, shape=(2, 4))
    mask = torch.tensor([[True, True, False, False], [True, False, False, False]])
    per = lk_loss(d, t, reduction="none")
    assert per.shape == (2, 4)
    torch.testing.assert_close(lk_loss(d, t, mask=mask), per[mask].mean())
    torch.testing.assert_close(lk_loss(d, t, mask=mask, reduction="sum"), per[mask].sum())
    assert torch.equal(lk_loss(d, t, mask=mask, reduction="none")[~mask], torch.zeros(5))
    # NaN-free even if masked-out positions are extreme
    d2 = d.clone()
    d2[0, 3] = torch.tensor([1e4, -1e4, 0, 0, 0])
    assert torch.isfinite(lk_loss(d2, t, mask=mask))


def test_temperature_sharpens_both():
    d, t = _pair(vocab=5, seed=10)
    hot = acceptance_rate(d, t, temperature=100.0)
    assert torch.all(hot > 0.95)  # both near uniform
    greedy = acceptance_rate(d, t, temperature=0)
    torch.testing.assert_close(greedy, (d.argmax(-1) == t.argmax(-1)).float())


def test_inputs_are_not_mutated():
    d, t = _pair()
    d0, t0 = d.clone(), t.clone()
    lk_loss(d, t, kind="hybrid", temperature=2.0)
    assert torch.equal(d, d0) and torch.equal(t, t0)


def test_bad_input():
    d, t = _pair(vocab=7)
    with pytest.raises(ValueError, match="target_logits"):
        lk_loss(d, torch.randn(2, 3, 8))
    with pytest.raises(ValueError, match="draft_logits"):
        lk_loss(torch.randn(2, 7), t)
    nan = d.clone()
    nan[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        lk_loss(nan, t)
    with pytest.raises(ValueError, match="NaN"):
        lk_loss(d, nan)
    dead = t.clone()
    dead[1, 2] = -math.inf
    with pytest.raises(ValueError, match="every entry is -inf"):
        lk_loss(d, dead)
    with pytest.raises(ValueError, match="mask"):
        lk_loss(d, t, mask=torch.zeros(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask"):
        lk_loss(d, t, mask=torch.ones(3, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="kind"):
        lk_loss(d, t, kind="js")
    with pytest.raises(ValueError, match="reduction"):
        lk_loss(d, t, reduction="max")
    with pytest.raises(ValueError, match="temperature"):
        lk_loss(d, t, temperature=0.0)
    with pytest.raises(ValueError, match="kl_weight"):
        lk_loss(d, t, kind="hybrid", kl_weight=1.5)
    with pytest.raises(TypeError, match="draft_logits"):
        lk_loss(d.long(), t)
    with pytest.raises(ValueError, match="top-k"):
        lk_loss(d, (torch.zeros(2, 3, 2, dtype=torch.long), torch.zeros(2, 3, 3)))
    with pytest.raises(ValueError, match="top-k indices"):
        lk_loss(d, (torch.full((2, 3, 2), 7), torch.zeros(2, 3, 2)))


def test_module_wrapper_and_schedule():
    d, t = _pair()
    crit = LKLoss("hybrid", total_steps=10)
    assert crit.current_kl_weight == 1.0
    torch.testing.assert_close(crit(d, t), lk_loss(d, t, kind="kl"))
    for _ in range(5):
        crit.step()
    assert crit.current_kl_weight == 0.0
    torch.testing.assert_close(crit(d, t), lk_loss(d, t, kind="log_alpha"))
    weights = [kl_weight_schedule(s, 100) for s in range(101)]
    assert all(a >= b for a, b in itertools.pairwise(weights))
    assert LKLoss("tv", reduction="none")(d, t).shape == (2, 3)
    with pytest.raises(ValueError, match="kind"):
        LKLoss("nope")


@pytest.mark.parametrize("kind", LK_KINDS)
def test_fused_backward_equals_autograd_of_topk_path(kind):
    # full targets use a closed-form backward; top-k targets use plain autograd
    d, t = _pair(vocab=10, seed=11, shape=(3, 4))
    vals, idx = t.log_softmax(-1).topk(10, dim=-1)
    grads = []
    for target in (t, (idx, vals)):
        x = d.clone().requires_grad_()
        lk_loss(x, target, kind=kind, temperature=1.3, kl_weight=0.25).backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[0], grads[1], atol=1e-6, rtol=1e-5)
