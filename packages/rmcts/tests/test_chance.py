"""Chance nodes: the expectation in RMCTS's backup, sampling in MCTS-UCB, on pig and two dice."""

import numpy as np
import pyspiel
import pytest
from rmcts import MCTS, RMCTS, RolloutEvaluator, backup
from scipy.optimize import brentq

P = np.array([0.5, 0.3, 0.2])  # the two-dice game's die (conftest.py)


def _hand_pi_bar(prior, q, n, c):
    lam = c * np.sqrt(n) / (len(prior) + n)
    alpha = brentq(
        lambda a: np.sum(lam * prior / (a - q)) - 1.0,
        np.max(q + lam * prior),
        np.max(q) + lam,
        xtol=1e-15,
    )
    return lam * prior / (alpha - q)


def _walk(node):
    yield node
    for ch in node.children:
        if ch is not None:
            yield from _walk(ch)


def test_two_dice_full_tree_is_the_exact_expectation(two_dice, fixed):
    c, v_root = 1.25, 0.3
    ev = fixed(2, value=v_root, logits=np.log([0.3, 0.7]))
    # root + stop + 9 terminal dice pairs = 11 counted nodes; the 4 chance nodes are free
    res = RMCTS(ev, simulations=11, batch_size=4, c=c).search(two_dice.new_initial_state())
    assert res.simulations == 11 and res.evaluations == 1
    np.testing.assert_allclose(res.q, [0.0, -0.1], atol=1e-12)  # rolling: 0.45 - 0.55
    np.testing.assert_array_equal(res.visits, [1.0, 9.0])
    pi = _hand_pi_bar(np.array([0.3, 0.7]), np.array([0.0, -0.1]), 10.0, c)
    np.testing.assert_allclose(res.policy, pi, atol=1e-9)
    assert res.value == pytest.approx((v_root + 10 * pi @ [0.0, -0.1]) / 11, abs=1e-9)
    assert res.action == int(np.argmax(pi))  # the regularization still favours the prior here
    roll = res.root.children[1]
    assert roll.chance and roll.player == -1
    assert roll.sign == 0.0  # exact: chance nodes have sign 0 by definition
    np.testing.assert_allclose(roll.prior, P)


def test_two_dice_partial_tree_by_hand(two_dice, fixed):
    # 4 counted nodes. Growth by reach: roll (0.7, chance) -> die 0 (0.35, chance) ->
    # die 1 (0.21, chance) -> stop (0.3, counted) -> (0, 0) (0.175, terminal) -> die 2
    # (0.14, chance) -> (0, 1) (0.105, terminal). Outcomes not in the tree take the root's
    # network value (0.3 for player 0).
    c, v_root = 1.25, 0.3
    ev = fixed(2, value=v_root, logits=np.log([0.3, 0.7]))
    res = RMCTS(ev, simulations=4, batch_size=4, c=c).search(two_dice.new_initial_state())
    roll = res.root.children[1]
    die0, die1, die2 = roll.children
    assert die0 is not None and die1 is not None and die2 is not None
    assert [ch is not None for ch in die0.children] == [True, True, False]
    assert all(ch is None for ch in die1.children + die2.children)
    v_die0 = 0.5 * -1.0 + 0.3 * -1.0 + 0.2 * v_root
    assert die0.value0 == pytest.approx(v_die0, abs=1e-12)
    assert die1.value0 == pytest.approx(v_root) and die2.value0 == pytest.approx(v_root)
    v_roll = 0.5 * v_die0 + 0.3 * v_root + 0.2 * v_root
    assert roll.value0 == pytest.approx(v_roll, abs=1e-12)
    np.testing.assert_array_equal(roll.visits, [2.0, 0.0, 0.0])
    np.testing.assert_array_equal(res.visits, [1.0, 2.0])
    q = np.array([0.0, v_roll])
    np.testing.assert_allclose(res.q, q, atol=1e-12)
    np.testing.assert_allclose(res.policy, _hand_pi_bar(np.array([0.3, 0.7]), q, 3.0, c), atol=1e-9)
    # the public backup gives the same root posterior on the same nodes
    nodes = list(_walk(res.root))
    np.testing.assert_allclose(backup(nodes, c), res.policy[[0, 1]], atol=1e-12)


def test_mcts_samples_chance_outcomes(two_dice, fixed):
    res = MCTS(fixed(2), simulations=600, seed=0).search(two_dice.new_initial_state())
    roll = res.root.children[1]
    assert res.visits[1] > 50
    assert res.q[1] == pytest.approx(-0.1, abs=0.25)
    # every visit through the chance node went to one of its outcomes
    assert roll.visits.sum() == res.visits[1]
    shares = roll.visits / roll.visits.sum()
    np.testing.assert_allclose(shares, P, atol=0.15)
    for node in _walk(res.root):
        if node.chance:
            for i, ch in enumerate(node.children):
                if ch is not None and ch.chance:
                    assert node.visits[i] == ch.visits.sum()


def _pig_state(moves):
    game = pyspiel.load_game("pig(winscore=10)")
    s = game.new_initial_state()
    for a in moves:
        s.apply_action(a)
    return s


# Player 0 rolls (action 0) a 6 and a 3 (outcomes 5, 2) and stops (1); player 1 rolls a 1
# (outcome 0: turn lost). Player 0, at 9 of 10, wins by rolling anything but a 1.
NEAR_WIN = [0, 5, 0, 2, 1, 0, 0]


@pytest.mark.parametrize("cls", [RMCTS, MCTS])
def test_pig_values_through_chance_nodes(cls):
    state = _pig_state(NEAR_WIN)
    assert state.current_player() == 0 and state.legal_actions() == [0, 1]
    res = cls(RolloutEvaluator(seed=0), simulations=96, batch_size=8, seed=0).search(state)
    # rolling is worth at least 5/6 - 1/6; a chance node treated as a decision node gave 0.0
    assert res.q[0] > 0.6 and res.value > 0.6
    assert res.root.children[0].chance


def test_pig_rmcts_chance_values_are_expectations():
    state = _pig_state([0, 2])
    res = RMCTS(RolloutEvaluator(seed=1), simulations=80, batch_size=8).search(state)
    chance_nodes = [n for n in _walk(res.root) if n.chance]
    assert chance_nodes
    for n in chance_nodes:
        vals = np.array([n.value0_net if ch is None else ch.value0 for ch in n.children])
        assert n.value0 == pytest.approx(float(P_pig() @ vals), abs=1e-12)
        assert -1.0 <= n.value0 <= 1.0


def P_pig():
    return np.full(6, 1 / 6)


def test_chance_root_is_refused(two_dice, fixed):
    s = two_dice.new_initial_state()
    s.apply_action(1)
    with pytest.raises(ValueError, match="chance node"):
        RMCTS(fixed(2)).search(s)
