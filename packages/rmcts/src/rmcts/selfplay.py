"""A small AlphaZero-style self-play trainer, and a cache of trained networks.

Each iteration plays ``games_per_iteration`` games against itself with a search (RMCTS
by default, since it is the fast one; MCTS-UCB on request), all games in lockstep through
the search's batched roots (one evaluator call per step for every game), with Dirichlet
noise at the root and moves sampled from the root policy for the first ``sample_moves``
plies, then fits the network to the root policies (cross-entropy) and the final outcomes
(squared error) of a replay buffer.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml26_core.validation import check_choice, check_float, check_int

from rmcts.evaluators import NetworkEvaluator, PolicyValueNet
from rmcts.games import encode_states, load_game
from rmcts.search import MCTS, RMCTS

__all__ = ["SelfPlayConfig", "load_or_train", "train_selfplay"]

_TRAINER_VERSION = 2
"""Part of the cache key: 2 plays the games in lockstep (batched roots)."""


@dataclass(frozen=True)
class SelfPlayConfig:
    """Hyperparameters of :func:`train_selfplay` (all part of the cache key).

    Attributes:
        iterations: Self-play / training rounds.
        games_per_iteration: Self-play games per round.
        simulations: Search budget per self-play move.
        batch_size: Evaluator batch size of the search.
        search: ``"rmcts"`` or ``"mcts"``.
        c: Exploration constant of the search.
        dirichlet_alpha: Root noise concentration.
        sample_moves: Plies at the start of a game whose move is sampled from the policy.
        epochs: Passes over the replay buffer per round.
        buffer_size: Most recent positions kept for training.
        minibatch: Training minibatch size.
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        hidden: Width of the network.
        layers: Residual blocks of the network.
        seed: Seed of the network initialization, noise and sampling.

    Raises:
        TypeError: If a count is not an integer or a rate not a number.
        ValueError: If a value is out of range, or ``search`` is not "rmcts" or "mcts".
    """

    iterations: int = 10
    games_per_iteration: int = 20
    simulations: int = 32
    batch_size: int = 8
    search: str = "rmcts"
    c: float = 1.25
    dirichlet_alpha: float = 0.5
    sample_moves: int = 4
    epochs: int = 4
    buffer_size: int = 20000
    minibatch: int = 128
    lr: float = 2e-3
    weight_decay: float = 1e-4
    hidden: int = 128
    layers: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        for name in (
            "iterations",
            "games_per_iteration",
            "simulations",
            "batch_size",
            "epochs",
            "buffer_size",
            "minibatch",
            "hidden",
            "layers",
        ):
            check_int(name, getattr(self, name), low=1)
        check_choice("search", self.search, ("rmcts", "mcts"))
        check_int("sample_moves", self.sample_moves, low=0)
        check_float("lr", self.lr, low=0.0, low_inclusive=False)
        check_float("c", self.c, low=0.0)
        check_float("dirichlet_alpha", self.dirichlet_alpha, low=0.0, low_inclusive=False)
        check_float("weight_decay", self.weight_decay, low=0.0)


class _Adam:
    """Adam with L2 weight decay, the update of ``torch.optim.Adam`` (defaults betas, eps).

    A few lines instead of ``torch.optim.Adam`` because building any ``torch.optim``
    optimizer imports ``torch._dynamo`` (torch 2.15), which costs about 20 s of CPU on a
    busy 2-core machine: more than a smoke-scale training run. A slow test checks that
    both give the same parameters.
    """

    def __init__(
        self,
        params: list[torch.nn.Parameter],
        lr: float,
        weight_decay: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params, self.lr, self.weight_decay = params, lr, weight_decay
        self.betas, self.eps, self.t = betas, eps, 0
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        b1, b2 = self.betas
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            g = p.grad.add(p, alpha=self.weight_decay) if self.weight_decay else p.grad
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v / (1 - b2**self.t)).sqrt_().add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / (1 - b1**self.t))


def _play_games(
    game: Any, search: Any, cfg: SelfPlayConfig, rng: np.random.Generator, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Play ``count`` self-play games in lockstep, one batched search per ply for all."""
    states = [game.new_initial_state() for _ in range(count)]
    records: list[list[tuple[np.ndarray, np.ndarray, int]]] = [[] for _ in range(count)]
    plies = [0] * count
    while True:
        for state in states:  # chance outcomes are drawn, not searched
            while state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(outcomes[rng.choice(len(probs), p=probs)]))
        active = [j for j, s in enumerate(states) if not s.is_terminal()]
        if not active:
            break
        results = search.search_batch([states[j] for j in active])
        for j, res in zip(active, results, strict=True):
            state = states[j]
            records[j].append(
                (encode_states([state])[0], res.policy.astype(np.float32), state.current_player())
            )
            if plies[j] < cfg.sample_moves:
                action = int(rng.choice(len(res.policy), p=res.policy / res.policy.sum()))
            else:
                action = res.action
            state.apply_action(action)
            plies[j] += 1
    observations, policies, outcomes_ = [], [], []
    for state, rec in zip(states, records, strict=True):
        returns = state.returns()
        for obs, pol, player in rec:
            observations.append(obs)
            policies.append(pol)
            outcomes_.append(returns[player])
    return (np.stack(observations), np.stack(policies), np.asarray(outcomes_, dtype=np.float32))


