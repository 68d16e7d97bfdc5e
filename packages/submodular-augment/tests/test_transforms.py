import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from submodular_augment import (
    Atbash,
    CaesarShift,
    CaseInversion,
    Composition,
    GroupAction,
    Identity,
    Leetspeak,
    WordReversal,
    WordRotation,
    parse_action,
)

ACTIONS = [
    Identity(),
    CaesarShift(1),
    CaesarShift(13),
    CaesarShift(-4),
    Atbash(),
    CaseInversion(),
    Leetspeak(),
    WordReversal(),
    WordRotation(1),
    WordRotation(-3),
    Composition([CaesarShift(3), CaseInversion()]),
    Composition([Leetspeak(), WordReversal(), Atbash()]),
]
NAMES = [a.name for a in ACTIONS]
text = st.text(alphabet=st.characters(codec="utf-8"), max_size=60) | st.text(
    alphabet="abcxyzAEIOST 0134579.,", max_size=60
)


@pytest.mark.parametrize("g", ACTIONS, ids=NAMES)
@given(x=text)
@settings(max_examples=15, deadline=None)
def test_identity_and_inverse(g, x):
    assert Identity().apply(x) == x
    assert g.inverse().apply(g.apply(x)) == x
    assert g.apply(g.inverse().apply(x)) == x
    assert g.compose(Identity()).apply(x) == g.apply(x) == Identity().compose(g).apply(x)


@pytest.mark.parametrize("g", ACTIONS, ids=NAMES)
@pytest.mark.parametrize("h", ACTIONS[1::4], ids=NAMES[1::4])
@given(x=text)
@settings(max_examples=8, deadline=None)
def test_compatibility(g, h, x):
    assert g.apply(h.apply(x)) == g.compose(h).apply(x)


@given(x=text, s=st.integers(-60, 60), t=st.integers(-60, 60))
@settings(max_examples=30, deadline=None)
def test_caesar_is_z26(x, s, t):
    assert CaesarShift(s).apply(CaesarShift(t).apply(x)) == CaesarShift(s + t).apply(x)
    assert CaesarShift(s + 26).apply(x) == CaesarShift(s).apply(x)


@pytest.mark.parametrize("g", [Atbash(), CaseInversion(), Leetspeak(), WordReversal()])
@given(x=text)
@settings(max_examples=20, deadline=None)
def test_involutions(g, x):
    assert g.apply(g.apply(x)) == x


def test_examples_and_orbits():
    assert CaesarShift(3).apply("Abc, xyz!") == "Def, abc!"
    assert Atbash().apply("abz") == "zya"
    assert Leetspeak().apply("test 4") == "7357 a"
    assert WordReversal().apply("a b c") == "c b a"
    assert WordRotation(1).apply("a b c") == "b c a"
    assert len(CaesarShift(1).orbit("a")) == 26
    assert len(CaesarShift(13).orbit("hello")) == 2
    assert WordRotation(1).orbit("a b c") == ("a b c", "b c a", "c a b")
    assert Identity().orbit("x") == ("x",)
    assert Composition([CaesarShift(3), CaseInversion()]).inverse().name == "case∘caesar23"


@pytest.mark.parametrize("g", ACTIONS, ids=NAMES)
def test_names_round_trip(g):
    h = parse_action(g.name)
    assert h == g
    sample = "Hello total world, 42 times"
    assert h.apply(sample) == g.apply(sample)


def test_parse_plus_and_objects():
    assert parse_action("leet+reverse") == parse_action("leet∘reverse")
    g = CaesarShift(2)
    assert parse_action(g) is g


@pytest.mark.parametrize("bad", ["caesar", "shout", "caesarX", "leet∘nope", ""])
def test_unknown_action_names_the_input(bad):
    with pytest.raises(ValueError, match="unknown action"):
        parse_action(bad)


def test_bad_types():
    with pytest.raises(TypeError, match="x must be a str"):
        CaesarShift(1).apply(b"abc")
    with pytest.raises(TypeError, match="action must be"):
        parse_action(3)
    with pytest.raises(TypeError, match="shift"):
        CaesarShift(1.5)
    with pytest.raises(ValueError, match="at least one"):
        Composition([])
    with pytest.raises(TypeError, match="GroupAction"):
        Composition(["caesar1"])
    with pytest.raises(TypeError, match="other"):
        Atbash().compose("case")
    assert isinstance(Composition([Identity()]).inverse(), GroupAction)
