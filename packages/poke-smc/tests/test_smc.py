import math

import pytest
import torch
from poke_smc import (
    MaskedDiffusionTransformer,
    PokeSMC,
    PokeValue,
    decode,
    effective_sample_size,
    infill,
    multinomial_resample,
    path_log_likelihood,
    systematic_resample,
)
from poke_smc.smc import normalized_weights


def _model(seed=0, vocab=6, length=14):
    torch.manual_seed(seed)
    m = MaskedDiffusionTransformer(vocab, length, d_model=16, n_layers=1, n_heads=2)
    with torch.no_grad():
        m.head.weight.mul_(200.0)
    return m.eval()


def test_weights_are_normalized_and_ess_is_bounded():
    logw = torch.tensor(
        [[0.0, 0.0, 0.0, 0.0], [0.0, -1e9, -1e9, -1e9], [1.0, 2.0, -float("inf"), 0.5]]
    )
    w = normalized_weights(logw)
    torch.testing.assert_close(w.sum(-1), torch.ones(3))
    assert w[2, 2] == 0
    ess = effective_sample_size(logw)
    assert ess[0].item() == pytest.approx(4.0)
    assert ess[1].item() == pytest.approx(1.0)
    assert 1.0 < ess[2].item() < 3.0
    with pytest.raises(ValueError, match="-inf"):
        normalized_weights(torch.full((1, 3), -float("inf")))


@pytest.mark.parametrize("resample", [systematic_resample, multinomial_resample])
def test_resampling_is_unbiased(resample):
    # E[#offspring of i] = N w_i. Over R independent draws the mean count has standard
    # error <= sqrt(N w_i (1 - w_i) / R) (multinomial; systematic has less variance).
    w = torch.tensor([0.05, 0.4, 0.15, 0.3, 0.1])
    n, reps = 5, 20000
    gen = torch.Generator().manual_seed(0)
    idx = resample(w.expand(reps, n).clone(), gen)
    counts = torch.nn.functional.one_hot(idx, n).sum(1).double()  # (reps, n)
    mean = counts.mean(0)
    se = (n * w * (1 - w) / reps).sqrt().double()
    assert ((mean - n * w).abs() <= 5 * se).all(), (mean, n * w)


def test_systematic_counts_are_within_one_of_expectation():
    w = torch.tensor([[0.05, 0.4, 0.15, 0.3, 0.1]]).expand(2000, 5).clone()
    idx = systematic_resample(w, torch.Generator().manual_seed(1))
    counts = torch.nn.functional.one_hot(idx, 5).sum(1)
    expected = 5 * w[0]
    assert ((counts >= expected.floor()) & (counts <= expected.ceil())).all()
    assert (idx.diff(dim=-1) >= 0).all()


def test_resampling_rejects_bad_weights():
    with pytest.raises(ValueError, match="nonnegative"):
        systematic_resample(torch.tensor([[0.5, -0.1]]))
    with pytest.raises(ValueError, match="positive sum"):
        systematic_resample(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="shape"):
        multinomial_resample(torch.ones(3))


