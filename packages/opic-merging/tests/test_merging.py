"""Mathematics of task vectors, merges, TIES/DARE, the cached scorer and OPIC's search."""

import itertools
import math

import numpy as np
import opic_merging as om
import pytest
import torch
from opic_merging._lm import CachedScorer


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _pair(seed=0):
    g = torch.Generator().manual_seed(seed)
    base = {
        "model.layers.0.self_attn.q_proj.weight": torch.randn(3, 3, generator=g),
        "model.layers.0.mlp.up_proj.weight": torch.randn(4, 3, generator=g),
        "model.layers.1.input_layernorm.weight": torch.randn(3, generator=g),
        "model.layers.1.post_attention_layernorm.weight": torch.randn(3, generator=g),
        "model.embed_tokens.weight": torch.randn(5, 3, generator=g),
    }
    tuned = [
        {k: v + 0.1 * (i + 1) * torch.randn(v.shape, generator=g) for k, v in base.items()}
        for i in range(2)
    ]
    return base, tuned


def test_task_vector_round_trip():
    base, tuned = _pair()
    tv = om.TaskVector.from_models(base, tuned[0])
    back = tv.apply_to(base, 1.0)
    for k in base:
        torch.testing.assert_close(back[k], tuned[0][k], rtol=0, atol=1e-6)
    assert math.isclose(
        tv.norm(),
        math.sqrt(sum(float(((tuned[0][k] - base[k]) ** 2).sum()) for k in base)),
        rel_tol=1e-5,
    )


def test_zero_and_one_hot_coefficients():
    base, tuned = _pair()
    tvs = [om.TaskVector.from_models(base, t) for t in tuned]
    zero = om.merge(base, tvs, [0.0, 0.0])
    for k in base:
        torch.testing.assert_close(zero[k], base[k], rtol=0, atol=0)
    for i in range(2):
        onehot = om.merge(base, tvs, np.eye(2)[i])
        for k in base:
            torch.testing.assert_close(onehot[k], tuned[i][k], rtol=0, atol=1e-6)


def test_merge_on_modules_is_a_copy():
    from icml26_core.lm import tiny_llama

    base = tiny_llama("1M")
    tuned = tiny_llama("1M", seed=1)
    tv = om.TaskVector.from_models(base, tuned)
    merged = om.merge(base, [tv], [1.0])
    assert merged is not base
    for (n, p), (_, q) in zip(merged.named_parameters(), tuned.named_parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6, msg=n)
    half = om.merge(base, [tv], [0.5])
    b, t = dict(base.named_parameters()), dict(tuned.named_parameters())
    for n, p in half.named_parameters():
        torch.testing.assert_close(p, 0.5 * (b[n] + t[n]), rtol=0, atol=1e-6)


def test_groups_and_granular_merge():
    base, tuned = _pair()
    tvs = [om.TaskVector.from_models(base, t) for t in tuned]
    assert om.group_names(tvs, "task") == ("all",)
    assert om.group_names(tvs, "layer") == ("layer0", "layer1", "other")
    assert om.group_names(tvs, "module") == (
        "layer0.attn",
        "layer0.mlp",
        "layer1.attn",
        "layer1.mlp",
        "other",
    )
    lam = np.array([[1.0, 0.0, 2.0, 0.0, 0.5], [0.0, 1.0, 0.0, 0.0, 0.0]])
    out = om.merge(base, tvs, lam, "module")
    q, up = "model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.up_proj.weight"
    ln1, ln2 = (
        "model.layers.1.input_layernorm.weight",
        "model.layers.1.post_attention_layernorm.weight",
    )
    torch.testing.assert_close(out[q], tuned[0][q], atol=1e-6, rtol=0)
    torch.testing.assert_close(out[up], tuned[1][up], atol=1e-6, rtol=0)
    torch.testing.assert_close(out[ln1], base[ln1] + 2 * tvs[0].delta[ln1], atol=1e-6, rtol=0)
    torch.testing.assert_close(out[ln2], base[ln2], atol=0, rtol=0)


def test_ties_by_hand():
    base = {"w": torch.zeros(4)}
    t1 = {"w": torch.tensor([1.0, -2.0, 0.1, 3.0])}
    t2 = {"w": torch.tensor([3.0, 1.0, -0.2, -1.0])}
    tvs = [om.TaskVector.from_models(base, t) for t in (t1, t2)]
    full = om.ties_merge(tvs, density=1.0).delta["w"]
    # signs of the sums: +, -, -, +; disjoint means of agreeing entries
    torch.testing.assert_close(full, torch.tensor([2.0, -2.0, -0.2, 3.0]))
    half = om.ties_merge(tvs, density=0.5).delta["w"]
    # trimmed: t1 -> [0, -2, 0, 3], t2 -> [3, 1, 0, 0]; sums [3, -1, 0, 3]
    torch.testing.assert_close(half, torch.tensor([3.0, -2.0, 0.0, 3.0]))


