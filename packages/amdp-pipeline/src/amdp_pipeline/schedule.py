"""Pipeline schedules (AMDP, GPipe, 1F1B, PipeDream, PipeDream-2BW) from one generator.

Every schedule is built by the same event-driven list scheduler: S stages, K pipelines
(each a full copy of the model cut into S stages), ``m`` minibatches per optimization
step, and per-stage costs of a forward (F) and a backward (B) pass. What differs
between the methods is four rules (our reading; see the package README):

=============  =========  ================  ==========  =========================  =======
method         pipelines  stage-0 in flight  priority    update                     stash
=============  =========  ================  ==========  =========================  =======
``gpipe``      1          all of a step      F first     per step, flush            no
``1f1b``       1          S                  B first     per step, flush            no
``pipedream``  1          S                  B first     after every minibatch      yes
``2bw``        1          S                  B first     per step, no flush         yes
``amdp``       ceil(S/2)  2 per pipeline     B first     per step, no flush         no
=============  =========  ================  ==========  =========================  =======

"Flush": a forward of step t at stage s waits until stage s holds the weights of step t
(all of step t-1's backward passes are in). "No flush": it waits only for step t-2's
update, so between a minibatch's forward and backward at most one update can happen at
that stage. AMDP places stage j of pipeline k on worker ``(o_k + j) mod S`` for even k
and ``(o_k - 1 - j) mod S`` for odd k (the reverse direction), ``o_k = floor(k S / K)``.
The replicas of one stage (one per pipeline) sum their gradients and update together,
so they hold the same weights at every moment; the update (and its all-reduce) is
modelled as instantaneous. Without weight stashing a backward that finds newer weights
than its forward used recomputes the stage's forward first, at the cost of one more F.

References:
    The abstract in ``shared/papers/amdp-pipeline.md`` (AMDP); Huang et al. 2019
    (GPipe); Narayanan et al. 2019 (PipeDream, 1F1B); Narayanan et al. 2021
    (PipeDream-2BW); Li & Hoefler 2021 (Chimera, bidirectional placement).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icml26_core.validation import check_choice, check_float, check_int

__all__ = [
    "METHODS",
    "Action",
    "Schedule",
    "SimulationResult",
    "default_n_pipelines",
    "make_schedule",
    "placement",
    "simulate",
]

METHODS = ("amdp", "gpipe", "1f1b", "pipedream", "2bw")

_RULES: dict[str, dict[str, Any]] = {
    "gpipe": {"inflight": None, "b_first": False, "update": "flush", "stash": False},
    "1f1b": {"inflight": "S", "b_first": True, "update": "flush", "stash": False},
    "pipedream": {"inflight": "S", "b_first": True, "update": "every", "stash": True},
    "2bw": {"inflight": "S", "b_first": True, "update": "step", "stash": True},
    "amdp": {"inflight": 2, "b_first": True, "update": "step", "stash": False},
}


def default_n_pipelines(n_stages: int) -> int:
    """AMDP's number of concurrent pipelines for ``n_stages`` stages: ``ceil(S / 2)``.

    With at most 2 minibatches in flight, one pipeline keeps a worker busy about 2/S of
    the time, so ``S / 2`` pipelines fill it (our rule from the abstract's "adapts their
    number according to pipeline depth").

    Raises:
        TypeError, ValueError: If ``n_stages`` is not an integer >= 1.
    """
    return max(1, math.ceil(check_int("n_stages", n_stages, low=1) / 2))


def placement(n_stages: int, n_pipelines: int) -> list[list[int]]:
    """Worker of each (pipeline, stage): ``result[k][j]``.

    Pipeline k starts at worker ``o_k = floor(k S / K)``; even pipelines run forward
    through the workers, odd ones in reverse (bidirectional, as in Chimera).

    Args:
        n_stages: S >= 1 (also the number of workers).
        n_pipelines: K >= 1.

    Returns:
        K lists of S worker indices in ``[0, S)``.

    Raises:
        TypeError, ValueError: If an argument is not an integer >= 1 (named).
    """
    s = check_int("n_stages", n_stages, low=1)
    k_all = check_int("n_pipelines", n_pipelines, low=1)
    out = []
    for k in range(k_all):
        o = (k * s) // k_all
        out.append([(o + j) % s if k % 2 == 0 else (o - 1 - j) % s for j in range(s)])
    return out


@dataclass(frozen=True)
class Action:
    """One action of a schedule.

    Attributes:
        kind: ``"F"`` (forward of one stage), ``"B"`` (backward of one stage, including
            a recomputed forward when ``recompute``), ``"U"`` (the optimizer update of
            one stage, applied to all its replicas at once; instantaneous).
        worker: The worker (device/rank) that runs it; -1 for ``"U"`` (all replicas).
        stage: Stage index in ``[0, S)``.
        pipeline: Pipeline index in ``[0, K)``; -1 for ``"U"``.
        minibatch: Global minibatch index (step ``minibatch // m``); for ``"U"``, the
            minibatch whose backward completed the update.
        start: Start time (units of the cost dictionary).
        end: End time.
        version: Number of updates the stage had received when the action started; for
            ``"U"``, the version it produces.
        weights: The weight version the computation used (F's version under stashing).
        recompute: For ``"B"``: the forward is recomputed with newer weights (mismatch).
        seq: Position in the global commit order (what :class:`~amdp_pipeline.Emulator`
            replays).
    """

    kind: str
    worker: int
    stage: int
    pipeline: int
    minibatch: int
    start: float
    end: float
    version: int
    weights: int
    recompute: bool = False
    seq: int = 0


@dataclass
class Schedule:
    """A schedule: the actions of every worker, with times and weight versions.

    Attributes:
        method: One of :data:`METHODS`.
        n_stages: S.
        n_pipelines: K.
        minibatches_per_step: m (each pipeline gets m / K per step).
        n_steps: Optimization steps covered.
        stash: Whether backward passes use the forward's (stashed) weights.
        max_inflight: Stage-0 in-flight limit per pipeline (None: unlimited).
        update: ``"flush"``, ``"step"`` or ``"every"``.
        cost: Per-stage costs, ``{"F": [..S], "B": [..S]}``.
        actions: Every action in commit order (``seq``).
        workers: ``workers[w]`` is worker w's actions in time order (no ``"U"``).
        placement: ``placement[k][j]`` = worker of stage j of pipeline k.
    """

    method: str
    n_stages: int
    n_pipelines: int
    minibatches_per_step: int
    n_steps: int
    stash: bool
    max_inflight: int | None
    update: str
    cost: dict[str, list[float]]
    actions: list[Action] = field(default_factory=list)
    placement: list[list[int]] = field(default_factory=list)

    @property
    def workers(self) -> list[list[Action]]:
        """Per-worker ordered compute actions (F and B)."""
        out: list[list[Action]] = [[] for _ in range(self.n_stages)]
        for a in self.actions:
            if a.kind != "U":
                out[a.worker].append(a)
        for acts in out:
            acts.sort(key=lambda a: (a.start, a.seq))
        return out

    @property
    def n_minibatches(self) -> int:
        """Total minibatches, ``n_steps * m``."""
        return self.n_steps * self.minibatches_per_step

    def pipeline_of(self, minibatch: int) -> int:
        """The pipeline that carries a minibatch: ``(minibatch mod m) mod K``."""
        return (minibatch % self.minibatches_per_step) % self.n_pipelines

    def step_of(self, minibatch: int) -> int:
        """The optimization step a minibatch belongs to (``minibatch // m``)."""
        return minibatch // self.minibatches_per_step


def _costs(cost: Mapping[str, Any] | None, s: int) -> dict[str, list[float]]:
    if cost is not None and not isinstance(cost, Mapping):
        raise TypeError(
            f"cost must be a mapping with keys 'F' and 'B' or None, got {type(cost).__name__}"
        )
    cost = {"F": 1.0, "B": 2.0} if cost is None else dict(cost)
    if set(cost) - {"F", "B"} or not {"F", "B"} <= set(cost):
        raise ValueError(f"cost must be a mapping with keys 'F' and 'B', got {cost!r}")
    out = {}
    for key, value in cost.items():
        seq = isinstance(value, Sequence) and not isinstance(value, str | bytes)
        vals = list(value) if seq else [value] * s
        if len(vals) != s:
            raise ValueError(f"cost[{key!r}] must be a number or {s} numbers, got {len(vals)}")
        out[key] = [check_float(f"cost[{key!r}]", v, low=0.0, low_inclusive=False) for v in vals]
    return out


def make_schedule(
    n_stages: int,
    n_pipelines: int | None = None,
    minibatches_per_step: int = 4,
    cost: Mapping[str, Any] | None = None,
    *,
    method: str = "amdp",
    n_steps: int = 4,
    stash: bool | None = None,
    max_inflight: int | None = None,
) -> Schedule:
    """Build a schedule by event-driven list scheduling.

    Each worker, when idle, starts the highest-priority ready action among the stages it
    hosts (backward first except for GPipe; older minibatches first). Dependencies: F of
    stage j after F of stage j-1, B of stage j after B of stage j+1 (B of the last stage
    after its F), the stage-0 in-flight limit of the minibatch's pipeline, minibatches
    admitted in order, and the weight-version rule of the method (see the module
    docstring). Communication is not modelled (zero cost).

    Args:
        n_stages: S >= 1, also the number of workers.
        n_pipelines: K >= 1 concurrent pipelines; None gives :func:`default_n_pipelines`
            for ``"amdp"`` and 1 for the others (which need K = 1).
        minibatches_per_step: m >= 1, divisible by K.
        cost: ``{"F": c, "B": c}`` with ``c`` a positive number or one per stage (S
            numbers), in any time unit; default ``{"F": 1, "B": 2}``.
        method: One of :data:`METHODS`.
        n_steps: Optimization steps to schedule (>= 1).
        stash: Weight stashing; None takes the method's default (PipeDream and 2BW
            stash, the others do not).
        max_inflight: Override of the stage-0 in-flight limit per pipeline (>= 1).

    Returns:
        The :class:`Schedule`.

    Raises:
        TypeError, ValueError: On a bad argument (named in the message), e.g.
            ``n_pipelines < 1``, ``minibatches_per_step`` not divisible by it, ``cost``
            not a mapping with keys ``"F"`` and ``"B"``, or a cost that is not positive.
    """
    method = check_choice("method", method, METHODS)
    s = check_int("n_stages", n_stages, low=1)
    if n_pipelines is None:
        n_pipelines = default_n_pipelines(s) if method == "amdp" else 1
    k_all = check_int("n_pipelines", n_pipelines, low=1)
    if method != "amdp" and k_all != 1:
        raise ValueError(f"n_pipelines must be 1 for method {method!r}, got {k_all}")
    m = check_int("minibatches_per_step", minibatches_per_step, low=1)
    if m % k_all:
        raise ValueError(f"minibatches_per_step ({m}) must be divisible by n_pipelines ({k_all})")
    n_steps = check_int("n_steps", n_steps, low=1)
    costs = _costs(cost, s)
    rules = dict(_RULES[method])
    if stash is not None:
        if not isinstance(stash, bool):
            raise TypeError(f"stash must be a bool or None, got {stash!r}")
        rules["stash"] = stash
    limit = rules["inflight"]
    limit = s if limit == "S" else limit
    if max_inflight is not None:
        limit = check_int("max_inflight", max_inflight, low=1)
    place = placement(s, k_all)
    sched = Schedule(
        method=method,
        n_stages=s,
        n_pipelines=k_all,
        minibatches_per_step=m,
        n_steps=n_steps,
        stash=rules["stash"],
        max_inflight=limit,
        update=rules["update"],
        cost=costs,
        placement=place,
    )
    _run_scheduler(sched, b_first=rules["b_first"])
    return sched


def _run_scheduler(sched: Schedule, *, b_first: bool) -> None:
    s, m, k_all = sched.n_stages, sched.minibatches_per_step, sched.n_pipelines
    n = sched.n_minibatches
    update, limit = sched.update, sched.max_inflight
    pipe = [sched.pipeline_of(i) for i in range(n)]
    step = [sched.step_of(i) for i in range(n)]
    # per pipeline, its minibatches in order
    queue = [[i for i in range(n) if pipe[i] == k] for k in range(k_all)]
    next_adm = [0] * k_all  # index into queue[k]
    inflight = [0] * k_all
    version = [0] * s
    done_b = [[0] * sched.n_steps for _ in range(s)]  # B's done per stage per step
    f_end: dict[tuple[int, int], float] = {}
    b_end: dict[tuple[int, int], float] = {}
    f_ver: dict[tuple[int, int], int] = {}
    ready_f: list[set[int]] = [set() for _ in range(s)]  # stage -> minibatches whose F(j) can go
    ready_b: list[set[int]] = [set() for _ in range(s)]
    hosted = [
        [(k, j) for k in range(k_all) for j in range(s) if sched.placement[k][j] == w]
        for w in range(s)
    ]
    busy_until = [0.0] * s
    events: list[tuple[float, int, int, str, int, int]] = []  # (time, order, worker, kind, mb, j)
    counter = 0
    seq = 0
    t = 0.0
    actions: list[Action] = []
    n_done = 0
    total = 2 * n * s

    def version_ok(i: int, j: int) -> bool:
        if update == "flush":
            return version[j] >= step[i]
        if update == "step":
            return version[j] >= step[i] - 1
        return True

    while n_done < total:
        # admissions at stage 0
        for k in range(k_all):
            while (
                next_adm[k] < len(queue[k])
                and (limit is None or inflight[k] < limit)
                and (update != "flush" or step[queue[k][next_adm[k]]] <= version[0])
            ):
                i = queue[k][next_adm[k]]
                ready_f[0].add(i)
                inflight[k] += 1
                next_adm[k] += 1
        progressed = False
        for w in range(s):
            if busy_until[w] > t:
                continue
            best = None
            for k, j in hosted[w]:
                cands = []
                for i in ready_b[j]:
                    if pipe[i] == k:
                        cands.append((0 if b_first else 1, i, "B"))
                for i in ready_f[j]:
                    if pipe[i] == k and version_ok(i, j):
                        cands.append((1 if b_first else 0, i, "F"))
                for c in cands:
                    key = (c[0], c[1])
                    if best is None or key < best[0]:
                        best = (key, c[2], c[1], k, j)
            if best is None:
                continue
            _, kind, i, k, j = best
            if kind == "F":
                ready_f[j].discard(i)
                dur = sched.cost["F"][j]
                f_ver[(i, j)] = version[j]
                weights, recompute = version[j], False
            else:
                ready_b[j].discard(i)
                fv = f_ver[(i, j)]
                recompute = (not sched.stash) and version[j] != fv
                weights = fv if sched.stash else version[j]
                dur = sched.cost["B"][j] + (sched.cost["F"][j] if recompute else 0.0)
            actions.append(
                Action(kind, w, j, k, i, t, t + dur, version[j], weights, recompute, seq)
            )
            seq += 1
            busy_until[w] = t + dur
            heapq.heappush(events, (t + dur, counter, w, kind, i, j))
            counter += 1
            progressed = True
        if progressed:
            continue  # re-admit and retry: the started actions may free nothing, then time moves
        if not events:  # pragma: no cover - a deadlock would be a bug in the rules
            raise RuntimeError(f"schedule deadlocked at t={t} ({n_done}/{total} actions)")
        t = events[0][0]
        while events and events[0][0] <= t:
            _, _, w, kind, i, j = heapq.heappop(events)
            n_done += 1
            if kind == "F":
                f_end[(i, j)] = t
                if j + 1 < s:
                    ready_f[j + 1].add(i)
                else:
                    ready_b[j].add(i)
            else:
                b_end[(i, j)] = t
                if j > 0:
                    ready_b[j - 1].add(i)
                else:
                    inflight[pipe[i]] -= 1
                applied = False
                if update == "every":
                    applied = True
                else:
                    done_b[j][step[i]] += 1
                    applied = done_b[j][step[i]] == m
                if applied:
                    version[j] += 1
                    actions.append(
                        Action("U", -1, j, -1, i, t, t, version[j], version[j], False, seq)
                    )
                    seq += 1
    sched.actions = actions


@dataclass
class SimulationResult:
    """What :func:`simulate` measures on a schedule.

    Attributes:
        makespan: Time from the first action to the last.
        busy: Busy time per worker (F and B, recomputation included).
        bubble_fraction: ``1 - useful / (S * makespan)``, where useful work counts each
            F and B once (a recomputed forward is overhead, not useful work).
        throughput: Minibatches per unit time, ``n_minibatches / makespan``.
        steady_throughput: Minibatches per unit time between the ends of the first and
            the last step's final update (excludes fill and drain when n_steps >= 3).
        peak_activations: Per worker, the most minibatches whose stage input is stored
            (F done, B not done) at one time, summed over the stages it hosts.
        f_version: ``f_version[i][j]``: weight version the F of minibatch i at stage j
            read.
        b_version: Weight version at the start of the matching B.
        gap: ``b_version - f_version`` (updates between F and B), per (i, j).
        max_gap: Largest gap; mean_gap: mean over (i, j).
        recomputed: Number of B's that recomputed their forward (no-stash mismatch).
        mismatched_per_step: Per step, per stage, the minibatches of that step whose
            F and B at that stage saw different versions.
        replicas_consistent: Every stage's update is applied once per version, to all
            replicas together (always true by construction; checked).
    """

    makespan: float
    busy: list[float]
    bubble_fraction: float
    throughput: float
    steady_throughput: float
    peak_activations: list[int]
    f_version: list[list[int]]
    b_version: list[list[int]]
    gap: list[list[int]]
    max_gap: int
    mean_gap: float
    recomputed: int
    mismatched_per_step: list[list[int]]
    replicas_consistent: bool

    @property
    def max_mismatched_per_step(self) -> int:
        """The largest count in :attr:`mismatched_per_step`."""
        return max((max(r) for r in self.mismatched_per_step), default=0)


def simulate(schedule: Schedule) -> SimulationResult:
    """Measure a schedule: makespan, bubble fraction, throughput, memory, versions.

    Args:
        schedule: From :func:`make_schedule`.

    Returns:
        A :class:`SimulationResult`.

    Raises:
        TypeError: If ``schedule`` is not a :class:`Schedule`.
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a Schedule, got {type(schedule).__name__}")
    s, n, m = schedule.n_stages, schedule.n_minibatches, schedule.minibatches_per_step
    comp = [a for a in schedule.actions if a.kind != "U"]
    t0 = min(a.start for a in comp)
    t1 = max(a.end for a in comp)
    makespan = t1 - t0
    busy = [0.0] * s
    useful = 0.0
    for a in comp:
        busy[a.worker] += a.end - a.start
        useful += schedule.cost[a.kind][a.stage]
    fv = [[-1] * s for _ in range(n)]
    bv = [[-1] * s for _ in range(n)]
    peak = [0] * s
    deltas: list[list[tuple[float, int]]] = [[] for _ in range(s)]
    f_start: dict[tuple[int, int], float] = {}
    recomputed = 0
    for a in comp:
        if a.kind == "F":
            fv[a.minibatch][a.stage] = a.version
            f_start[(a.minibatch, a.stage)] = a.start
            deltas[a.worker].append((a.start, +1))
        else:
            bv[a.minibatch][a.stage] = a.version
            deltas[a.worker].append((a.end, -1))
            recomputed += int(a.recompute)
    for w in range(s):
        cur = 0
        for _, d in sorted(deltas[w], key=lambda x: (x[0], x[1])):
            cur += d
            peak[w] = max(peak[w], cur)
    gap = [[bv[i][j] - fv[i][j] for j in range(s)] for i in range(n)]
    flat = [g for row in gap for g in row]
    mism = [[0] * s for _ in range(schedule.n_steps)]
    for i in range(n):
        for j in range(s):
            if gap[i][j] > 0:
                mism[i // m][j] += 1
    ups = [a for a in schedule.actions if a.kind == "U"]
    consistent = all(
        [a.version for a in ups if a.stage == j]
        == list(range(1, 1 + sum(u.stage == j for u in ups)))
        for j in range(s)
    )
    step_ends = [a.end for a in ups if a.stage == 0]
    if schedule.update == "every":
        step_ends = step_ends[m - 1 :: m]
    if len(step_ends) >= 3:
        steady = (len(step_ends) - 1) * m / (step_ends[-1] - step_ends[0])
    else:
        steady = n / makespan
    return SimulationResult(
        makespan=makespan,
        busy=busy,
        bubble_fraction=1.0 - useful / (s * makespan),
        throughput=n / makespan,
        steady_throughput=steady,
        peak_activations=peak,
        f_version=fv,
        b_version=bv,
        gap=gap,
        max_gap=max(flat),
        mean_gap=sum(flat) / len(flat),
        recomputed=recomputed,
        mismatched_per_step=mism,
        replicas_consistent=consistent,
    )
