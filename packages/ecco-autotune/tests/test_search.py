"""Search operators, intents and the strategist: no toolchain needed."""

import math
from typing import ClassVar

import numpy as np
import pytest
from ecco_autotune import (
    ECCO,
    INTENTS,
    O3_PASSES,
    PASSES,
    RECIPES,
    GeneticTuner,
    Program,
    RandomSearch,
    Strategist,
    crossover,
    intent_from_text,
    intent_weights,
    mutate,
    validate_passes,
)
from ecco_autotune.program import Evaluator
from ecco_autotune.strategist import CoTRecord


def test_pass_tables_are_consistent():
    assert len(set(PASSES)) == len(PASSES) == 94
    for name in ("constprop", "functionattrs", "rpo-functionattrs"):
        assert name not in PASSES  # gone in LLVM 14
    for table in (INTENTS, RECIPES):
        for passes in table.values():
            validate_passes(passes)
    validate_passes(O3_PASSES)
    assert set(INTENTS) == set(RECIPES)


def test_ga_operators_keep_sequences_valid():
    rng = np.random.default_rng(0)
    seqs = [O3_PASSES, ("dce",), ("sroa", "gvn")]
    w = intent_weights("loop")
    for i in range(2000):
        a = seqs[int(rng.integers(len(seqs)))]
        b = seqs[int(rng.integers(len(seqs)))]
        child = mutate(crossover(a, b, rng, max_length=50), rng, w if i % 2 else None,
                       max_length=50)  # fmt: skip
        assert 1 <= len(child) <= 50
        validate_passes(child)
        seqs.append(child)


def test_mutation_kinds_change_length_by_at_most_one():
    rng = np.random.default_rng(1)
    for _ in range(300):
        s = mutate(O3_PASSES, rng)
        assert abs(len(s) - len(O3_PASSES)) <= 1
        assert s != O3_PASSES or len(set(O3_PASSES)) < len(O3_PASSES)  # swap of equal names


def test_intent_weights_are_a_distribution_with_the_stated_focus():
    for intent in INTENTS:
        w = np.array(intent_weights(intent, focus=0.7))
        assert w.sum() == pytest.approx(1.0, abs=1e-12)
        mask = np.array([p in INTENTS[intent] for p in PASSES])
        share = mask.mean()
        assert w[mask].sum() == pytest.approx(0.7 + 0.3 * share, abs=1e-12)
    u = np.array(intent_weights(None))
    assert np.allclose(u, 1 / len(PASSES))


def test_mutation_follows_the_intent_distribution():
    rng = np.random.default_rng(2)
    w = intent_weights("vectorization", focus=1.0)
    for _ in range(200):
        s = mutate(("dce",), rng, w)  # insert or replace: the new pass is a vectorization one
        new = [p for p in s if p != "dce"]
        assert all(p in INTENTS["vectorization"] for p in new)


def test_unparseable_strategist_output_falls_back_to_uniform():
    assert intent_from_text("I would unroll the widgets") is None
    assert intent_from_text("Intent: Memory, then loop") == "memory"
    assert intent_from_text(None) is None
    assert intent_weights(intent_from_text("???")) == intent_weights(None)
    assert Strategist(None, None).choose({"loops": 3}) is None


class _Broken:
    def parameters(self):
        raise RuntimeError("no weights")


class _Tok:
    words = sorted({t for i in INTENTS for t in i.split()})
    vocab: ClassVar[dict[str, int]] = {w: i for i, w in enumerate(["<x>", *words])}

    def encode(self, text):
        return [self.vocab.get(t, 0) for t in text.split()] or [0]


class _FavourModel:
    """A fake causal LM whose next-token logits favour one word."""

    def __init__(self, word):
        import torch

        self.torch, self.word = torch, word
        self.p = torch.zeros(1)

    def parameters(self):
        return iter([self.p])

    def __call__(self, ids, use_cache=False, past_key_values=None):
        t = self.torch
        logits = t.zeros(1, ids.shape[1], len(_Tok.vocab))
        logits[..., _Tok.vocab[self.word]] = 5.0

        class Out:
            pass

        o = Out()
        o.logits, o.past_key_values = logits, None
        return o


