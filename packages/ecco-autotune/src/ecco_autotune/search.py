"""Black-box searches over pass sequences: random search and a genetic algorithm."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from icml26_core.validation import check_float, check_int

from .passes import O3_PASSES, PASSES, validate_passes
from .program import Evaluation, Evaluator, Program, default_evaluator


@dataclass
class TuneResult:
    """What a search found.

    Attributes:
        best_passes: The best valid sequence (the seed when nothing beat it).
        best_cycles: Its cycles.
        evaluations: Sequences evaluated (the budget spent).
        valid_fraction: Fraction of evaluated sequences that built, ran and printed the
            reference checksum.
        history: Best cycles so far after each evaluation, shape ``(evaluations,)``.
        intents: The strategist's intent at each consultation (ECCO only).
    """

    best_passes: tuple[str, ...]
    best_cycles: float
    evaluations: int
    valid_fraction: float
    history: list[float] = field(default_factory=list)
    intents: list[str | None] = field(default_factory=list)


class _Tracker:
    """Evaluates batches (``workers`` tool runs at a time) and keeps the best."""

    def __init__(self, evaluator: Evaluator, program: Program, budget: int, workers: int):
        self.evaluator, self.program, self.budget = evaluator, program, budget
        self.workers = workers
        self.best: tuple[tuple[str, ...], float] | None = None
        self.history: list[float] = []
        self.valid = 0

    @property
    def left(self) -> int:
        return self.budget - len(self.history)

    def run(self, seqs: Sequence[tuple[str, ...]]) -> list[Evaluation]:
        seqs = list(seqs)[: self.left]
        if self.workers > 1 and len(seqs) > 1:
            with ThreadPoolExecutor(self.workers) as pool:
                evs = list(pool.map(lambda s: self.evaluator.evaluate(self.program, s), seqs))
        else:
            evs = [self.evaluator.evaluate(self.program, s) for s in seqs]
        for s, ev in zip(seqs, evs, strict=True):
            if ev.valid:
                self.valid += 1
                if self.best is None or ev.cycles < self.best[1]:
                    self.best = (s, ev.cycles)
            self.history.append(self.best[1] if self.best else math.inf)
        return evs

    def result(self, seed: tuple[str, ...], intents: list[str | None] | None = None) -> TuneResult:
        best = self.best or (seed, math.inf)
        n = len(self.history)
        return TuneResult(best[0], best[1], n, self.valid / n if n else 0.0, self.history,
                          intents or [])  # fmt: skip


def _check_common(program: Program, budget: int, evaluator: Evaluator | None) -> Evaluator:
    if not isinstance(program, Program):
        raise TypeError(f"program must be an ecco_autotune.Program, got {type(program).__name__}")
    check_int("budget", budget, low=1)
    if evaluator is not None and not isinstance(evaluator, Evaluator):
        raise TypeError(
            f"evaluator must be an ecco_autotune.Evaluator, got {type(evaluator).__name__}"
        )
    return evaluator or default_evaluator()


class RandomSearch:
    """Uniformly random pass sequences (lengths uniform in ``lengths``), after the seed.

    Args:
        lengths: Inclusive range of sequence lengths.
        seed_passes: Evaluated first (default: the -O3 pass list), so every method
            starts from the same point.
        workers: Concurrent evaluations (tool processes), 1 or 2 here.

    Raises:
        TypeError: If ``lengths`` is not a pair or an argument has the wrong type
            (``program``, ``evaluator`` of :meth:`tune` too).
        ValueError: If a length, ``workers`` or ``budget`` is < 1, or ``seed_passes``
            names an unknown pass.
    """

    def __init__(
        self,
        lengths: tuple[int, int] = (10, 40),
        *,
        seed_passes: Sequence[str] = O3_PASSES,
        workers: int = 2,
    ) -> None:
        if not isinstance(lengths, (tuple, list)) or len(lengths) != 2:
            raise TypeError(f"lengths must be a pair (min, max) of integers, got {lengths!r}")
        lo, hi = lengths
        check_int("lengths[0]", lo, low=1)
        check_int("lengths[1]", hi, low=lo)
        self.lengths = (lo, hi)
        self.seed_passes = validate_passes(seed_passes, name="seed_passes")
        self.workers = check_int("workers", workers, low=1)

    def tune(
        self, program: Program, budget: int, *, seed: int = 0, evaluator: Evaluator | None = None
    ) -> TuneResult:
        """Spend ``budget`` evaluations; returns the best valid sequence found."""
        ev = _check_common(program, budget, evaluator)
        rng = np.random.default_rng(seed)
        tr = _Tracker(ev, program, budget, self.workers)
        tr.run([self.seed_passes])
        while tr.left > 0:
            batch = []
            for _ in range(min(tr.left, 2 * self.workers)):
                k = int(rng.integers(self.lengths[0], self.lengths[1] + 1))
                batch.append(tuple(PASSES[i] for i in rng.integers(0, len(PASSES), k)))
            tr.run(batch)
        return tr.result(self.seed_passes)


def mutate(
    seq: tuple[str, ...],
    rng: np.random.Generator,
    weights: Sequence[float] | None = None,
    *,
    max_length: int = 120,
) -> tuple[str, ...]:
    """One insert / replace / delete / swap mutation; new passes drawn from ``weights``.

    The result is never empty and never longer than ``max_length``.

    Args:
        seq: The parent sequence (not modified).
        rng: Source of randomness.
        weights: Unnormalised probabilities over :data:`PASSES` (length
            ``len(PASSES)``); None for uniform.
        max_length: Inserts are skipped at this length.

    Raises:
        ValueError: If ``weights`` has the wrong length, a negative entry or sum 0.
    """
    p = None
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != (len(PASSES),) or not np.all(w >= 0) or not w.sum() > 0:
            raise ValueError(
                f"weights must be {len(PASSES)} non-negative numbers (one per entry of PASSES) "
                f"with a positive sum, got shape {w.shape}"
            )
        p = w / w.sum()
    s = list(seq)
    ops = ["insert", "replace", "delete", "swap"]
    if len(s) >= max_length:
        ops.remove("insert")
    if len(s) <= 1:
        ops.remove("delete")
        ops.remove("swap")
    op = ops[int(rng.integers(len(ops)))]
    new = PASSES[int(rng.choice(len(PASSES), p=p))]
    if op == "insert":
        s.insert(int(rng.integers(len(s) + 1)), new)
    elif op == "replace":
        s[int(rng.integers(len(s)))] = new
    elif op == "delete":
        del s[int(rng.integers(len(s)))]
    else:
        i, j = rng.choice(len(s), 2, replace=False)
        s[i], s[j] = s[j], s[i]
    return tuple(s)


def crossover(
    a: tuple[str, ...], b: tuple[str, ...], rng: np.random.Generator, *, max_length: int = 120
) -> tuple[str, ...]:
    """One-point crossover: a prefix of ``a`` and a suffix of ``b`` (non-empty)."""
    i = int(rng.integers(1, len(a) + 1))
    j = int(rng.integers(0, len(b)))
    child = (a[:i] + b[j:])[:max_length]
    return child or a[:1]


class GeneticTuner:
    """Genetic algorithm over pass sequences, seeded with the -O3 pass list.

    Elitism, tournament selection (size 2), one-point crossover and insert / replace /
    delete / swap mutations. The distribution that mutations draw new passes from is
    uniform here; :class:`~ecco_autotune.ECCO` sets it from the strategist's intent.

    Args:
        population: Individuals per generation (>= 2).
        elite: Best individuals copied unchanged (< population).
        crossover_rate: Probability that a child is a crossover before mutation.
        mutations: Mutations per child (1 + Poisson(mutations - 1)).
        seed_passes: The first individual (default -O3's pass list); the rest of the
            first generation are its mutants.
        max_length: Longest sequence allowed.
        workers: Concurrent evaluations.

    Raises:
        TypeError: If an argument has the wrong type (``program``, ``evaluator`` of
            :meth:`tune` too).
        ValueError: If ``population`` < 2, ``elite`` >= ``population``, a rate is out
            of range or ``seed_passes`` names an unknown pass.
    """

    def __init__(
        self,
        population: int = 8,
        *,
        elite: int = 2,
        crossover_rate: float = 0.5,
        mutations: float = 2.0,
        seed_passes: Sequence[str] = O3_PASSES,
        max_length: int = 120,
        workers: int = 2,
    ) -> None:
        self.population = check_int("population", population, low=2)
        self.elite = check_int("elite", elite, low=0, high=population - 1)
        self.crossover_rate = check_float("crossover_rate", crossover_rate, low=0.0, high=1.0)
        self.mutations = check_float("mutations", mutations, low=1.0)
        self.seed_passes = validate_passes(seed_passes, name="seed_passes")
        self.max_length = check_int("max_length", max_length, low=len(self.seed_passes))
        self.workers = check_int("workers", workers, low=1)

    def _weights(self, generation: int, tracker: _Tracker) -> Sequence[float] | None:
        return None  # uniform

    def _child(self, rng: np.random.Generator, n_mut: int, parent: tuple[str, ...],
               weights: Sequence[float] | None) -> tuple[str, ...]:  # fmt: skip
        child = parent
        for _ in range(n_mut):
            child = mutate(child, rng, weights, max_length=self.max_length)
        return child

    def tune(
        self,
        program: Program,
        budget: int,
        *,
        seed: int = 0,
        evaluator: Evaluator | None = None,
        on_generation: Callable[[int, float], None] | None = None,
    ) -> TuneResult:
        """Spend ``budget`` evaluations (>= ``population``) and return the best sequence.

        Raises:
            ValueError: If ``budget`` < ``population``.
        """
        check_int("budget", budget, low=1)
        if budget < self.population:
            raise ValueError(
                f"budget must be >= population ({self.population}) so that one generation "
                f"is evaluated, got {budget}"
            )
        ev = _check_common(program, budget, evaluator)
        rng = np.random.default_rng(seed)
        tr = _Tracker(ev, program, budget, self.workers)
        self._start(program, ev, rng)
        weights = self._weights(0, tr)
        pop = [self.seed_passes] + [
            self._child(rng, self._n_mut(rng), self.seed_passes, weights)
            for _ in range(self.population - 1)
        ]
        fit = [e.cycles for e in tr.run(pop)]
        gen = 0
        while tr.left > 0:
            gen += 1
            weights = self._weights(gen, tr)
            order = np.argsort(fit, kind="stable")
            elite = [pop[i] for i in order[: self.elite]]
            children = []
            for _ in range(min(self.population - self.elite, tr.left)):
                a = self._tournament(pop, fit, rng)
                if rng.random() < self.crossover_rate:
                    b = self._tournament(pop, fit, rng)
                    a = crossover(a, b, rng, max_length=self.max_length)
                children.append(self._child(rng, self._n_mut(rng), a, weights))
            cfit = [e.cycles for e in tr.run(children)]
            pop = elite + children[: len(cfit)]
            fit = [fit[i] for i in order[: self.elite]] + cfit
            if on_generation is not None:
                on_generation(gen, tr.best[1] if tr.best else math.inf)
        return tr.result(self.seed_passes, self._intents())

    def _start(self, program: Program, evaluator: Evaluator, rng: np.random.Generator) -> None:
        pass

    def _intents(self) -> list[str | None]:
        return []

    def _n_mut(self, rng: np.random.Generator) -> int:
        return 1 + int(rng.poisson(self.mutations - 1.0))

    @staticmethod
    def _tournament(pop: list[tuple[str, ...]], fit: list[float], rng: np.random.Generator):
        i, j = rng.integers(0, len(pop), 2)
        return pop[i] if fit[i] <= fit[j] else pop[j]
