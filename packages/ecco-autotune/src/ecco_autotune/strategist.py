"""The LLM strategist, its Chain-of-Thought dataset, and ECCO itself."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from icml26_core.validation import check_float, check_int

from .passes import INTENTS, O3_PASSES, RECIPES, intent_weights, remove_intent
from .program import Evaluator, Program
from .search import GeneticTuner, TuneResult, _Tracker

#: Features shown to the strategist, in this order.
SHOWN = ("loops", "loads", "stores", "calls", "branches", "arith", "logic", "geps", "functions")

_HYPOTHESIS = {
    "loop": "{loops} loops: loop transforms (rotate, LICM, unroll) may cut loop overhead",
    "memory": "{loads} loads and {stores} stores: SROA, GVN and DSE may remove redundant accesses",
    "inlining": "{calls} calls over {functions} functions: inlining may remove call overhead",
    "control flow": "{branches} branches: jump threading and CFG simplification may remove some",
    "scalar": "{arith} arithmetic and {logic} logic operations: instcombine and reassociation "
    "may shorten them",
    "vectorization": "{loads} loads inside {loops} loops: the vectorizers may process several "
    "bytes at once",
}


def intent_from_text(text: str) -> str | None:
    """The intent named in free text (the first vocabulary word found), else None.

    For generated output: text that names no intent gives None, which
    :func:`~ecco_autotune.passes.intent_weights` turns into the uniform distribution.
    """
    if not isinstance(text, str):
        return None
    low = text.lower()
    found = [(low.find(i), i) for i in INTENTS if low.find(i) >= 0]
    return min(found)[1] if found else None


@dataclass(frozen=True)
class CoTRecord:
    """One reverse-engineered Chain-of-Thought example (features -> ... -> intent).

    Attributes:
        program: Name of the training program.
        features: Its static IR features.
        insert: Per intent, cycles(-O3 list + intent recipe) / cycles(-O3 list).
        ablate: Per intent, cycles(-O3 list without the intent's passes) / cycles(-O3 list).
        intent: The intent the measurements support (largest gain from insertion;
            largest harm from ablation when no insertion helps).
    """

    program: str
    features: dict[str, int]
    insert: dict[str, float]
    ablate: dict[str, float]
    intent: str

    def text(self) -> str:
        """The example as the strategist reads it."""
        f = self.features
        feats = ", ".join(f"{k}={f.get(k, 0)}" for k in SHOWN)
        i = self.intent
        return (
            f"Program features: {feats}\n"
            f"Hypothesis: {_HYPOTHESIS[i].format(**{k: f.get(k, 0) for k in SHOWN})}.\n"
            f"Evidence: adding the {i} passes to -O3 changed cycles by "
            f"{100 * (self.insert[i] - 1):+.1f}%; removing them changed cycles by "
            f"{100 * (self.ablate[i] - 1):+.1f}%.\n"
            f"Intent: {i}\n"
        )


def build_cot_dataset(
    programs: Sequence[Program],
    evaluator: Evaluator,
    *,
    cache: str | Path | None = None,
) -> list[CoTRecord]:
    """Measure insertions and ablations per intent on training programs.

    For each program: cycles of the -O3 pass list, of the list with each intent's
    recipe appended, and of the list without each intent's passes (1 + 2 x 6
    evaluations). Invalid builds count as no gain.

    Args:
        programs: Training programs (never the held-out ones).
        evaluator: The evaluator.
        cache: JSON file to read the records from / write them to.
    """
    if cache is not None and Path(cache).is_file():
        return [CoTRecord(**r) for r in json.loads(Path(cache).read_text())]
    records = []
    for prog in programs:
        base = evaluator.evaluate(prog, O3_PASSES).cycles
        ins, abl = {}, {}
        for i in INTENTS:
            a = evaluator.evaluate(prog, O3_PASSES + RECIPES[i]).cycles
            b = evaluator.evaluate(prog, remove_intent(O3_PASSES, i)).cycles
            ins[i] = a / base if math.isfinite(a) else 1.0
            abl[i] = b / base if math.isfinite(b) else 1.0
        best = min(ins, key=lambda k: (round(ins[k], 4), -abl[k]))
        if ins[best] >= 1.0:
            best = max(abl, key=lambda k: abl[k])
        records.append(CoTRecord(prog.name, evaluator.features(prog), ins, abl, best))
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        Path(cache).write_text(json.dumps([asdict(r) for r in records], indent=1))
    return records


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence transformers' deprecation notices about ``past_key_values``."""
    import logging

    log = logging.getLogger("transformers")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        log.setLevel(level)