def test_strategist_failure_means_no_intent():
    assert Strategist(_Broken(), _Tok()).choose({"loops": 1}) is None


def test_constrained_decoding_picks_the_likeliest_intent():
    pytest.importorskip("torch")
    s = Strategist(_FavourModel("vectorization"), _Tok())
    assert s.choose({"loops": 2}) == "vectorization"
    scores = s.scores(s.prompt({"loops": 2}))
    assert set(scores) == set(INTENTS)
    assert all(math.isfinite(v) for v in scores.values())


def test_prompt_retrieves_the_nearest_examples():
    near = CoTRecord("a", {"loops": 10, "loads": 1000}, dict.fromkeys(INTENTS, 1.0),
                     dict.fromkeys(INTENTS, 1.0), "memory")  # fmt: skip
    far = CoTRecord("b", {"calls": 500, "functions": 90}, dict.fromkeys(INTENTS, 1.0),
                    dict.fromkeys(INTENTS, 1.0), "inlining")  # fmt: skip
    p = Strategist(None, None, [far, near], k=1).prompt({"loops": 12, "loads": 900})
    assert "Intent: memory" in p and "Intent: inlining" not in p
    assert p.endswith("Intent:")


def test_bad_input_names_the_argument(tmp_path):
    with pytest.raises(ValueError, match=r"passes.*empty"):
        validate_passes([])
    with pytest.raises(ValueError, match="unknown pass 'O3'"):
        validate_passes(["O3"])
    with pytest.raises(TypeError, match="passes must be a sequence"):
        validate_passes("gvn")
    with pytest.raises(ValueError, match="driver"):
        Program(sources=(), driver=str(tmp_path / "missing.c"))
    src = tmp_path / "k.c"
    src.write_text("int main(void){return 0;}\n")
    with pytest.raises(ValueError, match="sources"):
        Program(sources=(str(tmp_path / "nope.c"),), driver=str(src))
    with pytest.raises(ValueError, match="name must be one of"):
        Program.builtin("sha3")
    prog = Program(sources=(), driver=str(src))
    with pytest.raises(ValueError, match=r"budget must be >= population \(8\)"):
        GeneticTuner(population=8).tune(prog, 4)
    with pytest.raises(ValueError, match="budget"):
        RandomSearch().tune(prog, 0)
    with pytest.raises(ValueError, match="elite"):
        GeneticTuner(population=4, elite=4)
    with pytest.raises(TypeError, match="strategist must be a Strategist"):
        ECCO("smollm2")
    with pytest.raises(ValueError, match="intent must be one of"):
        intent_weights("speed")


def test_bad_types_name_the_argument(tmp_path):
    """Regression: these once raised from deep inside pathlib, numpy or tuple unpacking."""
    src = tmp_path / "k.c"
    src.write_text("int main(void){return 0;}\n")
    prog = Program(sources=(), driver=str(src))
    with pytest.raises(TypeError, match="driver must be a path"):
        Program(sources=(), driver=123)
    with pytest.raises(TypeError, match="sources must be a tuple"):
        Program(sources=None, driver=str(src))
    with pytest.raises(TypeError, match="passes must be a sequence"):
        validate_passes(None)
    with pytest.raises(ValueError, match="timeout must be"):
        Evaluator(timeout=-1)
    with pytest.raises(TypeError, match="toolchain must be"):
        Evaluator("clang")
    with pytest.raises(TypeError, match="lengths must be a pair"):
        RandomSearch(lengths=5)
    with pytest.raises(TypeError, match="evaluator must be"):
        GeneticTuner(population=3).tune(prog, 3, evaluator="x")
    with pytest.raises(TypeError, match="examples must be a sequence of CoTRecord"):
        Strategist(None, None, "abc")
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=f"weights must be {len(PASSES)}"):
        mutate(("sroa", "gvn"), rng, [1.0, 2.0])
