"""Online PCA on real images: time to a target optimality gap (experiment part 1).

The top-``p`` principal subspace of centered images as a ``p x n`` Stiefel point,
minibatch gradients of ``-tr(X A_b^T A_b X^T) / (2 b)``, and the optimality gap
``1 - tr(X C X^T) / (sum of the top-p eigenvalues of C)`` against
``numpy.linalg.eigh`` (evaluated at the nearest orthonormal point, so an infeasible
Landing iterate is not credited with variance it explains by leaving the manifold).

A *race* steps several runs in turn on the same minibatches (the order alternates
every step, so machine load hits all alike), times each step alone, evaluates the
gap every ``eval_every`` steps (outside the timed region) and stops a run when it
reaches the target gap or its budget. A run's time to the target is its number of
steps to the target times the median time of its steps: every step of a method costs
the same (same shapes), and the median drops the scheduling stalls of a shared
machine (tens of ms, against steps of a few ms) that a plain sum would add at random.
The budget of a baseline is ``budget_factor`` times POGO's time to the target on the
same seed: a baseline still above the target then is at least that many times
slower, and its time is recorded as a lower bound.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from icml26_core.device import synchronize, torch_device

from pogo_optim._methods import FLOOR, POGO_FAMILY, Config
from pogo_optim.stiefel import orthogonality_error, random_stiefel


def pca_data(name: str) -> np.ndarray:
    """Centered data (float64, rows are samples) scaled so the top covariance eigenvalue is 1."""
    if name == "mnist":
        from icml26_core.datasets import load_mnist

        x, _ = load_mnist()
    else:
        from icml26_core.datasets import load_tabular

        x, _, _ = load_tabular(name)
    x = np.asarray(x, dtype=np.float64)
    x = x - x.mean(axis=0)
    top = np.linalg.eigvalsh(x.T @ x / len(x))[-1]
    return x / math.sqrt(top)


@dataclass
class Problem:
    """One online-PCA problem: data, covariance, the optimum, minibatches, a start."""

    data: torch.Tensor  # (N, n) float32
    cov: torch.Tensor  # (n, n) float32
    best: float  # sum of the top-p eigenvalues
    batches: list[np.ndarray]  # index arrays, one per step
    x0: torch.Tensor  # (p, n) float32 on the manifold

    def loss_fn(self, step: int):
        a = self.data[self.batches[step]]

        def loss(w: torch.Tensor) -> torch.Tensor:
            return -0.5 * (a @ w.mT).square().sum() / a.shape[0]

        return loss

    def gap(self, w: torch.Tensor, feasible: bool) -> float:
        """``1 - tr(Q C Q^T) / best`` with ``Q`` the nearest orthonormal point to ``w``."""
        if not feasible:
            u, _, vh = torch.linalg.svd(w.double(), full_matrices=False)
            w = (u @ vh).to(self.cov.dtype)
        explained = float(((w @ self.cov) * w).sum())
        return (self.best - explained) / self.best


def make_problem(data: np.ndarray, p: int, batch: int, steps: int, seed: int, device: str):
    """The problem of one seed: its minibatch order and its random start."""
    n_samples, _ = data.shape
    cov = data.T @ data / n_samples
    best = float(np.linalg.eigvalsh(cov)[::-1][:p].sum())
    rng = np.random.default_rng(seed)
    batches = [rng.choice(n_samples, size=batch, replace=False) for _ in range(steps)]
    dev = torch_device(device)
    x0 = random_stiefel(p, data.shape[1], generator=torch.Generator().manual_seed(seed))
    return Problem(
        data=torch.from_numpy(data).float().to(dev),
        cov=torch.from_numpy(cov).float().to(dev),
        best=best,
        batches=batches,
        x0=x0.to(dev),
    )


@dataclass
class Run:
    """The record of one configuration on one seed."""

    config: Config
    time: float = 0.0  # seconds spent in steps (the plain sum)
    steps: int = 0
    step_times: list[float] = field(default_factory=list)
    hit_time: float | None = None  # time to the target (None: not reached)
    hit_steps: int | None = None
    gaps: list[tuple[int, float, float]] = field(default_factory=list)  # (step, time, gap)
    max_orth: float = 0.0
    stopped: str = ""  # "target", "budget", "max steps", "diverged"

    @property
    def feasible(self) -> bool:
        return self.config.family != "Landing"

    @property
    def median_step(self) -> float:
        """Median seconds of one step."""
        return float(np.median(self.step_times)) if self.step_times else math.nan

    @property
    def robust_time(self) -> float:
        """Steps taken times the median step: the time to the target, or a lower bound."""
        return self.steps * self.median_step

    @property
    def final_gap(self) -> float:
        return self.gaps[-1][2] if self.gaps else math.nan

    def summary(self) -> dict:
        return {
            "config": self.config.label,
            "time_to_target_s": self.hit_time,
            "steps_to_target": self.hit_steps,
            "time_s": self.time,
            "robust_time_s": self.robust_time,
            "steps": self.steps,
            "ms_per_step": 1e3 * self.median_step,
            "final_gap": self.final_gap,
            "max_orth": self.max_orth,
            "stopped": self.stopped,
        }


def race(
    problem: Problem,
    configs: list[Config],
    *,
    target: float,
    max_steps: int,
    eval_every: int,
    budget_factor: float,
    device: str,
    budget: float = math.inf,
    time_limit: float = math.inf,
    progress=None,
) -> list[Run]:
    """Step every configuration in turn until it reaches ``target`` or its budget.

    Times are robust times (steps x median step, see :attr:`Run.robust_time`). The
    budget of every run is ``budget_factor`` times the fastest POGO time to the
    target in this race, set as soon as a POGO run reaches it (``budget``: the budget
    until then, e.g. from a previous race; POGO runs themselves are never stopped by
    a provisional budget). No run takes more than ``max_steps`` steps or
    ``time_limit`` seconds of steps.

    Returns:
        One :class:`Run` per configuration, in the order given.
    """
    runs = [Run(c) for c in configs]
    runners = [c.make(problem.x0) for c in configs]
    g0 = problem.gap(problem.x0, True)
    for r in runs:
        r.gaps.append((0, 0.0, g0))
    active = list(range(len(runs)))
    pogo_best = math.inf
    steps = range(max_steps) if progress is None else progress(range(max_steps))
    for t in steps:
        if not active:
            continue  # drain the progress bar
        loss_fn = problem.loss_fn(t)
        order = active if t % 2 == 0 else active[::-1]
        for i in order:
            run, runner = runs[i], runners[i]
            synchronize(device)
            t0 = time.perf_counter()
            runner.step(loss_fn)
            synchronize(device)
            dt = time.perf_counter() - t0
            run.time += dt
            run.step_times.append(dt)
            run.steps += 1
            w = runner.weight()
            err = float(orthogonality_error(w))
            run.max_orth = max(run.max_orth, err)
            if not math.isfinite(err) or err > 10:
                run.stopped = "diverged"
                continue
            if run.steps % eval_every == 0:
                g = problem.gap(w, run.feasible)
                run.gaps.append((run.steps, run.time, g))
                if run.config.family == FLOOR:
                    run.stopped = "floor"  # a step that does not move never improves
                    continue
                if g <= target:
                    run.hit_steps, run.stopped = run.steps, "target"
                    run.hit_time = run.robust_time
                    if run.config.family == POGO_FAMILY:
                        pogo_best = min(pogo_best, run.hit_time)
                    continue
            limit = budget_factor * pogo_best
            if run.config.family != POGO_FAMILY and not math.isfinite(pogo_best):
                limit = budget
            if run.steps % eval_every == 0 and run.robust_time > limit:
                run.stopped = "budget"
            elif run.time > time_limit:
                run.stopped = "time limit"
        active = [i for i in active if not runs[i].stopped]
    for r in runs:
        r.stopped = r.stopped or "max steps"
    return runs


def tune(problem: Problem, fams: dict[str, list[Config]], *, progress=None, **race_kw):
    """Race POGO's configurations first, then every other family's within the budget.

    Validation only: the other families then get ``budget_factor`` times POGO's best
    time from the start (a family that needs more is at least that many times slower
    on this seed), so that slow configurations cost that budget and no more.

    Returns:
        ``(runs, chosen)``: every :class:`Run`, and ``{family: Run}`` of the kept ones.
    """
    ours = fams[POGO_FAMILY]
    runs = race(problem, ours, progress=progress and (lambda it: progress(it, "POGO")), **race_kw)
    reached = [r.hit_time for r in runs if r.hit_time is not None]
    budget = race_kw.pop("budget_factor") * min(reached) if reached else math.inf
    others = [c for f, cs in fams.items() if f != POGO_FAMILY for c in cs]
    runs += race(
        problem,
        others,
        budget_factor=math.inf,
        budget=budget,
        progress=progress and (lambda it: progress(it, "the others")),
        **race_kw,
    )
    chosen = {f: choose([r for r in runs if r.config.family == f]) for f in fams}
    return runs, chosen


def choose(runs: list[Run]) -> Run:
    """The run a family keeps: the fastest to the target, else the lowest final gap."""
    reached = [r for r in runs if r.hit_time is not None]
    if reached:
        return min(reached, key=lambda r: r.hit_time)
    return min(runs, key=lambda r: r.final_gap if math.isfinite(r.final_gap) else math.inf)