def _vec(features: Mapping[str, int]) -> np.ndarray:
    v = np.log1p(np.array([float(features.get(k, 0)) for k in SHOWN]))
    return v / (np.linalg.norm(v) or 1.0)


class Strategist:
    """SmolLM2-135M-Instruct (or any causal LM) choosing an optimisation intent.

    Few-shot: the ``k`` Chain-of-Thought records nearest to the program's features
    (cosine of log feature counts) precede the query; the intent is scored by the
    model's mean log-likelihood of each vocabulary word after ``"Intent:"``
    (constrained decoding), so the output is always one of :data:`INTENTS` unless
    scoring fails (then None: the uniform mutation distribution).

    Args:
        model: A ``transformers`` causal LM (``model(ids).logits``), e.g. from
            ``icml26_core.lm.load_smollm2()``; None always returns None (uniform).
        tokenizer: Its tokenizer.
        examples: The Chain-of-Thought records to retrieve from.
        k: Examples per prompt (0: zero-shot).

    Raises:
        TypeError: If ``examples`` holds anything but :class:`CoTRecord`.
        ValueError: If ``k`` < 0.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        examples: Sequence[CoTRecord] = (),
        *,
        k: int = 2,
    ) -> None:
        self.model, self.tokenizer = model, tokenizer
        if isinstance(examples, str) or not all(isinstance(r, CoTRecord) for r in examples):
            raise TypeError("examples must be a sequence of CoTRecord (see build_cot_dataset)")
        self.examples = list(examples)
        self.k = check_int("k", k, low=0)
        #: model calls so far
        self.calls = 0

    def prompt(self, features: Mapping[str, int], feedback: str = "") -> str:
        """The few-shot prompt for ``features`` (with a line on the search so far)."""
        q = _vec(features)
        ex = sorted(self.examples, key=lambda r: -float(_vec(r.features) @ q))[: self.k]
        head = (
            "You choose the optimization intent that guides a search over LLVM pass "
            f"sequences. Intents: {', '.join(INTENTS)}.\n\n"
        )
        feats = ", ".join(f"{k}={features.get(k, 0)}" for k in SHOWN)
        tail = f"Program features: {feats}\n" + (f"Search so far: {feedback}\n" if feedback else "")
        return head + "\n".join(r.text() for r in ex) + "\n" + tail + "Intent:"

    def scores(self, prompt: str) -> dict[str, float] | None:
        """Mean log-likelihood of each intent after ``prompt``; None if scoring fails."""
        if self.model is None or self.tokenizer is None:
            return None
        try:
            import torch

            tok = self.tokenizer
            ids = torch.tensor([tok.encode(prompt)])
            dev = next(self.model.parameters()).device
            self.calls += 1
            with torch.no_grad(), _quiet():
                out = self.model(ids.to(dev), use_cache=True)
                last = torch.log_softmax(out.logits[0, -1].float(), -1)
                res = {}
                for intent in INTENTS:
                    cand = tok.encode(" " + intent)
                    lp = float(last[cand[0]])
                    if len(cand) > 1:
                        past = copy.deepcopy(out.past_key_values)
                        o2 = self.model(torch.tensor([cand[:-1]]).to(dev), past_key_values=past)
                        lps = torch.log_softmax(o2.logits[0].float(), -1)
                        lp += sum(float(lps[j, c]) for j, c in enumerate(cand[1:]))
                    res[intent] = lp / len(cand)
        except Exception:  # any model failure means "no intent"
            return None
        if not all(math.isfinite(v) for v in res.values()):
            return None
        return res

    def choose(
        self,
        features: Mapping[str, int],
        *,
        feedback: str = "",
        rng: np.random.Generator | None = None,
        temperature: float = 0.0,
    ) -> str | None:
        """The intent for a program: argmax (``temperature`` 0) or a softmax sample.

        Returns None when scoring fails (the caller then mutates uniformly).
        """
        s = self.scores(self.prompt(features, feedback))
        if s is None:
            return None
        names = list(s)
        v = np.array([s[n] for n in names])
        if temperature <= 0 or rng is None:
            return names[int(np.argmax(v))]
        p = np.exp((v - v.max()) / temperature)
        return names[int(rng.choice(len(names), p=p / p.sum()))]


class ECCO(GeneticTuner):
    """ECCO: a genetic algorithm whose mutations follow the strategist's intent.

    At generation 0 and every ``consult_every`` generations the strategist reads the
    program's static features, retrieved Chain-of-Thought examples and a line on the
    search so far, and picks an intent; mutations then draw new passes with
    ``focus`` of the probability on that intent's passes (:func:`intent_weights`).
    Everything else is :class:`GeneticTuner` with the same arguments, so the GA is
    the ablation of the strategist.

    Args:
        strategist: The :class:`Strategist`.
        consult_every: Generations between consultations (>= 1).
        focus: Mass on the intent's passes, in [0, 1].
        temperature: Softmax temperature of the intent choice (0: argmax).
        **ga: Arguments of :class:`GeneticTuner`.

    Raises:
        TypeError: If ``strategist`` is not a :class:`Strategist`.
        ValueError: As :class:`GeneticTuner`, or if ``consult_every`` < 1, ``focus``
            is outside [0, 1] or ``temperature`` < 0.
    """

    def __init__(
        self,
        strategist: Strategist,
        *,
        consult_every: int = 2,
        focus: float = 0.7,
        temperature: float = 0.5,
        **ga: Any,
    ) -> None:
        super().__init__(**ga)
        if not isinstance(strategist, Strategist):
            raise TypeError(f"strategist must be a Strategist, got {type(strategist).__name__}")
        self.strategist = strategist
        self.consult_every = check_int("consult_every", consult_every, low=1)
        self.focus = check_float("focus", focus, low=0.0, high=1.0)
        self.temperature = check_float("temperature", temperature, low=0.0)

    def _start(self, program: Program, evaluator: Evaluator, rng: np.random.Generator) -> None:
        self._features = evaluator.features(program)
        self._rng = rng
        self._log: list[str | None] = []
        self._current: list[float] | None = None
        self._seed_cycles: float | None = None

    def _weights(self, generation: int, tracker: _Tracker) -> Sequence[float] | None:
        if generation % self.consult_every == 0:
            feedback = ""
            if tracker.best is not None and tracker.history:
                first = tracker.history[0]
                gain = 100 * (1 - tracker.best[1] / first) if math.isfinite(first) else 0.0
                last = self._log[-1] if self._log else None
                feedback = f"best so far {gain:.2f}% below -O3" + (
                    f"; last intent {last}" if last else ""
                )
            intent = self.strategist.choose(
                self._features, feedback=feedback, rng=self._rng, temperature=self.temperature
            )
            self._log.append(intent)
            self._current = intent_weights(intent, focus=self.focus)
        return self._current

    def _intents(self) -> list[str | None]:
        return list(self._log)


def strategist_recipe(
    program: Program, strategist: Strategist, evaluator: Evaluator
) -> tuple[str | None, tuple[str, ...], TuneResult]:
    """Strategist alone, no search: -O3's pass list plus the chosen intent's recipe.

    Returns:
        ``(intent, passes, result)``; with no intent the -O3 list alone.
    """
    intent = strategist.choose(evaluator.features(program))
    seq = O3_PASSES + (RECIPES[intent] if intent else ())
    ev = evaluator.evaluate(program, seq)
    cycles = ev.cycles if ev.valid else math.inf
    return intent, seq, TuneResult(seq, cycles, 1, float(ev.valid), [cycles], [intent])
