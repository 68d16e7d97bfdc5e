"""Speed of RMCTS vs MCTS-UCB at equal budgets, and vs open_spiel's C++ MCTSBot.

Run: ``uv run python packages/rmcts/benchmarks/bench_search.py [--budget 256] [--moves 20]``.

Prints simulations (tree nodes) per second, network calls and mean batch size per
search on connect-four positions, with (1) a small untrained policy-value network
(the cost of the search around a network, not the network's strength) and (2) random
rollouts, where open_spiel's C++ MCTSBot is the reference a user would otherwise pick.
Ratios are RMCTS's speed over the other search's, in one run on one machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from rmcts import (
    MCTS,
    RMCTS,
    NetworkEvaluator,
    OpenSpielMCTSBot,
    PolicyValueNet,
    RolloutEvaluator,
    load_game,
)


def positions(game, count, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        s = game.new_initial_state()
        for _ in range(int(rng.integers(0, 12))):
            s.apply_action(int(rng.choice(s.legal_actions())))
            if s.is_terminal():
                break
        if not s.is_terminal():
            out.append(s)
    return out


def measure(search, states):
    t0 = time.perf_counter()
    sims, calls, evals = 0, 0, 0
    for s in states:
        if hasattr(search, "search"):
            r = search.search(s)
            sims += r.simulations
            calls += r.batches
            evals += r.evaluations
        else:
            search.step(s)
            sims += search.simulations
    dt = time.perf_counter() - t0
    return {
        "sims/s": sims / dt,
        "ms/search": 1000 * dt / len(states),
        "calls/search": calls / len(states) if calls else float("nan"),
        "mean batch": evals / calls if calls else float("nan"),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=256)
    ap.add_argument("--moves", type=int, default=20)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(1)
    game = load_game("connect_four")
    states = positions(game, args.moves)
    obs = int(np.prod(game.observation_tensor_shape()))
    net_ev = NetworkEvaluator(PolicyValueNet(obs, game.num_distinct_actions()), args.device)
    roll_ev = RolloutEvaluator(seed=0)
    n, b = args.budget, args.batch
    rows = {
        ("network", f"RMCTS (batch {b})"): RMCTS(net_ev, simulations=n, batch_size=b),
        ("network", "MCTS-UCB (batch 1)"): MCTS(net_ev, simulations=n, batch_size=1),
        ("network", f"MCTS-UCB (batch {b}, virtual loss)"): MCTS(
            net_ev, simulations=n, batch_size=b
        ),
        ("rollouts", f"RMCTS (batch {b})"): RMCTS(roll_ev, simulations=n, batch_size=b),
        ("rollouts", "MCTS-UCB (batch 1)"): MCTS(roll_ev, simulations=n, batch_size=1),
        ("rollouts", "open_spiel MCTSBot (C++)"): OpenSpielMCTSBot(game, simulations=n),
    }
    results = {k: measure(v, states) for k, v in rows.items()}
    print(f"connect four, {args.moves} positions, budget {n} per search, device {args.device}")
    print(
        f"{'evaluator':<9} {'search':<34} {'sims/s':>9} {'ms/search':>10} {'calls':>7} "
        f"{'batch':>6} {'RMCTS speed-up':>15}"
    )
    for (ev, name), r in results.items():
        ref = results[(ev, f"RMCTS (batch {b})")]["sims/s"]
        print(
            f"{ev:<9} {name:<34} {r['sims/s']:>9.0f} {r['ms/search']:>10.2f} "
            f"{r['calls/search']:>7.1f} {r['mean batch']:>6.1f} {ref / r['sims/s']:>14.2f}x"
        )


if __name__ == "__main__":
    main()
