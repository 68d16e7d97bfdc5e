"""Policy-value evaluators: ``evaluate(states) -> (logits, values)``.

An evaluator maps a batch of non-terminal game states to prior logits over the game's
``num_distinct_actions`` (illegal entries are ignored by the searches) and a value in
``[-1, 1]`` for the player to move. Both searches call it on whole batches, so a network
evaluates many leaves in one forward pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from icml26_core.validation import check_int

from rmcts.games import encode_states

__all__ = ["Evaluator", "NetworkEvaluator", "PolicyValueNet", "RolloutEvaluator"]


@runtime_checkable
class Evaluator(Protocol):
    """What a search needs from a network: priors and values of a batch of states."""

    def evaluate(self, states: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(logits (B, num_actions) float, values (B,) float in [-1, 1])``.

        Values are from the point of view of each state's player to move.
        """
        ...


class PolicyValueNet(torch.nn.Module):
    """Small AlphaZero-style policy-value network (residual MLP, tanh value head).

    Maps observations ``(B, obs_size)`` float32 to ``(logits (B, num_actions), values (B,))``.
    An MLP rather than a ConvNet: the games here are small and the network must run fast
    on two CPU cores.

    Args:
        obs_size: Length of the game's flattened observation tensor.
        num_actions: The game's ``num_distinct_actions``.
        hidden: Width of the hidden layers.
        layers: Number of residual blocks.

    Raises:
        TypeError: If a size is not an integer.
        ValueError: If a size is not positive.

    Example:
        >>> net = PolicyValueNet(27, 9)
        >>> logits, values = net(torch.zeros(4, 27))
        >>> tuple(logits.shape), tuple(values.shape)
        ((4, 9), (4,))
    """

    def __init__(self, obs_size: int, num_actions: int, hidden: int = 128, layers: int = 2) -> None:
        super().__init__()
        for name, val in (
            ("obs_size", obs_size),
            ("num_actions", num_actions),
            ("hidden", hidden),
            ("layers", layers),
        ):
            check_int(name, val, low=1)
        self.config = {
            "obs_size": int(obs_size),
            "num_actions": int(num_actions),
            "hidden": int(hidden),
            "layers": int(layers),
        }
        nn = torch.nn
        self.stem = nn.Linear(obs_size, hidden)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.ReLU(), nn.Linear(hidden, hidden)) for _ in range(layers)
        )
        self.policy = nn.Sequential(nn.ReLU(), nn.Linear(hidden, num_actions))
        self.value = nn.Sequential(
            nn.ReLU(),
            nn.Linear(hidden, hidden // 2 or 1),
            nn.ReLU(),
            nn.Linear(hidden // 2 or 1, 1),
            nn.Tanh(),
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(logits (B, num_actions), values (B,))`` for observations ``(B, obs_size)``."""
        h = self.stem(x)
        for block in self.blocks:
            h = h + block(h)
        return self.policy(h), self.value(h).squeeze(-1)


class NetworkEvaluator:
    """Evaluate states with a torch policy-value network on ``device``.

    Args:
        net: ``nn.Module`` mapping ``(B, obs_size)`` float32 to ``(logits, values)``.
        device: Where the network runs (``"cpu"``, ``"cuda"``, ...); the module is moved there.

    Example:
        >>> from rmcts import load_game
        >>> game = load_game("tic_tac_toe")
        >>> ev = NetworkEvaluator(PolicyValueNet(27, 9), "cpu")
        >>> logits, values = ev.evaluate([game.new_initial_state()])
        >>> logits.shape, values.shape
        ((1, 9), (1,))
    """

    def __init__(self, net: Any, device: str = "cpu") -> None:
        if not isinstance(net, torch.nn.Module):
            raise TypeError(f"net must be a torch.nn.Module, got {type(net).__name__}")
        self.device = torch.device(device)
        self.net = net.to(self.device).eval()

    def evaluate(self, states: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(logits (B, A) float32, values (B,) float32)`` for the player to move."""
        x = torch.from_numpy(encode_states(states)).to(self.device)
        with torch.inference_mode():
            logits, values = self.net(x)
        return logits.float().cpu().numpy(), values.float().cpu().numpy()


class RolloutEvaluator:
    """Uniform prior and the mean return of uniformly random playouts (no network).

    Players move uniformly at random; chance nodes draw their outcomes with the game's
    probabilities.

    Args:
        num_rollouts: Random playouts per state (>= 1).
        seed: Seed of the playouts' random generator.

    Raises:
        TypeError: If ``num_rollouts`` is not an integer.
        ValueError: If it is < 1.
    """

    def __init__(self, num_rollouts: int = 1, seed: int = 0) -> None:
        self.num_rollouts = check_int("num_rollouts", num_rollouts, low=1)
        self.rng = np.random.default_rng(seed)

    def evaluate(self, states: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Return zero logits (uniform prior) and mean playout returns for the player to move."""
        if len(states) == 0:
            raise ValueError("states must be a nonempty sequence of non-terminal states")
        num_actions = states[0].get_game().num_distinct_actions()
        values = np.empty(len(states), dtype=np.float32)
        for i, state in enumerate(states):
            player = state.current_player()
            total = 0.0
            for _ in range(self.num_rollouts):
                s = state.clone()
                while not s.is_terminal():
                    if s.is_chance_node():
                        outcomes, probs = zip(*s.chance_outcomes(), strict=True)
                        s.apply_action(int(outcomes[self.rng.choice(len(probs), p=probs)]))
                        continue
                    legal = s.legal_actions()
                    s.apply_action(legal[self.rng.integers(len(legal))])
                total += s.returns()[player]
            values[i] = total / self.num_rollouts
        return np.zeros((len(states), num_actions), dtype=np.float32), values
