"""Experiment ``rmcts``: RMCTS vs AlphaZero's MCTS-UCB, batched like RMCTS, at equal time.

1. Tic-tac-toe, solved exactly: on held-out positions where some move is a mistake, the
   rate at which each search picks an optimal move, at equal evaluations (several
   budgets) and at equal time (MCTS-UCB's budget calibrated on validation positions),
   paired over positions; floors: a random move and the network's policy alone.
2. Connect four, self-play network: time per search (interleaved, ratio of medians);
   matches from random 3-ply openings, both colours: RMCTS vs MCTS-UCB batched with a
   virtual loss at equal time (its budget calibrated on validation positions) and at
   equal evaluations; both against open_spiel's C++ ``MCTSBot`` with random rollouts
   (paired over openings); mctx's Gumbel MuZero policy with the same network at equal
   evaluations; the floors: the network's policy alone and a random player.

Constants fixed before the run: ``c = 1.25`` (AlphaZero's), batch 16, the budgets, the
margins (:data:`SCORE_MARGIN`, :data:`RATE_MARGIN`) and the speed-up called "a small
fraction of the time" (:data:`FRACTION`). Equal-time budgets come from
``icml26_core.timing.compare_times`` on validation positions that no verdict reads.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

import numpy as np
from icml26_core.device import torch_threads
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table
from icml26_core.stats import win_rate
from icml26_core.timing import TimeComparison, compare_times

from rmcts.arena import MatchResult, OpenSpielMCTSBot, RandomPlayer, play_match, random_openings
from rmcts.evaluators import NetworkEvaluator, RolloutEvaluator
from rmcts.games import load_game
from rmcts.search import MCTS, RMCTS
from rmcts.selfplay import SelfPlayConfig, load_or_train
from rmcts.solver import MinimaxSolver

BATCH = 16
SCORE_MARGIN = 0.1
"""Non-inferiority margin of match scores: "as strong" holds if the score's CI lies above 0.4."""
RATE_MARGIN = 0.05
"""Non-inferiority margin of tic-tac-toe optimal-move rates (5 percentage points)."""
FRACTION = 2.0
""""A small fraction of the time" read as: at least this many times faster."""
TIME_SLACK = 1.1
""""Equal time" checked in the match: RMCTS may take at most this factor of MCTS-UCB's time."""

RMCTS_NAME = f"RMCTS (batch {BATCH})"
MCTS1_NAME = "MCTS-UCB (batch 1)"
MCTSB_NAME = f"MCTS-UCB (batch {BATCH}, virtual loss)"
MCTX_NAME = "Gumbel MuZero (mctx)"
PRIOR_NAME = "network policy (1 evaluation, no search)"
RANDOM_NAME = "random move"


def _ttt_config(ctx: RunContext) -> SelfPlayConfig:
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


