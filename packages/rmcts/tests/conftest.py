"""Small Python open_spiel games for the tests: two dice (chance nodes) and a stuck state."""

import numpy as np
import pyspiel
import pytest
import torch


def _game_type(name, chance):
    mode = (
        pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
        if chance
        else pyspiel.GameType.ChanceMode.DETERMINISTIC
    )
    return pyspiel.GameType(
        short_name=name,
        long_name=name,
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=mode,
        information=pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=2,
        min_num_players=2,
        provides_information_state_string=False,
        provides_information_state_tensor=False,
        provides_observation_string=False,
        provides_observation_tensor=False,
        parameter_specification={},
    )


def _game_info(actions, outcomes):
    return pyspiel.GameInfo(
        num_distinct_actions=actions,
        max_chance_outcomes=outcomes,
        num_players=2,
        min_utility=-1.0,
        max_utility=1.0,
        utility_sum=0.0,
        max_game_length=4,
    )


DIE = [(0, 0.5), (1, 0.3), (2, 0.2)]
"""A three-sided die with faces 0, 1, 2."""


class TwoDiceGame(pyspiel.Game):
    """Player 0 stops (action 0, a draw) or rolls two dice (action 1): +1 if the sum >= 2.

    P(sum < 2) = 0.5^2 + 2 * 0.5 * 0.3 = 0.55, so rolling is worth 0.45 - 0.55 = -0.1.
    """

    def __init__(self, params=None):
        super().__init__(_game_type("rmcts_two_dice", True), _game_info(2, 3), params or {})

    def new_initial_state(self):
        return TwoDiceState(self)


class TwoDiceState(pyspiel.State):
    def __init__(self, game):
        super().__init__(game)
        self.dice, self.rolling, self.stopped = [], False, False

    def current_player(self):
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        return pyspiel.PlayerId.CHANCE if self.rolling else 0

    def _legal_actions(self, player):
        return [0, 1]

    def chance_outcomes(self):
        return list(DIE)

    def _apply_action(self, action):
        if self.rolling:
            self.dice.append(action)
        elif action == 0:
            self.stopped = True
        else:
            self.rolling = True

    def _action_to_string(self, player, action):
        return str(action)

    def is_terminal(self):
        return self.stopped or len(self.dice) == 2

    def returns(self):
        if self.stopped or not self.is_terminal():
            return [0.0, 0.0]
        r = 1.0 if sum(self.dice) >= 2 else -1.0
        return [r, -r]

    def __str__(self):
        return f"dice {self.dice}"


class StuckGame(pyspiel.Game):
    """Player 0 has one move; then player 1 is to move with no legal action (a broken game)."""

    def __init__(self, params=None):
        super().__init__(_game_type("rmcts_stuck", False), _game_info(1, 0), params or {})

    def new_initial_state(self):
        return StuckState(self)


class StuckState(pyspiel.State):
    def __init__(self, game):
        super().__init__(game)
        self.moved = False

    def current_player(self):
        return 1 if self.moved else 0

    def _legal_actions(self, player):
        return [] if self.moved else [0]

    def _apply_action(self, action):
        self.moved = True

    def _action_to_string(self, player, action):
        return str(action)

    def is_terminal(self):
        return False

    def returns(self):
        return [0.0, 0.0]

    def __str__(self):
        return "stuck" if self.moved else "start"


class FixedEvaluator:
    """Logits from a table by player (or uniform) and a constant value for the player to move."""

    def __init__(self, num_actions, value=0.0, logits=None):
        self.num_actions, self.value, self.logits = num_actions, value, logits

    def evaluate(self, states):
        logits = np.zeros((len(states), self.num_actions))
        if self.logits is not None:
            logits[:] = self.logits
        return logits, np.full(len(states), self.value)


@pytest.fixture
def two_dice():
    return TwoDiceGame()


@pytest.fixture
def stuck():
    return StuckGame()


@pytest.fixture(autouse=True)
def _one_torch_thread():
    # tiny networks on a busy CPU: one intra-op thread avoids OpenMP spin-waits
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def fixed():
    """The :class:`FixedEvaluator` class (test modules cannot import conftest)."""
    return FixedEvaluator
