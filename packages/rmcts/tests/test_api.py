"""The user-facing edges: pyspiel.Bot, batched roots, result fields, bad input, matches."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import mcts as os_mcts
from open_spiel.python.algorithms.evaluate_bots import evaluate_bots
from rmcts import (
    MCTS,
    RMCTS,
    ExactEvaluator,
    MinimaxSolver,
    RandomPlayer,
    RolloutEvaluator,
    SearchBot,
    load_game,
    play_match,
    random_openings,
)


@pytest.fixture(scope="module")
def ttt():
    return load_game("tic_tac_toe")


@pytest.fixture(scope="module")
def exact(ttt):
    return ExactEvaluator(MinimaxSolver(ttt))


def _positions(game, count, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        s = game.new_initial_state()
        for _ in range(int(rng.integers(0, 5))):
            s.apply_action(int(rng.choice(s.legal_actions())))
        if not s.is_terminal():
            out.append(s)
    return out


@pytest.mark.parametrize("cls", [RMCTS, MCTS])
def test_search_bot_plays_open_spiel_mcts_bot(ttt, exact, cls):
    bot = SearchBot(cls(exact, simulations=48, batch_size=8))
    assert isinstance(bot, pyspiel.Bot) and bot.provides_policy()
    ref = os_mcts.MCTSBot(
        ttt,
        2.0,
        30,
        os_mcts.RandomRolloutEvaluator(1, np.random.RandomState(0)),
        random_state=np.random.RandomState(0),
    )
    rng = np.random.default_rng(0)
    for seats in ([bot, ref], [ref, bot]):
        returns = evaluate_bots(ttt.new_initial_state(), seats, rng)
        mine = returns[seats.index(bot)]
        assert mine >= 0.0  # exact values: never loses tic-tac-toe
    policy, action = bot.step_with_policy(ttt.new_initial_state())
    assert sorted(a for a, _ in policy) == list(range(9))
    assert sum(p for _, p in policy) == pytest.approx(1.0)
    assert action == bot.last_result.action
    bot.restart_at(ttt.new_initial_state())
    bot.inform_action(ttt.new_initial_state(), 0, 4)
    # pyspiel's own C++ match runner takes it too
    assert len(pyspiel.evaluate_bots(ttt.new_initial_state(), [bot, bot], 0)) == 2


def test_search_bot_at_chance_nodes_and_bad_search(two_dice, fixed):
    s = two_dice.new_initial_state()
    s.apply_action(1)
    bot = SearchBot(RMCTS(fixed(2)))
    assert bot.step_with_policy(s) == ([(pyspiel.INVALID_ACTION, 1.0)], pyspiel.INVALID_ACTION)
    with pytest.raises(TypeError, match="search"):
        SearchBot(object())


@pytest.mark.parametrize("cls", [RMCTS, MCTS])
def test_batched_roots_equal_single_searches(ttt, exact, cls):
    states = _positions(ttt, 6, seed=3)
    search = cls(exact, simulations=40, batch_size=4)
    batch = search.search_batch(states)
    for state, res in zip(states, batch, strict=True):
        alone = search.search(state)
        assert res.action == alone.action and res.simulations == alone.simulations
        # pi_bar's Newton iterations stop on the batch's worst row: agreement to 1e-8
        np.testing.assert_allclose(res.policy, alone.policy, atol=1e-8)
        np.testing.assert_allclose(res.visits, alone.visits)
        np.testing.assert_allclose(res.q, alone.q, atol=1e-8, equal_nan=True)
        assert res.value == pytest.approx(alone.value, abs=1e-8)
        assert res.evaluations == alone.evaluations
    # all roots share the evaluator calls: far fewer calls than searching one by one
    singles = sum(search.search(s).batches for s in states)
    assert batch[0].batches < singles / 2
    assert max(batch[0].batch_sizes) <= 4 * len(states)
    with pytest.raises(ValueError, match="nonempty"):
        search.search_batch([])


@pytest.mark.parametrize("cls", [RMCTS, MCTS])
def test_result_fields(ttt, exact, cls):
    s = ttt.new_initial_state()
    for a in (0, 3, 1, 4):
        s.apply_action(a)  # X wins at 2
    res = cls(exact, simulations=64, batch_size=8).search(s)
    legal = s.legal_actions()
    illegal = np.setdiff1d(np.arange(9), legal)
    assert np.isnan(res.q[illegal]).all() and np.all(res.visits[illegal] == 0)
    assert np.all(res.prior[illegal] == 0) and res.prior.sum() == pytest.approx(1.0)
    assert res.q[2] == pytest.approx(1.0)
    assert res.visits[legal].sum() == res.simulations - 1  # visits / subtree sizes
    assert res.action == 2
    assert res.root.state.history() == s.history()


class _Evaluator:
    def __init__(self, logits, value):
        self.logits, self.value = logits, value

    def evaluate(self, states):
        return np.tile(self.logits, (len(states), 1)), np.full(len(states), self.value)


def test_evaluator_output_checks(ttt):
    s = ttt.new_initial_state()
    s.apply_action(4)
    masked = np.zeros(9)
    masked[4] = -np.inf  # the usual masking of an illegal action
    res = RMCTS(_Evaluator(masked, 0.2), simulations=8).search(s)
    assert res.prior[4] == 0 and np.isfinite(res.policy).all()
    nan_legal = np.zeros(9)
    nan_legal[0] = np.nan
    with pytest.raises(ValueError, match=r"legal actions \[0\]"):
        RMCTS(_Evaluator(nan_legal, 0.0)).search(s)
    with pytest.raises(ValueError, match=r"value 5\.0"):
        MCTS(_Evaluator(np.zeros(9), 5.0)).search(s)
    with pytest.raises(ValueError, match="in \\[-1, 1\\]"):
        RMCTS(_Evaluator(np.zeros(9), -1.01)).search(s)
    res = MCTS(_Evaluator(np.zeros(9), 1.0 + 1e-9), simulations=4).search(s)  # rounding
    assert res.value <= 1.0


def test_unsupported_games_and_states(stuck, fixed):
    ev = fixed(9)
    with pytest.raises(ValueError, match="simultaneous"):
        RMCTS(ev).search(pyspiel.load_game("matrix_rps").new_initial_state())
    with pytest.raises(ValueError, match="perfect information"):
        load_game("kuhn_poker")
    with pytest.raises(ValueError, match=r"3 players \(need 2\)"):
        load_game("pig(players=3)")
    kuhn = pyspiel.load_game("kuhn_poker").new_initial_state()
    with pytest.raises(ValueError, match="perfect information"):
        MCTS(ev).search(kuhn)
    # a non-terminal state without legal actions, at the root and below it
    s = stuck.new_initial_state()
    s.apply_action(0)
    with pytest.raises(ValueError, match=r"no legal actions: game 'rmcts_stuck', history \[0\]"):
        RMCTS(fixed(1)).search(s)
    for cls in (RMCTS, MCTS):
        with pytest.raises(ValueError, match=r"no legal actions.*history \[0\]"):
            cls(fixed(1), simulations=4).search(stuck.new_initial_state())


def test_games_with_chance_load(two_dice):
    assert load_game("pig").get_type().short_name == "pig"
    with pytest.raises(ValueError, match="deterministic"):
        MinimaxSolver(two_dice)


def test_play_match_in_workers_equals_sequential(ttt, exact):
    a = RMCTS(exact, simulations=16, batch_size=4)
    b = MCTS(RolloutEvaluator(seed=0), simulations=1)  # the network-less floor: one evaluation
    openings = random_openings(ttt, 4, 2, np.random.default_rng(0))
    seq = play_match(ttt, a, b, openings)
    with ThreadPoolExecutor(2) as pool:
        par = play_match(ttt, a, b, openings, executor=pool, chunks=3)
    assert par.outcomes == seq.outcomes and par.games == 2 * len(openings)
    assert len(par.move_seconds[0]) == len(seq.move_seconds[0])
    assert par.losses == 0  # exact values never lose


def test_play_match_with_chance_and_random_floor(two_dice, fixed):
    m = play_match(two_dice, RMCTS(fixed(2), simulations=11), RandomPlayer(0), [[]], seed=1)
    assert m.games == 2 and m.wins + m.draws + m.losses == 2


@pytest.mark.slow
def test_mctx_gumbel_muzero_baseline(ttt, exact):
    from rmcts.mctx_baseline import MctxGumbelMuZero

    s = ttt.new_initial_state()
    for a in (0, 3, 1, 4):
        s.apply_action(a)  # X wins at 2
    search = MctxGumbelMuZero(exact, simulations=24)
    res = search.search(s)
    assert res.action == 2 and res.q[2] == pytest.approx(1.0)
    illegal = np.setdiff1d(np.arange(9), s.legal_actions())
    assert np.all(res.policy[illegal] == 0) and res.policy.sum() == pytest.approx(1.0)
    assert res.evaluations <= 25 and np.isnan(res.q[illegal]).all()
    o = ttt.new_initial_state()
    for a in (0, 4, 8):
        o.apply_action(a)  # O must take an edge
    assert search.search(o).action in (1, 3, 5, 7)