@pytest.mark.parametrize("score", ["confidence", "margin", "entropy"])
def test_one_particle_without_lookahead_is_greedy_decoding(score):
    model = _model()
    prompt = torch.randint(0, 6, (3, 4), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        greedy = decode(model, prompt, 10, 10, score)
        smc = decode(model, prompt, 10, 10, PokeSMC(1, value=None, temperature=0.0, score=score))
    assert torch.equal(greedy.tokens, smc.tokens)
    assert torch.equal(greedy.reveal_step, smc.reveal_step)
    torch.testing.assert_close(greedy.path_ll, smc.path_ll)
    assert smc.nfe == greedy.nfe == 10


def test_smc_trajectories_stay_consistent_through_resampling():
    model = _model(1)
    x = torch.tensor([[6, 1, 6, 6, 2, 6, 6, 6, 3, 6, 0, 6, 6, 6]] * 3)
    smc = PokeSMC(6, value=PokeValue(8), beta=5.0, ess_threshold=1.0, temperature=1.0)
    with torch.no_grad():
        res = infill(model, x, 10, smc, generator=torch.Generator().manual_seed(0))
        again = path_log_likelihood(model, res.tokens, res.reveal_step)
    # ESS < N whenever the weights differ, which is nearly every step after the first
    assert ((res.resamples >= 5) & (res.resamples <= 9)).all()
    torch.testing.assert_close(res.path_ll, again, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(res.path_ll, res.candidate_path_ll.max(1).values)
    assert res.candidates.shape == (3, 6, 14) and res.nfe == 60
    assert (res.tokens[:, [1, 4, 8, 10]] == torch.tensor([1, 2, 3, 0])).all()


def test_threshold_zero_never_resamples():
    model = _model(2)
    with torch.no_grad():
        res = decode(model, [[1, 2]], 8, 8, PokeSMC(4, ess_threshold=0.0),
                     generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert res.resamples.tolist() == [0]


def test_bad_arguments_raise():
    for kwargs, match in [
        ({"particles": 0}, "particles"),
        ({"beta": 0.0}, "beta"),
        ({"ess_threshold": 1.5}, "ess_threshold"),
        ({"resampling": "stratified"}, "resampling"),
        ({"value": "oracle"}, "value"),
        ({"temperature": -0.1}, "temperature"),
    ]:
        with pytest.raises(ValueError, match=match):
            PokeSMC(**kwargs)


def _target_by_enumeration(model, temperature, position_temperature, beta):
    """pi(x) ∝ sum over orders of q(tau) exp(beta PathLL(tau)), and q's own marginal.

    One token per step on 3 masked positions: at a state, every masked position draws a
    token at ``temperature``, then one position is chosen by softmax(confidence /
    position_temperature) (Gumbel-top-1), as :func:`propose` does.
    """
    import itertools

    length, mask = 3, model.mask_token_id
    q_final, pi_final = {}, {}

    def walk(state, q, pll):
        masked = [i for i in range(length) if state[i] == mask]
        if not masked:
            key = tuple(state)
            q_final[key] = q_final.get(key, 0.0) + q
            pi_final[key] = pi_final.get(key, 0.0) + q * math.exp(beta * pll)
            return
        logp = torch.log_softmax(model(torch.tensor([state])).double(), -1)[0]
        tok_q = torch.softmax(logp / temperature, -1)  # (L, V)
        moves = {}
        for toks in itertools.product(range(model.vocab_size), repeat=len(masked)):
            p_toks = math.prod(float(tok_q[i, v]) for i, v in zip(masked, toks, strict=True))
            conf = torch.tensor(
                [float(logp[i, v].exp()) for i, v in zip(masked, toks, strict=True)]
            )
            pick = torch.softmax(conf / position_temperature, 0)
            for j, (i, v) in enumerate(zip(masked, toks, strict=True)):
                moves[(i, v)] = moves.get((i, v), 0.0) + p_toks * float(pick[j])
        for (i, v), prob in moves.items():
            nxt = list(state)
            nxt[i] = v
            walk(nxt, q * prob, pll + float(logp[i, v]))

    walk([mask] * length, 1.0, 0.0)
    z = sum(pi_final.values())
    return q_final, {k: v / z for k, v in pi_final.items()}


@pytest.mark.parametrize("value", [None, "greedy", "poke"])
def test_weighted_particles_target_the_tilted_distribution(table_model, value):
    # the final weighted particles must estimate pi ∝ q(tau) exp(beta PathLL(tau)) whatever
    # the lookahead: the twist V only changes the intermediate targets (and resampling)
    temperature, pos_t, beta, n = 1.0, 0.5, 1.5, 20000
    q, pi = _target_by_enumeration(table_model, temperature, pos_t, beta)
    if value == "poke":
        torch.manual_seed(0)
        value = PokeValue(8)
        with torch.no_grad():
            value.rho[-1].weight.normal_(0.0, 1.0)  # a twist far from the greedy estimate
    smc = PokeSMC(n, value=value, beta=beta, temperature=temperature,
                  position_temperature=pos_t, ess_threshold=1.0)  # fmt: skip
    res = infill(table_model, [2, 2, 2], 3, smc, generator=torch.Generator().manual_seed(0))
    assert res.resamples.item() == 2  # resampled before each step after the first
    w = res.weights[0].double()
    assert w.sum().item() == pytest.approx(1.0, abs=1e-4)  # float32 softmax over 20000
    est = {}
    for cand, wi in zip(res.candidates[0].tolist(), w.tolist(), strict=True):
        est[tuple(cand)] = est.get(tuple(cand), 0.0) + wi
    tv = 0.5 * sum(abs(est.get(k, 0.0) - p) for k, p in pi.items())
    tv_proposal = 0.5 * sum(abs(q[k] - p) for k, p in pi.items())
    assert tv < 0.02, (tv, est, pi)
    assert tv_proposal > 0.1  # the tilt is far from the proposal: the test has power


def test_final_weights_without_resampling_are_the_path_ll_tilt():
    model = _model(3)
    smc = PokeSMC(6, value="greedy", beta=0.7, ess_threshold=0.0, temperature=1.0)
    with torch.no_grad():
        res = decode(model, [[1, 2], [3, 0]], 8, 8, smc, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(res.weights, torch.softmax(0.7 * res.candidate_path_ll, -1))
