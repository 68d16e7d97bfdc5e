import math

import pytest
import torch
from poke_smc import (
    MaskedDiffusionTransformer,
    PokeValue,
    Rollouts,
    collect_rollouts,
    decode,
    fit_poke,
    greedy_value,
)
from poke_smc.poke import value_features


def test_greedy_value_by_hand():
    p = torch.tensor([[[0.7, 0.3], [0.4, 0.6], [0.9, 0.1]]])
    masked = torch.tensor([[True, False, True]])
    v = greedy_value(p.log(), masked)
    assert v.item() == pytest.approx(math.log(0.7) + math.log(0.9), rel=1e-6)


def test_untrained_poke_is_the_greedy_estimate():
    logp = torch.randn(5, 7, 4).log_softmax(-1)
    masked = torch.rand(5, 7, generator=torch.Generator().manual_seed(0)) < 0.5
    torch.testing.assert_close(PokeValue()(logp, masked), greedy_value(logp, masked))
    f = value_features(logp, masked)
    assert f.shape == (5, 7, 4)
    assert ((f[..., 1] >= 0) & (f[..., 1] <= 1 + 1e-6)).all()  # normalised entropy


def test_rollout_targets_are_future_path_ll():
    torch.manual_seed(0)
    model = MaskedDiffusionTransformer(5, 10, d_model=16, n_layers=1, n_heads=2).eval()
    with torch.no_grad():
        model.head.weight.mul_(100.0)
    prompts = torch.randint(0, 5, (3, 4), generator=torch.Generator().manual_seed(1))
    inputs = torch.cat([prompts, torch.full((3, 6), 5)], 1)
    ro = collect_rollouts(model, inputs, 6, rollouts_per_input=1, temperature=0.0,
                          states_per_rollout=None)  # fmt: skip
    assert len(ro) == 3 * 6
    with torch.no_grad():
        greedy = decode(model, prompts, 6, 6)
    # the first state recorded of each rollout is the fully masked answer: its future
    # Path LL is the whole trajectory's
    first = ro.masked.sum(-1) == 6
    torch.testing.assert_close(ro.target[first], greedy.path_ll, rtol=1e-5, atol=1e-5)
    assert (ro.target <= 1e-6).all()
    last = ro.masked.sum(-1) == 1
    torch.testing.assert_close(ro.target[last], ro.greedy[last], rtol=1e-5, atol=1e-5)


def test_fit_poke_learns_a_residual_the_greedy_estimate_misses():
    # synthetic states: the future Path LL is 1.5x the greedy estimate minus 0.2 per
    # masked position; POKE must learn that correction from the features
    g = torch.Generator().manual_seed(0)
    n, length = 800, 8
    logp = (3 * torch.randn(n, length, 3, generator=g)).log_softmax(-1)
    masked = torch.rand(n, length, generator=g) < 0.6
    masked[:, 0] = True
    greedy = greedy_value(logp, masked)
    target = 1.5 * greedy - 0.2 * masked.sum(-1)
    ro = Rollouts(value_features(logp, masked), masked, greedy, target)
    value, fit = fit_poke(ro, epochs=40, seed=0)
    assert not value.training
    assert fit.r2_poke > 0.9
    assert fit.r2_poke > fit.r2_greedy + 0.1
    assert fit.mse_poke < fit.mse_greedy
    assert fit.losses[-1] < fit.losses[0]


def test_fit_poke_measures_on_the_given_validation_rollouts():
    g = torch.Generator().manual_seed(1)
    n, length = 600, 6
    logp = (2 * torch.randn(n, length, 3, generator=g)).log_softmax(-1)
    masked = torch.rand(n, length, generator=g) < 0.7
    masked[:, 0] = True
    greedy = greedy_value(logp, masked)
    target = greedy - 0.3 * masked.sum(-1)
    groups = torch.arange(n) // 4  # 4 states per input
    ro = Rollouts(value_features(logp, masked), masked, greedy, target, groups)
    fit_part, held = ro.split(0.25, torch.Generator().manual_seed(0))
    assert set(fit_part.groups.tolist()).isdisjoint(held.groups.tolist())  # inputs kept apart
    value, fit = fit_poke(fit_part, validation=held, epochs=20, seed=0)
    assert fit.train_states == len(fit_part) and fit.val_states == len(held)
    mse = float(((value.predict(held) - held.target) ** 2).mean())
    assert fit.mse_poke == pytest.approx(mse, rel=1e-4)
    assert fit.mse_poke < fit.mse_greedy


def test_fit_poke_rejects_bad_input():
    ro = Rollouts(torch.zeros(5, 3, 4), torch.ones(5, 3, dtype=torch.bool), torch.zeros(5),
                  torch.zeros(5))  # fmt: skip
    with pytest.raises(ValueError, match="at least 10"):
        fit_poke(ro)
    with pytest.raises(ValueError, match="hidden"):
        PokeValue(0)
    model = MaskedDiffusionTransformer(5, 6, d_model=16, n_layers=1, n_heads=2)
    with pytest.raises(ValueError, match="steps"):
        collect_rollouts(model, torch.tensor([[1, 5, 5, 2, 3, 4]]), 3)
    with pytest.raises(ValueError, match="mask token"):
        collect_rollouts(model, torch.tensor([[1, 2, 3, 2, 3, 4]]), 1)
