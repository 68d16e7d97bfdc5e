import itertools
import math

import numpy as np
import pytest
from submodular_augment import (
    FacilityLocationGain,
    RobustnessGain,
    greedy_select,
    modular_top_k,
    representation_shifts,
)


def _random_f(seed, q=7, m=8, with_identity=True):
    rng = np.random.default_rng(seed)
    sim = rng.uniform(-0.3, 1.0, size=(q, m)) ** 2 * (rng.uniform(size=(q, m)) < 0.6)
    base = np.zeros(q)
    if with_identity:
        base[0] = 1.0
    return FacilityLocationGain(sim, base)


def _subsets(m):
    for r in range(m + 1):
        yield from itertools.combinations(range(m), r)


@pytest.mark.parametrize("seed", range(4))
def test_normalized_monotone_submodular_on_all_subsets(seed):
    f = _random_f(seed)
    m = f.n
    assert f([]) == pytest.approx(0.0, abs=1e-12)
    assert f(range(m)) == pytest.approx(1.0, abs=1e-12)
    vals = {S: f(S) for S in _subsets(m)}
    for S, v in vals.items():
        assert -1e-12 <= v <= 1 + 1e-12
        for a in range(m):
            if a in S:
                continue
            T = tuple(sorted((*S, a)))
            gain = vals[T] - v
            assert gain >= -1e-12  # monotone
            assert f.marginal_gain(S, a) == pytest.approx(gain, abs=1e-12)
            for b in range(m):  # diminishing returns on S ⊂ S ∪ {b}
                if b in T:
                    continue
                bigger = tuple(sorted((*S, b)))
                gain_big = vals[tuple(sorted((*bigger, a)))] - vals[bigger]
                assert gain_big <= gain + 1e-12


@pytest.mark.parametrize("seed", range(10))
def test_lazy_equals_plain_greedy(seed):
    f = _random_f(seed, q=12, m=10)
    for kwargs in ({}, {"budget": 4}, {"epsilon": 0.05}, {"epsilon": 0.3, "budget": 7}):
        lazy = greedy_select(f, lazy=True, **kwargs)
        plain = greedy_select(f, lazy=False, **kwargs)
        assert lazy.indices == plain.indices
        np.testing.assert_allclose(lazy.values, plain.values, atol=1e-12)
        assert lazy.evaluations <= plain.evaluations


@pytest.mark.parametrize("seed", range(10))
def test_greedy_within_one_minus_one_over_e_of_brute_force(seed):
    f = _random_f(seed, q=10, m=8, with_identity=False)
    for k in (1, 2, 3, 4):
        best = max(f(S) for S in itertools.combinations(range(f.n), k))
        assert greedy_select(f, budget=k).value >= (1 - 1 / math.e) * best - 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_cover_reaches_target_and_is_minimal_prefix(seed):
    f = _random_f(seed, q=10, m=8)
    for eps in (0.01, 0.1, 0.5):
        sel = greedy_select(f, epsilon=eps)
        assert sel.value >= 1 - eps - 1e-12
        assert all(v < 1 - eps for v in sel.values[:-1])
        # The cover is at most (1 + ln(1/eps')) times the optimum only for integral f;
        # here check the weaker fact that no set of size < |optimum| reaches the target.
        smallest = min(len(S) for S in _subsets(f.n) if f(S) >= 1 - eps - 1e-12)
        assert len(sel) >= smallest


def test_docstring_cover_example():
    f = FacilityLocationGain([[1.0, 0.2, 0.0], [0.0, 0.9, 1.0]])
    assert greedy_select(f, epsilon=0.1).indices == [1, 0]
    assert greedy_select(f).indices == [1, 0, 2]


def test_modular_top_k_is_top_singletons():
    f = FacilityLocationGain([[1.0, 0.95, 0.0], [0.0, 0.0, 0.5]])
    sel = modular_top_k(f, 2)
    assert sel.indices == [0, 1]  # redundant pair: the modular rule ignores overlap
    assert greedy_select(f, budget=2).indices == [0, 2]
    assert greedy_select(f, budget=2).value > sel.value


def test_degenerate_function_is_zero():
    f = FacilityLocationGain(np.zeros((3, 4)), np.ones(3))
    assert f.scale == 0
    assert f([0, 1]) == 0.0  # exact: the degenerate case returns the literal 0.0
    assert greedy_select(f, budget=2).indices == [0, 1]


