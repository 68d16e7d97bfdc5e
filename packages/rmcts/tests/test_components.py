import numpy as np
import pytest
import torch
from icml26_core.testing import check_experiment
from rmcts import (
    RMCTS,
    MinimaxSolver,
    NetworkEvaluator,
    PolicyValueNet,
    RolloutEvaluator,
    SelfPlayConfig,
    encode_states,
    legal_mask,
    load_game,
    load_or_train,
    play_match,
    wilson_interval,
)
from rmcts.arena import random_openings


@pytest.fixture(scope="module")
def ttt():
    return load_game("tic_tac_toe")


def test_load_game_checks_what_searches_need():
    assert load_game("connect_four").num_distinct_actions() == 7
    with pytest.raises(ValueError, match="information IMPERFECT_INFORMATION"):
        load_game("kuhn_poker")
    with pytest.raises(ValueError, match="dynamics SIMULTANEOUS"):
        load_game("matrix_rps")
    with pytest.raises(ValueError, match=r"utilities in \[-2, 2\]"):
        load_game("kuhn_poker")
    with pytest.raises(TypeError, match="game"):
        load_game(42)
    with pytest.raises(ValueError, match="cannot load game 'no_such_game'"):
        load_game("no_such_game")
    assert load_game("hex(board_size=5)").num_distinct_actions() == 25  # not a core name


def test_encode_and_mask(ttt):
    s = ttt.new_initial_state()
    s.apply_action(4)
    x = encode_states([s, ttt.new_initial_state()])
    assert x.shape == (2, 27) and x.dtype == np.float32
    mask = legal_mask(s, 9)
    assert mask.sum() == 8 and not mask[4]
    with pytest.raises(ValueError, match="nonempty"):
        encode_states([])
    t = ttt.new_initial_state()
    for a in [0, 3, 1, 4, 2]:
        t.apply_action(a)
    with pytest.raises(ValueError, match="terminal"):
        encode_states([t])


def test_solver_values(ttt):
    solver = MinimaxSolver(ttt)
    assert solver.value(ttt.new_initial_state()) == 0.0  # exact: a draw is the value 0
    assert len(solver.all_states()) == 4520  # non-terminal tic-tac-toe positions
    s = ttt.new_initial_state()
    for a in [0, 4, 8]:  # O to move: corners lose, edges draw
        s.apply_action(a)
    q = solver.action_values(s)
    np.testing.assert_array_equal(q[[1, 3, 5, 7]], 0.0)
    np.testing.assert_array_equal(q[[2, 6]], -1.0)
    assert np.isnan(q[[0, 4, 8]]).all()


def test_network_evaluator(ttt, device):
    net = PolicyValueNet(27, 9, hidden=16, layers=1)
    ev = NetworkEvaluator(net, device)
    logits, values = ev.evaluate([ttt.new_initial_state()] * 3)
    assert logits.shape == (3, 9) and values.shape == (3,)
    assert np.all(np.abs(values) <= 1)
    with pytest.raises(ValueError, match="hidden"):
        PolicyValueNet(27, 9, hidden=0)
    with pytest.raises(TypeError, match="net"):
        NetworkEvaluator(object())


def test_rollout_evaluator_on_forced_endings(ttt):
    # positions with one legal move: the rollout value is the exact value
    solver = MinimaxSolver(ttt)
    last = [s for s in solver.all_states() if len(s.legal_actions()) == 1]
    wins = [s for s in last if solver.value(s) == 1.0][:3]
    draws = [s for s in last if solver.value(s) == 0.0][:3]
    assert wins and draws
    logits, v = RolloutEvaluator(num_rollouts=2, seed=0).evaluate(wins + draws)
    np.testing.assert_array_equal(v, [1.0] * len(wins) + [0.0] * len(draws))
    assert np.all(logits == 0)
    with pytest.raises(ValueError, match="num_rollouts"):
        RolloutEvaluator(num_rollouts=0)


def test_selfplay_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    cfg = SelfPlayConfig(
        iterations=2,
        games_per_iteration=2,
        simulations=4,
        batch_size=2,
        epochs=1,
        hidden=16,
        layers=1,
    )
    net, log = load_or_train("tic_tac_toe", cfg)
    assert np.all(np.isfinite(log["policy_loss"])) and log["policy_loss"].shape == (2,)
    assert list(tmp_path.rglob("*.npz"))
    again, log2 = load_or_train("tic_tac_toe", cfg)
    for (k, v), (k2, v2) in zip(net.state_dict().items(), again.state_dict().items(), strict=True):
        assert k == k2 and torch.equal(v, v2)
    np.testing.assert_array_equal(log["value_loss"], log2["value_loss"])
    with pytest.raises(ValueError, match="search"):
        SelfPlayConfig(search="alphabeta")


def test_wilson_interval():
    low, high = wilson_interval(0.5, 100)
    assert low == pytest.approx(0.4038, abs=1e-3) and high == pytest.approx(0.5962, abs=1e-3)
    assert wilson_interval(1.0, 10)[1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="n must"):
        wilson_interval(0.5, 0)


class _RandomPlayer:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def step(self, state):
        return int(self.rng.choice(state.legal_actions()))


def test_match_both_colours_and_strength(ttt):
    solver = MinimaxSolver(ttt)
    from rmcts import ExactEvaluator

    strong = RMCTS(ExactEvaluator(solver), simulations=64, batch_size=8)
    openings = random_openings(ttt, 3, 1, np.random.default_rng(0))
    m = play_match(ttt, strong, _RandomPlayer(0), openings)
    assert m.games == 2 * len(openings)
    assert m.losses == 0 and m.wins >= 1  # a search with exact values never loses
    assert m.wins + m.draws + m.losses == m.games
    assert m.ci_low <= m.score <= m.ci_high
    with pytest.raises(ValueError, match="openings"):
        play_match(ttt, strong, strong, [])


def test_experiment_smoke(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "cache"))
    result = check_experiment("rmcts", tmp_path / "out")
    assert {t.title.split(",")[0] for t in result.tables} == {"Tic-tac-toe", "Connect four"}
    assert result.figures == ["rmcts.png"]


@pytest.mark.slow
def test_trainer_adam_matches_torch_adam():
    from rmcts.selfplay import _Adam

    torch.manual_seed(0)
    a, b = PolicyValueNet(27, 9, hidden=16, layers=1), PolicyValueNet(27, 9, hidden=16, layers=1)
    b.load_state_dict(a.state_dict())
    ours = _Adam(list(a.parameters()), lr=2e-3, weight_decay=1e-4)
    ref = torch.optim.Adam(b.parameters(), lr=2e-3, weight_decay=1e-4)
    x = torch.randn(32, 27)
    for _ in range(20):
        for net, opt in ((a, ours), (b, ref)):
            logits, values = net(x)
            loss = logits.square().mean() + values.square().mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=1e-5, atol=1e-6)
