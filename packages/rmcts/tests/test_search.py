import numpy as np
import pytest
from rmcts import (
    MCTS,
    RMCTS,
    ExactEvaluator,
    MinimaxSolver,
    Node,
    RolloutEvaluator,
    backup,
    load_game,
)
from scipy.optimize import brentq


@pytest.fixture(scope="module")
def ttt():
    return load_game("tic_tac_toe")


@pytest.fixture(scope="module")
def solver(ttt):
    return MinimaxSolver(ttt)


def _state(game, moves):
    s = game.new_initial_state()
    for a in moves:
        s.apply_action(a)
    return s


# (moves, optimal actions): X wins at once; O must block; O must answer with an edge
KNOWN = [([0, 3, 1, 4], {2}), ([0, 4, 1], {2}), ([0, 4, 8], {1, 3, 5, 7})]


@pytest.mark.parametrize(("moves", "optimal"), KNOWN)
@pytest.mark.parametrize("kind", ["rmcts", "mcts"])
def test_finds_optimal_move_with_exact_values(ttt, solver, moves, optimal, kind):
    state = _state(ttt, moves)
    q = solver.action_values(state)
    assert {int(a) for a in np.flatnonzero(q == np.nanmax(q))} == optimal
    ev = ExactEvaluator(solver)
    search = (
        RMCTS(ev, simulations=64, batch_size=8)
        if kind == "rmcts"
        else MCTS(ev, simulations=64, batch_size=1)
    )
    res = search.search(state)
    assert res.action in optimal
    assert res.policy[sorted(optimal)].sum() > 0.5


def _hand_pi_bar(prior, q, n, c):
    lam = c * np.sqrt(n) / (len(prior) + n)
    alpha = brentq(
        lambda a: np.sum(lam * prior / (a - q)) - 1.0,
        np.max(q + lam * prior),
        np.max(q) + lam,
        xtol=1e-15,
    )
    return lam * prior / (alpha - q)


def test_recursion_on_hand_built_tree(ttt):
    # X to move with three empty squares (6, 7, 8); a two-level tree:
    #   root -- 6 -> T (terminal: X wins)
    #        -- 7 -> A (O to move; children A0 = play 6, A1 = play 8, both leaves)
    #        -- 8 -> not in the tree
    root = Node(_state(ttt, [0, 1, 2, 4, 3, 5]))
    assert list(root.actions) == [6, 7, 8] and root.player == 0
    c = 1.7
    root.set_evaluation(np.log([1e-4, 1, 1, 1, 1, 1, 0.5, 0.3, 0.2]), 0.1)
    t = root.child(0)
    assert t.terminal and t.value0 == 1.0  # exact: a terminal win is the returns value 1
    a = root.child(1)
    a.set_evaluation(np.log(np.full(9, 0.5)), -0.4)  # O's own value
    a0 = a.child(0)
    a0.set_evaluation(np.zeros(9), 0.8)  # X to move: X's value +0.8
    a1 = a.child(1)
    a1.set_evaluation(np.zeros(9), -0.5)  # X to move: X's value -0.5
    policy = backup([root, t, a, a0, a1], c)

    # by hand, from the bottom: A is O's node, q in O's view, n = (1, 1)
    q_a = np.array([-0.8, 0.5])
    pi_a = _hand_pi_bar(np.array([0.5, 0.5]), q_a, 2.0, c)
    v_a = (-0.4 + 2 * pi_a @ q_a) / 3
    assert a.value0 == pytest.approx(-v_a, abs=1e-9)
    np.testing.assert_array_equal(a.visits, [1.0, 1.0])
    # root: X's view; the action not in the tree gets the root's own value 0.1; n = (1, 3, 0)
    q_r = np.array([1.0, -v_a, 0.1])
    pi_r = _hand_pi_bar(np.array([0.5, 0.3, 0.2]), q_r, 4.0, c)
    np.testing.assert_allclose(policy, pi_r, atol=1e-9)
    assert root.value0 == pytest.approx((0.1 + 4 * pi_r @ q_r) / 5, abs=1e-9)
    np.testing.assert_array_equal(root.visits, [1.0, 3.0, 0.0])


@pytest.mark.parametrize("kind", ["rmcts", "mcts"])
@pytest.mark.parametrize("batch", [1, 5])
def test_budget_batches_and_illegal_actions(kind, batch, ttt, rng):
    cls = RMCTS if kind == "rmcts" else MCTS
    search = cls(RolloutEvaluator(seed=1), simulations=23, batch_size=batch)
    for _ in range(5):
        s = ttt.new_initial_state()
        for _ in range(int(rng.integers(0, 5))):
            s.apply_action(int(rng.choice(s.legal_actions())))
        history = s.history()
        res = search.search(s)
        assert s.history() == history  # the caller's state is not mutated
        illegal = np.setdiff1d(np.arange(9), s.legal_actions())
        assert np.all(res.policy[illegal] == 0)
        assert res.policy.sum() == pytest.approx(1.0)
        assert res.action in s.legal_actions()
        assert res.simulations <= 23 and res.evaluations <= res.simulations
        assert max(res.batch_sizes[1:], default=1) <= batch
        assert -1.0 <= res.value <= 1.0