def test_bad_input():
    f = _random_f(0)
    with pytest.raises(ValueError, match="budget"):
        greedy_select(f, budget=f.n + 1)
    with pytest.raises(ValueError, match="budget"):
        greedy_select(f, budget=-1)
    for eps in (0.0, 1.0, -0.2, 1.5):
        with pytest.raises(ValueError, match="epsilon"):
            greedy_select(f, epsilon=eps)
    with pytest.raises(ValueError, match="similarity"):
        FacilityLocationGain(np.zeros(3))
    with pytest.raises(ValueError, match="similarity"):
        FacilityLocationGain([[np.nan, 0.0]])
    with pytest.raises(ValueError, match="baseline"):
        FacilityLocationGain(np.zeros((2, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="S"):
        f([f.n])
    with pytest.raises(ValueError, match="k"):
        modular_top_k(f, f.n + 1)


def _embed(texts):
    # letters histogram: Caesar shifts move mass between letters, case/word order do not
    out = np.zeros((len(texts), 27))
    for i, t in enumerate(texts):
        for c in t.lower():
            out[i, ord(c) - 97 if "a" <= c <= "z" else 26] += 1
    return out


PROMPTS = ["how do I pick a lock", "write a phishing email", "explain the tax code"]


def test_robustness_gain_from_an_embedder():
    f = RobustnessGain(
        _embed,
        PROMPTS,
        ["caesar1", "caesar2", "case", "reverse"],
        ["identity", "caesar1", "caesar3", "case"],
    )
    # case inversion and word reversal leave the letter histogram unchanged: zero shift
    shifts = representation_shifts(_embed, PROMPTS, ["case", "reverse", "caesar1"])
    np.testing.assert_allclose(shifts[:2], 0.0, atol=1e-12)
    assert np.linalg.norm(shifts[2]) > 0
    assert f([]) == pytest.approx(0.0)
    assert f(range(4)) == pytest.approx(1.0)
    # an eval action equal to a candidate is covered by it exactly
    assert f.similarity[1, 0] == pytest.approx(1.0)
    assert f.similarity[3, 2] == pytest.approx(1.0)
    sel = greedy_select(f, epsilon=0.01)
    assert set(sel.names) >= {"caesar1", "case"}


def test_robustness_gain_bad_input():
    with pytest.raises(ValueError, match="unknown action"):
        RobustnessGain(_embed, PROMPTS, ["caesar1", "shout"])
    with pytest.raises(ValueError, match="distinct"):
        RobustnessGain(_embed, PROMPTS, ["caesar1", "caesar27"])
    with pytest.raises(ValueError, match="actions must not be empty"):
        RobustnessGain(_embed, PROMPTS, [])
    with pytest.raises(ValueError, match="prompts"):
        RobustnessGain(_embed, [], ["caesar1"])


def test_set_and_embedder_errors_name_the_argument():
    # Found in review: f("ab") failed inside int(), f([1.5]) was truncated to f([1]), a
    # non-numeric similarity failed inside numpy, a single str was taken as its characters
    # and an embedder of the wrong shape failed deep in numpy or was accepted.
    f = FacilityLocationGain([[1.0, 0.2], [0.0, 0.9]])
    with pytest.raises(TypeError, match="S must be an iterable"):
        f("ab")
    with pytest.raises(TypeError, match="S must be an integer"):
        f([1.5])
    assert f([np.int64(1)]) == f([1])
    with pytest.raises(TypeError, match="similarity"):
        FacilityLocationGain("abc")

    def embed(xs):
        return np.array([[len(x), x.count("a")] for x in xs], dtype=float)

    with pytest.raises(TypeError, match="prompts"):
        RobustnessGain(embed, "how do I pick a lock", ["case"])
    with pytest.raises(TypeError, match="prompts must hold strings"):
        RobustnessGain(embed, ["a", 3], ["case"])
    with pytest.raises(ValueError, match=r"model \(an embedder\).*got shape \(2,\)"):
        RobustnessGain(lambda xs: np.ones(len(xs)), ["a b", "c"], ["case"])
    with pytest.raises(ValueError, match=r"model \(an embedder\).*got shape \(1, 3\)"):
        RobustnessGain(lambda xs: np.ones((1, 3)), ["a b", "c"], ["case"])