def test_dare_expectation_and_density_one():
    base = {"w": torch.zeros(20000)}
    tv = om.TaskVector.from_models(base, {"w": torch.ones(20000)})
    d = om.dare(tv, 0.3, seed=1).delta["w"]
    kept = (d != 0).float().mean().item()
    assert abs(kept - 0.3) < 0.02
    assert abs(d.mean().item() - 1.0) < 0.05
    torch.testing.assert_close(om.dare(tv, 1.0).delta["w"], tv.delta["w"])
    both = om.dare_ties_merge([tv, tv], density=1.0).delta["w"]
    torch.testing.assert_close(both, tv.delta["w"])


def test_bad_inputs_raise_clearly():
    base, tuned = _pair()
    with pytest.raises(ValueError, match="missing keys"):
        om.TaskVector.from_models(base, {k: v for k, v in tuned[0].items() if "embed" not in k})
    bad = dict(tuned[0])
    bad["model.embed_tokens.weight"] = torch.zeros(6, 3)
    with pytest.raises(ValueError, match="shape"):
        om.TaskVector.from_models(base, bad)
    bad = {k: v.double() for k, v in tuned[0].items()}
    with pytest.raises(ValueError, match="dtype"):
        om.TaskVector.from_models(base, bad)
    bad = dict(tuned[0])
    bad["model.layers.0.mlp.up_proj.weight"] = torch.full((4, 3), float("nan"))
    with pytest.raises(ValueError, match="NaN"):
        om.TaskVector.from_models(base, bad)
    with pytest.raises(ValueError, match="non-empty"):
        om.merge(base, [], [])
    tv = om.TaskVector.from_models(base, tuned[0])
    with pytest.raises(ValueError, match="shape"):
        om.merge(base, [tv], [[1.0, 2.0, 3.0]], "task")
    with pytest.raises(ValueError, match="granularity"):
        om.merge(base, [tv], [1.0], "block")
    with pytest.raises(ValueError, match="density"):
        om.ties_merge([tv], density=0.0)
    with pytest.raises(TypeError, match="base"):
        om.TaskVector.from_models([1, 2], tuned[0])


def test_mergekit_export_reimports_to_the_same_weights():
    base, tuned = _pair()
    tvs = [om.TaskVector.from_models(base, t, name=f"t{i}") for i, t in enumerate(tuned)]
    for gran in ("task", "layer", "module"):
        g = len(om.group_names(tvs, gran))
        lam = np.random.default_rng(0).uniform(0, 1, (2, g))
        if gran == "task":
            lam = lam[:, 0]
        cfg = om.mergekit_config(tvs, lam, gran, base_model="HuggingFaceTB/SmolLM2-135M-Instruct")
        assert cfg["merge_method"] == "task_arithmetic" and len(cfg["models"]) == 2
        back = om.from_mergekit_config(cfg, base, tvs)
        ref = om.merge(base, tvs, lam, gran)
        for k in base:
            torch.testing.assert_close(back[k], ref[k], rtol=0, atol=1e-6)


def test_cached_scorer_equals_full_forward():
    from icml26_core.datasets import ByteTokenizer
    from icml26_core.lm import tiny_llama

    model = tiny_llama("1M").eval()
    tok = ByteTokenizer()
    pairs = [("hello ->", " world"), ("a longer prompt ->", " x"), ("q", " abc")]
    top = [n for n, _ in model.named_parameters() if "layers.3." in n]
    cached = CachedScorer(model, tok, pairs, top)
    assert cached.start == 3
    full = CachedScorer(model, tok, pairs, [n for n, _ in model.named_parameters()])
    assert full.start is None
    with torch.no_grad():
        manual = []
        for p, a in pairs:
            ids = torch.tensor([tok.encode(p) + tok.encode(a)])
            lp = torch.log_softmax(model(ids).logits[0].float(), -1)
            n = len(tok.encode(p))
            manual.append(sum(lp[t - 1, ids[0, t]].item() for t in range(n, ids.shape[1])))
    np.testing.assert_allclose(cached.score()["logprob"], manual, rtol=1e-4, atol=1e-4)
    # changed weights: the cached path still equals a full forward of the merged model
    w = {n: p.detach() + 0.05 for n, p in model.named_parameters() if n in top}
    np.testing.assert_allclose(
        cached.score(w)["logprob"], full.score(w)["logprob"], rtol=1e-4, atol=1e-4
    )


class _Toy(torch.nn.Module):
    """A one-layer linear 'model' for the search tests: state dict of one tensor."""

    def __init__(self):
        super().__init__()
        self.model = torch.nn.Module()
        self.model.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4, bias=False)])


def _toy_opic(budget=40, optimizer="cma", levels=("task", "layer", "module"), **kw):
    base = _Toy()
    torch.nn.init.zeros_(base.model.layers[0].weight)
    tvs = {}
    for i in range(2):
        tv = om.TaskVector({"model.layers.0.weight": torch.eye(4) * (i + 1)}, f"t{i}")
        tvs[f"t{i}"] = tv

    class Tok:
        def encode(self, s):
            return [ord(c) % 7 for c in s]

        def decode(self, ids):
            return ""

    opic = om.OPIC(
        base,
        tvs,
        Tok(),
        n_shots=1,
        budget=budget,
        n_pseudo=2,
        optimizer=optimizer,
        levels=levels,
        **kw,
    )
    return opic