def test_rmcts_batches_fill_budget(ttt):
    res = RMCTS(RolloutEvaluator(seed=0), simulations=65, batch_size=16).search(
        ttt.new_initial_state()
    )
    assert res.simulations == 65
    assert res.batch_sizes == [1, 8, 16, 16, 16, 8] or max(res.batch_sizes) == 16


def test_mcts_visits_follow_values(ttt, solver):
    # With exact values and many simulations MCTS-UCB puts most visits on the winning move.
    res = MCTS(ExactEvaluator(solver), simulations=200).search(_state(ttt, [0, 3, 1, 4]))
    assert res.policy[2] > 0.8
    assert res.value == pytest.approx(1.0, abs=0.1)


def test_bad_input(ttt):
    ev = RolloutEvaluator()
    with pytest.raises(ValueError, match="simulations"):
        RMCTS(ev, simulations=-1)
    with pytest.raises(ValueError, match="batch_size"):
        MCTS(ev, batch_size=0)
    with pytest.raises(TypeError, match="simulations"):
        MCTS(ev, simulations=3.5)
    with pytest.raises(ValueError, match="c must"):
        RMCTS(ev, c=float("nan"))
    with pytest.raises(TypeError, match="evaluator"):
        RMCTS(object())
    terminal = _state(ttt, [0, 3, 1, 4, 2])
    with pytest.raises(ValueError, match="terminal"):
        RMCTS(ev).search(terminal)

    class NaNEvaluator:
        def evaluate(self, states):
            return np.zeros((len(states), 9)), np.full(len(states), np.nan)

    with pytest.raises(ValueError, match="value nan"):
        MCTS(NaNEvaluator()).search(ttt.new_initial_state())

    class NarrowEvaluator:
        def evaluate(self, states):
            return np.zeros((len(states), 4)), np.zeros(len(states))

    with pytest.raises(ValueError, match="num_distinct_actions"):
        RMCTS(NarrowEvaluator()).search(ttt.new_initial_state())


def _walk(node):
    yield node
    for ch in node.children:
        if ch is not None:
            yield from _walk(ch)


@pytest.mark.parametrize("batch", [1, 8])
def test_mcts_tree_bookkeeping_and_virtual_loss_removed(ttt, batch):
    res = MCTS(RolloutEvaluator(seed=3), simulations=150, batch_size=batch).search(
        ttt.new_initial_state()
    )
    root = res.root
    assert root.visits.sum() == res.simulations - 1
    for node in _walk(root):
        for i, ch in enumerate(node.children):
            if ch is None:
                assert node.visits[i] == 0
            elif ch.terminal:
                assert node.value_sum0[i] == pytest.approx(node.visits[i] * ch.value0_net)
            else:
                # every visit through a child ended in its subtree: its own evaluation plus
                # its children's; no virtual loss is left behind
                assert node.visits[i] == 1 + ch.visits.sum()
                assert node.value_sum0[i] == pytest.approx(ch.value0_net + ch.value_sum0.sum())


def test_rmcts_subtree_sizes(ttt):
    res = RMCTS(RolloutEvaluator(seed=3), simulations=150, batch_size=8).search(
        ttt.new_initial_state()
    )
    assert res.root.visits.sum() + 1 == res.simulations
    for node in _walk(res.root):
        for i, ch in enumerate(node.children):
            if ch is not None and not ch.terminal:
                assert node.visits[i] == 1 + ch.visits.sum()
            assert -1.0 <= node.value0 <= 1.0


class _PeakedEvaluator:
    """Prior almost all on action 0, values 0."""

    def evaluate(self, states):
        logits = np.full((len(states), 9), -8.0)
        logits[:, 0] = 0.0
        return logits, np.zeros(len(states))


def test_growth_follows_prior_reach(ttt):
    state = _state(ttt, [4])  # O to move, action 0 legal
    peaked = RMCTS(_PeakedEvaluator(), simulations=41, batch_size=4).search(state)
    sizes = peaked.root.visits
    # almost all nodes under the high-prior action
    assert sizes[0] >= 0.6 * sizes.sum()
    # uniform growth is breadth-first: every child before any grandchild's child
    uniform = RMCTS(_PeakedEvaluator(), simulations=41, batch_size=4, growth_uniform=1.0)
    root_u = uniform.search(state).root
    assert all(ch is not None for ch in root_u.children)
    assert max(n.depth for n in _walk(root_u)) == 2
