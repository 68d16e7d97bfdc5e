"""Our TIES / DARE-TIES / task arithmetic against mergekit 0.1.5's on tiny state dicts."""

import numpy as np
import opic_merging as om
import pytest
import torch

pytest.importorskip("mergekit.merge_methods.api")


def _vectors(seed=0, n_tasks=3):
    g = torch.Generator().manual_seed(seed)
    # 20 and 10 entries: density 0.4 keeps exactly 8 and 4 (no rounding difference);
    # Gaussian entries have distinct magnitudes and non-zero sums almost surely
    base = {"a.weight": torch.randn(4, 5, generator=g), "b.bias": torch.randn(10, generator=g)}
    tvs = [
        om.TaskVector({k: torch.randn(v.shape, generator=g) for k, v in base.items()}, f"t{i}")
        for i in range(n_tasks)
    ]
    return base, tvs


def _close(ours, theirs):
    assert set(ours) == set(theirs)
    for k in ours:
        torch.testing.assert_close(ours[k], theirs[k], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ties_equals_mergekit_ties(seed):
    base, tvs = _vectors(seed)
    ours = om.ties_merge(tvs, 0.4)
    theirs = om.mergekit_merge(base, tvs, "ties", density=0.4, weight=1.0)
    _close({k: base[k] + ours.delta[k] for k in base}, theirs)
    # density 1: no trimming, sign election and disjoint mean only
    ours1 = om.ties_merge(tvs, 1.0)
    theirs1 = om.mergekit_merge(base, tvs, "ties", density=1.0)
    _close({k: base[k] + ours1.delta[k] for k in base}, theirs1)


def test_ties_weights_enter_before_the_sign_election_in_mergekit():
    # mergekit issue #474: with unequal weights mergekit elects signs on weighted
    # values; ours elects on the raw trimmed values and scales afterwards
    base = {"w": torch.zeros(1)}
    tvs = [
        om.TaskVector({"w": torch.tensor([1.0])}, "a"),
        om.TaskVector({"w": torch.tensor([-2.0])}, "b"),
    ]
    theirs = om.mergekit_merge(base, tvs, "ties", density=1.0, weight=[3.0, 1.0])
    # weighted values 3 and -2: "+" wins, mean over the agreeing weight: 3 / 3 = 1
    assert theirs["w"].item() == pytest.approx(1.0)
    ours = om.ties_merge(tvs, 1.0)  # raw values 1 and -2: "-" wins, the merge is -2
    assert ours.delta["w"].item() == pytest.approx(-2.0)


def test_dare_ties_at_density_one_equals_mergekit_normalized():
    base, tvs = _vectors(3)
    ours = om.dare_ties_merge(tvs, 1.0)
    theirs = om.mergekit_merge(base, tvs, "dare_ties", density=1.0, normalize=True)
    _close({k: base[k] + ours.delta[k] for k in base}, theirs)
    # mergekit's default for dare_ties is normalize=False: the agreeing entries summed
    summed = om.mergekit_merge(base, tvs, "dare_ties", density=1.0)
    stacked = torch.stack([tv.delta["a.weight"] for tv in tvs])
    sign = torch.sign(stacked.sum(0))
    agree = torch.sign(stacked) == sign
    torch.testing.assert_close(summed["a.weight"], base["a.weight"] + (stacked * agree).sum(0))


def test_dare_drop_both_unbiased_mergekit_keeps_the_l1_norm():
    base = {"w": torch.zeros(2000)}
    tv = om.TaskVector({"w": torch.linspace(-1.0, 1.0, 2000)}, "t")
    theirs = om.mergekit_merge(base, [tv], "dare_linear", density=0.5, seed=7)["w"]
    kept = theirs != 0
    assert 0.45 < kept.float().mean().item() < 0.55
    # mergekit rescales the kept entries to the L1 norm of the whole tensor
    assert theirs.abs().sum().item() == pytest.approx(tv.delta["w"].abs().sum().item(), rel=1e-4)
    ours = om.dare(tv, 0.5, seed=7).delta["w"]
    assert 0.45 < (ours != 0).float().mean().item() < 0.55
    torch.testing.assert_close(ours[ours != 0], 2 * tv.delta["w"][ours != 0])
    # both are unbiased: the mean over many draws approaches tau
    mean_ours = torch.stack([om.dare(tv, 0.5, seed=s).delta["w"] for s in range(200)]).mean(0)
    mean_theirs = torch.stack(
        [om.mergekit_merge(base, [tv], "dare_linear", density=0.5, seed=s)["w"] for s in range(200)]
    ).mean(0)
    for m in (mean_ours, mean_theirs):
        assert (m - tv.delta["w"]).abs().mean().item() < 0.06


def test_task_arithmetic_equals_mergekit_and_seed_is_reproducible():
    base, tvs = _vectors(4)
    lam = [0.5, 0.25, 1.0]
    _close(om.merge(base, tvs, lam), om.mergekit_merge(base, tvs, "task_arithmetic", weight=lam))
    a = om.mergekit_merge(base, tvs, "dare_ties", density=0.5, seed=3)
    before = torch.random.get_rng_state()
    b = om.mergekit_merge(base, tvs, "dare_ties", density=0.5, seed=3)
    assert torch.equal(before, torch.random.get_rng_state())  # global generator restored
    _close(a, b)
    assert np.isfinite(a["a.weight"].numpy()).all()


def test_mergekit_merge_bad_input():
    base, tvs = _vectors(5)
    with pytest.raises(ValueError, match="method"):
        om.mergekit_merge(base, tvs, "slerp")
    with pytest.raises(ValueError, match=r"empty|at least|task_vectors"):
        om.mergekit_merge(base, [], "ties")
    with pytest.raises(TypeError, match="base"):
        om.mergekit_merge([1, 2], tvs, "ties")
    with pytest.raises(ValueError, match="lacks"):
        om.mergekit_merge({"a.weight": base["a.weight"]}, tvs, "ties")
    with pytest.raises(ValueError, match="shape"):
        om.mergekit_merge({"a.weight": torch.zeros(2), "b.bias": base["b.bias"]}, tvs, "ties")
    with pytest.raises(ValueError, match="seed"):
        om.mergekit_merge(base, tvs, "ties", seed=-1)
