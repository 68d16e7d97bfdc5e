"""Experiment ``rmcts``: RMCTS vs AlphaZero's MCTS-UCB at equal network-evaluation budgets.

1. Tic-tac-toe, solved exactly: for sampled positions that have a losing or drawing
   mistake, the rate at which each search picks an optimal move, the probability its root
   policy puts on optimal moves and its regret ``V*(s) - sum_a pi(a) Q*(s, a)``, at several
   budgets, with a self-play network and with a uniform-prior / random-rollout evaluator.
2. Connect four: head-to-head matches (random 2-ply openings, both colours) between RMCTS
   and MCTS-UCB at equal evaluations per move, MCTS-UCB at RMCTS's time per move, and
   both against open_spiel's C++ ``MCTSBot`` with random rollouts.
3. Hex 5x5 (default and full scale): the same matches, without the rollout reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from icml26_core.device import torch_threads
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table

from rmcts.arena import OpenSpielMCTSBot, play_match, random_openings
from rmcts.evaluators import NetworkEvaluator, RolloutEvaluator
from rmcts.games import load_game
from rmcts.search import MCTS, RMCTS
from rmcts.selfplay import SelfPlayConfig, load_or_train
from rmcts.solver import MinimaxSolver

BATCH = 16
RMCTS_NAME = f"RMCTS (batch {BATCH})"
MCTS1_NAME = "MCTS-UCB (batch 1)"
MCTSB_NAME = f"MCTS-UCB (batch {BATCH}, virtual loss)"


def _searches(evaluator: Any, n: int) -> dict[str, Any]:
    return {
        RMCTS_NAME: RMCTS(evaluator, simulations=n, batch_size=BATCH),
        MCTS1_NAME: MCTS(evaluator, simulations=n, batch_size=1),
        MCTSB_NAME: MCTS(evaluator, simulations=n, batch_size=BATCH),
    }


def _ttt_configs(ctx: RunContext) -> SelfPlayConfig:
    return ctx.pick(
        SelfPlayConfig(
            iterations=2,
            games_per_iteration=6,
            simulations=16,
            batch_size=8,
            epochs=2,
            sample_moves=3,
            seed=ctx.seed,
        ),
        SelfPlayConfig(
            iterations=10,
            games_per_iteration=30,
            simulations=32,
            batch_size=8,
            sample_moves=3,
            seed=ctx.seed,
        ),
        SelfPlayConfig(
            iterations=40,
            games_per_iteration=50,
            simulations=64,
            batch_size=16,
            sample_moves=3,
            seed=ctx.seed,
        ),
    )


def _c4_config(ctx: RunContext) -> SelfPlayConfig:
    return ctx.pick(
        SelfPlayConfig(
            iterations=1,
            games_per_iteration=2,
            simulations=16,
            batch_size=8,
            epochs=1,
            sample_moves=8,
            seed=ctx.seed,
        ),
        SelfPlayConfig(
            iterations=24,
            games_per_iteration=30,
            simulations=64,
            batch_size=16,
            sample_moves=8,
            seed=ctx.seed,
        ),
        SelfPlayConfig(
            iterations=100,
            games_per_iteration=100,
            simulations=128,
            batch_size=32,
            sample_moves=8,
            hidden=256,
            layers=4,
            seed=ctx.seed,
        ),
    )


HEX = "hex(board_size=5)"


def _hex_config(ctx: RunContext) -> SelfPlayConfig | None:
    """Hex 5x5 runs at default and full scale only (smoke keeps to two games)."""
    return ctx.pick(
        None,
        SelfPlayConfig(
            iterations=12,
            games_per_iteration=30,
            simulations=64,
            batch_size=16,
            sample_moves=4,
            seed=ctx.seed,
        ),
        SelfPlayConfig(
            iterations=100,
            games_per_iteration=100,
            simulations=128,
            batch_size=32,
            sample_moves=4,
            hidden=256,
            layers=4,
            seed=ctx.seed,
        ),
    )


def _tic_tac_toe(ctx: RunContext, evaluators: dict[str, Any]) -> tuple[Table, list[dict]]:
    game = load_game("tic_tac_toe")
    solver = MinimaxSolver(game)
    informative = []
    for s in solver.all_states():
        q = solver.action_values(s)
        if np.nanmin(q) < np.nanmax(q):  # some legal move is a mistake
            informative.append(s)
    n_pos = ctx.pick(30, 300, len(informative))
    rng = ctx.rng(1)
    chosen = rng.choice(len(informative), size=min(n_pos, len(informative)), replace=False)
    positions = [informative[i] for i in sorted(chosen)]
    exact = [solver.action_values(s) for s in positions]
    budgets = ctx.pick([8, 32], [4, 8, 16, 32, 64, 128], [4, 8, 16, 32, 64, 128, 256, 512])
    table = Table(
        title=(
            f"Tic-tac-toe, {len(positions)} positions with a mistake available, "
            "against exact minimax values"
        ),
        columns=[
            "evaluator",
            "method",
            "evaluations",
            "optimal move",
            "optimal mass",
            "regret",
            "ms / search",
            "network calls",
        ],
        note=(
            "optimal move: share of positions where the chosen move is optimal; optimal mass: "
            "root-policy probability on optimal moves; regret: V*(s) - sum pi(a) Q*(s,a), "
            "values in [-1, 1]. evaluations: budget (tree nodes / simulations)."
        ),
    )
    rows = []
    jobs = [(e, n) for e in evaluators for n in budgets]
    for ev_name, n in ctx.progress(jobs, "tic-tac-toe policy quality"):
        for method, search in _searches(evaluators[ev_name], n).items():
            hits, mass, regret, secs, calls, evals = [], [], [], [], [], []
            for state, q in zip(positions, exact, strict=True):
                res = search.search(state)
                best = np.nanmax(q)
                optimal = q >= best
                hits.append(bool(optimal[res.action]))
                mass.append(float(res.policy[optimal].sum()))
                regret.append(float(best - np.nansum(res.policy * np.nan_to_num(q))))
                secs.append(res.seconds)
                calls.append(res.batches)
                evals.append(res.evaluations)
            row = {
                "evaluator": ev_name,
                "method": method,
                "evaluations": n,
                "optimal move": float(np.mean(hits)),
                "optimal mass": float(np.mean(mass)),
                "regret": float(np.mean(regret)),
                "ms / search": 1000 * float(np.mean(secs)),
                "network calls": float(np.mean(calls)),
            }
            table.add_row(**row)
            rows.append(row)
    return table, rows


def _match_row(table: Table, label: str, na: int, nb: Any, m: Any) -> dict:
    ta, tb = m.seconds_per_move
    row = {
        "match (A vs B)": label,
        "budget A": na,
        "budget B": nb,
        "games": m.games,
        "score A": m.score,
        "95% CI": f"[{m.ci_low:.2f}, {m.ci_high:.2f}]",
        "W/D/L": f"{m.wins}/{m.draws}/{m.losses}",
        "ms / move A": 1000 * ta,
        "ms / move B": 1000 * tb,
        "time ratio A/B": ta / tb,
    }
    table.add_row(**row)
    return {**row, "ci_low": m.ci_low, "ci_high": m.ci_high}


def _matches(
    ctx: RunContext,
    game_name: str,
    title: str,
    evaluator: Any,
    budgets: list[int],
    n_openings: int,
    plies: int,
    bot_sims: int | None,
) -> tuple[Table, list[dict]]:
    """Head-to-head matches of RMCTS vs MCTS-UCB (and an open_spiel reference) on one game."""
    game = load_game(game_name)
    openings = random_openings(game, n_openings, plies, ctx.rng(2))
    table = Table(
        title=(
            f"{title}, self-play network, {2 * len(openings)} games per match "
            f"(random {plies}-ply openings, both colours)"
        ),
        columns=[
            "match (A vs B)",
            "budget A",
            "budget B",
            "games",
            "score A",
            "95% CI",
            "W/D/L",
            "ms / move A",
            "ms / move B",
            "time ratio A/B",
        ],
        note=(
            "score: win 1, draw 1/2, loss 0 for A; 95% Wilson interval; budget: network "
            "evaluations (tree nodes / simulations) per move; the open_spiel bot uses "
            "random rollouts, no network."
        ),
    )
    rows: list[dict] = []
    jobs: list[tuple[str, int, Any]] = []
    for n in budgets:
        jobs.append(("equal evaluations", n, n))
        jobs.append(("equal batching", n, n))
    jobs.append(("equal time", budgets[-1], None))
    if bot_sims is not None:
        jobs.append(("reference RMCTS", budgets[-1], bot_sims))
        jobs.append(("reference MCTS", budgets[-1], bot_sims))
    per_move: dict[int, tuple[float, float]] = {}
    for kind, n, nb in ctx.progress(jobs, f"{title} matches"):
        rm = RMCTS(evaluator, simulations=n, batch_size=BATCH)
        if kind == "equal evaluations":
            m = play_match(game, rm, MCTS(evaluator, simulations=n, batch_size=1), openings)
            per_move[n] = m.seconds_per_move
            rows.append(_match_row(table, f"{RMCTS_NAME} vs {MCTS1_NAME}", n, nb, m))
        elif kind == "equal batching":
            m = play_match(game, rm, MCTS(evaluator, simulations=n, batch_size=BATCH), openings)
            rows.append(_match_row(table, f"{RMCTS_NAME} vs {MCTSB_NAME}", n, nb, m))
        elif kind == "equal time":
            ta, tb = per_move[n]
            nb = max(2, round(n * ta / tb))  # MCTS-UCB simulations that fit RMCTS's time per move
            m = play_match(game, rm, MCTS(evaluator, simulations=nb, batch_size=1), openings)
            rows.append(_match_row(table, f"{RMCTS_NAME} vs {MCTS1_NAME}, equal time", n, nb, m))
        else:
            bot = OpenSpielMCTSBot(game, simulations=nb, seed=ctx.seed)
            player = rm if kind == "reference RMCTS" else MCTS(evaluator, simulations=n)
            name = RMCTS_NAME if kind == "reference RMCTS" else MCTS1_NAME
            m = play_match(game, player, bot, openings)
            rows.append(_match_row(table, f"{name} vs open_spiel MCTSBot (rollouts)", n, nb, m))
        rows[-1]["kind"] = kind
    return table, rows


def _figure(ctx: RunContext, ttt_rows: list[dict], match_rows: list[dict]) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    colors = {RMCTS_NAME: "C3", MCTS1_NAME: "C0", MCTSB_NAME: "C2"}
    for ev_name, style in (("self-play network", "-"), ("random rollouts", ":")):
        for method, color in colors.items():
            pts = [r for r in ttt_rows if r["method"] == method and r["evaluator"] == ev_name]
            if not pts:
                continue
            x = [r["evaluations"] for r in pts]
            y = [r["optimal move"] for r in pts]
            t = [r["ms / search"] for r in pts]
            axes[0].plot(x, y, style, marker="o", color=color, label=f"{method}, {ev_name}")
            axes[1].plot(t, y, style, marker="o", color=color, label=f"{method}, {ev_name}")
    axes[0].set(
        xscale="log",
        xlabel="network evaluations per search",
        ylabel="optimal-move rate",
        title="Tic-tac-toe: equal evaluations",
    )
    axes[1].set(
        xscale="log",
        xlabel="wall time per search (ms)",
        ylabel="optimal-move rate",
        title="Tic-tac-toe: equal time",
    )
    axes[0].legend(fontsize=6)
    labels = [f"{r['game']}: {r['kind']}\nn={r['budget A']} vs {r['budget B']}" for r in match_rows]
    scores = np.array([r["score A"] for r in match_rows])
    err = np.array(
        [[s - r["ci_low"], r["ci_high"] - s] for s, r in zip(scores, match_rows, strict=True)]
    ).T
    axes[2].bar(range(len(scores)), scores, yerr=err, color="C3", capsize=3)
    axes[2].axhline(0.5, color="k", lw=0.8, ls="--")
    axes[2].set_xticks(range(len(scores)), labels, fontsize=6, rotation=30, ha="right")
    axes[2].set(
        ylim=(0, 1),
        ylabel="score of the first-named search (RMCTS or MCTS-UCB)",
        title="Matches (95% CI)",
    )
    fig.tight_layout()
    ctx.save_figure(fig, "rmcts")


def _accuracy_at_equal_time(ttt_rows: list[dict], ev_name: str) -> float:
    """Mean of RMCTS's optimal-move rate minus MCTS-UCB's, interpolated at RMCTS's times."""
    rm = [r for r in ttt_rows if r["method"] == RMCTS_NAME and r["evaluator"] == ev_name]
    mc = sorted(
        (r for r in ttt_rows if r["method"] == MCTS1_NAME and r["evaluator"] == ev_name),
        key=lambda r: r["ms / search"],
    )
    t_mc = np.log([r["ms / search"] for r in mc])
    a_mc = np.array([r["optimal move"] for r in mc])
    diffs = [
        r["optimal move"] - float(np.interp(np.log(r["ms / search"]), t_mc, a_mc))
        for r in rm
        if t_mc[0] <= np.log(r["ms / search"]) <= t_mc[-1]
    ]
    return float(np.mean(diffs)) if diffs else float("nan")


