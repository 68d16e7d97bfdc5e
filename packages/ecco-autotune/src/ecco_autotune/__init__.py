"""ECCO: LLM-strategist-guided genetic search over LLVM pass sequences.

Public API:

- :class:`Toolchain` (``Toolchain.check()`` finds clang, opt, llc, llvm-link,
  llvm-dis and valgrind of LLVM 14), :class:`ToolchainError`;
- :class:`Program` (C sources + a driver; ``Program.builtin("sha256")`` for the vendored
  pycryptodome primitives), :func:`evaluate` / :class:`Evaluator` ->
  :class:`Evaluation` (callgrind cycles inside the kernel, IR size, checksum validity);
- :data:`PASSES` (the search space), :data:`INTENTS`, :data:`O3_PASSES`;
- :class:`RandomSearch`, :class:`GeneticTuner`, :class:`ECCO` (``.tune(program,
  budget)`` -> :class:`TuneResult`), :class:`Strategist`, :func:`build_cot_dataset`.
"""

from importlib.metadata import PackageNotFoundError, version

from .passes import INTENTS, O3_PASSES, PASSES, RECIPES, intent_weights, validate_passes
from .program import (
    BUILTIN,
    TEST_PROGRAMS,
    TRAIN_PROGRAMS,
    Evaluation,
    Evaluator,
    Program,
    evaluate,
    ir_features,
)
from .search import GeneticTuner, RandomSearch, TuneResult, crossover, mutate
from .strategist import (
    ECCO,
    CoTRecord,
    Strategist,
    build_cot_dataset,
    intent_from_text,
    strategist_recipe,
)
from .toolchain import Toolchain, ToolchainError

try:
    __version__ = version("ecco-autotune")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0+unknown"

__all__ = [
    "BUILTIN",
    "ECCO",
    "INTENTS",
    "O3_PASSES",
    "PASSES",
    "RECIPES",
    "TEST_PROGRAMS",
    "TRAIN_PROGRAMS",
    "CoTRecord",
    "Evaluation",
    "Evaluator",
    "GeneticTuner",
    "Program",
    "RandomSearch",
    "Strategist",
    "Toolchain",
    "ToolchainError",
    "TuneResult",
    "__version__",
    "build_cot_dataset",
    "crossover",
    "evaluate",
    "intent_from_text",
    "intent_weights",
    "ir_features",
    "mutate",
    "strategist_recipe",
    "validate_passes",
]