def train_selfplay(
    game: str | Any,
    config: SelfPlayConfig | None = None,
    *,
    device: str = "cpu",
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
) -> tuple[torch.nn.Module, dict[str, np.ndarray]]:
    """Train a :class:`PolicyValueNet` on ``game`` by self-play.

    Args:
        game: Game name or ``pyspiel.Game``.
        config: Hyperparameters; defaults of :class:`SelfPlayConfig` if None.
        device: Where the network trains and evaluates (``"cpu"``, ``"cuda"``, ...).
        progress: Optional wrapper ``progress(iterable, description)`` for a progress bar
            (e.g. ``RunContext.progress``).

    Returns:
        ``(net, log)``: the trained network (eval mode, on ``device``) and float64 arrays
        ``policy_loss``, ``value_loss`` (per iteration), ``positions`` and ``seconds``.

    Example:
        >>> cfg = SelfPlayConfig(iterations=1, games_per_iteration=1, simulations=4, epochs=1)
        >>> net, log = train_selfplay("tic_tac_toe", cfg)
        >>> log["policy_loss"].shape
        (1,)
    """
    cfg = config if config is not None else SelfPlayConfig()
    game = load_game(game)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    obs_size = int(np.prod(game.observation_tensor_shape()))
    num_actions = game.num_distinct_actions()
    dev = torch.device(device)
    net = PolicyValueNet(obs_size, num_actions, cfg.hidden, cfg.layers).to(dev)
    opt = _Adam(list(net.parameters()), lr=cfg.lr, weight_decay=cfg.weight_decay)
    evaluator = NetworkEvaluator(net, device)
    search_cls = RMCTS if cfg.search == "rmcts" else MCTS
    search = search_cls(
        evaluator,
        simulations=cfg.simulations,
        batch_size=cfg.batch_size,
        c=cfg.c,
        dirichlet_alpha=cfg.dirichlet_alpha,
        seed=cfg.seed,
    )
    buf_obs = np.zeros((0, obs_size), dtype=np.float32)
    buf_pol = np.zeros((0, num_actions), dtype=np.float32)
    buf_z = np.zeros(0, dtype=np.float32)
    log: dict[str, list[float]] = {"policy_loss": [], "value_loss": [], "positions": []}
    t0 = time.perf_counter()
    rounds: Iterable[int] = range(cfg.iterations)
    if progress is not None:
        rounds = progress(rounds, f"self-play {game.get_type().short_name}")
    for _ in rounds:
        net.eval()
        o, p, z = _play_games(game, search, cfg, rng, cfg.games_per_iteration)
        buf_obs = np.concatenate([buf_obs, o])[-cfg.buffer_size :]
        buf_pol = np.concatenate([buf_pol, p])[-cfg.buffer_size :]
        buf_z = np.concatenate([buf_z, z])[-cfg.buffer_size :]
        net.train()
        x_all = torch.from_numpy(buf_obs).to(dev)
        p_all = torch.from_numpy(buf_pol).to(dev)
        z_all = torch.from_numpy(buf_z).to(dev)
        pl_sum, vl_sum, steps = 0.0, 0.0, 0
        for _ in range(cfg.epochs):
            order = torch.from_numpy(rng.permutation(len(buf_z))).to(dev)
            for start in range(0, len(order), cfg.minibatch):
                idx = order[start : start + cfg.minibatch]
                logits, values = net(x_all[idx])
                policy_loss = -(p_all[idx] * torch.log_softmax(logits, dim=-1)).sum(-1).mean()
                value_loss = torch.mean((values - z_all[idx]) ** 2)
                opt.zero_grad(set_to_none=True)
                (policy_loss + value_loss).backward()
                opt.step()
                pl_sum += float(policy_loss.detach())
                vl_sum += float(value_loss.detach())
                steps += 1
        log["policy_loss"].append(pl_sum / max(steps, 1))
        log["value_loss"].append(vl_sum / max(steps, 1))
        log["positions"].append(float(len(buf_z)))
    net.eval()
    out = {k: np.asarray(v, dtype=np.float64) for k, v in log.items()}
    out["seconds"] = np.array([time.perf_counter() - t0])
    return net, out