def _one_thread() -> None:
    """One intra-op thread for torch and XLA (tiny networks; set before jax is imported)."""
    import os

    import torch

    torch.set_num_threads(1)
    os.environ.setdefault(
        "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )


def _init_worker() -> None:
    _one_thread()


def _searcher(name: str, evaluator: Any, n: int) -> Any:
    if name == RMCTS_NAME:
        return RMCTS(evaluator, simulations=n, batch_size=BATCH)
    if name == MCTSB_NAME:
        return MCTS(evaluator, simulations=n, batch_size=BATCH)
    if name == MCTS1_NAME:
        return MCTS(evaluator, simulations=n, batch_size=1)
    raise ValueError(name)  # pragma: no cover


def _equal_time_budget(
    make: Any, rm: Any, n: int, positions: list[Any], repeats: int
) -> tuple[int, TimeComparison]:
    """MCTS-UCB simulations that take RMCTS's time per search (two interleaved refinements).

    ``make(k)`` builds the MCTS-UCB search with ``k`` simulations; times are those of
    searching every validation position once, A (RMCTS) and B (MCTS-UCB) interleaved.
    """

    def run(search: Any) -> Any:
        return lambda: [search.search(s) for s in positions]

    k = n
    comp = compare_times(run(rm), run(make(k)), repeats=repeats, warmup=1)
    for _ in range(2):
        k = max(2, round(k * comp.median_a / comp.median_b))
        comp = compare_times(run(rm), run(make(k)), repeats=repeats, warmup=1)
    return k, comp


# ---------------------------------------------------------------- tic-tac-toe


def _tic_tac_toe(ctx: RunContext, net: Any) -> tuple[list[Table], list[Claim], dict]:
    game = load_game("tic_tac_toe")
    solver = MinimaxSolver(game)
    informative = []
    for s in solver.all_states():
        q = solver.action_values(s)
        if np.nanmin(q) < np.nanmax(q):  # some legal move is a mistake
            informative.append(s)
    n_test = ctx.pick(20, 300, 1000)
    n_val = ctx.pick(6, 60, 100)
    order = ctx.rng(1).permutation(len(informative))
    test = [informative[i] for i in sorted(order[:n_test])]
    val = [informative[i] for i in sorted(order[n_test : n_test + n_val])]
    exact = [solver.action_values(s) for s in test]
    optimal = [q >= np.nanmax(q) for q in exact]
    budgets = ctx.pick([4, 16], [4, 8, 16, 32, 64, 128], [4, 8, 16, 32, 64, 128, 256, 512])
    ev = NetworkEvaluator(net, ctx.device)
    evaluators = {"self-play network": ev, "random rollouts": RolloutEvaluator(seed=ctx.seed)}

    def hits(search: Any) -> tuple[np.ndarray, float]:
        res = [search.search(s) for s in test]
        h = np.array([opt[r.action] for r, opt in zip(res, optimal, strict=True)], dtype=float)
        return h, 1000 * float(np.mean([r.seconds for r in res]))

    table = Table(
        title=(
            f"Tic-tac-toe, {len(test)} held-out positions with a mistake available, "
            "optimal-move rate against exact minimax values"
        ),
        columns=["evaluator", "method", "evaluations", "optimal move", "n", "ms / search"],
        note=(
            "optimal move: share of positions where the chosen move is optimal; evaluations: "
            "budget per search (tree nodes / simulations); floors: a uniformly random legal "
            "move (expected rate) and the network's policy alone."
        ),
    )
    per: dict[tuple[str, str, int], np.ndarray] = {}
    random_rate = np.array(
        [opt[s.legal_actions()].mean() for s, opt in zip(test, optimal, strict=True)]
    )
    table.add_row(
        evaluator="-",
        method=RANDOM_NAME,
        evaluations=0,
        **{"optimal move": float(random_rate.mean()), "n": len(test)},
    )
    h, ms = hits(RMCTS(ev, simulations=1))
    table.add_row(
        evaluator="self-play network",
        method=PRIOR_NAME,
        evaluations=1,
        **{"optimal move": float(h.mean()), "n": len(test), "ms / search": ms},
    )
    jobs = [(e, n) for e in evaluators for n in budgets]
    for ev_name, n in ctx.progress(jobs, "tic-tac-toe, equal evaluations"):
        for method in (RMCTS_NAME, MCTS1_NAME, MCTSB_NAME):
            h, ms = hits(_searcher(method, evaluators[ev_name], n))
            per[(ev_name, method, n)] = h
            table.add_row(
                evaluator=ev_name,
                method=method,
                evaluations=n,
                **{"optimal move": float(h.mean()), "n": len(test), "ms / search": ms},
            )

    # equal time: MCTS-UCB's budget calibrated on validation positions at RMCTS's budget
    n_rm = budgets[len(budgets) // 2]
    rm = RMCTS(ev, simulations=n_rm, batch_size=BATCH)
    time_table = Table(
        title=(
            f"Tic-tac-toe, equal time: MCTS-UCB's budget calibrated to RMCTS's time at "
            f"{n_rm} evaluations on {len(val)} validation positions"
        ),
        columns=["method", "evaluations", "optimal move", "n", "calibrated time ratio B/A"],
        note=(
            "time ratio: median time of MCTS-UCB at its calibrated budget / RMCTS's, "
            "interleaved rounds on the validation positions (1 = equal time)."
        ),
    )
    h_rm = per[("self-play network", RMCTS_NAME, n_rm)]
    time_table.add_row(
        method=RMCTS_NAME, evaluations=n_rm, **{"optimal move": float(h_rm.mean()), "n": len(test)}
    )
    eq_time: dict[str, tuple[int, np.ndarray]] = {}
    for method in ctx.progress([MCTSB_NAME, MCTS1_NAME], "tic-tac-toe, equal time"):
        k, comp = _equal_time_budget(
            lambda k, m=method: _searcher(m, ev, k), rm, n_rm, val, repeats=ctx.pick(2, 7, 9)
        )
        h, _ = hits(_searcher(method, ev, k))
        eq_time[method] = (k, h)
        time_table.add_row(
            method=method,
            evaluations=k,
            **{
                "optimal move": float(h.mean()),
                "n": len(test),
                "calibrated time ratio B/A": comp.median_b / comp.median_a,
            },
        )

    def mean_over_budgets(method: str) -> np.ndarray:
        return np.mean([per[("self-play network", method, n)] for n in budgets], axis=0)

    rm_mean = mean_over_budgets(RMCTS_NAME)
    parts = [
        Claim.non_inferior(
            f"tic-tac-toe, equal evaluations: RMCTS vs {name}",
            rm_mean,
            mean_over_budgets(name),
            margin=RATE_MARGIN,
            names=("RMCTS", name),
            test="wilcoxon",
            metric=f"optimal-move rate per position, averaged over budgets {budgets}",
        )
        for name in (MCTSB_NAME, MCTS1_NAME)
    ]
    ttt_equal = Claim.all_of(
        "On tic-tac-toe RMCTS picks optimal moves as often as MCTS-UCB at equal evaluations.",
        parts,
        rule=(
            f"self-play network, {len(test)} held-out positions, paired: RMCTS's optimal-move "
            f"rate (averaged over budgets) is worse than each MCTS-UCB's by less than "
            f"{RATE_MARGIN} (non-inferiority, Wilcoxon, bootstrap CI), batched and sequential"
        ),
    )
    ttt_time = Claim.all_of(
        "On tic-tac-toe RMCTS picks optimal moves at least as often as MCTS-UCB at equal time.",
        [
            Claim.non_inferior(
                f"tic-tac-toe, equal time: RMCTS ({n_rm}) vs {name} ({eq_time[name][0]})",
                h_rm,
                eq_time[name][1],
                margin=RATE_MARGIN,
                names=("RMCTS", name),
                test="sign",
                metric="optimal move (0/1) per position",
            )
            for name in (MCTSB_NAME, MCTS1_NAME)
        ],
        rule=(
            f"self-play network, RMCTS at {n_rm} evaluations vs each MCTS-UCB at the budget "
            f"that takes the same time on validation positions; paired 0/1 outcomes per "
            f"held-out position (sign test = McNemar's), margin {RATE_MARGIN}"
        ),
    )
    data = {
        "budgets": budgets,
        "rates": {f"{e} | {m} | {n}": float(v.mean()) for (e, m, n), v in per.items()},
        "equal_time_budgets": {m: k for m, (k, _) in eq_time.items()},
        "rmcts_equal_time_budget": n_rm,
    }
    return [table, time_table], [ttt_equal, ttt_time], data


# ---------------------------------------------------------------- connect four


def _validation_positions(game: Any, count: int, rng: np.random.Generator) -> list[Any]:
    out = []
    while len(out) < count:
        s = game.new_initial_state()
        for _ in range(int(rng.integers(2, 13))):
            s.apply_action(int(rng.choice(s.legal_actions())))
            if s.is_terminal():
                break
        if not s.is_terminal():
            out.append(s)
    return out


def _match_row(table: Table, label: str, na: Any, nb: Any, m: MatchResult) -> dict:
    ev = win_rate(m.wins, m.draws, m.losses)
    ta, tb = (float(np.median(t)) if t else float("nan") for t in m.move_seconds)
    row = {
        "match (A vs B)": label,
        "budget A": na,
        "budget B": nb,
        "games": m.games,
        "score A": m.score,
        "95% CI": f"[{ev.ci_low:.3f}, {ev.ci_high:.3f}]",
        "W/D/L": f"{m.wins}/{m.draws}/{m.losses}",
        "median ms / move A": 1000 * ta,
        "median ms / move B": 1000 * tb,
    }
    table.add_row(**row)
    return {
        **row,
        "ci_low": ev.ci_low,
        "ci_high": ev.ci_high,
        "outcomes": m.outcomes,
        "game_seconds": m.game_seconds,
    }


def _connect_four(
    ctx: RunContext, net: Any, executor: Executor | None
) -> tuple[list[Table], list[Claim], dict]:
    game = load_game("connect_four")
    ev = NetworkEvaluator(net, ctx.device)
    n = ctx.pick(8, 128, 512)
    bot_sims = ctx.pick(20, 200, 1000)
    val = _validation_positions(game, ctx.pick(3, 12, 24), ctx.rng(3))
    repeats = ctx.pick(3, 11, 15)
    rm = RMCTS(ev, simulations=n, batch_size=BATCH)

    def run(search: Any) -> Any:
        return lambda: [search.search(s) for s in val]

    # time per search at equal evaluations (interleaved rounds on validation positions)
    speed: dict[str, TimeComparison] = {}
    for name in ctx.progress([MCTSB_NAME, MCTS1_NAME], "connect four, time per search"):
        speed[name] = compare_times(
            run(rm), run(_searcher(name, ev, n)), repeats=repeats, warmup=1, names=("RMCTS", name)
        )
    n_b, eq_comp = _equal_time_budget(
        lambda k: _searcher(MCTSB_NAME, ev, k), rm, n, val, repeats=repeats
    )
    gumbel = None
    if ctx.scale != "smoke":  # jax's compile time would take most of the smoke budget
        from rmcts.mctx_baseline import MctxGumbelMuZero

        gumbel = MctxGumbelMuZero(ev, simulations=n - 1, seed=ctx.seed)  # + the root: n
        # about 15x slower per search than RMCTS here (a host callback per simulation)
        speed[MCTX_NAME] = compare_times(
            run(rm), run(gumbel), repeats=ctx.pick(3, 5, 9), warmup=1, names=("RMCTS", MCTX_NAME)
        )
    speed_table = Table(
        title=(
            f"Connect four, time per search on {len(val)} validation positions, "
            f"{repeats} interleaved rounds"
        ),
        columns=[
            "A vs B",
            "budget A",
            "budget B",
            "median ms / search A",
            "median ms / search B",
            "speed-up of A (B/A)",
            "95% CI",
            "rounds",
        ],
        note=(
            "speed-up: ratio of median times per search with a bootstrap CI over paired "
            "rounds (icml26_core.timing.compare_times: A and B interleaved after a warm-up, "
            "one process, one torch thread)."
        ),
    )
    rows = [
        (MCTSB_NAME, n, speed[MCTSB_NAME]),
        (MCTS1_NAME, n, speed[MCTS1_NAME]),
        (f"{MCTSB_NAME}, equal time", n_b, eq_comp),
    ]
    if gumbel is not None:
        rows.append((MCTX_NAME, n, speed[MCTX_NAME]))
    for label, nb, comp in rows:
        s = comp.speedup()
        speed_table.add_row(
            **{
                "A vs B": f"{RMCTS_NAME} vs {label}",
                "budget A": n,
                "budget B": nb,
                "median ms / search A": 1000 * comp.median_a / len(val),
                "median ms / search B": 1000 * comp.median_b / len(val),
                "speed-up of A (B/A)": s.effect,
                "95% CI": f"[{s.ci_low:.3f}, {s.ci_high:.3f}]",
                "rounds": len(comp.times_a),
            }
        )

    n_open = ctx.pick(2, 120, 250)
    openings = random_openings(game, n_open, 3, ctx.rng(2))
    ref_openings = openings[: ctx.pick(2, 50, 100)]
    floor_openings = openings[: ctx.pick(1, 30, 50)]
    mctx_openings = openings[: ctx.pick(1, 20, 50)]
    table = Table(
        title=(
            f"Connect four, self-play network, matches from random 3-ply openings, "
            f"both colours (RMCTS at {n} evaluations per move)"
        ),
        columns=[
            "match (A vs B)",
            "budget A",
            "budget B",
            "games",
            "score A",
            "95% CI",
            "W/D/L",
            "median ms / move A",
            "median ms / move B",
        ],
        note=(
            "score: win 1, draw 1/2, loss 0 for A; 95% Wilson interval "
            "(icml26_core.stats.win_rate); budget: network evaluations per move (the "
            f"open_spiel bot: simulations with one random rollout each); MCTS-UCB's "
            f"equal-time budget {n_b} was calibrated on validation positions."
        ),
    )
    mb = _searcher(MCTSB_NAME, ev, n_b)
    jobs = [
        ("equal time", f"{RMCTS_NAME} vs {MCTSB_NAME}, equal time", rm, mb, n, n_b, openings),
        (
            "equal evaluations",
            f"{RMCTS_NAME} vs {MCTSB_NAME}, equal evaluations",
            rm,
            _searcher(MCTSB_NAME, ev, n),
            n,
            n,
            openings,
        ),
        (
            "reference RMCTS",
            f"{RMCTS_NAME} vs open_spiel MCTSBot (C++, rollouts)",
            rm,
            OpenSpielMCTSBot(game, simulations=bot_sims, seed=ctx.seed),
            n,
            bot_sims,
            ref_openings,
        ),
        (
            "reference MCTS",
            f"{MCTSB_NAME} vs open_spiel MCTSBot (C++, rollouts)",
            mb,
            OpenSpielMCTSBot(game, simulations=bot_sims, seed=ctx.seed),
            n_b,
            bot_sims,
            ref_openings,
        ),
        (
            "floor policy",
            f"{RMCTS_NAME} vs {PRIOR_NAME}",
            rm,
            RMCTS(ev, simulations=1),
            n,
            1,
            floor_openings,
        ),
        *(
            [
                (
                    "mctx",
                    f"{RMCTS_NAME} vs {MCTX_NAME}, equal evaluations",
                    rm,
                    gumbel,
                    n,
                    n,
                    mctx_openings,
                )
            ]
            if gumbel is not None
            else []
        ),
        (
            "floor policy MCTS",
            f"{MCTSB_NAME} vs {PRIOR_NAME}",
            mb,
            RMCTS(ev, simulations=1),
            n_b,
            1,
            floor_openings,
        ),
        (
            "floor random",
            f"{RMCTS_NAME} vs {RANDOM_NAME}",
            rm,
            RandomPlayer(ctx.seed),
            n,
            0,
            floor_openings,
        ),
    ]
    results: dict[str, dict] = {}
    for kind, label, a, b, na, nb, ops in ctx.progress(jobs, "connect four matches"):
        # mctx compiles its search once per process: one chunk of games per worker
        chunks = 2 if kind == "mctx" else None
        m = play_match(game, a, b, ops, executor=executor, seed=ctx.seed, chunks=chunks)
        results[kind] = _match_row(table, label, na, nb, m)

    et, ee = results["equal time"], results["equal evaluations"]

    def score_claim(statement: str, r: dict, threshold: float) -> Claim:
        w, d, lo = (int(x) for x in r["W/D/L"].split("/"))
        return Claim.win_rate(
            statement,
            w,
            d,
            lo,
            threshold=threshold,
            names=("RMCTS", r["match (A vs B)"].split(" vs ")[1]),
        )

    strength_eq_evals = score_claim(
        f"At equal evaluations ({n} per move) RMCTS is as strong as MCTS-UCB batched with a "
        f"virtual loss (margin {SCORE_MARGIN}).",
        ee,
        0.5 - SCORE_MARGIN,
    )
    fraction = Claim.faster(
        f"At equal evaluations RMCTS takes at most 1/{FRACTION:g} of the time per search of "
        "MCTS-UCB batched with a virtual loss.",
        speed[MCTSB_NAME].times_a,
        speed[MCTSB_NAME].times_b,
        at_least=FRACTION,
        names=("RMCTS", MCTSB_NAME),
        paired=True,
    )
    head = Claim.all_of(
        "RMCTS matches or exceeds MCTS-UCB's playing strength at a small fraction of its time "
        "per move.",
        [strength_eq_evals, fraction],
        rule=(
            f"connect four, equal network evaluations ({n} per move), against MCTS-UCB "
            f"batched like RMCTS (batch {BATCH}, virtual loss): RMCTS's score over "
            f"{ee['games']} games has a Wilson CI above {0.5 - SCORE_MARGIN} (margin "
            f"{SCORE_MARGIN}), and its time per search is at least {FRACTION:g}x shorter "
            "(ratio of medians, interleaved rounds, CI above the bound)"
        ),
    )
    game_times = np.asarray(et["game_seconds"], dtype=float)
    equal_time = Claim.all_of(
        "At equal time per move RMCTS matches or exceeds MCTS-UCB's playing strength.",
        [
            score_claim(
                f"equal time: RMCTS ({n}) is as strong as MCTS-UCB batched with a virtual loss "
                f"({n_b}), margin {SCORE_MARGIN}",
                et,
                0.5 - SCORE_MARGIN,
            ),
            Claim.faster(
                f"equal time, checked in the match: RMCTS's time per move is at most "
                f"{TIME_SLACK:g}x MCTS-UCB's",
                game_times[:, 0],
                game_times[:, 1],
                at_least=1 / TIME_SLACK,
                names=("RMCTS", MCTSB_NAME),
                paired=True,
            ),
        ],
        rule=(
            f"connect four, RMCTS at {n} evaluations per move vs MCTS-UCB batched with a "
            f"virtual loss at {n_b}, the simulations that take RMCTS's time per search on "
            f"validation positions: RMCTS's score over {et['games']} games has a Wilson CI "
            f"above {0.5 - SCORE_MARGIN} (margin {SCORE_MARGIN}), and in those games its "
            f"median time per move is at most {TIME_SLACK:g}x MCTS-UCB's (per-game medians, "
            "paired by game, ratio of medians with its CI)"
        ),
    )
    sequential = Claim.faster(
        f"At equal evaluations RMCTS takes at most 1/{FRACTION:g} of the time per search of "
        "sequential MCTS-UCB (no leaf batching; the old headline's baseline).",
        speed[MCTS1_NAME].times_a,
        speed[MCTS1_NAME].times_b,
        at_least=FRACTION,
        names=("RMCTS", MCTS1_NAME),
        paired=True,
    )
    ra, rb = results["reference RMCTS"]["outcomes"], results["reference MCTS"]["outcomes"]
    per_open_a = np.asarray(ra).reshape(-1, 2).mean(axis=1)  # both colours of one opening
    per_open_b = np.asarray(rb).reshape(-1, 2).mean(axis=1)
    reference = Claim.non_inferior(
        "Against open_spiel's C++ MCTSBot with random rollouts, RMCTS is as strong as "
        f"MCTS-UCB at equal time (margin {SCORE_MARGIN}).",
        per_open_a,
        per_open_b,
        margin=SCORE_MARGIN,
        names=("RMCTS", MCTSB_NAME),
        test="wilcoxon",
        metric=(
            f"score per opening (2 games) against MCTSBot with {bot_sims} simulations, "
            f"RMCTS at {n} vs MCTS-UCB at {n_b} evaluations"
        ),
    )
    floor = score_claim(
        "RMCTS's search is stronger than its network's policy alone (the floor: one "
        "evaluation, no search).",
        results["floor policy"],
        0.5,
    )
    extra = []
    if "mctx" in results:
        extra.append(
            score_claim(
                f"At equal evaluations ({n} per move) RMCTS is as strong as mctx's Gumbel MuZero "
                f"policy with the same network (margin {SCORE_MARGIN}).",
                results["mctx"],
                0.5 - SCORE_MARGIN,
            )
        )
    rows_data = {k: v for k, v in results.items()}
    data = {
        "budget": n,
        "equal_time_budget": n_b,
        "bot_simulations": bot_sims,
        "matches": rows_data,
        "speed": {
            k: {"times_a": list(c.times_a), "times_b": list(c.times_b)} for k, c in speed.items()
        },
    }
    return [speed_table, table], [head, equal_time, sequential, reference, floor, *extra], data


# ---------------------------------------------------------------- run


def _figure(ctx: RunContext, ttt: dict, c4: dict) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    colors = {RMCTS_NAME: "C3", MCTS1_NAME: "C0", MCTSB_NAME: "C2"}
    for ev_name, style in (("self-play network", "-"), ("random rollouts", ":")):
        for method, color in colors.items():
            x = ttt["budgets"]
            y = [ttt["rates"][f"{ev_name} | {method} | {b}"] for b in x]
            axes[0].plot(x, y, style, marker="o", color=color, label=f"{method}, {ev_name}")
    axes[0].set(
        xscale="log",
        xlabel="network evaluations per search",
        ylabel="optimal-move rate",
        title="Tic-tac-toe: equal evaluations",
    )
    axes[0].legend(fontsize=6)
    rows = list(c4["matches"].values())
    scores = np.array([r["score A"] for r in rows])
    err = np.array(
        [[s - r["ci_low"], r["ci_high"] - s] for s, r in zip(scores, rows, strict=True)]
    ).T
    axes[1].barh(range(len(rows)), scores, xerr=err, color="C3", capsize=3)
    axes[1].axvline(0.5, color="k", lw=0.8, ls="--")
    axes[1].axvline(0.5 - SCORE_MARGIN, color="C7", lw=0.8, ls=":")
    axes[1].set_yticks(range(len(rows)), [r["match (A vs B)"] for r in rows], fontsize=6)
    axes[1].set(xlim=(0, 1), xlabel="score of A (95% Wilson CI)", title="Connect four matches")
    fig.tight_layout()
    ctx.save_figure(fig, "rmcts")


def run(ctx: RunContext) -> Result:
    """Train (or load cached) networks, measure policy quality, time and play the matches."""
    # Tiny networks on small batches: one thread avoids OpenMP spin contention.
    with torch_threads(1):
        _one_thread()
        return _run(ctx)


def _run(ctx: RunContext) -> Result:
    notes = []
    ttt_cfg, c4_cfg = _ttt_config(ctx), _c4_config(ctx)
    ttt_net, ttt_log = load_or_train(
        "tic_tac_toe", ttt_cfg, device=ctx.device, progress=ctx.progress
    )
    c4_net, c4_log = load_or_train("connect_four", c4_cfg, device=ctx.device, progress=ctx.progress)
    for name, cfg, log in (("tic-tac-toe", ttt_cfg, ttt_log), ("connect four", c4_cfg, c4_log)):
        notes.append(
            f"{name} network: {cfg.iterations} x {cfg.games_per_iteration} self-play games with "
            f"RMCTS at {cfg.simulations} evaluations per move, trained in "
            f"{float(log['seconds'][0]):.1f} s (cached afterwards); final policy / value loss "
            f"{float(log['policy_loss'][-1]):.3f} / {float(log['value_loss'][-1]):.3f}."
        )
    ttt_tables, ttt_claims, ttt_data = _tic_tac_toe(ctx, ttt_net)
    processes = ctx.pick(1, 2, 2)
    executor = None
    if processes > 1:
        executor = ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker
        )
    try:
        c4_tables, c4_claims, c4_data = _connect_four(ctx, c4_net, executor)
    finally:
        if executor is not None:
            executor.shutdown()
    _figure(ctx, ttt_data, c4_data)
    notes.append(
        "Budgets count tree nodes (RMCTS) or simulations (MCTS-UCB), the root included; "
        "terminal nodes cost no network evaluation. Times are wall times of single-threaded "
        f"Python searches with a torch network on {ctx.device}. Matches ran in {processes} "
        "worker process(es): each game is played whole in one process, both sides moving in "
        "turn there, so machine load slows both alike; the searches are deterministic, so the "
        "outcomes do not depend on the number of processes."
    )
    return Result(
        tables=[*c4_tables, *ttt_tables],
        claims=[*c4_claims, *ttt_claims],
        notes=notes,
        data={
            "tic_tac_toe": ttt_data,
            "connect_four": c4_data,
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
