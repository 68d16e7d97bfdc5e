"""The headline experiment of td-expstep: `icml26 run td-expstep`.

TD(0) with linear features on five Markov reward processes (three gymnasium toy-text
environments under the uniform random policy, Boyan's chain, the 19-state random
walk), i.i.d. and Markovian sampling, against the omega-based 1/t schedule, constant
steps, Polyak-Ruppert averaging, projected TD and LSTD, all on the same samples.
Every tunable constant (eta0, the constant step, the omega multiplier) is chosen per
(MRP, horizon) on validation seeds that no verdict reads.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from icml26_core import Claim, Experiment, Result, RunContext, Table
from icml26_core.stats import bootstrap_band

from td_expstep.mrp import (
    ChainSampler,
    IIDSampler,
    boyan_chain,
    mixing_time,
    mrp_from_env,
    omega,
    random_features,
    random_walk,
    td_fixed_point,
)
from td_expstep.td import LinearTD, lstd

ETA0_GRID = (0.05, 0.1, 0.2, 0.5, 1.0)  # exponential schedule: a 20x range (claim 3)
CONST_GRID = (0.003, 0.01, 0.03, 0.1, 0.3)  # constant step: a grid of the same size
OMEGA_MULT = (0.1, 1.0, 10.0)  # omega/10, the true omega, omega x10
N_FEATURES = 8


def _spread_of_medians(idx: np.ndarray, *, errors: np.ndarray, axis: int = -1) -> np.ndarray:
    """Max / min over the eta0 grid of the median error of the seeds ``idx`` (as floats).

    ``errors`` is (seeds, grid); ``idx`` (..., seeds) comes from the bootstrap.
    """
    idx = np.moveaxis(np.asarray(idx), axis, -1).astype(int)
    med = np.median(errors[idx], axis=-2)  # (..., grid)
    return med.max(axis=-1) / med.min(axis=-1)


def _mrps(ctx: RunContext, names: list[str]) -> list[dict[str, Any]]:
    import gymnasium as gym

    out = []
    for i, name in enumerate(names):
        rng = ctx.rng(1000 + i)
        if name == "Boyan chain":
            P, r, mu, Phi = boyan_chain()
            start = np.eye(len(r))[-1]
        elif name == "random walk":
            P, r, mu = random_walk()
            Phi = random_features(len(r), N_FEATURES, rng)
            start = np.eye(len(r))[len(r) // 2]
        else:
            env = gym.make(name)
            P, r, mu = mrp_from_env(env)
            start = np.asarray(env.unwrapped.initial_state_distrib, dtype=np.float64)
            Phi = random_features(len(r), N_FEATURES, rng)
            env.close()
        out.append({"name": name, "P": P, "r": r, "mu": mu, "Phi": Phi, "start": start})
    return out


def _configs(regime: str, T: int, gamma: float, om: float, radius: float) -> list[dict]:
    """The step-size configurations run side by side (one batch row each)."""
    cfg: list[dict] = []
    lams = [("exponential", 0.0)]
    if regime == "markov":
        lams = [
            ("exponential, lambda=0", 0.0),
            ("exponential, lambda=log(T)/T", np.log(T) / T),
            ("exponential, lambda=1/sqrt(T)", 1.0 / np.sqrt(T)),
        ]
    for fam, lam in lams:
        for e in ETA0_GRID:
            cfg.append({"family": fam, "kind": "exp", "p": e, "lam": lam, "rad": np.inf})
    for c in CONST_GRID:
        cfg.append({"family": "constant", "kind": "const", "p": c, "lam": 0.0, "rad": np.inf})
    for m in OMEGA_MULT:
        fam = "1/t, omega-based" if regime == "iid" else "projected TD (1/t, omega-based)"
        rad = np.inf if regime == "iid" else radius
        cfg.append({"family": fam, "kind": "inv", "p": m * om, "lam": 0.0, "rad": rad})
    return cfg


def _run_td(cfg: list[dict], phi, r, phi2, gamma: float, T: int):
    """Run every configuration on the same transitions; return (last, average) iterates."""
    kinds = np.array([c["kind"] for c in cfg])
    p = np.array([c["p"] for c in cfg])
    is_exp, is_inv = kinds == "exp", kinds == "inv"
    eta_const = np.where(kinds == "const", p, 0.0)
    decay = 1.0 / T

    def schedule(t: int) -> np.ndarray:
        eta = eta_const.copy()
        eta[is_exp] = p[is_exp] * decay ** (t / T)
        eta[is_inv] = np.minimum(1.0, 1.0 / (p[is_inv] * (1.0 - gamma) * (t + 1.0)))
        return eta

    rad = np.array([c["rad"] for c in cfg])
    td = LinearTD(
        phi.shape[-1],
        gamma,
        schedule,
        regularization=np.array([c["lam"] for c in cfg]),
        projection_radius=rad if np.isfinite(rad).any() else None,
    )
    # rows (T, S, 1, k) broadcast against the configurations: theta is (S, M, k)
    td.fit((phi[:, :, None, :], r[:, :, None], phi2[:, :, None, :]))
    return td.theta_, td.theta_avg_


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def run(ctx: RunContext) -> Result:
    """Measure the four claims at ``ctx.scale`` and decide them with the core's builders."""
    names = ctx.pick(
        smoke=["FrozenLake-v1", "Boyan chain"],
        default=["FrozenLake-v1", "CliffWalking-v1", "Taxi-v4", "Boyan chain", "random walk"],
    )
    horizons = ctx.pick(
        smoke=[250, 500, 1000],
        default=[1000, 3000, 10000, 30000],
        full=[10**3, 10**4, 10**5, 10**6],
    )
    gammas = ctx.pick(smoke=[0.9], default=[0.9], full=[0.9, 0.99])
    n_val = ctx.pick(smoke=4, default=8)
    n_test = ctx.pick(smoke=8, default=32, full=32)
    n_seeds = n_val + n_test
    test = slice(n_val, None)
    mrps = _mrps(ctx, names)

    info = Table(
        "the MRPs (uniform random policy; termination = reset)",
        ["MRP", "states visited", "features", "gamma", "omega", "tau_mix", "||theta*||"],
    )
    iid_tab = Table(
        "i.i.d. sampling: last-iterate relative error ||theta_T - theta*||^2/||theta*||^2 "
        "(median over test seeds) and its fitted log-log slope in T",
        ["MRP", "method", "slope", "error at T_max", "||V - V*||_mu at T_max", "n"],
    )
    mk_tab = Table(
        "Markovian sampling (one trajectory per seed): relative error and slope",
        ["MRP", "method", "slope", "error at T_max", "||V - V*||_mu at T_max", "n"],
    )
    rob_tab = Table(
        "robustness: i.i.d. error at T_max (median over test seeds) for each eta0 of the "
        "exponential schedule (no tuning)",
        ["MRP", *[f"eta0={e}" for e in ETA0_GRID], "max/min", "n"],
    )
    claims1, claims2, claims3, claims4 = [], [], [], []
    curves: dict[str, dict[str, list[float]]] = {}
    data: dict[str, Any] = {"horizons": horizons, "n_val": n_val, "n_test": n_test}

    jobs = [(m, g) for m in mrps for g in gammas]
    for j, (m, gamma) in enumerate(ctx.progress(jobs, "MRPs")):
        label = m["name"] if len(gammas) == 1 else f"{m['name']}, gamma={gamma}"
        P, r, mu, Phi = m["P"], m["r"], m["mu"], m["Phi"]
        theta_star = td_fixed_point(Phi, P, r, mu, gamma)
        om = omega(Phi, mu)
        norm2 = float(theta_star @ theta_star)
        info.add_row(
            MRP=label,
            **{"states visited": int((mu > 0).sum()), "features": Phi.shape[1]},
            gamma=gamma,
            omega=om,
            tau_mix=mixing_time(P, mu),
            **{"||theta*||": float(np.sqrt(norm2))},
        )

        def errors(theta: np.ndarray, theta_star=theta_star, norm2=norm2, Phi=Phi, mu=mu):
            d = theta - theta_star
            rel = np.sum(d * d, -1) / norm2
            v = np.sqrt(np.einsum("...i,ni,n,nj,...j->...", d, Phi, mu, Phi, d))
            return rel, v

        for regime, tab in (("iid", iid_tab), ("markov", mk_tab)):
            cfg = _configs(regime, horizons[-1], gamma, om, 2.0 * np.sqrt(norm2))
            fams = list(dict.fromkeys(c["family"] for c in cfg))
            # per family: rows (seeds x horizons) of the validation-chosen config
            chosen: dict[str, list[np.ndarray]] = {f: [] for f in fams}
            chosen_v: dict[str, list[np.ndarray]] = {f: [] for f in fams}
            extra = {"Polyak-Ruppert average (constant step)": [], "LSTD": [], "zero (floor)": []}
            extra_v = {k: [] for k in extra}
            grid_err: list[np.ndarray] = []
            for T in horizons:
                rng = ctx.rng(10_000 * (j + 1) + T + (0 if regime == "iid" else 7))
                cfg = _configs(regime, T, gamma, om, 2.0 * np.sqrt(norm2))
                if regime == "iid":
                    s, s2 = IIDSampler(mu, P).sample((T, n_seeds), rng)
                else:
                    states = ChainSampler(P, m["start"]).sample(T, n_seeds, rng)
                    s, s2 = states[:-1], states[1:]
                phi, phi2, rew = Phi[s], Phi[s2], r[s]
                last, avg = _run_td(cfg, phi, rew, phi2, gamma, T)
                rel, v = errors(last)  # (S, M)
                rel_avg, v_avg = errors(avg)
                for f in fams:
                    idx = [i for i, c in enumerate(cfg) if c["family"] == f]
                    best = idx[int(np.argmin(np.median(rel[:n_val, idx], 0)))]
                    chosen[f].append(rel[test, best])
                    chosen_v[f].append(v[test, best])
                idx = [i for i, c in enumerate(cfg) if c["kind"] == "const"]
                best = idx[int(np.argmin(np.median(rel_avg[:n_val, idx], 0)))]
                extra["Polyak-Ruppert average (constant step)"].append(rel_avg[test, best])
                extra_v["Polyak-Ruppert average (constant step)"].append(v_avg[test, best])
                rl, vl = errors(lstd(phi, rew, phi2, gamma))
                extra["LSTD"].append(rl[test])
                extra_v["LSTD"].append(vl[test])
                extra["zero (floor)"].append(np.ones(n_test))
                extra_v["zero (floor)"].append(
                    errors(np.zeros_like(theta_star))[1] * np.ones(n_test)
                )
                if regime == "iid":
                    idx = [i for i, c in enumerate(cfg) if c["kind"] == "exp"]
                    grid_err.append(rel[test][:, idx])
                    for mult, i in zip(
                        OMEGA_MULT,
                        [i for i, c in enumerate(cfg) if c["kind"] == "inv"],
                        strict=True,
                    ):
                        key = f"1/t, omega x{mult:g} (not tuned)"
                        chosen.setdefault(key, []).append(rel[test, i])
                        chosen_v.setdefault(key, []).append(v[test, i])
            x = np.repeat(np.asarray(horizons, dtype=np.float64), n_test)
            allr = {**chosen, **extra}
            allv = {**chosen_v, **extra_v}
            for name, vals in allr.items():
                y = np.concatenate(vals)
                tab.add_row(
                    MRP=label,
                    method=name,
                    slope=_slope(x, y) if name != "zero (floor)" else 0.0,
                    **{
                        "error at T_max": float(np.median(vals[-1])),
                        "||V - V*||_mu at T_max": float(np.median(allv[name][-1])),
                    },
                    n=len(vals[-1]),
                )
                curves.setdefault(f"{regime}: {label}", {})[name] = [
                    float(np.median(a)) for a in vals
                ]
            if regime == "iid":
                ours = np.concatenate(chosen["exponential"])
                claims1.append(
                    Claim.slope(
                        f"{label}: the exponential schedule's error decays like 1/T (i.i.d.).",
                        x,
                        ours,
                        expected=-1.025,
                        tol=0.275,
                        metric=f"{label} relative error vs T",
                    )
                )
                claims2.append(
                    Claim.non_inferior(
                        f"{label}: at T_max the exponential schedule is within 2x of the best "
                        "omega-based 1/t schedule.",
                        chosen["exponential"][-1],
                        chosen["1/t, omega-based"][-1],
                        margin=1.0,
                        log_ratio=True,
                        higher_is_better=False,
                        names=("exponential", "best omega-based 1/t"),
                        metric=f"{label} relative error at T={horizons[-1]}",
                    )
                )
                med = np.median(grid_err[-1], 0)
                rob_tab.add_row(
                    MRP=label,
                    **{f"eta0={e}": float(v) for e, v in zip(ETA0_GRID, med, strict=True)},
                    **{"max/min": float(med.max() / med.min())},
                    n=n_test,
                )
                spread = functools.partial(_spread_of_medians, errors=grid_err[-1])
                claims3.append(
                    Claim.from_evidence(
                        f"{label}: over eta0 in [0.05, 1] the final error changes by at most 5x.",
                        "max over eta0 / min over eta0 of the median test-seed error at T_max "
                        "<= 5; holds if its 95% CI (BCa bootstrap over test seeds, the same "
                        "seeds for every eta0) lies below 5, does not hold if it lies above",
                        bootstrap_band(
                            [np.arange(n_test, dtype=float)],
                            spread,
                            high=5.0,
                            effect_name="max/min over eta0 of the median error",
                            test="BCa bootstrap over test seeds",
                        ),
                        {"medians": [float(v) for v in med]},
                    )
                )
            else:
                ours_key = "exponential, lambda=log(T)/T"
                claims4.append(
                    Claim.all_of(
                        f"{label}: regularized TD(0) with exponential steps on one trajectory "
                        "decays with slope <= -0.6 and ends within 2x of projected TD.",
                        [
                            Claim.slope(
                                f"{label}: Markovian slope <= -0.6.",
                                x,
                                np.concatenate(chosen[ours_key]),
                                expected=-0.6,
                                tol=0.0,
                                alternative="less",
                                metric=f"{label} Markovian relative error vs T",
                            ),
                            Claim.non_inferior(
                                f"{label}: within 2x of projected TD at T_max.",
                                chosen[ours_key][-1],
                                chosen["projected TD (1/t, omega-based)"][-1],
                                margin=1.0,
                                log_ratio=True,
                                higher_is_better=False,
                                names=("regularized exponential", "projected TD"),
                                metric=f"{label} Markovian relative error at T={horizons[-1]}",
                            ),
                        ],
                    )
                )
    data["curves"] = curves
    claims = [
        Claim.all_of(
            "i.i.d. rate without omega: the exponential schedule's last-iterate "
            "error decays like 1/T (fitted slope in [-1.3, -0.75]) on every MRP.",
            claims1,
        ),
        Claim.all_of(
            "No constants, no loss: at the largest T, the exponential schedule is "
            "within 2x of the best omega-based 1/t schedule on every MRP.",
            claims2,
        ),
        Claim.all_of(
            "Robustness: over a 20x range of eta0 the final error varies by at "
            "most 5x on every MRP.",
            claims3,
        ),
        Claim.all_of(
            "Markovian: regularized TD(0) with exponential steps has slope <= -0.6 "
            "and ends within 2x of projected TD, with no projection or averaging, "
            "on every MRP.",
            claims4,
        ),
    ]
    figures = _figure(ctx, curves, horizons)
    return Result(
        tables=[info, iid_tab, mk_tab, rob_tab],
        claims=claims,
        figures=figures,
        data=data,
        notes=[
            f"{n_test} test seeds; eta0, the constant step and the omega multiplier are "
            f"chosen per (MRP, T) on {n_val} separate validation seeds.",
            "Projected TD gets the oracle radius 2||theta*|| and the true omega: a "
            "favourable baseline.",
        ],
    )


def _figure(ctx: RunContext, curves: dict, horizons: list[int]) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the plot is optional
        return []
    keys = [k for k in curves if k.startswith("iid")]
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.2), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        for name, ys in curves[key].items():
            if name.startswith(("exponential", "constant", "1/t", "LSTD", "Polyak")):
                ax.loglog(horizons, ys, marker="o", label=name)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("T")
    axes[0][0].set_ylabel("relative error")
    axes[0][-1].legend(fontsize=6)
    return [ctx.save_figure(fig, "iid_error_vs_T")]


EXPERIMENT = Experiment(
    name="td-expstep",
    title="TD(0) with an exponential step-size schedule, no problem constants needed",
    claim="TD(0) with exponential step sizes attains the 1/T last-iterate rate without "
    "omega or tau_mix, matching omega-tuned schedules.",
    run=run,
)