@pytest.mark.parametrize("optimizer", ["cma", "ga"])
def test_search_finds_known_best_merge_on_linear_toy(optimizer):
    opic = _toy_opic(budget=90, optimizer=optimizer, levels=("task",))
    target = torch.eye(4) * 1.6  # reached by lambda = (0.4, 0.6): 0.4 * 1 + 0.6 * 2

    def objective(w):
        return -float(((w["model.layers.0.weight"] - target) ** 2).sum())

    opic.search(objective)
    lam = opic.coefficients_[:, 0]
    assert abs(lam[0] + 2 * lam[1] - 1.6) < 0.05
    assert opic.fitness_ > -0.05


def test_best_so_far_monotone_and_refinement_keeps_parent_fitness():
    opic = _toy_opic(budget=60)
    target = torch.eye(4) * 0.9

    def objective(w):
        return -float(((w["model.layers.0.weight"] - target) ** 2).sum())

    opic.search(objective)
    best = [h["best"] for h in opic.history_]
    assert all(b2 >= b1 for b1, b2 in itertools.pairwise(best))
    # the first evaluation of each level is its parent's best point: same merge, same fitness
    levels = [h["level"] for h in opic.history_]
    for lv in ("layer", "module"):
        first = levels.index(lv)
        prev_best = opic.history_[first - 1]["best"]
        assert abs(opic.history_[first]["fitness"] - prev_best) < 1e-12
    assert opic.n_labeled_items_ == 0


def test_refinement_init_is_the_parent_merge():
    opic = _toy_opic()
    lam = np.array([[0.3], [0.7]])
    finer = opic._expand(lam, "task", "module")
    for a, b in zip(
        opic.weights(lam, "task").values(), opic.weights(finer, "module").values(), strict=True
    ):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_opic_argument_errors():
    with pytest.raises(ValueError, match="levels"):
        _toy_opic(levels=("module", "task"))
    with pytest.raises(ValueError, match="levels"):
        _toy_opic(levels=("block",))
    with pytest.raises(ValueError, match="optimizer"):
        _toy_opic(optimizer="pso")
    with pytest.raises(ValueError, match="task_models"):
        om.OPIC(_Toy(), {}, object())
    opic = _toy_opic()
    with pytest.raises(ValueError, match="task_instructions"):
        opic.fit({"t0": "x"})
    with pytest.raises(RuntimeError, match="fit"):
        opic.merged_model()


def test_bad_arguments_name_themselves_and_nothing_is_mutated():
    base, tuned = _pair()
    before = {k: v.clone() for k, v in base.items()}
    tvs = [om.TaskVector.from_models(base, t, name=f"t{i}") for i, t in enumerate(tuned)]
    with pytest.raises(TypeError, match="coefficients"):
        om.merge(base, tvs, "ab")
    with pytest.raises(TypeError, match="task_vector"):
        om.dare(tuned[0], 0.5)
    with pytest.raises(ValueError, match="seed"):
        om.dare(tvs[0], 0.5, seed=-1)
    with pytest.raises(TypeError, match="seed"):
        om.dare_ties_merge(tvs, 0.5, seed="x")
    other = om.TaskVector({"model.layers.0.mlp.up_proj.weight": torch.zeros(3)})
    with pytest.raises(ValueError, match="shape"):
        om.ties_merge([tvs[0], other])
    with pytest.raises(ValueError, match="shape"):
        om.dare_ties_merge([tvs[0], other])
    with pytest.raises(ValueError, match="shape"):
        tvs[0] + other
    with pytest.raises(TypeError, match="task_vectors"):
        om.group_names([base], "task")
    with pytest.raises(TypeError, match="task_vectors"):
        om.mergekit_config([base], [1.0])
    with pytest.raises(TypeError, match="coefficients"):
        om.mergekit_config(tvs, "ab")
    cfg = om.mergekit_config(tvs, [0.5, 0.25])
    with pytest.raises(TypeError, match="config"):
        om.from_mergekit_config(None, base, tvs)
    with pytest.raises(ValueError, match="base lacks"):
        om.from_mergekit_config(cfg, {"x": torch.zeros(1)}, tvs)
    for k, v in base.items():
        assert torch.equal(v, before[k])
    with pytest.raises(TypeError, match="bounds"):
        _toy_opic(bounds=(1.0,))
    with pytest.raises(TypeError, match="budget"):
        _toy_opic(budget="ab")
    assert _toy_opic(levels="task").levels == ("task",)
    opic = _toy_opic()
    with pytest.raises(TypeError, match="task_instructions"):
        opic.fit({t: 3 for t in opic.tasks})
    with pytest.raises(TypeError, match="objective"):
        opic.search(None)