def _cache_folder() -> Path:
    try:
        from icml26_core.datasets.cache import cache_dir
    except ImportError:  # an older core without the cache helper
        root = os.environ.get("ICML26_CACHE") or Path.home() / ".cache" / "icml26"
        path = Path(root) / "rmcts"
        path.mkdir(parents=True, exist_ok=True)
        return path
    return cache_dir("rmcts")


def load_or_train(
    game: str,
    config: SelfPlayConfig | None = None,
    *,
    device: str = "cpu",
    progress: Callable[[Iterable[int], str], Iterable[int]] | None = None,
) -> tuple[torch.nn.Module, dict[str, np.ndarray]]:
    """Return the self-play network for ``(game, config)`` from the cache, training it once.

    Weights are stored as plain numpy arrays (``.npz``, no pickle) in the icml26 cache
    folder (``$ICML26_CACHE`` or the user cache), under ``rmcts/``.

    Args:
        game: Game name (part of the cache key).
        config: Hyperparameters (part of the cache key).
        device: Where the network is trained and returned.
        progress: Optional progress-bar wrapper, see :func:`train_selfplay`.

    Returns:
        ``(net, log)`` as :func:`train_selfplay` returns them (``log`` from the cache on a hit).
    """
    if not isinstance(game, str):
        raise TypeError(f"game must be a game name (str) for caching, got {type(game).__name__}")
    cfg = config if config is not None else SelfPlayConfig()
    key = json.dumps(
        {
            "game": game,
            "torch": torch.__version__.split("+")[0],
            "trainer": _TRAINER_VERSION,
            **asdict(cfg),
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    safe = "".join(ch if ch.isalnum() else "_" for ch in game)
    path = _cache_folder() / f"{safe}-{digest}.npz"
    g = load_game(game)
    obs_size = int(np.prod(g.observation_tensor_shape()))
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            net = PolicyValueNet(obs_size, g.num_distinct_actions(), cfg.hidden, cfg.layers)
            state = {
                k[len("w:") :]: torch.from_numpy(v) for k, v in arrays.items() if k.startswith("w:")
            }
            net.load_state_dict(state)
            log = {k[len("log:") :]: v for k, v in arrays.items() if k.startswith("log:")}
            return net.to(torch.device(device)).eval(), log
        except (OSError, ValueError, KeyError, RuntimeError):
            path.unlink(missing_ok=True)  # a corrupt or stale entry: train again
    net, log = train_selfplay(g, cfg, device=device, progress=progress)
    arrays = {f"w:{k}": v.detach().cpu().numpy() for k, v in net.state_dict().items()}
    arrays.update({f"log:{k}": v for k, v in log.items()})
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, path)
    return net, log