def run(ctx: RunContext) -> Result:
    """Train (or load cached) networks, measure policy quality and play the matches."""
    # Tiny networks on small batches: one thread avoids OpenMP spin contention.
    with torch_threads(1):
        return _run(ctx)


def _run(ctx: RunContext) -> Result:
    notes = []
    ttt_cfg = _ttt_configs(ctx)
    ttt_net, ttt_log = load_or_train(
        "tic_tac_toe", ttt_cfg, device=ctx.device, progress=ctx.progress
    )
    c4_cfg = _c4_config(ctx)
    c4_net, c4_log = load_or_train("connect_four", c4_cfg, device=ctx.device, progress=ctx.progress)
    trained = [("tic-tac-toe", ttt_cfg, ttt_log), ("connect four", c4_cfg, c4_log)]
    hex_cfg = _hex_config(ctx)
    hex_net = None
    if hex_cfg is not None:
        hex_net, hex_log = load_or_train(HEX, hex_cfg, device=ctx.device, progress=ctx.progress)
        trained.append(("hex 5x5", hex_cfg, hex_log))
    for name, cfg, log in trained:
        notes.append(
            f"{name} network: {cfg.iterations} x {cfg.games_per_iteration} self-play games with "
            f"RMCTS at {cfg.simulations} evaluations per move, trained in "
            f"{float(log['seconds'][0]):.1f} s (cached afterwards); final policy / value loss "
            f"{float(log['policy_loss'][-1]):.3f} / {float(log['value_loss'][-1]):.3f}."
        )
    evaluators = {
        "self-play network": NetworkEvaluator(ttt_net, ctx.device),
        "random rollouts": RolloutEvaluator(num_rollouts=1, seed=ctx.seed),
    }
    ttt_table, ttt_rows = _tic_tac_toe(ctx, evaluators)
    c4_table, c4_rows = _matches(
        ctx,
        "connect_four",
        "Connect four",
        NetworkEvaluator(c4_net, ctx.device),
        budgets=ctx.pick([16], [64, 256], [64, 256, 1024]),
        n_openings=ctx.pick(1, 16, 50),
        plies=2,
        bot_sims=ctx.pick(50, 1000, 4000),
    )
    for r in c4_rows:
        r["game"] = "connect four"
    tables = [ttt_table, c4_table]
    hex_rows: list[dict] = []
    if hex_net is not None:
        hex_table, hex_rows = _matches(
            ctx,
            HEX,
            "Hex 5x5",
            NetworkEvaluator(hex_net, ctx.device),
            budgets=ctx.pick([16], [128], [128, 512]),
            n_openings=ctx.pick(1, 12, 25),
            plies=1,
            bot_sims=None,
        )
        for r in hex_rows:
            r["game"] = "hex 5x5"
        tables.append(hex_table)
    _figure(ctx, ttt_rows, c4_rows + hex_rows)

    eq = [r for r in c4_rows if r["kind"] == "equal evaluations"][-1]
    head = Claim.check(
        "RMCTS matches or exceeds MCTS-UCB's playing strength at a small fraction of its time "
        "per move.",
        (
            "connect four, largest budget, equal network evaluations per move: RMCTS's score vs "
            "MCTS-UCB (batch 1) has a 95% upper bound >= 0.5 (not significantly weaker) and its "
            "time per move is <= 0.5 x MCTS-UCB's"
        ),
        {
            "budget": eq["budget A"],
            "score": eq["score A"],
            "ci_low": eq["ci_low"],
            "ci_high": eq["ci_high"],
            "time_ratio": eq["time ratio A/B"],
        },
        lambda v: v["ci_high"] >= 0.5 and v["time_ratio"] <= 0.5,
    )

    et = next(r for r in c4_rows if r["kind"] == "equal time")
    equal_time = Claim.check(
        "At equal time per move RMCTS matches or exceeds MCTS-UCB's playing strength.",
        (
            "connect four: RMCTS at the largest budget vs MCTS-UCB (batch 1) given as many "
            "simulations as fit in RMCTS's measured time per move: RMCTS's score >= 0.5"
        ),
        {
            "rmcts_budget": et["budget A"],
            "mcts_budget": et["budget B"],
            "score": et["score A"],
            "ci_low": et["ci_low"],
            "ci_high": et["ci_high"],
            "time_ratio": et["time ratio A/B"],
        },
        lambda v: v["score"] >= 0.5,
    )

    claims = [head, equal_time]
    if hex_rows:
        hx = [r for r in hex_rows if r["kind"] == "equal evaluations"][-1]
        hx_time = next(r for r in hex_rows if r["kind"] == "equal time")
        claims.append(
            Claim.check(
                "On hex 5x5 too, RMCTS matches MCTS-UCB's playing strength at a fraction of its "
                "time per move, and matches or exceeds it at equal time.",
                (
                    "hex 5x5: at equal evaluations RMCTS's score vs MCTS-UCB (batch 1) has a 95% "
                    "upper bound >= 0.5 with time per move <= 0.5 x MCTS-UCB's, and at equal "
                    "time its score is >= 0.5"
                ),
                {
                    "budget": hx["budget A"],
                    "score": hx["score A"],
                    "ci_high": hx["ci_high"],
                    "time_ratio": hx["time ratio A/B"],
                    "equal_time_score": hx_time["score A"],
                    "equal_time_mcts_budget": hx_time["budget B"],
                },
                lambda v: (
                    v["ci_high"] >= 0.5 and v["time_ratio"] <= 0.5 and v["equal_time_score"] >= 0.5
                ),
            )
        )

    def mean_acc(method: str) -> float:
        return float(
            np.mean(
                [
                    r["optimal move"]
                    for r in ttt_rows
                    if r["method"] == method and r["evaluator"] == "self-play network"
                ]
            )
        )

    ttt_equal = Claim.check(
        "On tic-tac-toe RMCTS picks optimal moves as often as MCTS-UCB at equal evaluations.",
        (
            "self-play network: optimal-move rate averaged over budgets, RMCTS >= MCTS-UCB "
            "(batch 1) - 0.02"
        ),
        {"rmcts": mean_acc(RMCTS_NAME), "mcts_ucb": mean_acc(MCTS1_NAME)},
        lambda v: v["rmcts"] >= v["mcts_ucb"] - 0.02,
    )
    ttt_time = Claim.check(
        "On tic-tac-toe RMCTS picks optimal moves at least as often as MCTS-UCB at equal time.",
        (
            "self-play network: RMCTS's optimal-move rate minus MCTS-UCB's (batch 1, "
            "interpolated in log-time at RMCTS's time per search), averaged, >= 0"
        ),
        {"mean_difference": _accuracy_at_equal_time(ttt_rows, "self-play network")},
        lambda v: v["mean_difference"] >= 0,
    )
    notes.append(
        "Budgets count tree nodes (RMCTS) or simulations (MCTS-UCB), the root included; "
        "terminal nodes cost no network evaluation. Times are wall times of single-threaded "
        f"Python searches with a torch network on {ctx.device}."
    )
    return Result(
        tables=tables,
        claims=[*claims, ttt_equal, ttt_time],
        notes=notes,
        data={
            "tic_tac_toe": ttt_rows,
            "connect_four": c4_rows,
            "hex_5x5": hex_rows,
            "ttt_training": {k: v.tolist() for k, v in ttt_log.items()},
            "c4_training": {k: v.tolist() for k, v in c4_log.items()},
        },
    )


EXPERIMENT = Experiment(
    name="rmcts",
    title="RMCTS: recursive Monte-Carlo tree search with regularized posterior policies",
    claim=(
        "RMCTS matches or exceeds the quality of AlphaZero's MCTS-UCB in a tiny fraction "
        "of the time."
    ),
    run=run,
)
